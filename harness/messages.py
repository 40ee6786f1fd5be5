"""What the candidate process may send, declared once: its requests to the judge and its reports to the parent,
each kind with the shape of its payload.

The candidate side builds its requests from these models and the judge validates every message it receives
against them before acting on it; the parent does the same with the reports. A payload the harness's own worker
would never send (a negative shape, a baseline of a million calls, an unknown guard, an extra field, a phase that
does not exist) is a protocol breach (``judge_protocol``), never an exception inside the judge or the parent, which
would have been a harness error retried forever. The judge's replies are not modelled here: the candidate
process trusts nothing it is told beyond the bytes it is handed.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from .record import GuardOutcome, Memory, Phase, Status
from .wire import WireError

NonNegative = Annotated[int, Field(ge=0)]


class ProtocolBreach(WireError):
    """A message the harness's own candidate-side code never sends: recorded as ``judge_protocol``."""


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Trial(Request):
    """naive_trial / verified_trial: the inputs of trial ``index`` (trials come in order)."""

    index: NonNegative


class Params(Request):
    """The candidate's floating-point tensors, (name, shape) each, for the parameter mapping."""

    params: list[tuple[str, list[NonNegative]]] = Field(default_factory=list, max_length=10_000)
    built_under: int | None = None  # the seed its verified instance was built under (the judge's construction seed)


class Empty(Request):
    """timing_inputs, timing_done, finish: nothing beside the kind."""


class Called(Request):
    """A timed call returned: on which input set, and the kernel time the candidate process measured."""

    set: Annotated[int, Field(ge=0)]
    ms: float | None = None


class Baseline(Request):
    """Time the reference in the judge: naive loop, or ``n`` calls of the verified method from set ``start``."""

    subject: Literal["naive", "tf32", "fp32", "compile"]
    n: Annotated[int, Field(gt=0, le=100_000)]
    start: NonNegative = 0
    timed: bool = True


class GuardOutput(Request):
    """The output of a call on inputs rewritten in place, to be checked against timing set ``expect_set``."""

    guard: Literal["same_pointer_new_contents", "waits_for_caller_stream"]
    expect_set: NonNegative
    hold_us: Annotated[float, Field(ge=0)] = 0.0


class Output(Request):
    """An output handed over: a tensor (its bytes in the shared buffer), an exception, or something else."""

    type: Literal["tensor", "exception", "other"]
    shape: list[NonNegative] = Field(default_factory=list, max_length=64)
    dtype: str | None = None
    text: str = ""
    name: str = ""


REQUESTS: dict[str, type[Request]] = {
    "naive_trial": Trial, "verified_trial": Trial, "params": Params, "timing_inputs": Empty, "called": Called,
    "baseline": Baseline, "guard_output": GuardOutput, "timing_done": Empty, "finish": Empty, "output": Output,
}


def parse(kind: str, payload: Any) -> Request:
    """The request ``kind`` with ``payload`` validated, or ProtocolBreach saying what was wrong with it."""
    model = REQUESTS.get(kind)
    if model is None:
        raise ProtocolBreach(f"unknown request kind {kind!r}")
    try:
        return model.model_validate(payload if payload is not None else {})
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ProtocolBreach(f"malformed {kind!r}: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def payload(req: Request) -> dict:
    """What goes on the wire for ``req`` (the candidate side)."""
    return req.model_dump()


# -- the candidate process's reports to the parent (its result pipe, each line carrying the job's nonce) ----------
class ErrorReport(Request):
    """The candidate failed: how and in which phase (compile and runtime errors, timeouts)."""

    status: Status
    phase: Phase
    error: str


REPORTS: dict[str, TypeAdapter] = {
    "phase": TypeAdapter(Phase), "candidate_code_starts": TypeAdapter(None), "built": TypeAdapter(dict[str, float]),
    "harness_error": TypeAdapter(str), "judge_link_broken": TypeAdapter(str), "error": TypeAdapter(ErrorReport),
    "output_dtype": TypeAdapter(str), "custom_code_called": TypeAdapter(bool),
    "note": TypeAdapter(Annotated[str, Field(max_length=1000)]),
    "timing": TypeAdapter(dict[str, Any]),  # Timing's scalar fields: validated as Timing where they are merged
    "timing_samples": TypeAdapter(dict[str, list[float]]), "memory": TypeAdapter(Memory),
    "guards": TypeAdapter(list[GuardOutcome]), "guard": TypeAdapter(GuardOutcome),
}


def report(kind: Any, payload: Any) -> Any:
    """The report ``kind`` with ``payload`` validated (models where they are declared), or ProtocolBreach."""
    adapter = REPORTS.get(kind) if isinstance(kind, str) else None
    if adapter is None:
        raise ProtocolBreach(f"unknown report kind {str(kind)[:60]!r}")
    try:
        return adapter.validate_python(payload)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ProtocolBreach(f"malformed {kind!r} report: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
