"""A shared-memory file both the judge and the candidate process map, whose size the candidate cannot change.

The candidate process holds a writable descriptor of every buffer the judge shares with it, and a descriptor is
enough to ``ftruncate`` the file: shrunk under the judge's mapping, the judge's next write of inputs faulted (SIGBUS)
and the judge died, so a candidate's request became a harness failure (no verdict; red team rt-sandbox). Sealed here
against shrinking (growing too where the size is fixed), and against further seals, so no one adds a seal that stops
the judge growing or mapping it either.
"""

from __future__ import annotations

import fcntl
import os


def shared_memfd(name: str, size: int, *, fixed: bool = False) -> int:
    """A memfd of ``size`` bytes that never shrinks (nor grows, with ``fixed``), and takes no more seals."""
    fd = os.memfd_create(name, os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, size)
        seals = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL | (fcntl.F_SEAL_GROW if fixed else 0)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    except OSError:
        os.close(fd)
        raise
    return fd


def grow(fd: int, size: int) -> None:
    """At least ``size`` bytes: another holder may have grown the file past it already (never shrunk back: it cannot)."""
    if os.fstat(fd).st_size < size:
        os.ftruncate(fd, size)
