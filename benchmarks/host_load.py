"""What a sweep's neighbours do to a timed interval: the same kernels evaluated at the defaults while the host is
quiet, while a sampler starts ``nvidia-smi`` once a second (what benchmarks/full_size_sweep.py did), while one
``nvidia-smi`` process polls every second (one NVML session), and while every core runs a niced busy loop standing in
for a build pool (at ``build_niceness``, each in its own session as builds are). Conditions interleave, each kernel's
order rotating per repetition, so drift is spread over all of them.

    python benchmarks/host_load.py KERNEL.py=level2/51_... [...] --reps 2 [--conditions quiet,smi_spawn,...]
        [--problems-dir DIR] [--deadline-s 330] --out DIR

KERNEL.py: a replay file (benchmarks/corpora.py lays them out; never committed). Prints and writes host_load.md/.json:
per kernel and condition, the verified and naive speedups, the verified interval's width, the baseline's and kernel's
median and interquartile spread, and the noise flags.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402
from benchmarks._results import cores, write_results  # noqa: E402

CONDITIONS = ("quiet", "smi_spawn", "smi_loop", "cpu_burn")


class Load:
    """One condition's neighbours, started on enter and stopped on exit."""

    def __init__(self, name: str, niceness: int) -> None:
        self.name, self.niceness = name, niceness
        self.procs: list[subprocess.Popen] = []
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def __enter__(self) -> Load:
        smi = shutil.which("nvidia-smi")
        query = [smi or "nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
        if self.name == "smi_spawn" and smi:
            def poll() -> None:
                while not self.stop.wait(1.0):
                    subprocess.run(query, capture_output=True, timeout=5, check=False)
            self.thread = threading.Thread(target=poll, daemon=True)
            self.thread.start()
        elif self.name == "smi_loop" and smi:
            self.procs.append(subprocess.Popen([*query, "-lms", "1000"], stdout=subprocess.DEVNULL))
        elif self.name == "cpu_burn":
            for _ in range(harness.usable_cpus()):
                self.procs.append(subprocess.Popen(
                    ["nice", "-n", str(self.niceness), sys.executable, "-c", "while True: pass"],
                    start_new_session=True))
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.thread:
            self.thread.join()
        for p in self.procs:
            p.kill()
            p.wait()


def _row(kernel: str, problem: str, cond: str, rep: int, ev: harness.Evaluation, seconds: float) -> dict:
    out = {"kernel": kernel, "problem": problem, "condition": cond, "rep": rep, "seconds": round(seconds, 1)}
    for p in ("naive", "verified"):
        r = ev.results[p]
        out[p] = {"verdict": r.verdict, "speedup": r.speedup, "low": r.speedup_low, "high": r.speedup_high,
                  "kernel_ms": r.kernel_ms, "baseline_ms": r.baseline_ms, "noisy": r.noisy, "noise": r.noise}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="+", help="KERNEL_FILE=PROBLEM_ID")
    ap.add_argument("--conditions", default=",".join(CONDITIONS))
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="full")
    ap.add_argument("--problems-dir", help="the problems the kernels were written for (a corpus's own files)")
    ap.add_argument("--deadline-s", type=float, default=0, help="stop starting evaluations after this (0: none)")
    ap.add_argument("--out", type=Path, default=Path("results"))
    args = ap.parse_args(argv)
    conditions = [c for c in args.conditions.split(",") if c]
    settings = harness.EvalSettings()  # the defaults: what a sweep gets
    items = [(Path(k.partition("=")[0]), k.partition("=")[2]) for k in args.kernels]
    rows: list[dict] = []
    t_start = time.monotonic()
    with harness.Evaluator(args.device, args.size, settings=settings, problems_dir=args.problems_dir) as ev:
        for path, problem in items:  # build and reference first, outside every condition
            ev.evaluate(path.read_text(), problem)
        for rep in range(args.reps):
            for i, (path, problem) in enumerate(items):
                order = conditions[(i + rep) % len(conditions):] + conditions[:(i + rep) % len(conditions)]
                for cond in order:
                    if args.deadline_s and time.monotonic() - t_start > args.deadline_s:
                        break
                    with Load(cond, settings.build_niceness):
                        time.sleep(0.5)  # the neighbours running before the candidate starts
                        t0 = time.monotonic()
                        r = ev.evaluate(path.read_text(), problem)
                    rows.append(_row(path.name, problem, cond, rep, r, time.monotonic() - t0))
                    v = rows[-1]["verified"]
                    print(f"{problem} {cond} rep {rep}: verified {v['verdict']} {v['speedup'] or 0:.2f}x "
                          f"[{v['low'] or 0:.2f}, {v['high'] or 0:.2f}] noisy={v['noisy']}", file=sys.stderr, flush=True)
    lines = [f"Host load against timed intervals: {len(rows)} evaluations, {args.device}, size {args.size}, {cores()}, "
             f"default settings. Generated by `benchmarks/host_load.py`.", "",
             "| problem | condition | rep | naive speedup | verified speedup [95%] | baseline ms | kernel ms | noise |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n, v = r["naive"], r["verified"]
        lines.append(f"| {r['problem'][:40]} | {r['condition']} | {r['rep']} | {n['speedup'] or 0:.2f} | "
                     f"{v['speedup'] or 0:.2f} [{v['low'] or 0:.2f}, {v['high'] or 0:.2f}] | "
                     f"{v['baseline_ms'] or 0:.4f} | {v['kernel_ms'] or 0:.4f} | "
                     f"{'; '.join(v['noise'])[:160] or '-'} |")
    write_results(args.out, "host_load", "\n".join(lines) + "\n", rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
