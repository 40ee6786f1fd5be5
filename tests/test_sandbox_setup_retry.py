"""bubblewrap's own setup of a sandbox can fail for a reason no candidate controls: its recursive bind of / remounts
every mount below it read-only, and a mount another sandbox's teardown removed meanwhile fails that remount (a CI run
of 2026-12-07: `bwrap: Can't bind mount /oldroot/ on /newroot/: ... No such file or directory`, a harness error for a
hack fixture). Such a start is made once more, for an evaluation and for a build; nothing else is retried."""

from __future__ import annotations

import threading

import pytest

import harness
from harness import EvalSettings
from harness.builds import BuildResult
from harness.errors import HarnessError
from harness.measure.guard_registry import outcome
from harness.sandbox import ChildResult, sandbox_setup_failed

SOURCE = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
BWRAP = ("the candidate process exited with code 1 before any candidate code ran\nbwrap: Can't bind mount /oldroot/ on "
         "/newroot/: Unable to apply mount flags: remount \"/newroot/tmp/kv-eval-x/cand-y\": No such file or directory")


class _Judge:
    environment = None

    def __init__(self):
        self.lock = threading.Lock()


def _evaluator(monkeypatch, failures: list[str]) -> tuple[harness.Evaluator, list]:
    ev = harness.Evaluator("cpu", "small", settings=EvalSettings(witness_remeasure=False))
    made = []

    def measure_with(self, judge, record, source, problem, ext, pool_witness=False):
        assert not record.guards, "each try starts from a fresh record"
        made.append(record)
        record.guards.append(outcome("inputs_unchanged", True))
        if len(made) <= len(failures):
            raise HarnessError(failures[len(made) - 1])

    monkeypatch.setattr(harness.Evaluator, "build", lambda self, s, p=None: BuildResult(True, 0.0, "", True))
    monkeypatch.setattr(harness.Evaluator, "judge", lambda self, problem: _Judge())
    monkeypatch.setattr(harness.Evaluator, "_measure_with", measure_with)
    return ev, made


def test_a_sandbox_whose_setup_failed_is_started_once_more(monkeypatch):
    ev, made = _evaluator(monkeypatch, [BWRAP])
    with ev:
        r = ev.evaluate(SOURCE, "level1/19_ReLU")
    assert len(made) == 2 and r.record is made[1] and len(r.record.guards) == 1


def test_twice_is_a_harness_error_and_other_harness_errors_are_not_retried(monkeypatch):
    ev, made = _evaluator(monkeypatch, [BWRAP, BWRAP])
    with ev, pytest.raises(HarnessError, match="bwrap"):
        ev.evaluate(SOURCE, "level1/19_ReLU")
    assert len(made) == 2
    other = "the candidate process killed by SIGKILL before any candidate code ran\nTraceback (most recent call last):"
    ev, made = _evaluator(monkeypatch, [other])
    with ev, pytest.raises(HarnessError, match="SIGKILL"):
        ev.evaluate(SOURCE, "level1/19_ReLU")
    assert len(made) == 1


def test_what_counts_as_bubblewraps_own_failure():
    assert sandbox_setup_failed(BWRAP.partition("\n")[2])
    assert sandbox_setup_failed("\nbwrap: Can't find source path /nope: No such file or directory\n")
    assert not sandbox_setup_failed("Traceback (most recent call last):\n  ...\nbwrap: in a message")
    assert not sandbox_setup_failed("")


def test_a_build_whose_sandbox_failed_to_start_runs_once_more(monkeypatch, tmp_path):
    import harness.builder as builder

    calls = []
    real = builder.run_module

    def run_module(module, args, **kw):
        calls.append(module)
        if len(calls) == 1:
            return ChildResult(1, False, 0.01, "", BWRAP.partition("\n")[2])
        return real(module, args, **kw)

    monkeypatch.setattr(builder, "run_module", run_module)
    source = SOURCE + "# no extension: torch.utils.cpp_extension is named, so the build runs (and compiles nothing)\n"
    with harness.Evaluator("cpu", "small", cache_dir=tmp_path) as ev:
        built = ev.build(source, "level1/19_ReLU")
    assert built.ok, built.error
    assert calls == ["harness.build.build", "harness.build.build"]
