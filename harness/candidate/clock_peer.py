"""The judge's calibration peer: a timed call with everything but the kernel, from where a candidate stands.

The judge's clock (``harness.judge.judge``, ``timing_floor``) subtracts from each timed call's interval a calibration of
everything in it besides the kernel. Made inside the judge, that calibration misses what only a second process pays:
on the H200 a sandboxed child's kernel-less exchange cost ~0.15 ms more than a thread's when the judge had used the
GPU last (a second CUDA context; benchmarks/results/h200_witness_overhead_peers.md, h200_witness_overhead.md). This
process is the harness's own code, started beside a judge in a sandbox of the same kind as a candidate's
(``harness.sandbox``: own pid namespace, dropped uid, seccomp) on the same device. Per calibration sample it does what
the worker does around a timed call (``harness.candidate.worker``: the pre-call work, 'go', the timer with its launch hold, the
hand-over of an output of the expected size through a buffer of the judge's kind, a sync, the report), with no
kernel; the judge times the exchange exactly as it times the candidate's. No candidate code ever runs here, and no
candidate process can see it. Opt-in (``EvalSettings.witness_calibration='peer'``): with the worker's pre-call work
before 'go', the context switch falls outside the interval, and on the H200 the peer calibrated honest small kernels'
calls as the judge does (h200_witness_honest_peer.md).

    python -m harness.candidate.clock_peer FD      (FD: a socket to the judge; the first message says device and buffer kind)
"""

from __future__ import annotations

import sys

import torch

from ..measure.device import Clock, DeviceOps
from ..wire.conn import Conn, WireError
from ..wire.messages import MAX_BATCH
from ..wire.sealed import OutputSlot, write_sealed
from ..wire.shm import DTYPES, DeviceSharedBuffer, _aligned, handover_buffer


def serve(conn: Conn) -> int:
    # the worker's own pre-call work (the judge's side, PeerLink, is harness.judge.peer_link)
    from .worker import _pre_call

    kind, setup = conn.recv(timeout=600)
    if kind != "setup":
        return 2
    device = str(setup["device"])
    torch.set_grad_enabled(False)
    ops = DeviceOps(device)
    clock = Clock(ops)
    lead_us = float(setup["lead_us"]) if ops.can_hold else 0.0  # as the worker decides its own
    buf = handover_buffer(bool(setup.get("device_handover")), bool(setup.get("pin")), ops.is_cuda)
    if lead_us > 0:
        ops.hold(1.0)  # the spin rate is measured now, not inside the first sample
    ops.sync()
    conn.send("ready", {})
    out: torch.Tensor | None = None
    while True:
        try:
            kind, p = conn.recv()
        except WireError:  # the judge is gone
            return 0
        if kind == "close":
            return 0
        like = p.get("like") or {}
        count = max(1, min(int(p.get("count", 1)), MAX_BATCH))  # the timed calls one release lets go (timed_batch)
        numel, dtype = int(like.get("numel", 0)), DTYPES.get(str(like.get("dtype")), torch.float32)
        if out is None or out.numel() != numel or out.dtype != dtype:
            # a float64 expected value is handed over as float32, as the candidate must return it
            out = torch.zeros(numel, dtype=torch.float32 if dtype == torch.float64 else dtype, device=device)
        nbytes = max(1, out.numel() * out.element_size())
        room = _aligned(nbytes)
        buf.ensure(room * count)
        # a host hand-over goes into a sealed file of its own per call, made before the release as the judge makes the
        # worker's
        slots = [] if isinstance(buf, DeviceSharedBuffer) else [OutputSlot(nbytes) for _ in range(count)]
        _pre_call(ops, like, 0)
        conn.send("go", {})
        conn.recv(timeout=60)
        for k in range(count):  # as the worker's batch: the pre-call work before each call after the first, and
            if k:               # no host wait between a batch's calls
                _pre_call(ops, like, k, wait=False)
            clock.reading(lambda: None, lead_us=lead_us, wait=count == 1)
            if slots:
                write_sealed(slots[k].fd, out)
            else:
                buf.write(out, k * room, wait=count == 1)
        ops.sync()
        conn.send("called", {})
        for slot in slots:
            slot.close()


def main(fd: int) -> int:
    return serve(Conn.from_fd(fd))


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
