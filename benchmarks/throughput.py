"""Evaluation throughput: the pipelined pool against a serial loop, cold and warm build cache.

    python benchmarks/throughput.py --device cuda --out DIR [--gpus N] [--limit K]
    python benchmarks/throughput.py --device cpu --out DIR --limit 12      # the same pipeline on a CPU

    python benchmarks/throughput.py --device cuda --candidates cuda --serial-sample 3 --out DIR

Candidate sets (--candidates):

* fixtures: every fixture of harness/fixtures that runs on the device (hack and legitimate kernels:
  Python-only, C++ and CUDA/Triton; 37 on a CPU, 44 on a GPU). Few of them compile anything.
* cuda: what a model's sweep looks like: every candidate a CUDA ``load_inline`` extension. The 15
  hand-written CUDA kernels of the repo (agents/demo_kernels/cuda, harness/examples/cuda, the CUDA
  legitimate fixtures), each twice: as written and as a resubmission whose CUDA source differs by
  one line (a new source hash, so a real rebuild, as when a model resubmits a kernel with a tweak).

Four passes, one process:

* serial-cold:    one Evaluator; for each candidate: build, then evaluate; empty build cache and an
                  empty precompiled-header folder (its one-off cost is inside the pass)
* pipelined-cold: LocalExecutor (builds on all cores ahead of evaluation, one worker per GPU); empty
                  cache and precompiled-header folder of its own
* serial-warm / pipelined-warm: the same with the caches the cold passes filled

With --serial-sample K the serial passes run on K candidates spread evenly over the set instead of
all of them (a serial cold pass over 30 CUDA builds is ~45 minutes of GPU-host time); their wall time
is then projected to the whole set as K-candidate mean x N and labelled so in the table.

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

from _results import cores, write_results

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
        # eval_seconds starts after the build: both passes hand the evaluator a finished build.
        out["overhead"] += max(0.0, (r.eval_seconds or 0.0) - c - t)
    return out


def compile_log(cache: str) -> list[dict]:
    """The compile launcher's log of every translation unit compiled or reused under this cache."""
    f = Path(cache) / "objects" / "compiles.jsonl"
    return [json.loads(x) for x in f.read_text().splitlines()] if f.exists() else []


def compile_summary(rows: list[dict]) -> dict[str, dict]:
    """Per unit (main.cpp: torch's bindings, cuda.cu: the kernel): compiled, reused, median compile s."""
    out = {}
    for unit in sorted({r["unit"] for r in rows}):
        rs = [r for r in rows if r["unit"] == unit]
        compiled = [r["seconds"] for r in rs if not r["hit"] and r["rc"] == 0]
        out[unit] = {"compiled": len(compiled), "reused": sum(1 for r in rs if r["hit"]),
                     "failed": sum(1 for r in rs if r["rc"] != 0), "compile_s_median": pct(compiled, 0.5),
                     "compile_s_sum": sum(compiled)}
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


_CUDA_SOURCES = [  # (file, problem)
    *[(f"agents/demo_kernels/cuda/{f}", p) for f, p in [
        ("l1_19_relu_t1.py", "level1/19_ReLU"), ("l1_19_relu_t2.py", "level1/19_ReLU"),
        ("l1_1_matmul.py", "level1/1_Square_matrix_multiplication_"),
        ("l1_20_leaky_relu_t1.py", "level1/20_LeakyReLU"), ("l1_20_leaky_relu_t2.py", "level1/20_LeakyReLU"),
        ("l1_23_softmax_t1.py", "level1/23_Softmax"), ("l1_23_softmax_t2.py", "level1/23_Softmax"),
        ("l1_88_gelu.py", "level1/88_MinGPTNewGelu"),
        ("l1_9_tall_skinny_matmul.py", "level1/9_Tall_skinny_matrix_multiplication_")]],
    ("harness/examples/cuda/relu.py", "level1/19_ReLU"), ("harness/examples/cuda/softmax.py", "level1/23_Softmax"),
    ("harness/examples/cuda/matmul_fp32.py", "level1/1_Square_matrix_multiplication_"),
    ("harness/examples/cuda/conv_relu_bias.py", "level2/1_Conv2D_ReLU_BiasAdd"),
    ("harness/fixtures/legit/cuda/cuda_relu_vec4_specialised.py", "level1/19_ReLU"),
    ("harness/fixtures/legit/cuda/cuda_fused_layernorm_workspace.py", "level1/40_LayerNorm"),
]


