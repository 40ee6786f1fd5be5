"""What the judge's pause (``harness.judge.pause``) costs: freeze (until the kernel reports the tree frozen) and thaw,
per pause, for a tree like an honest worker's (one process blocked reading, as a worker waits on the judge) and for
one with a helper that spins (as the pre-release attack's does). Both are outside the judge's clock; they lengthen
an evaluation by their sum times the number of pauses (~460 in a small CPU evaluation).

    python benchmarks/pause_cost.py [--reps 200] [--cuda] [--out benchmarks/results]

``--cuda``: the blocked process initialises CUDA first (its driver threads are in the tree too), as a GPU worker's
does. Needs root (a cgroup of its own).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._results import cores, write_results  # noqa: E402
from harness.judge.pause import Pause  # noqa: E402
from harness.runner import _open_freezer  # noqa: E402
from harness.sandbox.cgroup import Cgroup  # noqa: E402

BLOCKED = textwrap.dedent("""
    import os, sys
    if sys.argv[1] == "cuda":
        import torch
        torch.zeros(1, device="cuda"); torch.cuda.synchronize()
    r, w = os.pipe()
    if sys.argv[2] == "spin" and os.fork() == 0:
        while True:
            pass
    print("ready", flush=True)
    os.read(r, 1)
""")


def measure(tree: str, cuda: bool, reps: int) -> dict:
    cg = Cgroup.create(f"{os.getpid()}-pause-cost-{tree}", 8 * 2**30, 256)
    if cg is None or cg.freeze_files() is None:
        raise SystemExit("no cgroup freezer here (run as root on a host with the freezer controller)")
    # Born inside the cgroup, as the sandbox's processes are.
    procs = " ".join(cg.procs_files())
    child = subprocess.Popen(["sh", "-c", f'for f in {procs}; do echo $$ > "$f"; done; exec "$0" "$@"', sys.executable,
                              "-c", BLOCKED, "cuda" if cuda else "cpu", tree], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        kind, fds = _open_freezer(SimpleNamespace(cgroup=cg))
        pause = Pause(kind, fds)
        freeze, thaw = [], []
        for _ in range(reps):
            t0 = time.perf_counter()
            with pause.hold("measuring") as frozen:
                t1 = time.perf_counter()
                assert frozen
            t2 = time.perf_counter()
            freeze.append((t1 - t0) * 1e3)
            thaw.append((t2 - t1) * 1e3)
            time.sleep(0.002)
        pause.close()
    finally:
        child.kill()
        cg.kill_all()
        child.wait()
        cg.remove()
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    return {"tree": tree, "cuda": cuda, "cgroup": kind, "reps": reps,
            "freeze_ms": {"median": statistics.median(freeze), "p90": q(freeze, 0.9), "max": max(freeze)},
            "thaw_ms": {"median": statistics.median(thaw), "p90": q(thaw, 0.9), "max": max(thaw)}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--cuda", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    rows = [measure(tree, args.cuda, args.reps) for tree in ("blocked", "spin")]
    load = os.getloadavg()[0]
    lines = [f"The judge's pause, {args.reps} freeze/thaw pairs per tree, {cores()}, load {load:.2f} at the end"
             f"{', CUDA initialised in the tree' if args.cuda else ''} (`benchmarks/pause_cost.py`)", "",
             "| tree | cgroup | freeze median / p90 / max ms | thaw median / p90 / max ms |", "|---|---|---|---|"]
    for r in rows:
        f, t = r["freeze_ms"], r["thaw_ms"]
        lines.append(f"| {r['tree']} | {r['cgroup']} | {f['median']:.3f} / {f['p90']:.3f} / {f['max']:.2f} | "
                     f"{t['median']:.3f} / {t['p90']:.3f} / {t['max']:.2f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        write_results(args.out, "cpu_pause_cost" if not args.cuda else "h200_pause_cost", text, rows)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
