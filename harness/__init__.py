"""Measure a kernel once, score it under many protocols.

Public surface::

    harness.evaluate(source, "level1/19_ReLU", device="cpu", size="small") -> Evaluation
    harness.Evaluator(device, size)            # reuses builds and reference outputs across candidates
    harness.score(record, "verified")          # pure: re-score a stored record
    harness.NAIVE, harness.VERIFIED, harness.Protocol
    harness.MeasurementRecord                  # what is stored per (candidate, problem, size, device)
    harness.usable_cpus()                      # CPUs this process may use (build pools size by it)

Laid out by who runs the code (tests/test_harness_layout.py holds the imports to it):

    harness/*.py   the parent, trusted: runner (Evaluator, a pipeline over builder, judges, workers and assemble;
                   builds holds the build cache, children what each child process gets), eval (CLI), errors,
                   device_check, and the roofline (roofline_bound, host_peaks: the parent measures a CPU host's
                   peaks). Few modules, so they stay at the top; they may import every folder below and start the
                   sandboxed ones
    candidate/     in the sandbox beside candidate code: worker, guards, load, clock_peer
    build/         in the sandbox, builds candidate code: build, compile_launcher
    judge/         the trusted judge process, holding seeds and expected outputs: judge, inputs, adversarial, ...
    wire/          the only types both sides share: conn, messages, shm, device_buffer, job
    measure/       pure, secret-free primitives both sides use: device, timing, stats, record, compare, ...
    scoring/       pure functions over records: protocols, intervals, applicability, shapes, ...
    sandbox/       the parent's launcher: bubblewrap, seccomp, cgroup
"""

import importlib
from typing import TYPE_CHECKING

# The public names load on first use (PEP 562): ``import harness.eval`` for ``--help`` or ``harness.wire.job`` for
# EvalSettings' fields must not import torch through runner and scoring (seconds on a loaded host).
_HOME = {
    **dict.fromkeys(("CandidateError", "CandidateRuntimeError", "CandidateTimeout", "CompileError", "HarnessError",
                     "ProtocolViolation"), ".errors"),
    "usable_cpus": ".measure.device",
    **dict.fromkeys(("GuardOutcome", "MeasurementRecord", "Provenance", "TrialResult"), ".measure.record"),
    **dict.fromkeys(("Evaluation", "Evaluator", "evaluate"), ".runner"),
    **dict.fromkeys(("NAIVE", "PROTOCOLS", "VERDICTS", "VERIFIED", "Protocol", "ProtocolResult", "get_protocol", "score",
                     "score_all", "sol_score"), ".scoring.protocols"),
    "EvalSettings": ".wire.job",
}


def __getattr__(name: str):
    if name not in _HOME:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME[name], __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])


if TYPE_CHECKING:
    from .errors import (
        CandidateError,
        CandidateRuntimeError,
        CandidateTimeout,
        CompileError,
        HarnessError,
        ProtocolViolation,
    )
    from .measure.device import usable_cpus
    from .measure.record import GuardOutcome, MeasurementRecord, Provenance, TrialResult
    from .runner import Evaluation, Evaluator, evaluate
    from .scoring.protocols import (
        NAIVE,
        PROTOCOLS,
        VERDICTS,
        VERIFIED,
        Protocol,
        ProtocolResult,
        get_protocol,
        score,
        score_all,
        sol_score,
    )
    from .wire.job import EvalSettings

__all__ = [
    "NAIVE", "PROTOCOLS", "VERDICTS", "VERIFIED", "CandidateError", "CandidateRuntimeError", "CandidateTimeout",
    "CompileError", "EvalSettings", "Evaluation", "Evaluator", "GuardOutcome", "HarnessError", "MeasurementRecord",
    "Protocol", "ProtocolResult", "Provenance", "ProtocolViolation", "TrialResult", "evaluate", "get_protocol",
    "score", "score_all", "sol_score", "usable_cpus",
]