def cuda_candidates(variants: int = 2) -> list[tuple[str, str]]:
    """Each CUDA kernel as written, then as resubmissions with a one-line change in the CUDA source."""
    out = []
    for v in range(variants):
        for rel, pid in _CUDA_SOURCES:
            src = (ROOT / rel).read_text()
            if "load_inline" not in src or "#include <torch/extension.h>" not in src:
                raise SystemExit(f"{rel}: not a load_inline CUDA candidate")
            if v:
                src = src.replace("#include <torch/extension.h>",
                                  f"#include <torch/extension.h>\n// resubmission {v}", 1)
            out.append((src, pid))
    return out


def sample(items: list, k: int) -> list:
    if not k or k >= len(items):
        return list(items)
    step = len(items) / k
    return [items[int(i * step)] for i in range(k)]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="small")
    ap.add_argument("--gpus", type=int, default=None, help="evaluation workers (default: all GPUs; 1 on cpu)")
    ap.add_argument("--build-workers", type=int, default=harness.usable_cpus())
    ap.add_argument("--limit", type=int, default=0, help="use only the first K candidates")
    ap.add_argument("--candidates", choices=("fixtures", "cuda"), default="fixtures")
    ap.add_argument("--serial-sample", type=int, default=0,
                    help="serial passes on K evenly spread candidates, projected to the set (0: all)")
    ap.add_argument("--verified-seconds", type=float, default=None,
                    help="verified timing budget per subject (default 2 on a GPU, 0.5 on a CPU)")
    ap.add_argument("--cache-root", default=None,
                    help="keep the serial and pipelined build caches under this (empty) folder, e.g. for "
                         "benchmarks/reproducibility.py --cache-dir ROOT/pipelined (default: temporary)")
    ap.add_argument("--prespawn", choices=["auto", "on", "off"], default="auto",
                    help="EvalSettings.prespawn_worker: start each next candidate process ahead of its job "
                         "(auto: on with 8 or more usable CPUs)")
    ap.add_argument("--modes", default="cold,warm", help="which cache states to run: cold, warm or both")
    ap.add_argument("--prespawn-pass", action="store_true",
                    help="after the four passes, a fifth: pipelined, warm cache, with prespawn_worker on")
    ap.add_argument("--out", default="results")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.candidates == "cuda":
        cands = cuda_candidates()[: args.limit or None]
    else:
        fixtures = [f for f in all_fixtures() if f.runs_on(args.device)]
        cands = [(f.source(), f.problem) for f in fixtures][: args.limit or None]
    serial_cands = sample(cands, args.serial_sample)
    vsec = args.verified_seconds or (2.0 if args.device != "cpu" else 0.5)
    settings = EvalSettings(verified_seconds_per_subject=vsec, prespawn_worker={"auto": None, "on": True, "off": False}[args.prespawn],
                            verified_max_iters=200, cpu_threads=1 if args.device == "cpu" else None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(args.cache_root) if args.cache_root else Path(tmp)
        serial_cache, pipe_cache = str(root / "serial"), str(root / "pipelined")
        for d in (serial_cache, pipe_cache):
            if Path(d).exists() and any(Path(d).iterdir()):
                raise SystemExit(f"{d} is not empty: a cold pass needs an empty cache")
        modes = [m for m in ("cold", "warm") if m in args.modes.split(",")]
        passes = [(m, k, settings) for m in modes for k in ("serial", "pipelined")]
        if args.prespawn_pass:
            passes.append(("warm-prespawn", "pipelined", settings.model_copy(update={"prespawn_worker": True})))
        for mode, kind, pass_settings in passes:
            cache = serial_cache if kind == "serial" else pipe_cache
            # Each kind gets its own precompiled-header and object folders inside its cache: cold means cold.
            os.environ["KV_PCH_DIR"] = str(Path(cache) / "pch")
            os.environ["KV_OBJECT_CACHE_DIR"] = str(Path(cache) / "objects")
            compiles_before = len(compile_log(cache))
            if kind == "serial":
                wall, evs = run_serial(serial_cands, args.device, args.size, pass_settings, cache)
            else:
                wall, evs = run_pipelined(cands, args.device, args.size, pass_settings, cache, args.gpus,
                                          args.build_workers)
            builds = [e.record.build_seconds for e in evs if e.record.build_seconds]
            overheads = [max(0.0, (e.record.eval_seconds or 0)
                             - sum(e.record.phase_seconds.get(k, 0) for k in ("init", "correctness", "timing")))
                         for e in evs if e.record.status != "compile_error"]
            projected = wall * len(cands) / len(evs)
            row = {"pass": f"{kind}-{mode}", "candidates": len(evs), "wall_s": wall,
                   "wall_s_for_set": projected, "projected": len(evs) < len(cands),
                   "per_hour": 3600 * len(evs) / wall, "seconds": split(evs),
                   "phase_seconds": {k: sum(e.record.phase_seconds.get(k, 0.0) for e in evs)
                                     for k in sorted({k for e in evs for k in e.record.phase_seconds})},
                   "compiles": compile_summary(compile_log(cache)[compiles_before:]),
                   "build_median_s": pct(builds, 0.5), "build_p90_s": pct(builds, 0.9), "builds": len(builds),
                   "overhead_median_s": statistics.median(overheads) if overheads else None,
                   "verdicts": {v: sum(1 for e in evs if e.results["verified"].verdict == v)
                                for v in harness.VERDICTS},
                   # Per candidate, to compare timings taken while other candidates compiled (cold)
                   # with the same candidates timed on a quiet host (warm).
                   "candidates_detail": [
                       {"problem": e.record.problem_id, "hash": e.record.candidate_hash[:12],
                        "verified": e.results["verified"].verdict, "speedup": e.results["verified"].speedup,
                        "kernel_ms": e.results["verified"].kernel_ms, "eval_s": e.record.eval_seconds,
                        "prespawned": e.record.worker_prespawned} for e in evs]}
            rows.append(row)
            print(json.dumps(row), flush=True)
    by = {r["pass"]: r for r in rows}
    gpu = ""
    if args.device.startswith("cuda"):
        import torch

        gpu = f", {torch.cuda.get_device_name(0)}"
    lines = [f"Throughput on {platform.node()} ({cores()}{gpu}, device {args.device}, size {args.size}, "
             f"{len(cands)} candidates ({args.candidates}), build workers {args.build_workers}, "
             f"verified timing {vsec:g} s per subject)", "",
             "| pass | candidates run | wall s (run) | wall s for all candidates | candidates/h | build s | "
             "correctness s | timing s | overhead s | median overhead s/cand | build median / p90 s (n) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        s = r["seconds"]
        bm = "-" if r["build_median_s"] is None else f"{r['build_median_s']:.1f} / {r['build_p90_s']:.1f} ({r['builds']})"
        proj = f"{r['wall_s_for_set']:.0f}" + (" (projected)" if r["projected"] else "")
        lines.append(f"| {r['pass']} | {r['candidates']} | {r['wall_s']:.0f} | {proj} | {r['per_hour']:.0f} | "
                     f"{s['build']:.0f} | {s['correctness']:.0f} | {s['timing']:.0f} | {s['overhead']:.0f} | "
                     f"{r['overhead_median_s']:.1f} | {bm} |")
    lines.append("\nper pass, seconds summed over candidates by phase (startup: process start and imports; load: "
                 "the candidate's import incl. its extension; reference: outputs computed or read) and "
                 "translation units compiled / reused (median compile s):")
    for r in rows:
        ph = ", ".join(f"{k} {v:.0f}" for k, v in r["phase_seconds"].items())
        units = ", ".join(f"{u} {c['compiled']}/{c['reused']}"
                          + (f" ({c['compile_s_median']:.0f} s)" if c["compile_s_median"] else "")
                          for u, c in r["compiles"].items()) or "none"
        lines.append(f"- {r['pass']}: {ph}; units {units}")
    for mode in [m for m in ("cold", "warm") if f"pipelined-{m}" in by]:
        ratio = by[f"serial-{mode}"]["wall_s_for_set"] / by[f"pipelined-{mode}"]["wall_s"]
        note = f" (serial projected from {len(serial_cands)} candidates)" if len(serial_cands) < len(cands) else ""
        lines.append(f"\npipelined vs serial ({mode} cache): {ratio:.2f}x throughput{note}")
    pipe = [r for r in rows if r["pass"].startswith("pipelined")]
    same = all(r["verdicts"] == pipe[0]["verdicts"] for r in pipe)
    cold_t = {d["hash"]: d["kernel_ms"] for d in by.get("pipelined-cold", {}).get("candidates_detail", [])
              if d["kernel_ms"]}
    ratios = [cold_t[d["hash"]] / d["kernel_ms"] for d in by.get("pipelined-warm", {}).get("candidates_detail", [])
              if d["kernel_ms"] and d["hash"] in cold_t]
    if ratios:
        lines.append(f"\nverified kernel time while other candidates compiled / on a quiet host (same candidates): "
                     f"median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f} (n={len(ratios)})")
    tally = ", ".join(f"{k} {v}" for k, v in pipe[0]["verdicts"].items() if v)
    if len(pipe) > 1:
        lines.append(f"\nverdict tallies identical between the {len(pipe)} pipelined passes: {same} ({tally})")
    else:
        lines.append(f"\nverdict tally of the pipelined pass: {tally}")
    write_results(out, "throughput", "\n".join(lines) + "\n", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
