"""The judge's pause of the candidate's whole process tree while it works between timed calls.

Between a timed call's report and the next call's release the candidate's worker waits for the judge; any other
process or thread of the candidate does not have to. While the judge writes the next call's fresh input values into
the buffer the candidate maps, such a helper can read them as they land and compute the call's answer before the
judge's clock starts (``open_attacks``' prerelease helper: 1.3-1.5x on a CPU); while the judge times the baselines, it
can contend with them, and with the calibration the judge samples between calls. The judge therefore pauses the tree
for all three: the guarantee is the kernel's cgroup freezer
(no task of a frozen cgroup runs, in user space or kernel, until thawed; ``harness.sandbox.cgroup`` puts every
process the sandbox starts in the cgroup, and the candidate cannot leave it), reached through descriptors the
evaluator opened and passed to this process alone. An honest worker, blocked on the judge, freezes in ~0.2 ms.

A tree that does not freeze within ``DEADLINE_S`` is let go (the judge's work goes on: a pause is never a harness
failure) and the session's guard ``paused_while_judging`` fails: a task that keeps running past the freezer's
request is not an honest worker waiting for its reply.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

# The kernel's freezer writes, as harness.sandbox.cgroup.FREEZER_WRITES declares them for the evaluator's own thaw:
# the judge may not import the launcher (tests/test_harness_layout.py), so tests/test_pause.py holds the two equal.
FREEZER_WRITES = {"v1": (b"FROZEN", b"THAWED"), "v2": (b"1", b"0")}

# Generous: an honest worker blocked on the judge freezes in ~0.2 ms, but a task in an uninterruptible wait (a device
# driver's, on a GPU host: not measured yet) freezes only when the wait ends.
DEADLINE_S = 1.0


class Pause:
    """Freeze and thaw one cgroup: ``kind`` "v1" with a descriptor of its ``freezer.state``, or "v2" with its
    ``cgroup.freeze`` and ``cgroup.events``."""

    def __init__(self, kind: str, fds: list[int]) -> None:
        if kind not in FREEZER_WRITES or len(fds) != (1 if kind == "v1" else 2):
            raise ValueError(f"no freezer of kind {kind!r} with {len(fds)} descriptor(s)")
        self.kind, self.fds = kind, fds
        self.pauses = 0
        self.failures: list[str] = []  # what was being done when the tree did not freeze in time
        self.longest_ms = 0.0

    def _frozen(self) -> bool:
        if self.kind == "v1":
            return os.pread(self.fds[0], 64, 0).startswith(b"FROZEN")
        return b"frozen 1" in os.pread(self.fds[1], 256, 0)

    def _set(self, frozen: bool) -> None:
        freeze, thaw = FREEZER_WRITES[self.kind]
        os.pwrite(self.fds[0], freeze if frozen else thaw, 0)

    @contextlib.contextmanager
    def hold(self, what: str) -> Iterator[bool]:
        """The candidate's tree paused for the body: yields whether it froze in time (the body runs either way)."""
        t0 = time.perf_counter()
        try:
            self._set(True)
            while not (frozen := self._frozen()) and time.perf_counter() - t0 < DEADLINE_S:
                time.sleep(0) if time.perf_counter() - t0 < 0.002 else time.sleep(0.0005)
        except OSError:  # the cgroup is gone with the whole tree (only the evaluator removes it): nothing runs
            yield True
            return
        self.pauses += 1
        self.longest_ms = max(self.longest_ms, (time.perf_counter() - t0) * 1e3)
        if not frozen:
            self.failures.append(what)
        try:
            yield frozen
        finally:
            with contextlib.suppress(OSError):
                self._set(False)

    def close(self) -> None:
        for fd in self.fds:
            with contextlib.suppress(OSError):
                os.close(fd)
