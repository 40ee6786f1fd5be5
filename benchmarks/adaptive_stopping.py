"""What a stopping rule on the median would have saved of verified timing, and what it would have changed, replayed
from recorded samples (issue 31: "verified timing stops as soon as the interval is as narrow as the protocol needs").

    python benchmarks/adaptive_stopping.py RUN [RUN ...] [--targets 0.005,0.01,0.02] [--out DIR]

Verified scores the median of each subject's samples, but the timing loop (harness.measure.timing._done) stops a
subject on the standard error of its mean, which a heavy right tail (a descheduled call, a clock step) keeps wide:
on the H200 sweep most subjects ran to their 500-call cap. This replays each recorded subject's samples in the order
they were taken (rounds of 5 from the 20th) and stops it at the first count where the median's distribution-free 95%
interval (order statistics) is within +-TARGET of the median. For each target it prints the share of timed calls
kept, how far each verified speedup (the TF32 baseline's median over the kernel's) moved from the full run's, and
how many kernels changed a fast_p class (1.0, 1.5, 2.0)."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from _results import write_results

SUBJECTS = ("verified_kernel", "verified_baseline_tf32", "verified_baseline_fp32", "verified_baseline_compile")
MIN_ITERS, ROUND, Z95 = 20, 5, 1.96
THRESHOLDS = (1.0, 1.5, 2.0)


def median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])


def median_halfwidth(xs: list[float]) -> float:
    """Relative half-width of the median's 95% interval from order statistics (no distribution assumed)."""
    s = sorted(xs)
    n = len(s)
    k = Z95 * math.sqrt(n) / 2
    lo, hi = s[max(0, math.floor(n / 2 - k))], s[min(n - 1, math.ceil(n / 2 + k))]
    m = median(s)
    return max(m - lo, hi - m) / m if m > 0 else math.inf


def drifting(xs: list[float], target: float) -> bool:
    """The median of the later half off the earlier half's by more than the target: the times still move."""
    half = len(xs) // 2
    a, b = median(xs[:half]), median(xs[half:])
    return a <= 0 or abs(b / a - 1) > target


def stop_at(samples: list[float], target: float, drift: bool = False) -> int:
    n = MIN_ITERS
    while n < len(samples):
        if median_halfwidth(samples[:n]) <= target and not (drift and drifting(samples[:n], target)):
            return n
        n += ROUND
    return len(samples)


def subjects(run: Path):
    for line in (run / "attempts.jsonl").read_text().splitlines():
        a = json.loads(line)
        timing = (a.get("record") or {}).get("timing") or {}
        got = {k: timing[k]["samples"] for k in SUBJECTS if isinstance(timing.get(k), dict) and timing[k].get("samples")}
        if "verified_kernel" in got and "verified_baseline_tf32" in got:
            yield a["problem_id"], got


def fast_class(x: float) -> int:
    return sum(x >= t for t in THRESHOLDS)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--targets", default="0.005,0.01,0.02")
    ap.add_argument("--out", default=None)
    ap.add_argument("--drift", action="store_true", help="also require the later half's median to agree with the "
                                                         "earlier half's within the target")
    a = ap.parse_args()
    kernels = [k for run in a.runs for k in subjects(Path(run))]
    rows = []
    for target in [float(t) for t in a.targets.split(",")]:
        calls_all = calls_kept = 0
        moved, changed = [], []
        for pid, got in kernels:
            cut = {}
            for name, xs in got.items():
                n = stop_at(xs, target, a.drift)
                calls_all += len(xs)
                calls_kept += n
                cut[name] = xs[:n]
            full = median(got["verified_baseline_tf32"]) / median(got["verified_kernel"])
            short = median(cut["verified_baseline_tf32"]) / median(cut["verified_kernel"])
            moved.append(abs(math.log(short / full)))
            if fast_class(short) != fast_class(full):
                changed.append(f"{pid} {full:.3f}x -> {short:.3f}x")
        moved.sort()
        rows.append({"target": target, "kernels": len(kernels), "calls_kept_share": calls_kept / max(1, calls_all),
                     "speedup_moved_median_pct": 100 * (math.exp(moved[len(moved) // 2]) - 1),
                     "speedup_moved_max_pct": 100 * (math.exp(moved[-1]) - 1),
                     "fast_p_changed": changed})
    lines = ["| target (median's 95% half-width) | kernels | timed calls kept | speedup moved, median | max | "
             "fast_p class changed |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| +-{100 * r['target']:.1f}% | {r['kernels']} | {100 * r['calls_kept_share']:.0f}% | "
                     f"{r['speedup_moved_median_pct']:.2f}% | {r['speedup_moved_max_pct']:.2f}% | "
                     f"{len(r['fast_p_changed'])}{': ' + '; '.join(r['fast_p_changed']) if r['fast_p_changed'] else ''} |")
    text = "\n".join(lines)
    if not a.out:
        print(text)
    else:
        write_results(Path(a.out), "adaptive_stopping", text, {"runs": a.runs, "rows": rows})


if __name__ == "__main__":
    main()
