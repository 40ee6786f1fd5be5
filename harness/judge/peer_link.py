"""The judge's side of its calibration peer (``harness.candidate.clock_peer``, the sandboxed process that does a timed call
without the kernel): one calibration sample per ``PeerLink.sample``."""

from __future__ import annotations

import contextlib
import time

from ..wire.conn import Conn, WireError


class PeerLink:
    """The judge's side: one calibration sample per ``sample`` call, timed as the judge times a candidate's call
    (from its 'go' reply to the arrival of the report). None once the peer has failed (the judge then calibrates in
    its own process, and the witness says which it used)."""

    def __init__(self, fd: int, setup: dict, ready_timeout_s: float = 300.0) -> None:
        self.conn: Conn | None = Conn.from_fd(fd)
        self.ready_timeout_s = ready_timeout_s
        self.ready = False
        self.failure: str | None = None
        try:
            self.conn.send("setup", setup)
        except WireError as exc:
            self._fail(f"setup: {exc}")

    def _fail(self, why: str) -> None:
        self.failure = self.failure or why
        if self.conn is not None:
            self.conn.close()
        self.conn = None

    def sample(self, like: dict, count: int = 1) -> float | None:
        """One release of ``count`` kernel-less timed calls (the judge's batch), timed from 'go' to the report."""
        if self.conn is None:
            return None
        try:
            if not self.ready:
                kind, _ = self.conn.recv(timeout=self.ready_timeout_s)
                if kind != "ready":
                    raise WireError(f"said {kind!r} instead of ready")
                self.ready = True
            self.conn.send("next", {"like": like, "count": count})
            self.conn.recv(timeout=60)  # its 'go'
            t0 = time.perf_counter()
            self.conn.send("go", {})
            self.conn.recv(timeout=60)
            return (time.perf_counter() - t0) * 1e3
        except (WireError, OSError) as exc:
            self._fail(str(exc)[:300])
            return None

    def close(self) -> None:
        if self.conn is not None:
            with contextlib.suppress(WireError, OSError):
                self.conn.send("close", {})
            self.conn.close()
            self.conn = None
