"""How to estimate the time a timed call hides from the judge's clock, from recorded per-call series (issue 30).

Reads series the judge's ``timing_floor`` received in real evaluations (per timed call: the judge's interval, the
reported kernel time; two calibration samples per call, taken right after it, in order) with the truth known: each
evaluation's clock was forged by a known ratio (1.0: honest), so the hidden time is the report times (ratio - 1).
Prints, per estimator of the hidden time, its error against that truth over the evaluations (the "excess": what the
call holds that neither the kernel nor the calibration explains; an estimator is as good as that excess is steady),
then, for several absolute credit allowances, what ``timing_floor``'s rule (median report + hidden - allowance - 3%)
charges the honest runs and what it lets the forged ones buy (real time / credited).

    python benchmarks/witness_estimators.py [benchmarks/results/cpu_witness_series.jsonl] [--calibrated-by judge]

The series file was recorded with a temporary line in ``timing_floor`` appending its inputs (not in the code base);
its header fields say how each evaluation was made (benchmarks/results/cpu_witness_resolution.md).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.judge.judge import CREDIT_SLACK_REL, QUANTILE, _quantile  # noqa: E402

DEFAULT = Path(__file__).resolve().parent / "results" / "cpu_witness_series.jsonl"


def _pairs(calibration: list[float], n: int, how) -> list[float]:
    return [how(calibration[2 * k], calibration[2 * k + 1]) for k in range(n)]


def estimators(intervals: list[float], reported: list[float], cal: list[float]) -> dict[str, float]:
    u = [i - r for i, r in zip(intervals, reported, strict=True)]
    n = len(u)
    paired_min = [a - c for a, c in zip(u, _pairs(cal, n, min), strict=True)]
    paired_mean = [a - c for a, c in zip(u, _pairs(cal, n, lambda x, y: (x + y) / 2), strict=True)]
    out = {f"unpaired q{p:g} - q{p:g}": _quantile(u, p) - _quantile(cal, p) for p in (0.05, QUANTILE, 0.25, 0.5)}
    out.update({f"paired (min of 2) q{p:g}": _quantile(paired_min, p) for p in (0.1, 0.25)})
    out["paired (min of 2) median"] = statistics.median(paired_min)
    out["paired (mean of 2) median"] = statistics.median(paired_mean)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("series", nargs="?", default=str(DEFAULT))
    ap.add_argument("--calibrated-by", default="judge", choices=["judge", "peer"])
    ap.add_argument("--allowances", type=float, nargs="+", default=[0.02, 0.1, 0.15, 0.2, 0.25, 0.3])
    a = ap.parse_args()
    rows = [json.loads(line) for line in Path(a.series).read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["calibrated_by"] == a.calibrated_by and len(r["calibration_ms"]) >= 2 * len(r["reported_ms"])]
    print(f"{len(rows)} evaluations calibrated by {a.calibrated_by} ({sum(r['ratio'] == 1 for r in rows)} honest), "
          f"load {min(r['load1'] for r in rows):.1f}-{max(r['load1'] for r in rows):.1f}\n")
    print("| estimator of the hidden time | excess mean ms | sd | lowest | highest |\n|---|---|---|---|---|")
    excess: dict[str, list[float]] = {}
    for r in rows:
        truth = statistics.median(r["reported_ms"]) * (r["ratio"] - 1)
        for k, v in estimators(r["intervals_ms"], r["reported_ms"], r["calibration_ms"]).items():
            excess.setdefault(k, []).append(v - truth)
    for k, xs in excess.items():
        print(f"| {k} | {statistics.fmean(xs):.3f} | {statistics.pstdev(xs):.3f} | {min(xs):.3f} | {max(xs):.3f} |")
    print("\n| credit allowance ms (+3%) | honest charged: median | mean | most | forged bought (real / credited): median | most |"
          "\n|---|---|---|---|---|---|")
    for allowance in a.allowances:
        charged, bought = [], []
        for r in rows:
            med = statistics.median(r["reported_ms"])
            hidden = (_quantile([i - x for i, x in zip(r["intervals_ms"], r["reported_ms"], strict=True)], QUANTILE)
                      - _quantile(r["calibration_ms"], QUANTILE))
            credited = max(med, med + hidden - allowance - CREDIT_SLACK_REL * med)
            (charged if r["ratio"] == 1 else bought).append(credited / med - 1 if r["ratio"] == 1 else med * r["ratio"] / credited)
        print(f"| {allowance:g} | {statistics.median(charged):+.1%} | {statistics.fmean(charged):+.1%} | {max(charged):+.1%} | "
              f"{statistics.median(bought):.2f}x | {max(bought):.2f}x |")


if __name__ == "__main__":
    main()
