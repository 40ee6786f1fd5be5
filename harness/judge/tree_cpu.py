"""The CPU time of the candidate's whole process tree, as the kernel's cgroup counts it, read by the judge.

On a CPU the verified baseline runs one thread, and the candidate's timed call is one call on one thread. A helper
process of the candidate's (a fork: no thread guard sees it) can work on a second core beside the worker while the
call runs, inside the judge's interval, so the interval shows less time than the call's work took (the open attack
``open_attacks/cpu/prerelease_helper_*``: 1.1-1.4x after the pause). The wall clock cannot see work done in parallel;
the tree's CPU time can: whatever the tree used beyond the interval's wall time (times the threads the run allows)
ran beside the worker. The judge reads it through a descriptor the evaluator opened and passed to it alone (v2's
``cpu.stat`` usage_usec, v1's ``cpuacct.usage`` in ns), and every process the sandbox starts is counted there (it is
born in the cgroup and cannot leave it). A preempted honest worker uses less CPU time than wall time, never more, so
the load of the host does not charge it.
"""

from __future__ import annotations

import os


class TreeCpu:
    """Reads one cgroup's CPU time: ``kind`` "v1" (cpuacct.usage) or "v2" (cpu.stat)."""

    def __init__(self, kind: str, fd: int) -> None:
        if kind not in ("v1", "v2"):
            raise ValueError(f"no CPU usage file of kind {kind!r}")
        self.kind, self.fd = kind, fd

    def ms(self) -> float | None:
        """The tree's CPU time so far, in ms; None if the file cannot be read."""
        try:
            text = os.pread(self.fd, 4096, 0).decode()
        except OSError:
            return None
        if self.kind == "v1":
            return int(text.strip()) / 1e6 if text.strip().isdigit() else None
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec" and value.strip().isdigit():
                return int(value) / 1e3
        return None

    def close(self) -> None:
        os.close(self.fd)
