"""An output's hand-over that nothing can change once reported: a fresh memfd per call, sealed against writes before the
report goes out.

Through a buffer both processes keep mapped, an output's bytes stay writable after the report: a forked child or a
hidden thread of the candidate's could finish the work the call skipped after the judge's clock had stopped, racing
the judge's copy (the late-write attack, now ``hacks/cpu/late_write_output_file_relu``; see
``harness/fixtures/open_attacks/README.md``). Here the judge makes one memfd per handed-
over output (``OutputSlot``: its size fixed by seals, its pages allocated before the call) and passes it with the
reply that precedes the call; the candidate process writes the bytes with ``pwrite`` (it never maps the file) and
adds ``F_SEAL_WRITE`` before it reports (``write_sealed``). The kernel refuses that seal while any process holds a
writable shared mapping of the file, and once it is set no one can write the file again, through any mapping,
descriptor or process. The judge checks for the seal as the report arrives (``OutputSlot.sealed``): an unsealed
output is a breach (``sealed_handover``), and a sealed one holds exactly what was there before the seal. What is left
to a candidate that skips the seal and writes late: the moments between its report and the judge's check.

Host memory only: a device hand-over buffer (``harness.wire.device_buffer``) has no seals.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time

import torch

from .conn import WireError
from .shm import SharedBuffer, dtype_name, stored_flat


class OutputSlot(SharedBuffer):
    """Judge side: one call's output file. Never mapped here (a writable mapping would refuse the candidate's seal):
    read with pread, which copies the bytes out."""

    def __init__(self, capacity: int, allocate: int | None = None) -> None:
        """``capacity`` bytes, of which the first ``allocate`` (all by default: the size the output is expected to
        take) are allocated now, so the call's hand-over is a copy, not allocation."""
        # not super().__init__: nothing is ever mapped
        self.fd = os.memfd_create("kv-out", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self.size, self._mm, self.pin, self._pinned = capacity, None, False, None
        try:
            os.ftruncate(self.fd, capacity)
            if (n := min(capacity, capacity if allocate is None else allocate)) > 0:
                os.posix_fallocate(self.fd, 0, n)
            fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        except OSError:
            os.close(self.fd)
            raise

    def sealed(self) -> bool:
        """Whether no one can write this file any more (checked as the report arrives, before anything else)."""
        try:
            return bool(fcntl.fcntl(self.fd, fcntl.F_GET_SEALS) & fcntl.F_SEAL_WRITE)
        except OSError:
            return False

    def map(self, size: int) -> None:
        pass  # never mapped: read with pread, which needs no mapping that could refuse the candidate's seal

    def _copy_out(self, dest: torch.Tensor, offset: int, nbytes: int) -> None:
        """The bytes read with pread (a copy through the kernel, no mapping), straight into ``dest`` on the CPU."""
        into = dest if dest.device.type == "cpu" else torch.empty(nbytes, dtype=torch.uint8)
        view, done = memoryview(into.numpy()), 0
        while done < nbytes:
            n = os.preadv(self.fd, [view[done:]], offset + done)
            if n <= 0:
                raise WireError("an output file ended early")
            done += n
        if into is not dest:
            dest.copy_(into)

    def view(self, desc: dict, device) -> torch.Tensor | None:
        return None  # never mapped: always read (a copy)

    def ensure(self, size: int) -> None:
        raise WireError("an output file has a fixed size")

    def write(self, t: torch.Tensor, offset: int) -> dict:
        raise WireError("the judge never writes an output file")


def _seal_write(fd: int, retries: int = 3) -> bool:
    """F_SEAL_WRITE on ``fd``; the kernel refuses it (EBUSY) while a page of the file has a reference it cannot account
    for, a writable mapping or a transient one (an honest candidate's output file once came in unsealed in a loaded CI
    run, a breach of sealed_handover, with nothing of the harness's mapping it): a few more tries, a millisecond or a
    few apart, before the judge is left to see the file unsealed."""
    for attempt in range(retries + 1):
        try:
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE)
            return True
        except OSError as exc:
            if exc.errno != errno.EBUSY or attempt == retries:
                return False
            time.sleep(0.001 * 2**attempt)
    return False


def write_sealed(fd: int, t: torch.Tensor, *, seal: bool = True) -> dict:
    """Candidate side: ``t``'s values into the output file at offset 0, in the order its storage holds them where that
    is dense (as ``SharedBuffer.write``), then the write seal. Returns the descriptor. A refused seal (someone maps
    the file writable) is not raised: the judge sees the file unsealed. ``seal=False``: the judge's calibration, which
    writes one file again and again, pays a seal query instead (one fcntl all the same)."""
    t = t.detach()
    flat, order = stored_flat(t)
    nbytes = t.numel() * t.element_size()
    if nbytes:
        data = memoryview(flat.view(torch.uint8).cpu().numpy())
        done = 0
        while done < nbytes:
            done += os.pwrite(fd, data[done:], done)
    if seal:
        _seal_write(fd)
    else:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, fcntl.F_GET_SEALS)
    desc = {"offset": 0, "shape": list(t.shape), "dtype": dtype_name(t.dtype), "nbytes": nbytes}
    if order is not None:
        desc["dim_order"] = order
    return desc
