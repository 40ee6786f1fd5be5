"""Hand a trial's input to a contained process and its output back: host shared memory vs shared device memory.

    python benchmarks/device_handover.py --sizes-mib 256,1024,4096 --reps 3 --out DIR

The judge hands every trial's inputs to the candidate process and reads every output back through a memfd
(``harness.wire.shm``): at full size, where most level-1 problems have tensors of a GiB or more, each trial crosses
the PCIe bus four times. ``harness.wire.device_buffer`` shares one device allocation through a file descriptor
instead. This checks, on the GPU host, that the importer can map it from inside the candidate's sandbox
(``harness.sandbox``: its own PID namespace, where legacy CUDA IPC fails, and another uid), that the bytes arrive intact both ways, and what each path costs per
round trip, side by side in one run. The round trip as the judge sees it: write the input, the other process
copies it into its own tensor, computes ``2 * x + 1`` and hands that back, the judge copies it out and checks it.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks._results import write_results  # noqa: E402
from harness.sandbox import UID_BASE, Policy, own, spawn_module  # noqa: E402
from harness.wire.conn import Conn  # noqa: E402
from harness.wire.device_buffer import DeviceBufferError  # noqa: E402
from harness.wire.shm import DeviceSharedBuffer, SharedBuffer  # noqa: E402


def child(fd: int) -> int:
    """The candidate side: maps what it is sent, answers each request with 2 * x + 1 in the output slot, through
    the same buffer classes (read, write) as the worker."""
    conn = Conn.from_fd(fd)
    conn.send("hello", {"containment": f"sandbox: pid {os.getpid()}, uid {os.getuid()}", "pid": os.getpid()})
    buf: SharedBuffer | None = None
    while True:
        kind, p, fds = conn.recv(with_fds=True)
        if kind == "close":
            return 0
        try:
            n = int(p["nbytes"])
            if kind.startswith("map_") and buf is not None:
                buf.close()
            if kind == "map_host":
                buf = SharedBuffer(fds[0], 2 * n)
            elif kind == "map_device":
                buf = DeviceSharedBuffer.attach(fds[0], int(p["size"]))
            t0 = time.perf_counter()
            x = buf.read({"offset": 0, "shape": [n // 4], "dtype": "float32"}, "cuda")
            buf.write(2 * x + 1, n)
            torch.cuda.synchronize()
            conn.send("done", {"seconds": time.perf_counter() - t0})
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which records it
            conn.send("failed", {"error": f"{type(exc).__name__}: {exc}"[:500]})


def round_trip(conn: Conn, mode: str, buf, x: torch.Tensor, expect: torch.Tensor, first: bool) -> dict:
    n = x.numel() * 4
    t0 = time.perf_counter()
    buf.write(x, 0)
    msg = {"nbytes": n, "size": buf.size}
    conn.send(("map_" + mode) if first else "again", msg, fds=[buf.fd] if first else None)
    kind, reply = conn.recv(timeout=600)
    if kind != "done":
        return {"ok": False, "error": (reply or {}).get("error", kind)}
    out = buf.read({"offset": n, "shape": [n // 4], "dtype": "float32"}, "cuda")
    ok = bool(torch.equal(out, expect))
    torch.cuda.synchronize()
    return {"ok": ok, "seconds": time.perf_counter() - t0, "child_seconds": reply["seconds"]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes-mib", default="256,1024,4096")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = ap.parse_args()
    if args.child is not None:
        return child(args.child)
    ours, theirs = socket.socketpair()
    work = Path(tempfile.mkdtemp(prefix="kv-handover-"))
    own(work, UID_BASE)
    proc = spawn_module("benchmarks.device_handover", ["--child", str(theirs.fileno())], cwd=work,
                        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}, max_file_bytes=2**30, pass_fds=(theirs.fileno(),),
                        sandbox=Policy(work=work, uid=UID_BASE, gpu=True))
    theirs.close()
    conn = Conn(ours)
    _, hello = conn.recv(timeout=120)
    rows = []
    for mib in [int(s) for s in args.sizes_mib.split(",")]:
        x = torch.randn(mib * 2**20 // 4, device="cuda")
        expect = 2 * x + 1
        for mode in ("host", "device"):
            try:
                buf = (SharedBuffer if mode == "host" else DeviceSharedBuffer).create(2 * mib * 2**20)
            except DeviceBufferError as exc:
                rows.append({"mib": mib, "mode": mode, "ok": False, "error": str(exc)})
                continue
            reps = [round_trip(conn, mode, buf, x, expect, first=True)]
            reps += [round_trip(conn, mode, buf, x, expect, first=False) for _ in range(args.reps - 1)
                     if reps[-1].get("ok")]
            good = [r for r in reps if r.get("ok")]
            rows.append({"mib": mib, "mode": mode, "ok": len(good) == len(reps) == args.reps,
                         "error": next((r.get("error") for r in reps if not r.get("ok")), None),
                         "seconds": [r["seconds"] for r in good], "child_seconds": [r["child_seconds"] for r in good]})
            buf.close()
        del x, expect
        torch.cuda.empty_cache()
    conn.send("close")
    proc.proc.wait(timeout=60)
    proc.end()
    lines = [f"# Trial hand-over, host shared memory vs shared device memory ({torch.cuda.get_device_name()})", "",
             f"The other process ran with containment `{hello['containment']}`. Round trip as the judge sees it "
             f"(write the input, the other side copies it, computes 2x+1 and hands it back, the judge copies it out), "
             f"median of {args.reps}; generated by `benchmarks/device_handover.py`.", "",
             "| tensor MiB | path | bytes intact | round trip s | other side s | error |", "|---|---|---|---|---|---|"]
    def med(v: list[float] | None) -> str:
        return f"{statistics.median(v):.3f}" if v else "-"

    for r in rows:
        lines.append(f"| {r['mib']} | {r['mode']} | {r['ok']} | {med(r.get('seconds'))} | {med(r.get('child_seconds'))} "
                     f"| {r.get('error') or ''} |")
    write_results(args.out, "device_handover", "\n".join(lines) + "\n",
                  {"device": torch.cuda.get_device_name(), "containment": hello["containment"], "rows": rows})
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
