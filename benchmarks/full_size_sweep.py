"""One sweep process over recorded real kernels at full size, with the figures issue 17 asks for: peak disk
used (whole filesystem of the run folder and of the temp folder, sampled), candidates per hour, verdicts,
harness errors, the peak GPU memory in use and the GPU's busy share (nvidia-smi, when present).

    python benchmarks/corpora.py leaderboard MIRROR /tmp/lb        # lay out a corpus (not committed)
    python benchmarks/full_size_sweep.py --replay /tmp/lb/replay/gpt-o1,/tmp/lb/replay/cuda-l1-h100 \\
        --problems-dir /tmp/lb/problems --out DIR [--limit K] [--stride S --offset O] [--also 1/14,1/29] [--device cuda] [--size full] \\
        [--deadline-s 1500] [--eval-set KEY=VALUE ...]

The sweep is ``python -m agents.sweep --models replay:A,replay:B,... --turns 1`` in a child process, over every
recorded kernel (all samples) or, with --limit/--stride/--offset, over the recorded problems picked (every S-th from
O, then the first K; sample 0 of each model); the
figures come from its run folder (attempts.jsonl, errors.jsonl) and from sampling while it runs. With --deadline-s
the sweep is stopped at that time and the figures cover the candidates finished by then (said in the table).
Writes full_size_sweep.md / .json under --out, and keeps the run folder (OUT/run, or --run-dir) for
``agents.report`` and benchmarks/fidelity.py.
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
    """Peak bytes used on the filesystems that hold the given folders, peak GPU memory in use, and the GPU's
    utilisation samples (nvidia-smi's utilization.gpu: the share of each sample period some kernel ran)."""

    def __init__(self, folders: list[Path], period_s: float = 1.0, progress: Path | None = None) -> None:
        super().__init__(daemon=True)
        self.folders, self.period, self.progress = folders, period_s, progress
        self.t0 = time.perf_counter()
        self.base = {str(f): _used(f) for f in folders}
        self.peak = dict.fromkeys(self.base, 0)
        self.gpu_peak_mib: int | None = None
        self.gpu_busy: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(self.period):
            for f in self.folders:
                self.peak[str(f)] = max(self.peak[str(f)], _used(f) - self.base[str(f)])
            gpu = _gpu_sample()
            if gpu is not None:
                self.gpu_peak_mib = max(self.gpu_peak_mib or 0, gpu[0])
                self.gpu_busy.append(gpu[1])
            if self.progress is not None:  # what a caller that collects before the end still gets (--summarize)
                self.progress.write_text(json.dumps({"elapsed_s": time.perf_counter() - self.t0,
                                                     "peak_disk_bytes": self.peak, "gpu_peak_mib": self.gpu_peak_mib,
                                                     "gpu_busy_pct": busy_share(self.gpu_busy)}))


def _used(folder: Path) -> int:
    u = shutil.disk_usage(folder)
    return u.total - u.free


def _gpu_sample() -> tuple[int, float] | None:
    """(MiB in use, utilisation %) summed and averaged over the host's GPUs, or None without nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return None
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=memory.used,utilization.gpu", "--format=csv,noheader,nounits"],
                           capture_output=True, text=True, timeout=5)
        return parse_gpu_sample(q.stdout)
    except (OSError, subprocess.TimeoutExpired):
        return None


def parse_gpu_sample(text: str) -> tuple[int, float] | None:
    rows = [[x.strip() for x in line.split(",")] for line in text.strip().splitlines() if line.strip()]
    try:
        return sum(int(r[0]) for r in rows), sum(float(r[1]) for r in rows) / len(rows)
    except (IndexError, ValueError, ZeroDivisionError):
        return None


def busy_share(samples: list[float]) -> float | None:
    return sum(samples) / len(samples) if samples else None


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
    errors = []
    if (run_dir / "errors.jsonl").exists():
        for line in (run_dir / "errors.jsonl").read_text().splitlines():
            try:
                errors.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    verdicts: dict[str, Counter] = {}
    seconds: Counter = Counter()  # where the evaluations' time went: phases, the judge's parts, builds
    for a in attempts:
        for proto, res in (a.get("results") or {}).items():
            verdicts.setdefault(proto, Counter())[str((res or {}).get("verdict"))] += 1
        rec = a.get("record") or {}
        for k, v in (rec.get("phase_seconds") or {}).items():
            if isinstance(v, (int, float)):
                seconds[k] += v
        for k in ("eval_seconds", "build_seconds"):
            if isinstance(rec.get(k), (int, float)):
                seconds[k.removesuffix("_seconds")] += rec[k]
    return {"attempts": len(attempts), "harness_errors": sum(1 for e in errors if e.get("kind") != "model"),
            "model_errors": sum(1 for e in errors if e.get("kind") == "model"),
            "verdicts": {k: dict(v) for k, v in verdicts.items()}, "seconds": dict(seconds),
            # per candidate, in the order evaluated (no kernel source: the corpora are not committed)
            "candidates": [{"model": a.get("model"), "problem": a.get("problem_id"),
                            "prespawned": (a.get("record") or {}).get("worker_prespawned"),
                            "eval_seconds": (a.get("record") or {}).get("eval_seconds"),
                            "phase_seconds": (a.get("record") or {}).get("phase_seconds")} for a in attempts],
            "workers": worker_shares(run_dir / "timeline.jsonl")}


def worker_shares(timeline: Path) -> dict:
    """Per GPU worker, from the executor's timeline (agents.executor, one line per finished span): seconds spent
    preparing judges ahead and evaluating, spans of each, and the problems prepared more than once (work thrown
    away). Idle is the wall minus both, computed where the wall is known."""
    spans = []
    if timeline.exists():
        for line in timeline.read_text().splitlines():
            try:
                spans.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    out: dict = {}
    for s in spans:
        w = out.setdefault(str(s["worker"]), {"prepare_s": 0.0, "evaluate_s": 0.0, "prepares": 0, "evaluations": 0,
                                              "last_end_s": 0.0, "prepared_twice": []})
        w[f"{s['kind']}_s"] += s["end_s"] - s["start_s"]
        w["prepares" if s["kind"] == "prepare" else "evaluations"] += 1
        w["last_end_s"] = max(w["last_end_s"], s["end_s"])
    for key, w in out.items():
        seen = Counter(s["problem"] for s in spans if str(s["worker"]) == key and s["kind"] == "prepare")
        w["prepared_twice"] = sorted(p for p, n in seen.items() if n > 1)
    return out


def pick(problems: list, stride: int = 1, offset: int = 0, limit: int = 0, also: list | None = None,
         evaluated: set | None = None) -> list:
    """Every ``stride``-th problem from ``offset`` (sorted by level, then number: each level in proportion) among those
    not ``evaluated`` already, then the first ``limit`` of those (0: all), then ``also`` (recorded ones only: kernels to
    evaluate again after a fix that changes what is measured), in level order."""
    chosen = sorted(p for p in problems if p not in (evaluated or set()))[offset::max(1, stride)]
    chosen = chosen[:limit] if limit else chosen
    return sorted(set(chosen) | (set(also or ()) & set(problems)))


def evaluated_problems(fidelity_json: Path, inventory: dict[str, list]) -> set:
    """Problems (level, number) every recorded kernel of which has a row in ``fidelity_json`` already; ``inventory``:
    replay folder name -> its (level, number, sample) kernels."""
    from fidelity import kernel_key

    done = {r["key"] for r in json.loads(fidelity_json.read_text())["rows"]}
    status: dict[tuple, bool] = {}
    for name, kernels in inventory.items():
        for lv, n, s in kernels:
            status[lv, n] = status.get((lv, n), True) and kernel_key(name, lv, n, s) in done
    return {p for p, all_done in status.items() if all_done}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--replay", help="comma-separated folders of recorded kernels (replay:DIR each)")
    ap.add_argument("--problems-dir")
    ap.add_argument("--limit", type=int, default=0, help="evaluate the first K recorded problems (0: every kernel)")
    ap.add_argument("--stride", type=int, default=1, help="every STRIDE-th recorded problem (by level, then number), "
                    "from --offset: a sample spread over the levels as a whole sweep is, and another offset in the next "
                    "session adds problems not yet evaluated")
    ap.add_argument("--offset", type=int, default=0)
    ap.add_argument("--also", default="", help="comma-separated LEVEL/N problems evaluated too (e.g. kernels to re-run "
                                                  "after a harness fix)")
    ap.add_argument("--skip-evaluated", type=Path, help="a fidelity.json (benchmarks/fidelity.py): problems whose "
                    "every recorded kernel is in its tables already are left out, so each session adds new kernels")
    ap.add_argument("--run-dir", help="the sweep's run folder (default OUT/run; must not hold a run)")
    ap.add_argument("--eval-set", action="append", default=[], metavar="KEY=VALUE", help="passed to agents.sweep")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--size", default="full")
    ap.add_argument("--deadline-s", type=float, default=0, help="stop the sweep after this many seconds (0: none)")
    ap.add_argument("--out", default="results")
    ap.add_argument("--summarize", action="store_true",
                    help="write the table from --run-dir (and OUT/progress.json) without running a sweep")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    from agents.models.replay import replay_inventory

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.summarize:
        return summarize(Path(args.run_dir) if args.run_dir else out / "run", out, args.eval_set)
    if not (args.replay and args.problems_dir):
        ap.error("--replay and --problems-dir are required (except with --summarize)")
    folders = [f for f in args.replay.split(",") if f]
    inventory = {Path(f).name: replay_inventory(f) for f in folders}  # replay folder name -> its kernels
    recorded = [k for kernels in inventory.values() for k in kernels]
    problems = sorted({(lv, n) for lv, n, _s in recorded})
    run_dir = Path(args.run_dir) if args.run_dir else out / "run"
    cmd = [sys.executable, "-m", "agents.sweep", "--models", ",".join(f"replay:{f}" for f in folders),
           "--problems-dir", args.problems_dir, "--turns", "1", "--device", args.device, "--size", args.size,
           "--run-dir", str(run_dir), "--no-progress", *[a for kv in args.eval_set for a in ("--eval-set", kv)]]
    also = [tuple(int(x) for x in a.strip().removeprefix("level").split("/")) for a in args.also.split(",") if a.strip()]
    evaluated = evaluated_problems(args.skip_evaluated, inventory) if args.skip_evaluated else set()
    problems = pick(problems, args.stride, args.offset, args.limit, also, evaluated)
    picked = args.limit or args.stride > 1 or args.offset or also or evaluated
    if picked:
        cmd += ["--problems", ",".join(f"{lv}/{n}" for lv, n in problems)]
    candidates = len(recorded) if not picked else sum(1 for lv, n, s in recorded if s == 0 and (lv, n) in problems)
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    sampler = Sampler([run_dir.parent, Path(tempfile.gettempdir()), Path.home()], progress=out / "progress.json")
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
    run = read_run(run_dir)
    data = {"replay": folders, "problems": len(problems), "candidates_recorded": candidates,
            "eval_set": args.eval_set, "device": args.device, "size": args.size,
            "wall_s": wall, "stopped_at_deadline": stopped, "returncode": proc.returncode,
            "peak_disk_bytes": sampler.peak, "gpu_peak_mib": sampler.gpu_peak_mib,
            "gpu_busy_pct": busy_share(sampler.gpu_busy), "gpu_busy_samples": len(sampler.gpu_busy), **run}
    scope = f"{run['attempts']} of {candidates} recorded, {len(problems)} problems" \
        f"{' (stopped at the deadline)' if stopped else ''}"
    write_table(out, data, scope, args.eval_set)
    return 0


def summarize(run_dir: Path, out: Path, eval_set: list[str]) -> int:
    """The table of a sweep collected before this script finished (a lent machine's time ran out): candidates and
    verdicts from the run folder, the wall from its config.json (written at the start) to the last write of
    attempts.jsonl, the peaks as last written to progress.json (sampled until then)."""
    run = read_run(run_dir)
    started, last = (run_dir / "config.json").stat().st_mtime, (run_dir / "attempts.jsonl").stat().st_mtime
    progress = out / "progress.json"
    peaks = json.loads(progress.read_text()) if progress.exists() else {}
    data = {"summarized_from_run_dir": True, "wall_s": last - started,
            "peak_disk_bytes": peaks.get("peak_disk_bytes") or {}, "gpu_peak_mib": peaks.get("gpu_peak_mib"),
            "gpu_busy_pct": peaks.get("gpu_busy_pct"), **run}
    scope = f"{run['attempts']} (summarised from the run folder: the sweep was collected before it ended)"
    write_table(out, data, scope, eval_set)
    return 0


def phase_shares(seconds: dict) -> str:
    """Each phase's share of the summed evaluation seconds, largest first: the evaluation's phases, then the judge's
    (spent inside those, so the two groups each add up to at most 100%); 'build' runs beside evaluation, left out."""
    total = seconds.get("eval") or 0.0
    if total <= 0:
        return "-"
    groups = [[(k, v) for k, v in seconds.items() if k not in ("eval", "build") and k.startswith("judge_") == judge]
              for judge in (False, True)]
    return "; judge: ".join(", ".join(f"{k.removeprefix('judge_')} {100 * v / total:.0f}%"
                                      for k, v in sorted(g, key=lambda kv: -kv[1])) for g in groups)


def write_table(out: Path, data: dict, scope: str, eval_set: list[str]) -> None:
    """full_size_sweep.md / .json from a run's figures (``read_run``'s, plus wall and peaks); adds candidates/hour."""
    wall, peak, gpu = data["wall_s"], data["peak_disk_bytes"], data["gpu_peak_mib"]
    per_hour = data["candidates_per_hour"] = data["attempts"] / wall * 3600 if wall > 0 else 0.0
    gpu_busy = "not sampled" if data.get("gpu_busy_pct") is None else f"{data['gpu_busy_pct']:.0f}%"
    lines = ["| figure | value |", "|---|---|",
             f"| candidates evaluated | {scope} |",
             f"| wall | {wall:.0f} s |", f"| candidates per hour | {per_hour:.0f} |",
             f"| peak disk used (largest filesystem delta) | "
             f"{f'{max(peak.values()) / 2**30:.2f} GiB' if peak else 'not sampled'} |",
             f"| peak GPU memory in use | {f'{gpu} MiB' if gpu is not None else 'not sampled'} |",
             f"| GPU busy (nvidia-smi utilization.gpu, mean of 1 s samples) | {gpu_busy} |",
             f"| harness errors (errors.jsonl) | {data['harness_errors']} |",
             f"| model errors (errors.jsonl: nothing recorded, unreadable response) | {data['model_errors']} |"]
    lines += [f"| {proto} verdicts | {', '.join(f'{k} {v}' for k, v in sorted(c.items()))} |"
              for proto, c in data["verdicts"].items()]
    lines.append(f"| seconds summed over the candidates | {', '.join(f'{k} {v:.0f}' for k, v in data['seconds'].items())} |")
    lines.append(f"| phases' share of the evaluations' time | {phase_shares(data['seconds'])} |")
    for key, w in sorted((data.get("workers") or {}).items()):
        busy = w["prepare_s"] + w["evaluate_s"]
        lines.append(f"| GPU worker {key} (executor timeline) | preparing judges {w['prepare_s']:.0f} s "
                     f"({w['prepares']}), evaluating {w['evaluate_s']:.0f} s ({w['evaluations']}), idle "
                     f"{max(0.0, wall - busy):.0f} s of {wall:.0f} s; prepared twice: "
                     f"{', '.join(w['prepared_twice']) or 'none'} |")
    lines.append(f"| settings | {' '.join(eval_set) or 'defaults'} |")
    write_results(out, "full_size_sweep", "\n".join(lines), data)


if __name__ == "__main__":
    sys.exit(main())
