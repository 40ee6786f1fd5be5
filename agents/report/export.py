"""``python -m agents.report RUN --export FILE``: the per-attempt table as the report scored it (one row per turn of
each conversation: each protocol's verdict, speedup and 95% interval, the speedup fast_p counts, the noise flag and
why) as CSV, Markdown or Parquet, for a spreadsheet, a README or pandas/DuckDB. The figures are the tables' own:
re-scored from the stored records, as every table is, not the verdicts the sweep stored."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from .build import Report

FORMATS = {".csv": "CSV", ".md": "Markdown", ".parquet": "Parquet"}


def attempt_rows(rep: Report) -> list[dict[str, Any]]:
    protos = [p.split("@")[0] for p in rep.protocols]
    rows = []
    for k in rep.kernels:
        for t in k.turns:
            row: dict[str, Any] = {"model": k.model, "strategy": k.strategy, "precision": k.precision,
                                   "problem_id": k.problem_id, "level": k.level, "sample": k.sample, "turn": t.turn,
                                   "final": t.turn == k.final.turn, "status": t.status}
            for p in protos:
                lo_hi = t.intervals.get(p) or [None, None]
                correct = t.verdicts.get(p) == "correct"  # a wrong kernel's time is no speedup, here as in the tables
                row |= {f"{p}_verdict": t.verdicts.get(p), f"{p}_speedup": t.speedups.get(p) if correct else None,
                        f"{p}_speedup_low": lo_hi[0] if correct else None,
                        f"{p}_speedup_high": lo_hi[1] if correct else None,
                        f"{p}_counted": t.credited.get(p) if correct else None,
                        f"{p}_noisy": bool(t.noise.get(p)), f"{p}_noise": "; ".join(t.noise.get(p) or []),
                        f"{p}_sol_score": t.sol_scores.get(p)}
            row |= {"memory_ratio": t.memory_ratio, "kernel_hash": t.kernel_hash}
            rows.append(row)
    return rows


def _cell(v: object) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def export_attempts(rep: Report, path: str | Path) -> int:
    """Write ``rep``'s per-attempt table to ``path`` in the format its suffix names; returns the rows written."""
    import pandas as pd

    path = Path(path)
    kind = FORMATS.get(path.suffix.lower())
    if kind is None:
        raise ValueError(f"{path}: export to {', '.join(FORMATS)}")
    rows = attempt_rows(rep)
    frame = pd.DataFrame(rows)
    if kind == "CSV":
        frame.to_csv(path, index=False)
    elif kind == "Parquet":
        frame.to_parquet(path, index=False)  # pyarrow
    else:  # written here: pandas' to_markdown needs tabulate, which nothing else uses
        cols = list(frame.columns)
        lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
        lines += ["| " + " | ".join(_cell(r[c]) for c in cols) + " |" for r in rows]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(rows)
