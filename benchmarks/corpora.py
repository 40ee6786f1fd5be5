"""Lay out a public corpus of LLM-written KernelBench kernels for ``replay:`` (never committed: run it where
the corpus was fetched, write outside the repo or under an ignored folder).

    python benchmarks/corpora.py leaderboard /work/.mirror/anneouyang+KernelBenchLeaderboard/repo OUT

``leaderboard`` (anneouyang/KernelBenchLeaderboard, a bare git mirror or a checkout): 413 single-shot kernels
of six models for 156 problems of that KernelBench version, with the authors' speedups on an L40S. Writes

    OUT/problems/level{L}/{N}_{name}.py        the problem files of that version (--problems-dir)
    OUT/replay/{model}/level_{L}_problem_{N}_sample_{k}_kernel.py    one folder per model (replay:DIR)
    OUT/reported.json                          [{model, level, number, sample, problem, speedup, file}]

Sweep one model: ``python -m agents.sweep --models replay:OUT/replay/MODEL --problems-dir OUT/problems
--size full --device cuda``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

_KEY = re.compile(r"^Level (?P<level>\d+): (?P<number>\d+)_(?P<name>.+)$")


class Source:
    """Files of a checkout or of a bare git mirror (read at HEAD), by repository path."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bare = not (root / "docs").exists() and (root / "HEAD").exists()

    def read(self, rel: str) -> str:
        if not self.bare:
            return (self.root / rel).read_text(encoding="utf-8")
        return subprocess.run(["git", "--git-dir", str(self.root), "show", f"HEAD:{rel}"], check=True,
                              capture_output=True, text=True).stdout


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-") or "model"


def leaderboard(src: Source, out: Path) -> dict:
    """Problems, one replay folder per model, and the authors' reported speedups."""
    index = json.loads(src.read("docs/assets/data.json"))
    reported, samples, problems = [], {}, set()
    for key, entries in index.items():
        m = _KEY.match(key)
        if not m:
            continue
        level, number, name = int(m["level"]), int(m["number"]), m["name"]
        pdir = out / "problems" / f"level{level}"
        pdir.mkdir(parents=True, exist_ok=True)
        (pdir / f"{number}_{name}.py").write_text(src.read(f"docs/assets/problems/l{level}_p{number}.py"))
        problems.add((level, number))
        for e in entries:
            model = _safe(str(e.get("display_name", "model")))
            k = samples.get((model, level, number), 0)
            samples[(model, level, number)] = k + 1
            code = src.read(f"docs/assets/solutions/{e['file']}.py")
            mdir = out / "replay" / model
            mdir.mkdir(parents=True, exist_ok=True)
            (mdir / f"level_{level}_problem_{number}_sample_{k}_kernel.py").write_text(code)
            speedup = e.get("torch_speedup")
            reported.append({"model": model, "level": level, "number": number, "sample": k,
                             "problem": f"level{level}/{number}_{name}", "file": e["file"],
                             "speedup": float(speedup) if isinstance(speedup, (int, float)) else None})
    (out / "reported.json").write_text(json.dumps(reported, indent=1))
    return {"kernels": len(reported), "problems": len(problems), "models": sorted({r["model"] for r in reported})}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", choices=["leaderboard"])
    ap.add_argument("source", type=Path, help="checkout or bare git mirror of the corpus")
    ap.add_argument("out", type=Path)
    args = ap.parse_args(argv)
    summary = leaderboard(Source(args.source), args.out)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
