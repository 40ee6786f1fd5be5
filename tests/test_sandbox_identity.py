"""A candidate that asks who runs it gets an answer inside the sandbox (harness.sandbox.policy.account_files).

Run by root, the sandbox drops to a pool uid no host account owns. Before its /etc/passwd named that uid,
``getpass.getuser()`` and ``pwd.getpwuid`` raised KeyError inside the candidate, and torch.compile, which asks for
its cache folder, failed in an honest kernel's constructor (cuda-l1-h100 level2/49 on the H200, 2026-12-05): a
harness failure recorded as the candidate's runtime_error.
"""

from __future__ import annotations

import os
import textwrap

import pytest

import harness
from harness.sandbox.policy import ACCOUNT, UID_BASE, UID_COUNT

# Correct only when every question about its identity is answered inside the sandbox, as the dropped uid.
ASKS = textwrap.dedent("""
    import getpass, grp, os, pwd
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            me = pwd.getpwuid(os.getuid())
            self.ok = getpass.getuser() == me.pw_name and grp.getgrgid(os.getgid()).gr_gid == os.getgid()
            self.name, self.uid = me.pw_name, os.getuid()

        def forward(self, x):
            return torch.relu(x) if self.ok else x
""")


@pytest.mark.skipif(os.geteuid() != 0, reason="the pool uid is used only when the evaluator runs as root (CI does)")
def test_a_candidate_that_asks_who_runs_it_gets_the_sandbox_account():
    r = harness.evaluate(ASKS, "level1/19_ReLU", device="cpu", size="small",
                         settings=harness.EvalSettings(verified_min_iters=5, verified_max_iters=10,
                                                       verified_seconds_per_subject=0.2, naive_timing_trials=5))
    assert r.record.status == "ok", (r.record.failed_phase, (r.record.error or "")[-800:])
    assert r.results["naive"].verdict == "correct" and r.results["verified"].verdict == "correct"


def test_the_account_files_add_the_pool_uid_to_the_hosts():
    from harness.sandbox.policy import account_files

    uid = UID_BASE + UID_COUNT - 1
    fds = account_files(uid)
    try:
        passwd, group = (os.pread(fd, 1 << 20, 0).decode() for fd in fds)
    finally:
        for fd in fds:
            os.close(fd)
    with open("/etc/passwd") as f:
        assert passwd.startswith(f.read().rstrip("\n"))  # the host's entries unchanged, the sandbox's after them
    assert passwd.splitlines()[-1].split(":")[:4] == [ACCOUNT, "x", str(uid), str(uid)]
    assert group.splitlines()[-1].split(":")[:3] == [ACCOUNT, "x", str(uid)]

