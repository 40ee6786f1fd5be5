"""A speedup's 95% confidence interval from the timing samples behind it, and whether the host was too
noisy to tell.

Method, and why:

* A percentile bootstrap of the protocol's own statistic (median or mean) of baseline / kernel. Timings on a
  loaded host are heavy-tailed and often bimodal (time-sliced), so no normal formula holds for a median; the
  bootstrap assumes nothing about their shape, and its interval is of the very ratio the protocol reports.
* Paired where the timer interleaves. The verified timer runs kernel and baselines in alternating rounds,
  so sample i of each subject was taken in the same round: drawing index i for both at once keeps a load
  burst that slows both in one round out of the ratio (the interval is of the ratio, not of two separate
  times). Samples past the shorter subject's count (it met its precision first) are drawn on their own.
  The naive timer runs all kernel calls and then all baseline calls, so there each is drawn on its own.
* Seeded: a record re-scores to the same interval. Vectorised (numpy) and cached by the samples: a report
  scores every record under a dozen protocols (waterfall steps) that share the same timings.
* Records stored before samples were kept: a normal approximation from their summary statistics
  (se of the mean sigma/sqrt(n); of the median 1.2533 * (IQR / 1.349) / sqrt(n)), combined in log space.
* Then widened by the device's measured run-to-run drift (``BETWEEN_RUNS``): one run's samples cannot show how
  far another run lands (on the loaded 2-core host 8 of 26 kernels' intervals from two runs were disjoint
  without it). Whether a host was too noisy to tell is judged on the within-run interval alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..measure.record import TimingStats

RESAMPLES = 1000
SEED = 20250101
Z95 = 1.959964
# Noisy = the interval cannot tell a speedup within about +-12% (hi/lo above this) ...
NOISY_WIDTH = 1.25
# ... or kernel or baseline timings spread so widely that the host was visibly loaded (IQR / median).
NOISY_SPREAD = 0.5
MIN_SAMPLES = 2


# Run-to-run drift, which no interval from one run's samples can see: the load, clocks and placement of another
# run differ. Per device, a factor the interval is widened by each way, from repeated runs of the same kernels:
# the square root of the largest speedup ratio between runs (each run is as likely off as the other).
BETWEEN_RUNS: dict[str, tuple[float, str]] = {
    # demo sweep twice on the loaded 2-core dev machine, one thread: largest ratio 1.53x over 26 kernel pairs
    "cpu": (1.24, "benchmarks/results/cpu2core_demo_twice_one_thread.md"),
    # 11 kernels, each in 5 candidate processes on the H200: largest max/min 1.265x
    "cuda": (1.125, "benchmarks/results/h200_reproducibility.md"),
}


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    method: str


def between_runs(iv: Interval, device: str) -> Interval:
    """``iv`` widened by the device's run-to-run factor (unknown devices: as the CPU's, the wider one)."""
    factor, source = BETWEEN_RUNS.get(device.split(":")[0], BETWEEN_RUNS["cpu"])
    return Interval(iv.low / factor, iv.high * factor,
                    f"{iv.method}; widened x{factor:g} each way for run-to-run drift on {device} ({source})")


def ratio_interval(kernel: TimingStats | None, baseline: TimingStats | None, statistic: str,
                   paired: bool) -> Interval | None:
    """95% interval of ``statistic(baseline) / statistic(kernel)``; None without enough timing."""
    if kernel is None or baseline is None or kernel.n < MIN_SAMPLES or baseline.n < MIN_SAMPLES:
        return None
    if kernel.samples and baseline.samples and len(kernel.samples) >= MIN_SAMPLES \
            and len(baseline.samples) >= MIN_SAMPLES:
        lo, hi = _bootstrap(tuple(kernel.samples), tuple(baseline.samples), statistic, paired)
        how = "paired" if paired else "unpaired"
        return Interval(lo, hi, f"{how} bootstrap of the {statistic} ratio ({RESAMPLES} resamples, seed {SEED}, "
                                f"n={len(kernel.samples)}/{len(baseline.samples)})")
    return _from_summary(kernel, baseline, statistic)


def _from_summary(kernel: TimingStats, baseline: TimingStats, statistic: str) -> Interval | None:
    def point_and_se(s: TimingStats) -> tuple[float, float]:
        if statistic == "mean":
            return s.mean_ms, s.std_ms / math.sqrt(s.n)
        return s.median_ms, 1.2533 * (s.p75_ms - s.p25_ms) / 1.349 / math.sqrt(s.n)

    (k, se_k), (b, se_b) = point_and_se(kernel), point_and_se(baseline)
    if not (k > 0 and b > 0 and math.isfinite(se_k) and math.isfinite(se_b)):
        return None
    half = Z95 * math.hypot(se_k / k, se_b / b)
    r = b / k
    return Interval(r * math.exp(-half), r * math.exp(half),
                    f"normal approximation from the stored summary of the {statistic} (no samples stored)")


@lru_cache(maxsize=4096)
def _bootstrap(k: tuple[float, ...], b: tuple[float, ...], statistic: str, paired: bool) -> tuple[float, float]:
    rng = np.random.default_rng(SEED)
    ka, ba = np.asarray(k, dtype=float), np.asarray(b, dtype=float)
    f = np.median if statistic == "median" else np.mean

    def draw(arr: np.ndarray, idx: np.ndarray | None = None) -> np.ndarray:
        return arr[idx if idx is not None else rng.integers(0, len(arr), (RESAMPLES, len(arr)), dtype=np.int32)]

    if paired:
        m = min(len(ka), len(ba))
        idx = rng.integers(0, m, (RESAMPLES, m), dtype=np.int32)
        kk, bb = draw(ka[:m], idx), draw(ba[:m], idx)
        # the subject that kept running after the other met its precision: its extra samples drawn on their own
        if len(ka) > m:
            kk = np.concatenate([kk, draw(ka[m:])], axis=1)
        if len(ba) > m:
            bb = np.concatenate([bb, draw(ba[m:])], axis=1)
    else:
        kk, bb = draw(ka), draw(ba)
    fk, fb = f(kk, axis=1), f(bb, axis=1)
    ratios = fb[fk > 0] / fk[fk > 0]
    if len(ratios) == 0:
        return math.nan, math.nan
    lo, hi = np.quantile(ratios, [0.025, 0.975])
    return float(lo), float(hi)


def noise_reasons(kernel: TimingStats | None, baseline: TimingStats | None, interval: Interval | None) -> list[str]:
    """Why this speedup cannot be told apart from noise (empty: it can)."""
    if kernel is None or baseline is None:
        return []
    out = []
    if interval is None or not (math.isfinite(interval.low) and math.isfinite(interval.high)) or interval.low <= 0:
        out.append(f"too few timing samples for an interval (kernel n={kernel.n}, baseline n={baseline.n})")
    elif interval.high / interval.low > NOISY_WIDTH:
        out.append(f"95% interval [{interval.low:.3g}, {interval.high:.3g}] spans x{interval.high / interval.low:.2f} "
                   f"(more than x{NOISY_WIDTH:g})")
    for name, s in (("baseline", baseline), ("kernel", kernel)):
        if s.median_ms > 0 and (s.p75_ms - s.p25_ms) / s.median_ms > NOISY_SPREAD:
            out.append(f"the {name}'s times spread widely (interquartile range {100 * (s.p75_ms - s.p25_ms) / s.median_ms:.0f}% "
                       f"of the median, {s.min_ms:.3g}-{s.max_ms:.3g} ms): its host-side time varies call to call "
                       "(launches that outlast the launch lead, or a loaded host)")
    return out
