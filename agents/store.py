"""The run store: an append-only, crash-safe record of every attempt in a run directory.

    runs/<name>/config.json      the sweep's configuration (pydantic, written once)
    runs/<name>/attempts.jsonl   one JSON line per finished attempt (prompt, response, kernel,
                                 measurement record, protocol results, usage, cost, feedback)

Appends take an exclusive ``flock`` and ``fsync`` before releasing it, so concurrent sweeps never
interleave lines and a kill -9 loses at most the attempt in flight. A torn last line (power loss
mid-write) is moved to ``attempts.torn`` by the next append, ``--resume`` or report (``repair_torn``), once; any
other line that does not parse is skipped on read and listed in ``RunStore.unreadable`` (line number, reason) so a
report can name what it lost. Attempts are keyed by (model, strategy, problem, sample, turn):
``--resume`` skips keys already present.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

ATTEMPTS = "attempts.jsonl"
CONFIG = "config.json"
TORN = "attempts.torn"  # torn last lines moved out of attempts.jsonl, kept as they were


class Attempt(BaseModel):
    """One turn of one (model, strategy, problem, sample)."""

    # inf/NaN in the record (an error statistic of a NaN output) are written as "Infinity"/"NaN" strings,
    # not as null, so the record reads back as it was measured (harness.measure.record._Stored).
    model_config = ConfigDict(ser_json_inf_nan="strings")
    _line: int | None = PrivateAttr(None)  # where it was read from (RunStore iteration)

    run: str = ""
    model: str = Field(description="model spec as given: 'gpt', 'demo', 'replay:...'")
    model_id: str = Field("", description="resolved model id")
    strategy: str = "zero_shot"
    backend: str = "cpu"
    problem_id: str
    level: int
    number: int
    sample: int = 0
    turn: int = 1
    messages: list[dict[str, str]] = Field(default_factory=list, description="the prompt as sent")
    response: str = ""
    finish: str = "stop"
    usage: dict[str, int] = Field(default_factory=dict)
    cost_usd: float | None = None
    latency_s: float | None = None
    cached_response: bool = False
    model_error: str | None = None
    kernel_source: str | None = None
    kernel_hash: str | None = None
    extraction_error: str | None = None
    record: dict[str, Any] | None = Field(None, description="harness.MeasurementRecord as a dict")
    results: dict[str, dict[str, Any]] = Field(default_factory=dict, description="protocol -> ProtocolResult dict")
    feedback: str | None = Field(None, description="what the model is shown before the next turn")
    feedback_kind: str | None = Field(None, description="agents.feedback.Feedback.kind of this turn")
    final: bool = Field(False, description="this turn ended its conversation (success under --stop-on, or the last turn)")
    eval_reused: bool = Field(False, description="the same kernel was already measured in this run: record shared")
    size: str = "small"
    device: str = "cpu"
    precision: str = Field("fp32", description="the run's precision (harness.measure.precision); attempts stored before "
                                               "precision modes: fp32")
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat())

    @property
    def key(self) -> tuple[str, str, str, int, int]:
        return (self.model, self.strategy, self.problem_id, self.sample, self.turn)

    @property
    def line(self) -> int | None:
        """1-based line of attempts.jsonl this attempt was read from (None if not read from a store)."""
        return self._line

    def verdict(self, protocol: str) -> str | None:
        r = self.results.get(protocol)
        return r.get("verdict") if r else None


def attempt_key(model: str, strategy: str, problem_id: str, sample: int, turn: int) -> tuple[str, str, str, int, int]:
    return (model, strategy, problem_id, sample, turn)


class Unreadable(BaseModel):
    """A stored line (or the record inside one) that could not be read: it costs its row, never the report."""

    line: int = Field(description="1-based line of attempts.jsonl")
    reason: str
    key: str | None = Field(None, description="model/strategy/problem/sample/turn, when the attempt itself parsed")


def first_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        errs = exc.errors()
        if errs:
            e = errs[0]
            loc = ".".join(str(x) for x in e.get("loc", ()))
            more = f" (+{len(errs) - 1} more)" if len(errs) > 1 else ""
            return f"{e.get('type')} at {loc or '<root>'}: {e.get('msg')}{more}"[:300]
    return f"{type(exc).__name__}: {exc}"[:300]


class RunStore:
    def __init__(self, run_dir: str | Path) -> None:
        self.dir = Path(run_dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / ATTEMPTS
        self.unreadable: list[Unreadable] = []

    @property
    def name(self) -> str:
        return self.dir.name

    def write_config(self, config: BaseModel | dict[str, Any]) -> None:
        data = config.model_dump(mode="json") if isinstance(config, BaseModel) else config
        tmp = self.dir / (CONFIG + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True))
        os.replace(tmp, self.dir / CONFIG)

    def read_config(self) -> dict[str, Any] | None:
        p = self.dir / CONFIG
        return json.loads(p.read_text()) if p.exists() else None

    def append(self, attempt: Attempt) -> None:
        if not attempt.run:
            attempt.run = self.name
        line = (attempt.model_dump_json() + "\n").encode()
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._repair_locked(fd)  # a previous writer killed mid-line: its torn line goes, the new one starts clean
            os.write(fd, line)
            os.fsync(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def repair_torn(self) -> int | None:
        """Move a torn last line (a write cut off mid-line by a crash: no newline, does not parse) to ``attempts.torn``,
        once, so it is not read and warned about by every report after. Returns its line number (None: nothing torn).
        Under the append lock: a writer finishes its line before it lets go, so an unfinished line there is torn."""
        if not self.path.exists():
            return None
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND)  # a newline _repair_locked adds goes at the end
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return self._repair_locked(fd)
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _repair_locked(self, fd: int) -> int | None:
        size = os.fstat(fd).st_size
        if not size or os.pread(fd, 1, size - 1) == b"\n":
            return None
        data = os.pread(fd, size, 0)
        cut = data.rfind(b"\n") + 1
        tail = data[cut:]
        try:
            Attempt.model_validate_json(tail)
            os.write(fd, b"\n")  # a whole record that only lacks its newline (O_APPEND: at the end)
            return None
        except ValueError:
            pass
        with open(self.dir / TORN, "ab") as q:
            q.write(tail + b"\n")
            q.flush()
            os.fsync(q.fileno())
        os.ftruncate(fd, cut)
        os.fsync(fd)
        return data[:cut].count(b"\n") + 1

    def __iter__(self) -> Iterator[Attempt]:
        """Every attempt that parses; the lines that do not (a torn last line from a crash mid-write,
        anything else) are skipped and listed in ``self.unreadable`` (reset by each pass)."""
        self.unreadable = []
        if not self.path.exists():
            return
        with self.path.open("rb") as f:
            for lineno, raw in enumerate(f, start=1):
                raw = raw.strip()
                if not raw:
                    continue
                try:
                    a = Attempt.model_validate_json(raw)
                except ValueError as exc:
                    self.unreadable.append(Unreadable(line=lineno, reason=first_error(exc)))
                    continue
                a._line = lineno
                yield a

    def attempts(self) -> list[Attempt]:
        return list(self)

    def keys(self) -> set[tuple[str, str, str, int, int]]:
        return {a.key for a in self}

    def to_frame(self):
        """One row per attempt and protocol-specific columns (``verified_verdict``, ``naive_speedup``, ...)."""
        import pandas as pd

        rows = []
        for a in self:
            row = a.model_dump(exclude={"messages", "response", "kernel_source", "record", "results", "usage"})
            for k, v in a.usage.items():
                row[f"usage_{k}"] = v
            for proto, r in a.results.items():
                for field in ("verdict", "speedup", "sol_score", "memory_ratio", "kernel_ms", "baseline_ms"):
                    row[f"{proto}_{field}"] = r.get(field)
            rows.append(row)
        return pd.DataFrame(rows)


def kernel_hash(source: str) -> str:
    return hashlib.sha256(source.encode()).hexdigest()
