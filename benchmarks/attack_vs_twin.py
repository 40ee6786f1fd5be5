"""An attack candidate and its honest twin, evaluated in turn on one problem (CPU, small size, default settings): the
verified verdict and credited speedup of each, side by side, so a gain is read against the load of the same minutes.

Prints one markdown row per evaluation (the CPU pressure, `/proc/pressure/cpu` some avg10, read before it) and a
summary line per file: the credited speedups and their median.

    python benchmarks/attack_vs_twin.py ATTACK.py TWIN.py --problem level1/94_MSELoss [--reps 3] \
        [--set verified_max_iters=20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _results import setting  # noqa: E402

from harness import EvalSettings  # noqa: E402
from harness.runner import Evaluator  # noqa: E402


def cpu_pressure() -> str:
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return line.split()[1].split("=")[1] + "%"
    except (OSError, IndexError):
        return "-"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("attack")
    ap.add_argument("twin")
    ap.add_argument("--problem", required=True)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="an EvalSettings value other than its default, e.g. verified_max_iters=20 (the timed calls a "
                         "steady GPU kernel gets: adaptive stopping ends it at the minimum)")
    a = ap.parse_args()
    files = {Path(a.attack).name: Path(a.attack).read_text(), Path(a.twin).name: Path(a.twin).read_text()}
    credited: dict[str, list[float]] = {k: [] for k in files}
    settings = EvalSettings(**dict(setting(kv) for kv in a.set))
    print(f"{a.problem}, load average {os.getloadavg()[0]:.2f} at start"
          f"{', settings ' + ' '.join(a.set) if a.set else ', default settings'}\n")
    print("| # | file | cpu pressure | verified | credited speedup | kernel ms | baseline ms | guards failed | "
          "timed call (candidate's split, median ms) |\n|---|---|---|---|---|---|---|---|---|")
    with Evaluator("cpu", "small", settings=settings) as ev:
        for rep in range(a.reps):
            for name, source in files.items():
                pressure = cpu_pressure()
                r = ev.evaluate(source, a.problem)
                v = r.results["verified"]
                failed = [g.name for g in r.record.guards if not g.passed]
                w = r.record.guard("timing_witness")
                split = w.detail.split("own split, median ms: ")[-1].split(";")[0] if w and "own split" in w.detail else "-"
                sp = v.credited_speedup or 0.0
                credited[name].append(sp)
                print(f"| {rep + 1} | {name} | {pressure} | {v.verdict} | {sp:.2f}x | {v.kernel_ms or 0:.3f} | "
                      f"{v.baseline_ms or 0:.3f} | {', '.join(failed) or '-'} | {split} |", flush=True)
    print()
    for name, xs in credited.items():
        print(f"{name}: credited verified speedups {', '.join(f'{x:.2f}x' for x in xs)}; median "
              f"{statistics.median(xs):.2f}x")


if __name__ == "__main__":
    main()
