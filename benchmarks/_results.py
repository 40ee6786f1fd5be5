"""Shared by the benchmark scripts: how a finished benchmark leaves its figures behind."""

from __future__ import annotations

import json
from pathlib import Path


def write_results(out: Path, name: str, text: str, data: object) -> None:
    """``name.md`` (the table, also printed) and ``name.json`` (what it was made from) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(data, indent=1))
    (out / f"{name}.md").write_text(text)
    print(text)
