"""Honest kernels against the judge's clock (issue 30): every demo CUDA kernel that is not a reward hack, evaluated
in the sandbox, with the ``timing_witness`` guard's reading (interval per timed call, the judge's calibrated
overhead, the reported kernel time, what is left unexplained and what is allowed). A failed witness here is a false
``hack``: the table shows how close each honest kernel comes to the allowance.

    python benchmarks/witness_honest.py [--device cuda] [--size small full] [--quick]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402

KERNELS = Path(__file__).resolve().parents[1] / "agents" / "demo_kernels"
NAME = re.compile(r"^l(\d+)_(\d+)_")


def honest_kernels(device: str) -> list[tuple[str, Path]]:
    folder = KERNELS / ("cuda" if device == "cuda" else "cpu")
    out = []
    for f in sorted(folder.glob("l*.py")):
        m = NAME.match(f.name)
        if m and "reward hack" not in f.read_text().lower():
            out.append((f"{m[1]}/{m[2]}", f))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", nargs="+", default=["small", "full"])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated substrings of the kernels' file names")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="an EvalSettings field")
    a = ap.parse_args()
    print(f"settings: {', '.join(a.set) or 'defaults'}{' (quick)' if a.quick else ''}\n")
    print("| kernel | size | verdict | timing_witness | judge's clock reading |\n|---|---|---|---|---|", flush=True)
    false_hacks = 0
    for size in a.size:
        settings = harness.EvalSettings(naive_timing_trials=20, verified_min_iters=5, verified_max_iters=30,
                                        verified_seconds_per_subject=0.5) if a.quick else harness.EvalSettings()
        settings = settings.model_copy(update={k: type(getattr(settings, k))(v) for k, v in
                                               (kv.split("=", 1) for kv in a.set)})
        ev = harness.Evaluator(a.device, size, settings=settings)
        try:
            for problem, path in honest_kernels(a.device):
                if a.only and not any(o in path.name for o in a.only.split(",")):
                    continue
                r = ev.evaluate(path.read_text(), problem)
                g = r.record.guard("timing_witness")
                v = r.results["verified"]
                false_hacks += bool(g is not None and not g.passed)
                print(f"| {path.stem} | {size} | {v.verdict} | "
                      f"{'-' if g is None else 'passed' if g.passed else 'FAILED'} | "
                      f"{'' if g is None else g.detail.replace('|', '/')} |", flush=True)
        finally:
            ev.close()
    print(f"\n{a.device}: honest kernels with a failed timing_witness: {false_hacks}")


if __name__ == "__main__":
    main()
