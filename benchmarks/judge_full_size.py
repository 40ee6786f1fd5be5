"""Full-size probe of the judge on a GPU: level1/19 ReLU (6.4 GB in and out) with an honest kernel that also
reports its containment, then the identity "ReLU". Prints verdicts, phases, the timing witness and the
bytes left in the evaluator's temporary folder (expected outputs must not be on disk).

    python benchmarks/judge_full_size.py            # on the GPU host
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import harness  # noqa: E402
from harness import EvalSettings  # noqa: E402
from problems.catalog import load  # noqa: E402

PROBE = """
import os, torch, torch.nn as nn
print("containment", os.environ.get("KV_CONTAINMENT"), "ppid", os.getppid(),
      "visible pids", len([p for p in os.listdir('/proc') if p.isdigit()]))
class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
IDENTITY = """
import torch.nn as nn
class ModelNew(nn.Module):
    def forward(self, x):
        return x
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--also", default="", help="comma-separated problems to evaluate at full size with the reference "
                                                "itself as the candidate (an honest kernel; expected verdict: correct)")
    ap.add_argument("--pin", action="store_true", help="EvalSettings.pin_shared_memory (page-locked hand-over)")
    ap.add_argument("--only-honest", action="store_true", help="skip the identity 'relu' (half the time)")
    args = ap.parse_args()
    runs = [("level1/19_ReLU", "honest relu + containment probe", PROBE), ("level1/19_ReLU", "identity 'relu'", IDENTITY)]
    for pid in filter(None, args.also.split(",")):
        src = load(pid).reference_as_candidate()
        runs.append((pid, f"reference as candidate ({pid})", src))
    settings = EvalSettings(naive_timing_trials=20, verified_min_iters=10, verified_max_iters=30,
                            verified_seconds_per_subject=1.0, pin_shared_memory=args.pin)
    if args.only_honest:
        runs = [r for r in runs if r[1] != "identity 'relu'"]
    with harness.Evaluator("cuda", "full", settings=settings) as ev:
        for pid, name, src in runs:
            t = time.time()
            try:
                r = ev.evaluate(src, pid)
            except Exception as exc:  # noqa: BLE001 - a harness error is a finding here
                print(name, "HARNESS ERROR", repr(exc)[:600])
                continue
            print(name, r.record.status, {k: (v.verdict, round(v.speedup or 0, 3)) for k, v in r.results.items()},
                  f"wall {time.time() - t:.1f} s", {k: round(v, 1) for k, v in r.record.phase_seconds.items()})
            print("  stdout:", r.record.stdout_tail.strip()[-200:])
            print("  witness/timed:", [(g.name, g.passed, g.detail[:160]) for g in r.record.guards
                                       if g.name in ("timing_witness", "timed_outputs_correct")])
            print("  bytes under the evaluator's temp folder:",
                  sum(f.stat().st_size for f in pathlib.Path(ev._tmp_root).rglob("*") if f.is_file()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
