"""Evaluate a few published kernels again, one evaluator, and print both protocols' verdicts per kernel.

For checking a harness fix against the kernels that exposed it, on whatever device is at hand (the CPU here, at the
built-in problems' small size, when the GPU budget is spent), before the next GPU sweep re-runs them:

    python benchmarks/recheck_kernels.py KERNEL.py=level2/71_Conv2d_Divide_LeakyReLU ... \\
        [--device cpu] [--size small] [--out benchmarks/results --name cpu_recheck]

KERNEL.py is a replay file (``benchmarks/corpora.py`` lays them out; never committed). The settings are the unit
tests' light ones: this says which verdict a kernel gets, not how fast it is.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402
from benchmarks._results import cores, write_results  # noqa: E402

LIGHT = dict(naive_timing_trials=5, verified_min_iters=5, verified_max_iters=10, verified_seconds_per_subject=0.3)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="+", help="KERNEL_FILE=PROBLEM_ID")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--size", default="small")
    ap.add_argument("--out", type=Path, default=None, help="write NAME.md/.json here too")
    ap.add_argument("--name", default="recheck")
    args = ap.parse_args(argv)
    settings = harness.EvalSettings(**LIGHT, cpu_threads=1)
    rows = []
    with harness.Evaluator(args.device, args.size, settings=settings) as ev:
        for item in args.kernels:
            path, _, problem = item.partition("=")
            t0 = time.monotonic()
            r = ev.evaluate(Path(path).read_text(), problem)
            rows.append({"kernel": Path(path).name, "problem": problem,
                         "naive": r.results["naive"].verdict, "verified": r.results["verified"].verdict,
                         "param_mapping": r.record.param_mapping, "reasons": r.results["verified"].reasons[:2],
                         "seconds": round(time.monotonic() - t0, 1)})
            print(f"{rows[-1]['kernel']} {problem}: naive {rows[-1]['naive']}, verified {rows[-1]['verified']} "
                  f"({rows[-1]['seconds']} s)", file=sys.stderr, flush=True)  # progress: a long list can be cut short
    lines = [f"Verdicts of {len(rows)} kernel(s), {args.device}, size {args.size}, {cores()} "
             f"(light settings: {LIGHT})", "", "| kernel | problem | naive | verified | verified reasons |",
             "|---|---|---|---|---|"]
    lines += [f"| {r['kernel']} | {r['problem']} | {r['naive']} | {r['verified']} | {'; '.join(r['reasons']) or '-'} |"
              for r in rows]
    text = "\n".join(lines) + "\n"
    if args.out:
        write_results(args.out, args.name, text, rows)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
