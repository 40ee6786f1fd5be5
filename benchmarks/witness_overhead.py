"""Where a timed call's interval goes besides the kernel (issue 30's judge's clock), peer by peer, on the GPU.

    python benchmarks/witness_overhead.py [--reps 40] [--mib 4] [--out DIR]

The judge measures each timed call from its 'go' reply to the 'called' report and subtracts a calibration of
everything but the kernel. This measures that exchange with no kernel at all (the timer around nothing, with its
launch hold, then the output's hand-over into shared device memory and a sync) against three peers: a thread of
the judge-like process (how the judge calibrates), a plain child process, and a child in the candidate sandbox
(harness.sandbox). Each peer is measured twice: right after the judge-like process used the GPU itself (as the
judge does before every 'go': expected outputs, comparisons, its calibration) and after it left the GPU idle.
The peer's own share (from receiving 'go' to sending its report) is reported beside the whole exchange, so the
table separates messaging from device work and shows what a second CUDA context costs.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks._results import write_results  # noqa: E402
from harness.measure.device import Clock, DeviceOps  # noqa: E402
from harness.sandbox import UID_BASE, Policy, own, spawn_module  # noqa: E402
from harness.wire.conn import Conn  # noqa: E402
from harness.wire.shm import DeviceSharedBuffer  # noqa: E402

LEAD_US = 200.0


def serve(conn: Conn, buf: DeviceSharedBuffer, nbytes: int) -> None:
    """The candidate's side, as the worker's timed call does it: the pre-call work, 'go', the timer (around
    nothing, or a ReLU), the hand-over, a sync, the report with the timer's reading."""
    from harness.candidate.worker import _pre_call

    ops = DeviceOps("cuda")
    clock = Clock(ops)
    x = torch.randn(nbytes // 4, device="cuda")
    ops.hold(1.0)  # the spin rate is measured once, before the first exchange
    ops.sync()
    conn.send("ready", {"pid": os.getpid(), "uid": os.getuid()})
    like = {"numel": nbytes // 4, "dtype": "float32"}
    while True:
        kind, p = conn.recv()
        if kind == "close":
            return
        if p["pre_call"]:
            _pre_call(ops, like, 0)
        conn.send("go", {})
        conn.recv()
        t0 = time.perf_counter()
        ms, out = clock.interval((lambda: torch.relu(x)) if p["relu"] else (lambda: x), sync_before_end=False,
                                 lead_us=LEAD_US)
        buf.write(out, 0)
        ops.sync()
        conn.send("called", {"inner_ms": (time.perf_counter() - t0) * 1e3, "ms": ms})


def child(fd: int, bfd: int, size: int, nbytes: int) -> int:
    serve(Conn.from_fd(fd), DeviceSharedBuffer.attach(bfd, size), nbytes)
    return 0


def exchange(conn: Conn, ops: DeviceOps, cfg: dict) -> tuple[float, float, float]:
    """One timed call as the judge sees it: (release-to-report interval, the peer's own share, its reported ms).
    ``judge_work``: the judge-like process uses the GPU after each report (flush and sync), as the judge does
    (comparisons, its calibration) before its 'ok'."""
    conn.send("next", cfg)
    conn.recv(timeout=60)  # 'go'
    t0 = time.perf_counter()
    conn.send("go", {})
    _k, r = conn.recv(timeout=60)
    whole = (time.perf_counter() - t0) * 1e3
    if cfg["judge_work"]:
        ops.flush_l2()
        ops.sync()
    return whole, float(r["inner_ms"]), float(r["ms"])


def judge_calibration(ops: DeviceOps, nbytes: int) -> list[float]:
    """The judge's calibration as harness.judge.judge does it (thread round trip, timer around nothing with the hold,
    hand-over of an output of that size, sync), here in the judge-like process."""
    out = torch.zeros(nbytes // 4, device="cuda")
    dst = torch.empty_like(out)
    mine, theirs = socket.socketpair()
    peer = Conn(theirs)

    def echo() -> None:
        while True:
            k, p = peer.recv()
            peer.send(k, p)

    threading.Thread(target=echo, daemon=True).start()
    me = Conn(mine)
    samples = []
    for _ in range(40):
        ops.flush_l2()
        ops.sync()
        t0 = time.perf_counter()
        me.send("called", {"ms": 1.0})
        me.recv()
        Clock(ops).interval(lambda: None, sync_before_end=False, lead_us=LEAD_US)
        dst.copy_(out)
        ops.sync()
        samples.append((time.perf_counter() - t0) * 1e3)
    return samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--mib", type=int, default=4, help="output size handed over per call")
    ap.add_argument("--child", type=int, nargs=4, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    a = ap.parse_args()
    if a.child:
        return child(*a.child)
    nbytes = a.mib * 2**20
    ops = DeviceOps("cuda")
    buf = DeviceSharedBuffer.create(nbytes)
    peers: dict[str, Conn] = {}
    procs = []
    mine, theirs = socket.socketpair()
    threading.Thread(target=serve, args=(Conn(theirs), buf, nbytes), daemon=True).start()
    peers["thread of the judge-like process"] = Conn(mine)
    work = Path(tempfile.mkdtemp(prefix="kv-witness-"))
    own(work, UID_BASE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    for name, sandbox in (("plain child process", None),
                          ("sandboxed child process", Policy(work=work, uid=UID_BASE, gpu=True))):
        ours, theirs = socket.socketpair()
        procs.append(spawn_module("benchmarks.witness_overhead",
                                  ["--child", str(theirs.fileno()), str(buf.fd), str(buf.size), str(nbytes)],
                                  cwd=work, env=env, max_file_bytes=2**30, pass_fds=(theirs.fileno(), buf.fd),
                                  sandbox=sandbox))
        theirs.close()
        peers[name] = Conn(ours)
    hello = {name: c.recv(timeout=300)[1] for name, c in peers.items()}
    rows = []
    for name, conn in peers.items():
        for pre_call, judge_work, relu in ((False, False, False), (False, True, False), (True, True, False),
                                           (True, True, True)):
            cfg = {"pre_call": pre_call, "judge_work": judge_work, "relu": relu}
            for _ in range(3):
                exchange(conn, ops, cfg)
            samples = [exchange(conn, ops, cfg) for _ in range(a.reps)]
            rows.append({"peer": name, **cfg, "whole_ms": [s[0] for s in samples],
                         "inner_ms": [s[1] for s in samples], "reported_ms": [s[2] for s in samples]})
    calibration = judge_calibration(ops, nbytes)
    for conn in peers.values():
        conn.send("close")
    for p in procs:
        p.proc.wait(timeout=60)
        p.end()

    def q(v: list[float], f: float) -> float:
        return sorted(v)[min(len(v) - 1, int(f * len(v)))]

    lines = [f"# A timed call's exchange, by peer ({torch.cuda.get_device_name()})", "",
             f"The peer does what the worker's timed call does: (optionally) the pre-call work, 'go', the timer "
             f"with a {LEAD_US:.0f} us launch hold around nothing or a ReLU of {a.mib} MiB, the hand-over of "
             f"{a.mib} MiB into shared device memory, a sync, the report. 'judge work': the judge-like process "
             f"flushes the cache and syncs after each report, as the judge's comparisons and calibration do. "
             f"{a.reps} calls each; 10th percentile and median in ms; 'unexplained' = interval - reported. The "
             f"judge's own calibration (harness.judge.judge's way, in-process): p10 {q(calibration, 0.1):.3f}, median "
             f"{statistics.median(calibration):.3f}. Generated by `benchmarks/witness_overhead.py`.", "",
             "| peer | pre-call | judge work | ReLU | interval p10 | interval median | peer share p10 | reported median "
             "| unexplained p10 |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        unexplained = [w - m for w, m in zip(r["whole_ms"], r["reported_ms"], strict=True)]
        lines.append(f"| {r['peer']} | {r['pre_call']} | {r['judge_work']} | {r['relu']} | {q(r['whole_ms'], 0.1):.3f} | "
                     f"{statistics.median(r['whole_ms']):.3f} | {q(r['inner_ms'], 0.1):.3f} | "
                     f"{statistics.median(r['reported_ms']):.4f} | {q(unexplained, 0.1):.3f} |")
    write_results(a.out, "witness_overhead", "\n".join(lines) + "\n",
                  {"device": torch.cuda.get_device_name(), "peers": hello, "rows": rows, "judge_calibration_ms": calibration})
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
