"""The evaluator (root, unsandboxed) touches files in folders candidate code could write: a candidate process's log
files in its work folder, a build's PCH requests, its extensions folder. Candidate code may replace any of those
names with a symlink, which the evaluator would resolve in its own namespace, or with a FIFO. On main 88ddf1a:
a symlink to /proc/self/environ put the evaluator's environment (its API keys) in record.stdout_tail; a FIFO hung
the evaluator in open(); symlinked .kv-build.lock/.built-ok made it truncate and overwrite files of root's choosing
(a sweep's attempts.jsonl); a FIFO in the build folder made the copy into the candidate's sandbox raise.

Each test: the attack changes nothing outside, the attacker gets its honest verdict (it computes a real ReLU), no
HarnessError, no hang; an honest twin still gets its verdict, and its stdout still reaches the record.
"""

from __future__ import annotations

import secrets
import threading
from pathlib import Path

import pytest

import harness
from harness import EvalSettings
from harness.builds import build_marker
from tests.conftest import private_cache_evaluator

PROBLEM = "level1/19_ReLU"
SETTINGS = EvalSettings(naive_timing_trials=20, verified_min_iters=5, verified_max_iters=20,
                        verified_seconds_per_subject=0.5, cpu_threads=1, build_timeout_s=120, eval_timeout_s=120,
                        build_niceness=0)

RELU = """

class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""

LOG_LINKS = """import os
import torch
import torch.nn as nn
print("@TOKEN@ before", flush=True)
os.unlink("harness.candidate.worker.stdout")
os.symlink("/proc/self/environ", "harness.candidate.worker.stdout")  # resolved by whoever opens it
os.unlink("harness.candidate.worker.stderr")
os.mkfifo("harness.candidate.worker.stderr")  # an open() for reading waits for a writer: none comes
""" + RELU

HONEST_PRINTS = """import torch
import torch.nn as nn
print("@TOKEN@ honest", flush=True)
""" + RELU

# "load_inline" named here gives this source a sandboxed build (harness.scoring.static_scan), which compiles nothing.
BUILD_LINKS = """import os
import torch
import torch.nn as nn
EXT = "/tmp/kv-ext"
if os.environ.get("KV_PCH_REQUESTS"):  # only the build gets it
    def _link(target, name):
        p = os.path.join(EXT, name)
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(target, p)
    _link("@VICTIM@/truncated", ".kv-build.lock")
    _link("@VICTIM@/overwritten", ".built-ok")
    _link("@VICTIM@/read.so", "read.so")
    _link("@VICTIM@/dir", "batons")  # batons/lock: torch's baton, which the evaluator clears
    os.mkfifo(os.path.join(EXT, "pipe"))
    os.mkfifo(os.environ["KV_PCH_REQUESTS"])
""" + RELU


@pytest.fixture(scope="module")
def ev(tmp_path_factory):
    with private_cache_evaluator(tmp_path_factory.mktemp("parent-files"), SETTINGS) as e:
        yield e


def _evaluate(e: harness.Evaluator, source: str, limit_s: float = 240.0):
    """``e.evaluate`` on a thread: a hang fails the test instead of holding the suite."""
    out: dict = {}

    def run():
        try:
            out["r"] = e.evaluate(source, PROBLEM)
        except BaseException as exc:  # noqa: BLE001 - reported below
            out["exc"] = exc

    th = threading.Thread(target=run, daemon=True)
    th.start()
    th.join(limit_s)
    assert not th.is_alive(), f"the evaluation hung (over {limit_s:.0f} s)"
    if "exc" in out:
        raise out["exc"]
    return out["r"]


def _correct(r) -> bool:
    return r.results["naive"].verdict == "correct" and r.results["verified"].verdict == "correct"


def test_a_candidates_log_files_are_read_as_files_never_through_links(ev):
    token = secrets.token_hex(8)
    environ = Path("/proc/self/environ").read_bytes()  # this process is the evaluator
    r = _evaluate(ev, LOG_LINKS.replace("@TOKEN@", token))
    assert _correct(r), (r.record.status, r.record.error)
    tails = (r.record.stdout_tail or "") + (r.record.error or "")
    for entry in environ.split(b"\0")[-3:]:
        if len(entry) > 8:
            assert entry.decode(errors="replace") not in tails, "the evaluator's environment reached the record"
    honest = _evaluate(ev, HONEST_PRINTS.replace("@TOKEN@", token))
    assert _correct(honest)
    assert f"{token} honest" in (honest.record.stdout_tail or ""), "a log file that stays a file still reaches the record"


def test_a_builds_links_and_fifos_in_its_folders_are_never_followed(ev, tmp_path):
    victim = tmp_path / "victim"
    (victim / "dir").mkdir(parents=True)
    files = {victim / "truncated": b"kept A", victim / "overwritten": b"kept B", victim / "read.so": b"kept C",
             victim / "dir" / "lock": b"kept D"}
    for p, data in files.items():
        p.write_bytes(data)
        p.chmod(0o600)
    source = BUILD_LINKS.replace("@VICTIM@", str(victim)).replace("nn.Module):", "nn.Module):  # load_inline", 1)
    for _ in range(2):  # built, then served from the cache with the build's symlinks filed
        r = _evaluate(ev, source)
        assert _correct(r), (r.record.status, r.record.error)
        assert {p: p.read_bytes() for p in files} == files, "the evaluator wrote through a build's symlink"
    ext = ev.extensions_dir(source)
    assert build_marker(ext).is_file() and not build_marker(ext).is_symlink()
    assert _correct(_evaluate(ev, HONEST_PRINTS.replace("@TOKEN@", "twin") + "# load_inline\n"))


BALLAST = """import os
import torch
import torch.nn as nn
if os.environ.get("KV_PCH_REQUESTS"):  # the build only: its extensions folder, kept in the shared cache
    for i in range(3):
        with open(f"/tmp/kv-ext/ballast{i}.bin", "wb") as f:
            f.write(os.urandom(4 << 20))
""" + RELU


def test_what_a_build_leaves_in_the_shared_cache_is_bounded(ev):
    settings = ev.settings
    ev.settings = settings.model_copy(update={"max_build_folder_bytes": 8 << 20})
    try:
        source = BALLAST.replace("nn.Module):", "nn.Module):  # load_inline", 1)
        r = _evaluate(ev, source)
        assert r.record.status == "compile_error" and "max_build_folder_bytes" in (r.record.error or ""), \
            (r.record.status, r.record.error)
        assert not any(ev.extensions_dir(source).iterdir()), "the ballast stayed in the cache"
        twin = _evaluate(ev, HONEST_PRINTS.replace("@TOKEN@", "small build") + "# load_inline\n")
        assert _correct(twin), (twin.record.status, twin.record.error)
    finally:
        ev.settings = settings
