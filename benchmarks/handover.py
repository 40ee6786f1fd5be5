"""How long the hand-over of tensors between the judge and the candidate process costs: host shared memory
pageable or page-locked (EvalSettings.pin_shared_memory), or device memory both map (EvalSettings.device_handover),
side by side in one run on a GPU host.

    python benchmarks/handover.py --problems 1/7,1/9 [--problems-dir DIR] [--reps 2] [--modes ...] --out DIR

Each problem's reference is evaluated as the candidate (an honest kernel) at full size, with the default protocol
settings but verified timing at 1 s per subject, one Evaluator per mode, the order rotating rep by rep; the table
gives the correctness and timing phases (every trial and every checked timed call moves the output through the
shared buffer), the judge's share of them, and the whole evaluation, with the verdicts (all must be correct).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _results import write_results

ROOT = Path(__file__).resolve().parent.parent
# Each hand-over as EvalSettings: a memfd (pageable or page-locked for CUDA) or device memory both processes map.
MODES = {"pageable": {}, "pinned": {"pin_shared_memory": True}, "device": {"device_handover": True}}
PHASES = ("correctness", "timing", "judge_expected", "judge_handover", "judge_waiting", "judge_compare")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="1/7,1/9")
    ap.add_argument("--problems-dir", default=None)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="full")
    ap.add_argument("--modes", default="pageable,pinned,device", help="hand-overs to compare: " + ", ".join(MODES))
    ap.add_argument("--out", type=Path, default=Path("results"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import harness
    from harness import EvalSettings
    from problems.catalog import load

    modes = [m for m in args.modes.split(",") if m]
    unknown = set(modes) - set(MODES)
    if unknown:
        ap.error(f"unknown mode(s) {sorted(unknown)}; known: {', '.join(MODES)}")
    rows, data = [], []
    for pid in filter(None, args.problems.split(",")):
        problem = load(pid, args.problems_dir)
        src = problem.reference_as_candidate()
        got: dict[str, list[dict]] = {m: [] for m in modes}
        for rep in range(args.reps):
            for mode in modes[rep % len(modes):] + modes[:rep % len(modes)]:  # each rep starts with another mode
                settings = EvalSettings(verified_seconds_per_subject=1.0, compile_baseline=False, **MODES[mode])
                with harness.Evaluator(args.device, args.size, settings=settings, problems_dir=args.problems_dir) as ev:
                    t = time.perf_counter()
                    r = ev.evaluate(src, problem.id)
                    wall = time.perf_counter() - t
                ph = r.record.phase_seconds
                got[mode].append({"wall": wall, "eval": r.record.eval_seconds or 0.0,
                                  **{k: ph.get(k, 0.0) for k in PHASES},
                                  "notes": [n for n in r.record.provenance.notes if "handed over" in n],
                                  "verdicts": {k: v.verdict for k, v in r.results.items()}})
                data.append({"problem": problem.id, "mode": mode, "rep": rep, **got[mode][-1]})
                print(problem.id, mode, got[mode][-1], flush=True)
        for mode in modes:
            g = got[mode]
            med = {k: statistics.median(x[k] for x in g) for k in (*PHASES, "eval", "wall")}
            verdicts = sorted({f"{k} {v}" for x in g for k, v in x["verdicts"].items()})
            notes = sorted({n for x in g for n in x["notes"]})
            rows.append(f"| {problem.id} | {mode} | " + " | ".join(f"{med[k]:.1f}" for k in (*PHASES, "eval", "wall"))
                        + f" | {', '.join(verdicts)} | {'; '.join(notes)} |")
    text = "\n".join([f"Hand-over of trial tensors between judge and candidate ({args.device}, size {args.size}, reference "
                      f"as candidate, medians of {args.reps}, seconds)", "",
                      "| problem | hand-over | " + " | ".join(PHASES) + " | evaluation | wall incl. judge start | verdicts "
                      "| notes |", "|---|---|" + "---|" * (len(PHASES) + 4), *rows])
    write_results(args.out, "handover", text, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
