"""audit_judge.jsonl: the judge's answers, one line per (judge, attempt), kept beside attempts.jsonl.

The file is rewritten whole (tmp file + os.replace) by each judging, keeping the lines of other judges: a verdict
lives in attempts.jsonl and is never touched here.
"""

from __future__ import annotations

import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from .answer import Category
from .prompt import Evidence

JUDGE_FILE = "audit_judge.jsonl"

AttemptKey = tuple[str, str, str, int, int, str]  # model, strategy, problem_id, sample, turn, precision


class Exchange(BaseModel):
    """One model call: what was asked (by hash) and what came back, verbatim (what replay serves)."""

    prompt_hash: str
    response: str
    finish: str = "stop"
    cached: bool = False
    cost_usd: float | None = None
    usage: dict[str, int] = Field(default_factory=dict)


class JudgeEntry(BaseModel):
    judge: str = Field(description="the --judge spec, e.g. 'claude'")
    judge_model: str = Field("", description="the model id the server reported")
    model: str
    strategy: str
    problem_id: str
    sample: int = 0
    turn: int = 1
    precision: str = "fp32"
    candidate_hash: str = ""
    source_file: str = Field("", description="where the kernel was read from when the run is stripped (--sources)")
    verified_speedup: float | None = None
    min_speedup: float | None = Field(None, description="the threshold of the judging that wrote this line")
    status: str = Field(description="judged | schema_error (answered twice outside the schema: category 'unsure') | "
                                    "error (no answer: provider error) | skipped (not judged, note says why)")
    category: Category | None = None
    reason: str = ""
    note: str | None = Field(None, description="why skipped, the error, or what the prompt lacked")
    evidence: Evidence | None = None
    exchanges: list[Exchange] = Field(default_factory=list)
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))

    @property
    def attempt_key(self) -> AttemptKey:
        return (self.model, self.strategy, self.problem_id, self.sample, self.turn, self.precision)

    @property
    def cost_usd(self) -> float | None:
        costs = [x.cost_usd for x in self.exchanges]
        return None if any(c is None for c in costs) else sum(c for c in costs if c is not None)


def read_judgements(run_dir: str | Path) -> list[JudgeEntry]:
    """Every readable line of RUN/audit_judge.jsonl ([] when there is none); a line that does not parse is skipped."""
    path = Path(run_dir) / JUDGE_FILE
    if not path.is_file():
        return []
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        try:
            out.append(JudgeEntry.model_validate_json(line))
        except (ValidationError, ValueError):
            continue
    return out


def write_judgements(run_dir: str | Path, judge: str, entries: list[JudgeEntry]) -> Path:
    """Replace ``judge``'s lines with ``entries``, keeping every other judge's."""
    run_dir = Path(run_dir)
    kept = [e for e in read_judgements(run_dir) if e.judge != judge]
    path = run_dir / JUDGE_FILE
    fd, tmp = tempfile.mkstemp(dir=run_dir, prefix=".tmp-", suffix=".jsonl")
    try:
        with os.fdopen(fd, "w") as f:
            for e in kept + entries:
                f.write(e.model_dump_json() + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
