"""Issue 20's acceptance run: the demo sweep twice on a loaded host, then whether the two runs agree within
their intervals and whether verified ever came out more generous than naive.

    python benchmarks/demo_twice.py --out DIR [--load 2] [--problems level1/19_ReLU,...]

``--load N`` keeps N busy-loop processes running during both sweeps (a 2-core machine under load). Per
kernel (same problem, same demo kernel in both runs): each protocol's speedup with its 95% interval in run A
and run B, and whether the intervals overlap. Per run: naive and verified headline geomean and fast_1 (what the
report counts). Writes demo_twice.md / .json under --out.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import write_results

ROOT = Path(__file__).resolve().parent.parent


def _spin() -> None:
    while True:
        pass


def overlap(a: list[float] | None, b: list[float] | None) -> bool | None:
    if not a or not b:
        return None
    return a[0] <= b[1] and b[0] <= a[1]


def headline(rep) -> dict[str, dict[str, float | None]]:
    out = {}
    for r in rep.headline:
        if r.level == "all":
            out[r.protocol] = {"geomean": r.summary.geomean_speedup.value, "fast_1": r.summary.fast_p["fast_1"].value}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="results")
    ap.add_argument("--load", type=int, default=0, help="busy-loop processes kept running during the sweeps")
    ap.add_argument("--problems", default="", help="restrict the demo sweep to these problems (default: all it has)")
    ap.add_argument("--eval-set", action="append", default=[], metavar="KEY=VALUE",
                    help="passed to agents.sweep (a harness.EvalSettings field), e.g. cpu_threads=1")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from agents.report.build import build_report

    spinners = [mp.Process(target=_spin, daemon=True) for _ in range(args.load)]
    for p in spinners:
        p.start()
    runs, walls = [], []
    try:
        for tag in ("A", "B"):
            run_dir = Path(tempfile.mkdtemp(prefix=f"kv-demo-{tag}-")) / "run"
            cmd = [sys.executable, "-m", "agents.sweep", "--models", "demo", "--device", "cpu", "--size", "small",
                   "--run-dir", str(run_dir), "--no-progress", *(["--problems", args.problems] if args.problems else []),
                   *[x for kv in args.eval_set for x in ("--eval-set", kv)]]
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
            walls.append(time.perf_counter() - t0)
            runs.append(build_report(run_dir, resamples=200))
    finally:
        for p in spinners:
            p.terminate()
    a, b = runs
    kernels_b = {(k.problem_id, k.sample): k.final for k in b.kernels}
    rows, verdict = [], {"overlapping": 0, "disjoint": 0}
    for k in a.kernels:
        other = kernels_b.get((k.problem_id, k.sample))
        if other is None:
            continue
        for proto in ("naive", "verified"):
            ia, ib = k.final.intervals.get(proto), other.intervals.get(proto)
            ov = overlap(ia, ib)
            if ov is not None:
                verdict["overlapping" if ov else "disjoint"] += 1
            rows.append({"problem": k.problem_id, "protocol": proto, "a": k.final.speedups.get(proto), "a_interval": ia,
                         "b": other.speedups.get(proto), "b_interval": ib, "overlap": ov,
                         "a_noisy": bool(k.final.noise.get(proto)), "b_noisy": bool(other.noise.get(proto))})
    heads = [headline(a), headline(b)]
    more_generous = [i for i, h in enumerate(heads) if (h.get("verified", {}).get("geomean") or 0)
                     > (h.get("naive", {}).get("geomean") or 0)]
    data = {"load": args.load, "eval_set": args.eval_set, "walls_s": walls, "headline": heads, "intervals": verdict, "rows": rows,
            "verified_geomean_above_naive_in_runs": ["AB"[i] for i in more_generous]}

    def fx(v):
        return "-" if v is None else f"{v:.3g}x"

    def fi(iv):
        return "" if not iv else f" [{iv[0]:.3g}, {iv[1]:.3g}]"

    lines = [f"Demo sweep twice, {args.load} busy-loop process(es) alongside, settings {args.eval_set or 'default'}; "
             f"walls {walls[0]:.0f} s and {walls[1]:.0f} s",
             "", "| run | naive geomean | verified geomean | naive fast_1 | verified fast_1 |", "|---|---|---|---|---|"]
    for tag, h in zip("AB", heads, strict=True):
        n, v = h.get("naive", {}), h.get("verified", {})
        lines.append(f"| {tag} | {fx(n.get('geomean'))} | {fx(v.get('geomean'))} | {n.get('fast_1')} | {v.get('fast_1')} |")
    lines += ["", f"Intervals of the same kernel in A and B: {verdict['overlapping']} overlap, {verdict['disjoint']} disjoint. "
              f"Verified geomean above naive in: {data['verified_geomean_above_naive_in_runs'] or 'neither run'}.", "",
              "| problem | protocol | run A [95%] | run B [95%] | overlap | noisy A/B |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['problem']} | {r['protocol']} | {fx(r['a'])}{fi(r['a_interval'])} | {fx(r['b'])}{fi(r['b_interval'])} "
                     f"| {r['overlap']} | {r['a_noisy']}/{r['b_noisy']} |")
    write_results(Path(args.out), "demo_twice", "\n".join(lines), data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
