"""One device's timing gate: while a judge times (a candidate's timed calls, its baselines), no other judge of the same
evaluator prepares on that device, and the other way round.

A pool prepares the next problem's judge (reference model, torch.compile baseline) while the current candidate runs;
its device work would otherwise land inside the current candidate's timed intervals. The gate is an exclusive
``flock`` on a file the parent names in ``KV_DEVICE_GATE`` (one per device, under the evaluator's cache folder,
which no sandbox sees); the kernel drops it with the process, so a judge that dies holds nothing. Holding is
counted per process, so nested holds release once, at the outermost exit. ``KV_DEVICE_GATE_LOG`` (optional) names a
file each hold is appended to (``pid what start end``, wall-clock seconds): how a benchmark or a test sees that
timing and preparation never overlapped.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator

GATE_ENV = "KV_DEVICE_GATE"
GATE_LOG_ENV = "KV_DEVICE_GATE_LOG"


class DeviceGate:
    def __init__(self, path: str | None = None, log: str | None = None) -> None:
        self.path = path if path is not None else os.environ.get(GATE_ENV) or None
        self.log = log if log is not None else os.environ.get(GATE_LOG_ENV) or None
        self._fd: int | None = None
        self._depth = 0
        self._what = ""
        self._since = 0.0
        self.waited_s = 0.0  # seconds this process spent waiting for the gate, in all

    @contextlib.contextmanager
    def hold(self, what: str) -> Iterator[None]:
        self.acquire(what)
        try:
            yield
        finally:
            self.release()

    def acquire(self, what: str) -> None:
        if self.path is None:
            return
        self._depth += 1
        if self._depth > 1:
            return
        t0 = time.perf_counter()
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        self.waited_s += time.perf_counter() - t0
        self._what, self._since = what, time.time()

    def release(self) -> None:
        if self.path is None or self._depth == 0:
            return
        self._depth -= 1
        if self._depth or self._fd is None:
            return
        ended = time.time()
        if self.log:
            with contextlib.suppress(OSError), open(self.log, "a") as f:
                f.write(f"{os.getpid()} {self._what} {self._since:.6f} {ended:.6f}\n")
        os.close(self._fd)  # closing the only descriptor drops the lock
        self._fd = None

    @property
    def held(self) -> bool:
        return self._depth > 0
