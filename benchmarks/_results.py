"""Shared by the benchmark scripts: how a finished benchmark leaves its figures behind."""

from __future__ import annotations

import json
import os
from pathlib import Path


def write_results(out: Path, name: str, text: str, data: object) -> None:
    """``name.md`` (the table, also printed) and ``name.json`` (what it was made from) under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(data, indent=1))
    (out / f"{name}.md").write_text(text)
    print(text)


def cores() -> str:
    """The machine line's core count: "32 cores", or "16 of 32 cores" when the run is pinned (taskset)."""
    import harness  # importable once the calling script has put the repo on sys.path

    usable, host = harness.usable_cpus(), os.cpu_count()
    return f"{host} cores" if usable == host else f"{usable} of {host} cores"


def setting(kv: str) -> tuple[str, object]:
    """A ``--set KEY=VALUE`` argument as an EvalSettings field and value (JSON where it parses, else the text)."""
    key, _, text = kv.partition("=")
    try:
        return key, json.loads(text)
    except ValueError:
        return key, text
