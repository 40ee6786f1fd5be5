"""Summary statistics of timing samples, computed by the parent from the raw samples a candidate
process reports (never by code living in the candidate's interpreter)."""

from __future__ import annotations

import math
import statistics

from .record import TimingStats


def summarize(samples: list[float], method: str) -> TimingStats:
    kept = [float(x) for x in samples if isinstance(x, (int, float)) and math.isfinite(x)]
    s = sorted(kept)
    if not s:
        raise ValueError("no finite timing samples")
    q = statistics.quantiles(s, n=4) if len(s) >= 2 else [s[0]] * 3
    return TimingStats(
        method=method, n=len(s), mean_ms=statistics.fmean(s), median_ms=statistics.median(s),
        std_ms=statistics.pstdev(s) if len(s) > 1 else 0.0, min_ms=s[0], max_ms=s[-1], p25_ms=q[0], p75_ms=q[2],
        samples=[float(f"{x:.6g}") for x in kept],  # measured order; 6 digits: finer than any timer
    )
