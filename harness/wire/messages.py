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

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, model_validator

from ..measure.record import GuardOutcome, Memory, Phase, Status
from .conn import WireError

# Bounds on what a candidate process may send, declared once. A number beyond them is no number the harness's own
# worker sends: the message is a breach before the judge acts on it.
INT64_MAX = 2**63 - 1  # torch's sizes, indices and seeds are int64: anything larger is no tensor's
MAX_DIMS = 64  # a shape's rank
MAX_NAME = 256  # a parameter's or a type's name
MAX_TEXT = 4000  # an exception's text (the worker sends its last 4000 characters)
# Calls of the reference one 'baseline' request may ask for: the worker asks for one round of the verified method
# (timing.VerifiedBudget.round_size, 5) or one warm-up call; 16 calls of a slow reference still end long before the
# parent's wait for the judge's report (harness.runner). The total per evaluation: judge.Session._admit_baseline.
BASELINE_CALLS_PER_REQUEST = 16

NonNegative = Annotated[int, Field(ge=0, le=INT64_MAX)]
Dim = NonNegative
Shape = Annotated[list[Dim], Field(max_length=MAX_DIMS)]
Name = Annotated[str, Field(max_length=MAX_NAME)]
FiniteMs = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Seconds = FiniteMs  # the same bounds: finite, non-negative
Samples = Annotated[list[FiniteMs], Field(max_length=100_000)]  # one subject's timed calls
MAX_GUARDS = 1000  # guard outcomes in one report (the worker's own are a few dozen)


class ProtocolBreach(WireError):
    """A message the harness's own candidate-side code never sends: recorded as ``judge_protocol``."""


class Request(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Trial(Request):
    """naive_trial / verified_trial: the inputs of trial ``index`` (trials come in order)."""

    index: NonNegative


class Params(Request):
    """The candidate's floating-point tensors, (name, shape) each, for the parameter mapping."""

    params: list[tuple[Name, Shape]] = Field(default_factory=list, max_length=10_000)
    built_under: NonNegative | None = None  # the seed its verified instance was built under (the judge's construction seed)


class Empty(Request):
    """timing_inputs, timing_done, finish: nothing beside the kind."""


class Output(Request):
    """An output handed over: a tensor (its bytes in the shared buffer), an exception, or something else."""

    type: Literal["tensor", "exception", "other"]
    shape: Shape = Field(default_factory=list)  # any size: the judge reads bytes only for the expected shape
    dtype: Name | None = None
    dim_order: Shape | None = None  # the order its bytes were written in, when not row-major (harness.wire.shm)
    text: Annotated[str, Field(max_length=MAX_TEXT)] = ""
    name: Name = ""

    @model_validator(mode="after")
    def _order_of_its_shape(self):
        if self.dim_order is not None and sorted(self.dim_order) != list(range(len(self.shape))):
            raise ValueError("dim_order is not an order of the shape's dimensions")
        return self


# Timed calls the judge may let go at once (EvalSettings.timed_batch), each on its own input set.
MAX_BATCH = 16


class Go(Request):
    """Let the timed calls on input sets ``set`` .. ``set + count - 1`` (modulo the sets) start, back to back: the
    judge's clock for the batch starts with its reply."""

    set: NonNegative
    count: Annotated[int, Field(gt=0, le=MAX_BATCH)] = 1


class CallPhases(Request):
    """Where a timed call's time went as the candidate process saw it (its own clock, so evidence for a reader of the
    witness's detail, never an input to a number): waiting for the reply to 'go', the timer with the kernel, the
    hand-over of the output, the sync after it."""

    go_reply: FiniteMs
    timer: FiniteMs
    handover: FiniteMs
    sync: FiniteMs
    pre_call: FiniteMs = 0.0  # a batch's pre-call work between its calls (inside the interval)


class Called(Request):
    """A batch of timed calls returned and each one's whole output was handed over (``outputs``, in call order): the
    batch's first input set, and the kernel time the candidate process measured per call. ``phases_ms``: the batch's
    (go_reply once, the other phases summed over its calls)."""

    set: NonNegative
    ms: list[FiniteMs] | None = Field(None, max_length=MAX_BATCH)
    outputs: list[Output] | None = Field(None, max_length=MAX_BATCH)
    phases_ms: CallPhases | None = None


class NaiveDone(Request):
    """The naive loop's samples as the candidate process measured them (the judge's clock timed the whole loop)."""

    ms: list[FiniteMs] = Field(default_factory=list, max_length=100_000)


class Baseline(Request):
    """Time the reference in the judge: naive loop, or ``n`` calls of the verified method from set ``start``."""

    subject: Literal["naive", "tf32", "fp32", "compile"]
    n: Annotated[int, Field(gt=0, le=BASELINE_CALLS_PER_REQUEST)]
    start: NonNegative = 0
    timed: bool = True


class GuardOutput(Request):
    """The output of a call on inputs rewritten in place, to be checked against timing set ``expect_set``."""

    guard: Literal["same_pointer_new_contents", "waits_for_caller_stream"]
    expect_set: NonNegative
    hold_us: FiniteMs = 0.0




REQUESTS: dict[str, type[Request]] = {
    "naive_trial": Trial, "verified_trial": Trial, "params": Params, "timing_inputs": Empty, "go": Go, "called": Called,
    "naive_start": Empty, "naive_done": NaiveDone,
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
    "phase": TypeAdapter(Phase), "candidate_code_starts": TypeAdapter(None), "built": TypeAdapter(Annotated[dict[Name, Seconds], Field(max_length=16)]),
    "harness_error": TypeAdapter(str), "judge_link_broken": TypeAdapter(str), "error": TypeAdapter(ErrorReport),
    "output_dtype": TypeAdapter(str), "custom_code_called": TypeAdapter(bool),
    "note": TypeAdapter(Annotated[str, Field(max_length=1000)]),
    "timing": TypeAdapter(dict[str, Any]),  # Timing's scalar fields: validated as Timing where they are merged
    "timing_samples": TypeAdapter(Annotated[dict[Name, Samples], Field(max_length=16)]), "memory": TypeAdapter(Memory),
    "guards": TypeAdapter(Annotated[list[GuardOutcome], Field(max_length=MAX_GUARDS)]), "guard": TypeAdapter(GuardOutcome),
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
