"""Lay out a public corpus of LLM-written KernelBench kernels for ``replay:`` (never committed: run it where
the corpus was fetched, write outside the repo or under an ignored folder).

    python benchmarks/corpora.py leaderboard /work/.mirror/anneouyang+KernelBenchLeaderboard/repo OUT

``leaderboard`` (anneouyang/KernelBenchLeaderboard, a bare git mirror or a checkout): the single-shot kernels
of its models (383 of seven models as laid out on 2026-12-01), with the authors' speedups on an L40S. Writes

    OUT/problems/level{L}/{N}_{name}.py        the problem files of that version (--problems-dir)
    OUT/replay/{model}/level_{L}_problem_{N}_sample_{k}_kernel.py    one folder per model (replay:DIR)
    OUT/reported.json                          [{model, level, number, sample, problem, speedup, file}]

``cudal1`` (deepreinforce-ai/CUDA-L1, ``optimized_cuda_code/GPU.json``, JSON lines): the RL-generated kernels of
one GPU (``--gpu h100`` by default; entries without code are skipped), with the authors' speedups measured on that
GPU (``score_default``: reference time over kernel time; ``score_torch_compile_default`` beside it). Each entry
carries its reference; problems are named after the KernelBench manifest and written to OUT/problems unless a
file of that level and number is there already (laid out by ``leaderboard`` into the same OUT): then a kernel
whose reference differs from that file is left out and listed in OUT/skipped.json, so one problems folder serves
both corpora in one sweep. Appends to OUT/reported.json.

Sweep: ``python -m agents.sweep --models replay:OUT/replay/MODEL[,replay:...] --problems-dir OUT/problems
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
                             "speedup": float(speedup) if isinstance(speedup, (int, float)) else None, "gpu": "L40S"})
    (out / "reported.json").write_text(json.dumps(reported, indent=1))
    return {"kernels": len(reported), "problems": len(problems), "models": sorted({r["model"] for r in reported})}


MANIFEST = Path(__file__).resolve().parent.parent.parent / "shared" / "kernelbench" / "manifest.json"


def cudal1(src: Source, out: Path, gpu: str = "h100", manifest: Path = MANIFEST) -> dict:
    """One replay folder (``cuda-l1-GPU``) of the entries with code; problems shared with an existing layout."""
    names = {(p["level"], p["id"]): p["name"] for p in json.loads(manifest.read_text())["problems"]}
    rows = [json.loads(line) for line in src.read(f"optimized_cuda_code/{gpu}.json").splitlines() if line.strip()]
    model = f"cuda-l1-{gpu}"
    mdir = out / "replay" / model
    mdir.mkdir(parents=True, exist_ok=True)
    reported_path, skipped_path = out / "reported.json", out / "skipped.json"
    reported = json.loads(reported_path.read_text()) if reported_path.exists() else []
    reported = [r for r in reported if r["model"] != model]  # a second layout replaces the first
    skipped = json.loads(skipped_path.read_text()) if skipped_path.exists() else []
    skipped = [r for r in skipped if r["model"] != model]
    for r in rows:
        level, number, code = int(r["level_id"]), int(r["task_id"]), r.get("custom_code")
        if not code or code.strip() == "None":
            continue  # the authors' note: no kernel faster than the reference, or the reference copied (some say "None")
        pdir = out / "problems" / f"level{level}"
        pdir.mkdir(parents=True, exist_ok=True)
        existing = sorted(pdir.glob(f"{number}_*.py"))
        if existing and existing[0].read_text().strip() != r["ref_code"].strip():
            skipped.append({"model": model, "level": level, "number": number,
                            "why": f"its reference differs from {existing[0].name} of the shared problems folder"})
            continue
        if not existing:
            (pdir / f"{names[(level, number)]}.py").write_text(r["ref_code"])
        problem = existing[0].stem if existing else names[(level, number)]
        (mdir / f"level_{level}_problem_{number}_sample_0_kernel.py").write_text(code)
        score = r.get("score_default")
        compiled = r.get("score_torch_compile_default")
        reported.append({"model": model, "level": level, "number": number, "sample": 0,
                         "problem": f"level{level}/{problem}", "file": f"{gpu}.json#{level}/{number}",
                         "speedup": float(score) if isinstance(score, (int, float)) else None,
                         "speedup_vs_compile": float(compiled) if isinstance(compiled, (int, float)) else None,
                         "gpu": gpu.upper()})
    reported_path.write_text(json.dumps(reported, indent=1))
    skipped_path.write_text(json.dumps(skipped, indent=1))
    n = sum(1 for r in reported if r["model"] == model)
    return {"kernels": n, "skipped": sum(1 for r in skipped if r["model"] == model), "model": model}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", choices=["leaderboard", "cudal1"])
    ap.add_argument("source", type=Path, help="checkout or bare git mirror of the corpus")
    ap.add_argument("out", type=Path)
    ap.add_argument("--gpu", default="h100", help="cudal1: which GPU's file (h100, a100, l40, 3090, h20)")
    args = ap.parse_args(argv)
    src = Source(args.source)
    summary = leaderboard(src, args.out) if args.corpus == "leaderboard" else cudal1(src, args.out, args.gpu)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
