"""Per-candidate harness overhead with and without a pre-started candidate process, side by side.

    python benchmarks/worker_overhead.py --device cuda --out DIR [--n 12]
    python benchmarks/worker_overhead.py --device cpu --out DIR

Evaluates N distinct (resubmitted) copies of an honest Python-only ReLU candidate with each setting of
``EvalSettings.prespawn_worker``, alternating the two evaluators candidate by candidate so drift hits
both alike, after one warm-up each (reference outputs computed, first process started). Per setting:
median seconds per evaluation, its 'startup' phase (process start, imports, device context, up to the
worker's first message) and the overhead (evaluation minus the kernel's correctness and timing runs).
On a CPU with few cores the spare's imports compete with the measured process; the setting is off
by default until this shows a gain on the GPU host. Writes worker_overhead.md / .json.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path

from _results import cores, write_results

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
from harness import EvalSettings  # noqa: E402

SOURCE = (ROOT / "harness" / "fixtures" / "legit" / "cpu" / "inplace_on_own_buffer_relu.py").read_text()
PROBLEM = "level1/19_ReLU"


def overhead(r) -> float:
    ph = r.record.phase_seconds
    return r.record.eval_seconds - sum(ph.get(k, 0.0) for k in ("init", "correctness", "timing"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--out", default="results")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = dict(verified_seconds_per_subject=0.5, verified_max_iters=50, naive_timing_trials=20)
    evs = {flag: harness.Evaluator(args.device, "small", settings=EvalSettings(prespawn_worker=flag, **base))
           for flag in (False, True)}
    rows = []
    try:
        for ev in evs.values():  # warm-up: reference outputs, the first (never pre-started) process
            ev.evaluate(SOURCE + "\n# warm-up\n", PROBLEM)
        for i in range(args.n):
            for flag, ev in evs.items():
                r = ev.evaluate(SOURCE + f"\n# copy {i}\n", PROBLEM)
                rows.append({"prespawn": flag, "i": i, "used_spare": r.record.worker_prespawned,
                             "verdict": r.results["verified"].verdict, "eval_s": r.record.eval_seconds,
                             "startup_s": r.record.phase_seconds.get("startup"), "overhead_s": overhead(r)})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        for ev in evs.values():
            ev.close()
    gpu = ""
    if args.device.startswith("cuda"):
        import torch

        gpu = f", {torch.cuda.get_device_name(0)}"
    lines = [f"Per-candidate overhead on {platform.node()} ({cores()}{gpu}, device {args.device}), "
             f"{args.n} candidates per setting, alternating. Medians in seconds.", "",
             "| prespawn_worker | used a pre-started process | evaluation | startup phase | overhead | verdicts |",
             "|---|---|---|---|---|---|"]
    for flag in (False, True):
        rs = [r for r in rows if r["prespawn"] == flag]
        lines.append(f"| {flag} | {sum(r['used_spare'] for r in rs)}/{len(rs)} | "
                     f"{statistics.median(r['eval_s'] for r in rs):.2f} | "
                     f"{statistics.median(r['startup_s'] or 0 for r in rs):.2f} | "
                     f"{statistics.median(r['overhead_s'] for r in rs):.2f} | "
                     f"{', '.join(sorted({r['verdict'] for r in rs}))} |")
    write_results(out, "worker_overhead", "\n".join(lines) + "\n", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
