"""Stale sandbox cgroups (an evaluator killed outright never removes its own) are swept; a live evaluator's stay."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from harness.sandbox.cgroup import _group_dirs, sweep_stale


@pytest.mark.skipif(os.geteuid() != 0, reason="making a cgroup needs root (CI runs as root)")
def test_empty_cgroups_of_gone_evaluators_are_swept_and_live_ones_kept():
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    parents = [d for d in _group_dirs() if d.parent.is_dir()]
    assert parents, "no cgroup hierarchy to make sandboxes in"
    stale, live = f"{gone.pid}-0-0", f"{os.getpid()}-999-0"
    made = []
    for parent in parents:
        parent.mkdir(exist_ok=True)
        for name in (stale, live):
            (parent / name).mkdir()
            made.append(parent / name)
    try:
        sweep_stale()  # (another test process's first sandbox may sweep the same folders at the same time)
        for parent in parents:
            assert not (parent / stale).exists()
            assert (parent / live).exists()  # its maker (this process) is alive
    finally:
        for d in made:
            if d.exists():
                d.rmdir()
