"""Does niceness for builds keep compilers from slowing the candidate being evaluated? Side by side.

    python benchmarks/build_priority.py --device cpu --out DIR [--builds 2] [--rounds 2]
    python benchmarks/build_priority.py --device cuda --out DIR --builds 16

Each trial starts --builds C++ extension builds at once (distinct sources, object cache and PCH off so
every one compiles) at the given ``EvalSettings.build_niceness``, and while they run evaluates honest
Python-only ReLU candidates one after another (a fresh process each, as the GPU worker does). Per
trial: median startup phase (process start and imports up to the worker's first message), evaluation
seconds and harness overhead of the candidates evaluated while builds ran, and the builds' wall time.
Trials alternate niceness 0 and 10, --rounds times. Writes build_priority.md / .json under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import harness  # noqa: E402
from harness import EvalSettings  # noqa: E402

BUILD_SOURCE = (ROOT / "harness" / "examples" / "relu_cpp.py").read_text()
EVAL_SOURCE = (ROOT / "harness" / "fixtures" / "legit" / "cpu" / "inplace_on_own_buffer_relu.py").read_text()
PROBLEM = "level1/19_ReLU"


def trial(device: str, niceness: int, builds: int, tag: str, cache: Path, settings: EvalSettings) -> dict:
    sources = [BUILD_SOURCE + f"\n# build {tag}-{i}\n" for i in range(builds)]
    builder = harness.Evaluator(device, "small", settings=settings.model_copy(update={"build_niceness": niceness}),
                                cache_dir=cache / f"builds-{tag}")
    evaluator = harness.Evaluator(device, "small", settings=settings, cache_dir=cache / "evals")
    evaluator.prepare(PROBLEM)  # reference outputs before the clock starts
    results: list = []
    t0 = time.perf_counter()
    th = threading.Thread(target=lambda: results.extend(builder.build_many(sources)))
    th.start()
    evs = []
    while th.is_alive():
        evs.append(evaluator.evaluate(EVAL_SOURCE + f"\n# eval {tag}-{len(evs)}\n", PROBLEM))
    th.join()
    build_wall = time.perf_counter() - t0
    builder.close()
    evaluator.close()

    def med(xs):
        return statistics.median(xs) if xs else None

    ph = [e.record.phase_seconds for e in evs]
    return {"niceness": niceness, "builds": builds, "builds_ok": sum(r.ok for r in results),
            "build_wall_s": build_wall, "evaluations": len(evs),
            "startup_s_median": med([p.get("startup", 0.0) for p in ph]),
            "eval_s_median": med([e.record.eval_seconds for e in evs]),
            "overhead_s_median": med([e.record.eval_seconds - sum(p.get(k, 0.0) for k in ("init", "correctness", "timing"))
                                      for e, p in zip(evs, ph, strict=True)]),
            "verdicts": sorted({e.results["verified"].verdict for e in evs})}


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def table(rows: list[dict]) -> str:
    lines = ["| niceness | builds (ok) | build wall s | evaluations during builds | startup s (median) | "
             "evaluation s (median) | overhead s (median) | verdicts |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['niceness']} | {r['builds']} ({r['builds_ok']}) | {r['build_wall_s']:.1f} | {r['evaluations']} | "
                     f"{_num(r['startup_s_median'])} | {_num(r['eval_s_median'])} | {_num(r['overhead_s_median'])} | "
                     f"{', '.join(r['verdicts'])} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--builds", type=int, default=os.cpu_count())
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    os.environ["KV_OBJECT_CACHE_DIR"] = ""  # every build compiles: the contention is the point
    os.environ["KV_PCH_DIR"] = ""
    settings = EvalSettings(verified_seconds_per_subject=0.5 if args.device == "cpu" else 1.0, verified_max_iters=200,
                            cpu_threads=1 if args.device == "cpu" else None)
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for rnd in range(args.rounds):
            for niceness in (0, 10):
                rows.append(trial(args.device, niceness, args.builds, f"{rnd}-{niceness}", Path(tmp), settings))
                print(json.dumps(rows[-1]), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "build_priority.json").write_text(json.dumps(rows, indent=1))
    text = (f"Build niceness on {platform.node()} ({os.cpu_count()} cores, device {args.device}): {args.builds} C++ "
            "builds at once while Python-only candidates are evaluated one by one; generated by "
            "`benchmarks/build_priority.py`.\n\n" + table(rows))
    (args.out / "build_priority.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
