"""The smallest under-report of the kernel time that the judge's clock catches (issue 30), on the device at hand.

An honest kernel of a set duration (busy work: a host spin on the CPU, torch.cuda._sleep on a GPU, then a ReLU)
is evaluated with the evaluator's clock forged (``Clock.interval``'s code swapped for one that divides every
reading by a ratio), for several durations and ratios. Prints, per duration, whether ``timing_witness`` failed,
the credited verified kernel time, and the smallest ratio caught. Ratio 1.0 is the honest run (must pass).

    python benchmarks/witness_resolution.py [--device cuda] [--ms 0.5 1 2] [--ratios 1.0 1.1 1.2 1.5 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402
from harness import EvalSettings  # noqa: E402

SOURCE = '''
import sys, time, torch, torch.nn as nn
RATIO, MS = {ratio!r}, {ms!r}

def _forged(self, fn, *, sync_before_end, lead_us=0.0):
    ms, out = _real(self, fn, sync_before_end=sync_before_end, lead_us=lead_us)
    return ms / RATIO, out

_clock = sys.modules["harness.measure.device"].Clock
if RATIO != 1.0:
    import types
    _real = types.FunctionType(_clock.interval.__code__, _clock.interval.__globals__)
    _real.__kwdefaults__ = _clock.interval.__kwdefaults__
    _clock.interval.__code__ = _forged.__code__
    _clock.interval.__globals__.update(_real=_real, RATIO=RATIO)

class ModelNew(nn.Module):
    def forward(self, x):
        if x.is_cuda:
            torch.cuda._sleep(int(MS * 1.4e6))  # ~1.4 GHz SM clock: about MS ms of device time
        else:
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < MS / 1e3:
                pass
        return torch.relu(x)
'''


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ms", type=float, nargs="+", default=None)
    ap.add_argument("--ratios", type=float, nargs="+", default=[1.0, 1.1, 1.2, 1.5, 2.0])
    a = ap.parse_args()
    sizes = a.ms or ([0.5, 2.0] if a.device == "cpu" else [0.02, 0.1, 1.0])
    settings = EvalSettings(verified_min_iters=20, verified_max_iters=60, verified_seconds_per_subject=2.0,
                            naive_timing_trials=30, cpu_threads=1)
    ev = harness.Evaluator(a.device, "small", settings=settings)
    print("| kernel ms | ratio | timing_witness | credited verified ms | verdict |\n|---|---|---|---|---|")
    smallest: dict[float, float | None] = {}
    try:
        for ms in sizes:
            smallest[ms] = None
            for ratio in a.ratios:
                r = ev.evaluate(SOURCE.format(ratio=ratio, ms=ms), "level1/19_ReLU")
                g = r.record.guard("timing_witness")
                caught = g is not None and not g.passed
                v = r.results["verified"]
                print(f"| {ms:g} | {ratio:g} | {'caught' if caught else 'passed'} | "
                      f"{v.kernel_ms if v.kernel_ms is None else round(v.kernel_ms, 4)} | {v.verdict} |", flush=True)
                if caught and ratio > 1.0 and smallest[ms] is None:
                    smallest[ms] = ratio
    finally:
        ev.close()
    for ms, ratio in smallest.items():
        print(f"{a.device}: kernel {ms:g} ms: smallest under-report caught: "
              f"{'none of ' + str(a.ratios) if ratio is None else f'{ratio:g}x'}")


if __name__ == "__main__":
    main()
