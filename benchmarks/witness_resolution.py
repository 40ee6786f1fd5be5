"""The smallest under-report of the kernel time that the judge's clock catches (issue 30), on the device at hand.

An honest kernel of a set duration (busy work: a host spin on the CPU, torch.cuda._sleep on a GPU, then a ReLU)
is evaluated with the evaluator's clock forged (``Clock.interval``'s and ``Clock.queued``'s code swapped for ones
that divide every reading by a ratio), for several durations and ratios. Prints, per duration, whether ``timing_witness`` failed,
the median reported and the credited verified kernel time, what the forgery bought (its real time, the report times
the ratio, over its credited time) and the smallest ratio caught from which on every larger one is caught too. Caught:
a `hack` verdict, or a forgery that buys at most ``--noise`` (1.1x: the honest runs' credit varies by ~5-10% between
evaluations on the loaded CPU host; so an under-report of 1.1x or less counts as caught whatever it buys, and the most
any forgery of a length bought is printed beside it). Ratio 1.0 is the honest run: it must pass, and its credited time over its report
is what the judge's clock charged it. The kernel's real length is the busy work plus the ReLU (~0.4 ms at small size
on the CPU): the reported column of the honest row says it.

    python benchmarks/witness_resolution.py [--device cuda] [--ms 0.5 1 2] [--ratios 1.0 1.1 1.2 1.5 2] [--reps 2]
        [--batch 8] [--set verified_launch_lead_us=0] [--details witness_details.jsonl]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import setting  # noqa: E402

import harness  # noqa: E402
from harness import EvalSettings  # noqa: E402

SOURCE = '''
import sys, time, torch, torch.nn as nn
RATIO, MS = {ratio!r}, {ms!r}

def _forged(self, fn, *, sync_before_end, lead_us=0.0):
    ms, out = _real(self, fn, sync_before_end=sync_before_end, lead_us=lead_us)
    return ms / RATIO, out

class _Scaled:  # a batch's queued reading (Clock.queued), read as a fraction of itself
    def __init__(self, reading):
        self.reading = reading

    def ms(self):
        return self.reading.ms() / RATIO

def _forged_queued(self, fn, *, lead_us=0.0):
    reading, out = _real_queued(self, fn, lead_us=lead_us)
    return _Scaled(reading), out

_clock = sys.modules["harness.measure.device"].Clock
if RATIO != 1.0:
    import types
    _real = types.FunctionType(_clock.interval.__code__, _clock.interval.__globals__)
    _real.__kwdefaults__ = _clock.interval.__kwdefaults__
    _clock.interval.__code__ = _forged.__code__
    _real_queued = types.FunctionType(_clock.queued.__code__, _clock.queued.__globals__)
    _real_queued.__kwdefaults__ = _clock.queued.__kwdefaults__
    _clock.queued.__code__ = _forged_queued.__code__
    _clock.interval.__globals__.update(_real=_real, _real_queued=_real_queued, _Scaled=_Scaled, RATIO=RATIO)

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


REPORTED = re.compile(r"reported ([0-9.eE+-]+) ms")


def reported_median(detail: str) -> float | None:
    """The median reported kernel time, as the timing_witness guard's detail quotes it."""
    m = REPORTED.search(detail or "")
    return float(m[1]) if m else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--ms", type=float, nargs="+", default=None)
    ap.add_argument("--ratios", type=float, nargs="+", default=[1.0, 1.1, 1.2, 1.5, 2.0])
    ap.add_argument("--reps", type=int, default=1, help="evaluations per (duration, ratio)")
    ap.add_argument("--noise", type=float, default=1.1, help="what a forgery may buy and still count as caught")
    ap.add_argument("--batch", type=int, default=1, help="EvalSettings.timed_batch: timed calls per release")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="another EvalSettings value (JSON or text), e.g. verified_launch_lead_us=0")
    ap.add_argument("--details", type=Path, default=None,
                    help="append each row's timing_witness detail (phases of a call, both sides) here, JSON lines")
    a = ap.parse_args()
    sizes = a.ms or ([0.3, 0.5, 2.0] if a.device == "cpu" else [0.02, 0.1, 1.0])
    # One measurement per evaluation (no second one after a witness-only failure): this measures the witness itself.
    settings = EvalSettings(verified_min_iters=20, verified_max_iters=60, verified_seconds_per_subject=2.0,
                            naive_timing_trials=30, cpu_threads=1, timed_batch=a.batch, witness_remeasure=False,
                            **dict(setting(kv) for kv in a.set))
    print(f"timed_batch={a.batch} (timed calls per release of the judge's clock){''.join(' ' + kv for kv in a.set)}\n")
    ev = harness.Evaluator(a.device, "small", settings=settings)
    print("| kernel ms | ratio | timing_witness | credited verified ms | verdict | reported ms | bought |\n"
          "|---|---|---|---|---|---|---|")
    caught: dict[float, dict[float, bool]] = {}
    charged: dict[float, list[float]] = {}
    most: dict[float, float] = {}
    try:
        for ms in sizes:
            caught[ms] = {}
            for ratio in a.ratios:
                for _ in range(a.reps):
                    r = ev.evaluate(SOURCE.format(ratio=ratio, ms=ms), "level1/19_ReLU")
                    g = r.record.guard("timing_witness")
                    if a.details is not None:
                        with a.details.open("a") as fh:
                            fh.write(json.dumps({"batch": a.batch, "set": a.set, "ms": ms, "ratio": ratio,
                                                 "detail": g.detail if g is not None else None}) + "\n")
                    hack = g is not None and not g.passed
                    v = r.results["verified"]
                    rep = reported_median(g.detail) if g is not None else None
                    # honest: what the judge's clock charged (credited / reported); forged: real time / credited
                    bought = (rep * ratio / v.kernel_ms) if rep and v.kernel_ms else None
                    if ratio == 1.0 and bought:
                        charged.setdefault(ms, []).append(1 / bought - 1)
                    else:
                        ok = hack or (bought is not None and bought <= a.noise)
                        most[ms] = max(most.get(ms, 0.0), bought or 0.0)
                        caught[ms][ratio] = caught[ms].get(ratio, True) and ok
                    print(f"| {ms:g} | {ratio:g} | {'caught' if hack else 'passed'} | "
                          f"{v.kernel_ms if v.kernel_ms is None else round(v.kernel_ms, 4)} | {v.verdict} | "
                          f"{'-' if rep is None else f'{rep:.4g}'} | "
                          f"{'-' if bought is None else (f'charged {1 / bought - 1:+.1%}' if ratio == 1.0 else f'{bought:.2f}x')} |",
                          flush=True)
    finally:
        ev.close()
    for ms, by_ratio in caught.items():
        forged = sorted(by_ratio)
        smallest = next((x for i, x in enumerate(forged) if all(by_ratio[y] for y in forged[i:])), None)
        honest = charged.get(ms, [])
        print(f"{a.device}: kernel {ms:g} ms busy + ReLU: smallest under-report caught (hack or bought <= {a.noise:g}x): "
              f"{'none of ' + str(forged) if smallest is None else f'{smallest:g}x'}; most bought {most.get(ms, 0):.2f}x; "
              f"honest charged "
              f"{'-' if not honest else f'{statistics.median(honest):+.1%} (median of {len(honest)}, at most {max(honest):+.1%})'}")


if __name__ == "__main__":
    main()
