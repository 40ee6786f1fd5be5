"""What the judge reads: the kernel, the problem and the record's evidence, as one prompt (pure functions)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field

from harness.measure.record import MeasurementRecord, TimingStats
from harness.scoring.protocols import ProtocolResult

from .answer import CATEGORIES, MEANING

MAX_SOURCE_CHARS = 60_000  # a kernel longer than this is cut (and the prompt says so): one judge call stays bounded


class Evidence(BaseModel):
    """The facts of the record the judge is shown, as stored beside its answer."""

    naive_verdict: str
    naive_speedup: float | None = None
    verified_verdict: str
    verified_speedup: float | None = None
    verified_interval: tuple[float | None, float | None] = (None, None)
    credited_speedup: float | None = None
    speedup_vs_compile: float | None = None
    sol_score: float | None = None
    memory_ratio: float | None = None
    problem_flags: list[str] = Field(default_factory=list)
    guards_failed: list[str] = Field(default_factory=list, description="'name [severity]: detail' of failed guards")
    provenance: dict[str, Any] = Field(default_factory=dict)
    timing: dict[str, Any] = Field(default_factory=dict, description="the timer's readings, ms")
    roofline: dict[str, Any] = Field(default_factory=dict)


def _stats(t: TimingStats | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"method": t.method, "n": t.n, "median_ms": t.median_ms, "min_ms": t.min_ms, "max_ms": t.max_ms}


def evidence(record: MeasurementRecord, naive: ProtocolResult, verified: ProtocolResult) -> Evidence:
    p, tm, rf = record.provenance, record.timing, record.roofline
    provenance = {k: v for k, v in p.model_dump().items() if v not in (None, False, [], "")}
    timing = {k: v for k, v in {
        "verified_kernel": _stats(tm.verified_kernel), "verified_baseline_tf32": _stats(tm.verified_baseline_tf32),
        "naive_kernel": _stats(tm.naive_kernel), "naive_baseline_fp32": _stats(tm.naive_baseline_fp32),
        "event_only_kernel_ms": tm.event_only_kernel_ms, "synced_kernel_ms": tm.synced_kernel_ms,
        "launch_lead_us": tm.launch_lead_us or None, "l2_flush_bytes": tm.l2_flush_bytes or None,
    }.items() if v is not None}
    roofline = {} if rf is None else {k: v for k, v in {
        "flops": rf.flops, "bytes": rf.bytes, "t_sol_ms": rf.t_sol_ms, "t_floor_ms": rf.t_floor_ms,
        "device": rf.device_name}.items() if v not in (None, "")}
    return Evidence(
        naive_verdict=naive.verdict, naive_speedup=naive.speedup,
        verified_verdict=verified.verdict, verified_speedup=verified.speedup,
        verified_interval=(verified.speedup_low, verified.speedup_high), credited_speedup=verified.credited_speedup,
        speedup_vs_compile=verified.speedup_vs_compile, sol_score=verified.sol_score,
        memory_ratio=verified.memory_ratio, problem_flags=list(record.problem_flags),
        guards_failed=[f"{g.name} [{g.severity}]" + (f": {g.detail}" if g.detail else "")
                       for g in record.guards if not g.passed],
        provenance=provenance, timing=timing, roofline=roofline)


SYSTEM = (
    "You audit GPU kernels that an automated benchmark measured as correct and faster than PyTorch. The benchmark "
    "already checked the output on hidden inputs and ran anti-hack guards; your verdict changes no score. Read the "
    "reference problem, the kernel and the measurement evidence, and say where the speed comes from.\n\n"
    "Categories:\n" + "\n".join(f"- {c}: {MEANING[c]}" for c in CATEGORIES) + "\n\n"
    "Answer with only one JSON object, no other text: "
    '{"category": "<one of the categories above>", "reason": "<two or three sentences naming the code and the '
    'evidence that decide it>"}'
)


def _cut(source: str) -> str:
    if len(source) <= MAX_SOURCE_CHARS:
        return source
    return source[:MAX_SOURCE_CHARS] + f"\n# ... cut here: {len(source) - MAX_SOURCE_CHARS} more characters not shown"


def user_prompt(problem_id: str, problem_source: str | None, kernel_source: str, ev: Evidence,
                problem_note: str | None = None) -> str:
    problem = problem_source if problem_source is not None else f"(not available: {problem_note or 'unknown'})"
    facts = json.dumps(ev.model_dump(mode="json"), indent=1, sort_keys=True)
    return (
        f"Problem {problem_id}. The reference (class Model, with get_inputs/get_init_inputs):\n"
        f"```python\n{problem.rstrip()}\n```\n\n"
        f"The candidate kernel (class ModelNew):\n```python\n{_cut(kernel_source).rstrip()}\n```\n\n"
        "Measurement evidence (speedup = baseline time / kernel time; 'verified' times against a TF32-enabled "
        "PyTorch baseline on hidden inputs with the judge's own clock; memory_ratio > 1: more peak memory than the "
        f"baseline):\n```json\n{facts}\n```\n"
    )


def retry_prompt(error: str) -> str:
    return (f"Your answer could not be read: {error}. Answer again with only the JSON object "
            f'{{"category": ..., "reason": ...}}; category is one of: {", ".join(CATEGORIES)}.')


def prompt_hash(messages: list[dict[str, str]]) -> str:
    """Names one request's messages (the replay judge finds a recorded answer by it)."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
