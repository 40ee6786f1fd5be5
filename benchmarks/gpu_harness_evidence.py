"""GPU evidence for the harness: naive vs verified speedups of honest kernels, and the spread of the
verified timing over repeated evaluations (each a fresh candidate process).

    python benchmarks/gpu_harness_evidence.py --out results/ [--reps 5]

Writes harness_evidence.md and harness_evidence.json. Needs a CUDA GPU, torch and pydantic.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
from harness import EvalSettings  # noqa: E402

EX = ROOT / "harness" / "examples" / "cuda"
KERNELS = [  # (label, file, problem, size)
    ("ReLU (custom CUDA)", "relu.py", "level1/19_ReLU", "small"),
    ("softmax (custom CUDA)", "softmax.py", "level1/23_Softmax", "small"),
    ("matmul fp32 (custom tiled CUDA)", "matmul_fp32.py", "level1/1_Square_matrix_multiplication_", "full"),
    ("matmul with TF32 enabled", "matmul_tf32.py", "level1/1_Square_matrix_multiplication_", "full"),
    ("conv + fused ReLU/bias epilogue", "conv_relu_bias.py", "level2/1_Conv2D_ReLU_BiasAdd", "full"),
]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--budget-s", type=float, default=480, help="stop starting new evaluations after this")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    settings = EvalSettings(verified_seconds_per_subject=2.0, verified_target_rel_stderr=0.003,
                            expected_bytes_budget=3 * 2**30)
    t_start = time.perf_counter()
    evs = {size: harness.Evaluator("cuda", size, settings=settings) for size in ("small", "full")}
    sources = {f: (EX / f).read_text() for _, f, _, _ in KERNELS}
    builds = evs["full"].build_many(list(sources.values()))  # in parallel, before any timing
    for (label, _, _, _), b in zip(KERNELS, builds, strict=True):
        print(f"build {label}: ok={b.ok} {b.seconds:.0f}s cached={b.cached} {b.error[-300:]}", flush=True)
    for ev in evs.values():  # share the one build cache
        ev.cache_dir = evs["full"].cache_dir
    rows: list[dict] = []
    for rep in range(args.reps):
        for label, f, pid, size in KERNELS:
            if time.perf_counter() - t_start > args.budget_s:
                print("time budget reached", flush=True)
                break
            t0 = time.perf_counter()
            r = evs[size].evaluate(sources[f], pid)
            n, v = r.results["naive"], r.results["verified"]
            rows.append({"rep": rep, "kernel": label, "problem": pid, "size": size, "status": r.record.status,
                         "naive_verdict": n.verdict, "naive_speedup": n.speedup, "naive_kernel_ms": n.kernel_ms,
                         "naive_baseline_ms": n.baseline_ms, "verified_verdict": v.verdict, "verified_speedup": v.speedup,
                         "verified_kernel_ms": v.kernel_ms, "verified_baseline_ms": v.baseline_ms,
                         "verified_reasons": v.reasons[:3], "sol_score": v.sol_score,
                         "custom_kernel_ran": r.record.provenance.custom_kernel_called,
                         "max_abs_err_verified": max((t.error.max_abs for t in r.record.verified_trials if t.error), default=None),
                         "tf32_baseline_err": max((t.tf32_baseline_max_abs or 0 for t in r.record.verified_trials), default=None),
                         "memory_ratio": v.memory_ratio, "error": (r.record.error or "")[-500:],
                         "seconds": time.perf_counter() - t0})
            print(json.dumps(rows[-1]), flush=True)
            (out / "harness_evidence.json").write_text(json.dumps({"rows": rows,
                                                                    "environment": r.record.environment.model_dump() if r.record.environment else None}, indent=1))
    lines = ["| kernel | problem (size) | naive verdict | naive speedup | verified verdict | verified speedup "
             "(median of reps) | verified kernel ms, median | spread max/min over reps |",
             "|---|---|---|---|---|---|---|---|"]
    for label, _, pid, size in KERNELS:
        rs = [x for x in rows if x["kernel"] == label and x["status"] == "ok"]
        if not rs:
            lines.append(f"| {label} | {pid} ({size}) | not run | | | | | |")
            continue
        ks = [x["verified_kernel_ms"] for x in rs if x["verified_kernel_ms"]]
        spread = max(ks) / min(ks) if ks else float("nan")
        nv = statistics.median([x["naive_speedup"] for x in rs if x["naive_speedup"]] or [float("nan")])
        vv = statistics.median([x["verified_speedup"] for x in rs if x["verified_speedup"]] or [float("nan")])
        lines.append(f"| {label} | {pid} ({size}) | {rs[0]['naive_verdict']} | {nv:.2f}x | "
                     f"{','.join(sorted({x['verified_verdict'] for x in rs}))} | {vv:.2f}x | "
                     f"{statistics.median(ks):.4f} | {spread:.3f} (n={len(ks)}) |")
    (out / "harness_evidence.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    for ev in evs.values():
        ev.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
