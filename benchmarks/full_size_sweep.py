"""One sweep process over recorded real kernels at full size, with the figures issue 17 asks for: peak disk
used (whole filesystem of the run folder and of the temp folder, sampled), candidates per hour, verdicts,
harness errors, and the peak GPU memory in use (nvidia-smi, when present).

    python benchmarks/corpora.py leaderboard MIRROR /tmp/lb        # lay out a corpus (not committed)
    python benchmarks/full_size_sweep.py --replay /tmp/lb/replay/gpt-o1 --problems-dir /tmp/lb/problems \\
        --limit 100 --out DIR [--device cuda] [--size full] [--deadline-s 1500]

The sweep is ``python -m agents.sweep --models replay:... --turns 1`` in a child process; the figures come
from its run folder (attempts.jsonl, errors.jsonl) and from sampling while it runs. With --deadline-s the
sweep is stopped at that time and the figures cover the candidates finished by then (said in the table).
Writes full_size_sweep.md / .json under --out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from _results import write_results

ROOT = Path(__file__).resolve().parent.parent


class Sampler(threading.Thread):
    """Peak bytes used on the filesystems that hold the given folders, and peak GPU memory in use."""

    def __init__(self, folders: list[Path], period_s: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.folders, self.period = folders, period_s
        self.base = {str(f): _used(f) for f in folders}
        self.peak = dict.fromkeys(self.base, 0)
        self.gpu_peak_mib: int | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.period):
            for f in self.folders:
                self.peak[str(f)] = max(self.peak[str(f)], _used(f) - self.base[str(f)])
            mib = _gpu_used_mib()
            if mib is not None:
                self.gpu_peak_mib = max(self.gpu_peak_mib or 0, mib)


def _used(folder: Path) -> int:
    u = shutil.disk_usage(folder)
    return u.total - u.free


def _gpu_used_mib() -> int | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=5)
        return sum(int(x) for x in q.stdout.split())
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


def read_run(run_dir: Path) -> dict:
    """Verdict counts, harness errors and evaluation seconds from a sweep's run folder."""
    attempts = []
    f = run_dir / "attempts.jsonl"
    if f.exists():
        for line in f.read_text().splitlines():
            try:
                attempts.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a torn last line of a stopped sweep
    errors = (run_dir / "errors.jsonl").read_text().splitlines() if (run_dir / "errors.jsonl").exists() else []
    verdicts: dict[str, Counter] = {}
    for a in attempts:
        for proto, res in (a.get("results") or {}).items():
            verdicts.setdefault(proto, Counter())[str((res or {}).get("verdict"))] += 1
    return {"attempts": len(attempts), "harness_errors": len(errors),
            "verdicts": {k: dict(v) for k, v in verdicts.items()}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replay", required=True, help="a folder of recorded kernels (replay:DIR)")
    ap.add_argument("--problems-dir", required=True)
    ap.add_argument("--limit", type=int, default=100, help="evaluate the first K recorded problems")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="full")
    ap.add_argument("--deadline-s", type=float, default=0, help="stop the sweep after this many seconds (0: none)")
    ap.add_argument("--out", default="results")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from agents.models.replay import replay_inventory

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    recorded = replay_inventory(args.replay)
    problems = sorted({(lv, n) for lv, n, _s in recorded})[: args.limit]
    ids = ",".join(f"{lv}/{n}" for lv, n in problems)
    run_dir = Path(tempfile.mkdtemp(prefix="kv-full-sweep-"))
    cmd = [sys.executable, "-m", "agents.sweep", "--models", f"replay:{args.replay}", "--problems-dir",
           args.problems_dir, "--problems", ids, "--turns", "1", "--device", args.device, "--size", args.size,
           "--run-dir", str(run_dir / "run"), "--no-progress"]
    sampler = Sampler([run_dir, Path(tempfile.gettempdir()), Path.home()])
    sampler.start()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    stopped = False
    try:
        proc.communicate(timeout=args.deadline_s or None)
    except subprocess.TimeoutExpired:
        stopped = True
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    wall = time.perf_counter() - t0
    sampler.stop.set()
    sampler.join()
    run = read_run(run_dir / "run")
    per_hour = run["attempts"] / wall * 3600 if wall > 0 else 0.0
    data = {"replay": args.replay, "problems": len(problems), "device": args.device, "size": args.size,
            "wall_s": wall, "stopped_at_deadline": stopped, "returncode": proc.returncode,
            "candidates_per_hour": per_hour, "peak_disk_bytes": sampler.peak, "gpu_peak_mib": sampler.gpu_peak_mib,
            **run}
    peak_gib = max(sampler.peak.values(), default=0) / 2**30
    lines = ["| figure | value |", "|---|---|",
             f"| candidates evaluated | {run['attempts']} of {len(problems)} problems"
             f"{' (stopped at the deadline)' if stopped else ''} |",
             f"| wall | {wall:.0f} s |", f"| candidates per hour | {per_hour:.0f} |",
             f"| peak disk used (largest filesystem delta) | {peak_gib:.2f} GiB |",
             f"| peak GPU memory in use | {sampler.gpu_peak_mib if sampler.gpu_peak_mib is not None else 'n/a'} MiB |",
             f"| harness errors (errors.jsonl) | {run['harness_errors']} |"]
    lines += [f"| {proto} verdicts | {', '.join(f'{k} {v}' for k, v in sorted(c.items()))} |"
              for proto, c in run["verdicts"].items()]
    write_results(out, "full_size_sweep", "\n".join(lines), data)
    shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
