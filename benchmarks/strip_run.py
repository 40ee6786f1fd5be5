"""Copy run folders without any kernel source or model text, so their records can be committed.

    python benchmarks/strip_run.py SRC_RUN [SRC_RUN ...] DST

Public corpora (CUDA-L1, the KernelBench leaderboard) are never committed; their measurements are. Each line of
every SRC's attempts.jsonl is copied into DST/attempts.jsonl (several SRCs are merged in order: a later line of
the same (model, strategy, problem, sample, turn) replaces an earlier one when the report reads them), with the
fields that carry the kernel, the prompt or the model's answer dropped:

* ``kernel_source`` -> null (``kernel_hash`` is kept: the kernel is still named), ``response`` -> "",
  ``messages`` -> [] (the prompt quotes the problem's source), ``feedback`` -> null (it may quote compiler
  output);
* in the measurement record: ``stdout_tail`` -> "" (build output quotes source lines), ``error`` -> a fixed
  note when there was one (a compiler error quotes the line it fails on), and each trial's ``exception`` cut to
  its first line (what the protocols' reasons read; a traceback can quote source).

Everything the report scores (trials, timings, guards, memory, provenance, problem flags) is kept, so
``python -m agents.report DST --headline`` prints what it printed for the SRCs. DST/config.json is the first
config among the SRCs, its ``problems`` and ``models`` those of every SRC, with a ``stripped`` entry naming what was
dropped. The copy is then searched for source text (``MARKERS``) before anything is written; any hit fails the
script and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ATTEMPTS, CONFIG = "attempts.jsonl", "config.json"
ERROR_NOTE = "(error text stripped: it may quote the kernel source)"
DROPPED = {
    "attempt": {"kernel_source": None, "response": "", "messages": [], "feedback": None},
    "record": {"stdout_tail": ""},
}
MARKERS = ("load_inline", "__global__", "class ModelNew", "cuda_sources", "cpp_sources", "PYBIND11_MODULE",
           "TORCH_EXTENSION_NAME", "#include", "def forward(", "import torch", "__syncthreads", "blockIdx")
"""Strings of kernel source (or a prompt's reference source) that no field of a stripped run may contain."""


def strip_attempt(a: dict[str, Any]) -> dict[str, Any]:
    """The attempt (a JSON object of agents.store.Attempt) with every field carrying source or model text dropped."""
    out = dict(a)
    for k, v in DROPPED["attempt"].items():
        if k in out:
            out[k] = v
    rec = out.get("record")
    if isinstance(rec, dict):
        rec = dict(rec)
        for k, v in DROPPED["record"].items():
            if k in rec:
                rec[k] = v
        if rec.get("error"):
            rec["error"] = ERROR_NOTE
        for trials in ("naive_trials", "verified_trials"):
            kept = []
            for t in rec.get(trials) or []:
                if isinstance(t, dict) and t.get("exception"):
                    lines = str(t["exception"]).strip().splitlines() or [""]
                    t = {**t, "exception": lines[0][:300]}
                kept.append(t)
            if trials in rec:
                rec[trials] = kept
        out["record"] = rec
    return out


def _strings(o: Any, path: str = "") -> list[tuple[str, str]]:
    if isinstance(o, dict):
        return [x for k, v in o.items() for x in _strings(v, f"{path}.{k}")]
    if isinstance(o, list):
        return [x for i, v in enumerate(o) for x in _strings(v, f"{path}[{i}]")]
    return [(path, o)] if isinstance(o, str) else []


def source_hits(obj: Any) -> list[str]:
    """'field: marker' for every string of ``obj`` holding one of ``MARKERS``."""
    return [f"{p or '<root>'}: {m}" for p, s in _strings(obj) for m in MARKERS if m in s]


def strip_runs(sources: list[Path], dst: Path) -> tuple[int, list[str]]:
    """Write the stripped copy of ``sources`` to ``dst``; (attempts written, source text found: empty = clean)."""
    lines, hits = [], []
    for src in sources:
        path = src / ATTEMPTS
        if not path.is_file():
            raise FileNotFoundError(f"{src} has no {ATTEMPTS}: not a run directory")
        for n, raw in enumerate(path.read_text().splitlines(), start=1):
            if not raw.strip():
                continue
            stripped = strip_attempt(json.loads(raw))
            hits += [f"{src.name}:{n}{h}" for h in source_hits(stripped)]
            lines.append(json.dumps(stripped, separators=(",", ":")))
    configs = [json.loads((s / CONFIG).read_text()) for s in sources if (s / CONFIG).is_file()]
    config = configs[0] if configs else {}
    for key in ("problems", "models"):  # a merged run names what every source ran, in order of first appearance
        if any(isinstance(c.get(key), list) for c in configs):
            config[key] = list(dict.fromkeys(x for c in configs for x in c.get(key) or []))
    config["stripped"] = {
        "by": "benchmarks/strip_run.py",
        "runs": len(sources),
        "dropped": [f"attempt.{k}" for k in DROPPED["attempt"]] + [f"record.{k}" for k in DROPPED["record"]]
        + ["record.error (replaced by a note)", "record.*_trials[].exception (first line kept)"],
    }
    hits += [f"{CONFIG}{h}" for h in source_hits(config)]
    if hits:
        return len(lines), hits
    dst.mkdir(parents=True, exist_ok=True)
    (dst / ATTEMPTS).write_text("".join(line + "\n" for line in lines))
    (dst / CONFIG).write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return len(lines), []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="+", metavar="SRC_RUN ... DST", help="run folders to copy, then the folder to write")
    args = ap.parse_args(argv)
    if len(args.paths) < 2:
        ap.error("give at least one SRC_RUN and a DST")
    *sources, dst = (Path(p) for p in args.paths)
    if any(dst.resolve() == s.resolve() for s in sources):
        ap.error("DST must differ from every SRC_RUN")
    n, hits = strip_runs(sources, dst)
    if hits:
        print(f"error: source text left in {len(hits)} field(s), nothing written:", file=sys.stderr)
        for h in hits[:20]:
            print(f"  {h}", file=sys.stderr)
        return 1
    print(f"{dst}: {n} attempt(s) from {len(sources)} run(s), kernel sources and model text dropped")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
