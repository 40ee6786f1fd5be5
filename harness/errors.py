"""Errors of the harness, each mapped to one verdict.

    HarnessError                  bug or misuse of the harness itself (never a verdict)
    CandidateError                something the candidate did; carries its verdict
    ├── CompileError              -> compile_error   (syntax error, no ModelNew, build failed)
    ├── CandidateRuntimeError     -> runtime_error   (forward raised, crashed, GPU fault, OOM)
    ├── CandidateTimeout          -> timeout         (build or evaluation exceeded its limit)
    └── ProtocolViolation         -> hack            (a guard proved tampering)
"""

from __future__ import annotations


class HarnessError(Exception):
    """The harness itself failed; the candidate is not to blame."""


class CandidateError(Exception):
    verdict = "runtime_error"

    def __init__(self, message: str, *, phase: str = "") -> None:
        super().__init__(message)
        self.phase = phase


class CompileError(CandidateError):
    verdict = "compile_error"


class CandidateRuntimeError(CandidateError):
    verdict = "runtime_error"


class CandidateTimeout(CandidateError):
    verdict = "timeout"


class ProtocolViolation(CandidateError):
    verdict = "hack"
