"""How long the hand-over of tensors between the judge and the candidate process costs, page-locked or not
(EvalSettings.pin_shared_memory), side by side in one run on a GPU host.

    python benchmarks/handover.py --problems 1/7,1/9 [--problems-dir DIR] [--reps 2] --out DIR

Each problem's reference is evaluated as the candidate (an honest kernel) at full size, with the default protocol
settings but verified timing at 1 s per subject, alternating pinned and pageable Evaluators rep by rep; the
table gives the correctness and timing phases (every trial and every checked timed call moves the output through
the shared buffer) and the whole evaluation, with the verdicts (both must be correct).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from _results import write_results

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problems", default="1/7,1/9")
    ap.add_argument("--problems-dir", default=None)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="full")
    ap.add_argument("--out", type=Path, default=Path("results"))
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    import harness
    from harness import EvalSettings
    from problems.catalog import load

    rows, data = [], []
    for pid in filter(None, args.problems.split(",")):
        problem = load(pid, args.problems_dir)
        src = problem.reference_as_candidate()
        got: dict[bool, list[dict]] = {False: [], True: []}
        for rep in range(args.reps):
            for pin in ((False, True) if rep % 2 == 0 else (True, False)):
                settings = EvalSettings(verified_seconds_per_subject=1.0, compile_baseline=False, pin_shared_memory=pin)
                with harness.Evaluator(args.device, args.size, settings=settings, problems_dir=args.problems_dir) as ev:
                    t = time.perf_counter()
                    r = ev.evaluate(src, problem.id)
                    wall = time.perf_counter() - t
                ph = r.record.phase_seconds
                got[pin].append({"wall": wall, "eval": r.record.eval_seconds or 0.0, "correctness": ph.get("correctness", 0.0),
                                 "timing": ph.get("timing", 0.0),
                                 "verdicts": {k: v.verdict for k, v in r.results.items()}})
                data.append({"problem": problem.id, "pin": pin, "rep": rep, **got[pin][-1]})
                print(problem.id, "pinned" if pin else "pageable", got[pin][-1], flush=True)
        for pin in (False, True):
            g = got[pin]
            med = {k: statistics.median(x[k] for x in g) for k in ("correctness", "timing", "eval", "wall")}
            verdicts = sorted({f"{k} {v}" for x in g for k, v in x["verdicts"].items()})
            rows.append(f"| {problem.id} | {'page-locked' if pin else 'pageable'} | {med['correctness']:.1f} | "
                        f"{med['timing']:.1f} | {med['eval']:.1f} | {med['wall']:.1f} | {', '.join(verdicts)} |")
    text = "\n".join([f"Hand-over page-locked or not ({args.device}, size {args.size}, reference as candidate, medians of "
                      f"{args.reps}, seconds)", "",
                      "| problem | shared buffer | correctness | timing | evaluation | wall incl. judge start | verdicts |",
                      "|---|---|---|---|---|---|---|", *rows])
    write_results(args.out, "handover", text, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
