"""Evaluation throughput: the pipelined pool against a serial loop, cold and warm build cache.

    python benchmarks/throughput.py --device cuda --out DIR [--gpus N] [--limit K]
    python benchmarks/throughput.py --device cpu --out DIR --limit 12      # the same pipeline on a CPU

The candidate set is every fixture of harness/fixtures that runs on the device (hack and legitimate
kernels: Python-only, C++ and CUDA/Triton; 37 on a CPU, 44 on a GPU). Four passes, one process:

* serial-cold:    one Evaluator; for each candidate: build, then evaluate; empty build cache
* pipelined-cold: LocalExecutor (builds on all cores ahead of evaluation, one worker per GPU); empty cache
* serial-warm / pipelined-warm: the same with the cache the cold passes filled

Per pass: wall time, candidates per hour, and where the time went, summed over candidates from the
records (build, correctness incl. init, timing, everything else = overhead: process starts, imports,
the reference outputs). Build latency: median and p90 of build seconds per candidate that compiles.
Prints a markdown table and writes throughput.md / throughput.json under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
from agents.executor import LocalExecutor  # noqa: E402
from harness import EvalSettings  # noqa: E402
from harness.fixtures import all_fixtures  # noqa: E402


def split(evs: list[harness.Evaluation]) -> dict[str, float]:
    out = {"build": 0.0, "correctness": 0.0, "timing": 0.0, "overhead": 0.0}
    for e in evs:
        r = e.record
        ph = r.phase_seconds
        b = r.build_seconds or 0.0
        c = ph.get("init", 0.0) + ph.get("correctness", 0.0)
        t = ph.get("timing", 0.0)
        out["build"] += b
        out["correctness"] += c
        out["timing"] += t
        out["overhead"] += max(0.0, (r.eval_seconds or 0.0) - b - c - t)
    return out


def pct(xs: list[float], q: float) -> float | None:
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))]


def run_serial(cands, device, size, settings, cache) -> tuple[float, list]:
    t0 = time.perf_counter()
    evs = []
    with harness.Evaluator(device, size, settings=settings, cache_dir=cache) as ev:
        for src, pid in cands:
            built = ev.build(src)
            evs.append(ev.evaluate(src, pid, build=built))
    return time.perf_counter() - t0, evs


def run_pipelined(cands, device, size, settings, cache, gpus, build_workers) -> tuple[float, list]:
    t0 = time.perf_counter()
    ex = LocalExecutor(device, size, gpus=gpus, build_workers=build_workers, settings=settings,
                       cache_dir=cache, memoize=False)
    try:
        futs = [ex.submit(src, pid) for src, pid in cands]
        evs = [f.result() for f in futs]
    finally:
        ex.close()
    return time.perf_counter() - t0, evs


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="small")
    ap.add_argument("--gpus", type=int, default=None, help="evaluation workers (default: all GPUs; 1 on cpu)")
    ap.add_argument("--build-workers", type=int, default=os.cpu_count())
    ap.add_argument("--limit", type=int, default=0, help="use only the first K candidates")
    ap.add_argument("--out", default="results")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fixtures = [f for f in all_fixtures() if f.runs_on(args.device)]
    cands = [(f.source(), f.problem) for f in fixtures][: args.limit or None]
    settings = EvalSettings(verified_seconds_per_subject=2.0 if args.device != "cpu" else 0.5,
                            verified_max_iters=200, cpu_threads=1 if args.device == "cpu" else None)
    rows = []
    with tempfile.TemporaryDirectory() as serial_cache, tempfile.TemporaryDirectory() as pipe_cache:
        for mode in ("cold", "warm"):
            for kind in ("serial", "pipelined"):
                cache = serial_cache if kind == "serial" else pipe_cache
                if kind == "serial":
                    wall, evs = run_serial(cands, args.device, args.size, settings, cache)
                else:
                    wall, evs = run_pipelined(cands, args.device, args.size, settings, cache, args.gpus,
                                              args.build_workers)
                builds = [e.record.build_seconds for e in evs if e.record.build_seconds]
                overheads = [max(0.0, (e.record.eval_seconds or 0) - (e.record.build_seconds or 0)
                                 - sum(e.record.phase_seconds.get(k, 0) for k in ("init", "correctness", "timing")))
                             for e in evs]
                row = {"pass": f"{kind}-{mode}", "candidates": len(evs), "wall_s": wall,
                       "per_hour": 3600 * len(evs) / wall, "seconds": split(evs),
                       "build_median_s": pct(builds, 0.5), "build_p90_s": pct(builds, 0.9), "builds": len(builds),
                       "overhead_median_s": statistics.median(overheads) if overheads else None,
                       "verdicts": {v: sum(1 for e in evs if e.results["verified"].verdict == v)
                                    for v in harness.VERDICTS}}
                rows.append(row)
                print(json.dumps(row), flush=True)
    by = {r["pass"]: r for r in rows}
    lines = [f"Throughput on {platform.node()} ({os.cpu_count()} cores, device {args.device}, size {args.size}, "
             f"{len(cands)} candidates, build workers {args.build_workers})", "",
             "| pass | wall s | candidates/h | build s | correctness s | timing s | overhead s | median overhead s/cand | "
             "build median / p90 s (n) |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["seconds"]
        bm = "-" if r["build_median_s"] is None else f"{r['build_median_s']:.1f} / {r['build_p90_s']:.1f} ({r['builds']})"
        lines.append(f"| {r['pass']} | {r['wall_s']:.0f} | {r['per_hour']:.0f} | {s['build']:.0f} | {s['correctness']:.0f} | "
                     f"{s['timing']:.0f} | {s['overhead']:.0f} | {r['overhead_median_s']:.1f} | {bm} |")
    for mode in ("cold", "warm"):
        ratio = by[f"serial-{mode}"]["wall_s"] / by[f"pipelined-{mode}"]["wall_s"]
        lines.append(f"\npipelined vs serial ({mode} cache): {ratio:.2f}x throughput")
    same = all(r["verdicts"] == rows[0]["verdicts"] for r in rows)
    lines.append(f"\nverdict tallies identical across passes: {same}")
    text = "\n".join(lines) + "\n"
    (out / "throughput.md").write_text(text)
    (out / "throughput.json").write_text(json.dumps(rows, indent=1))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
