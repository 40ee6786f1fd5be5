"""Measure a kernel once, score it under many protocols.

Public surface::

    harness.evaluate(source, "level1/19_ReLU", device="cpu", size="small") -> Evaluation
    harness.Evaluator(device, size)            # reuses builds and reference outputs across candidates
    harness.score(record, "verified")          # pure: re-score a stored record
    harness.NAIVE, harness.VERIFIED, harness.Protocol
    harness.MeasurementRecord                  # what is stored per (candidate, problem, size, device)
    harness.usable_cpus()                      # CPUs this process may use (build pools size by it)
"""

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
