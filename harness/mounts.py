"""Read-only views of the shared folders for a contained candidate process (its own mount namespace).

The candidate process shares the evaluator's build cache (every source's extension, the object cache, the
PCH) and temporary root (every evaluation's working folder) with candidates that run before, after and beside
it. Writing there could change another candidate's verdict (overwrite its built extension, its working files).
In ``harness.contain``'s pid-namespace mode the process also has a private mount namespace, so those folders
can be bind-mounted read-only for it alone, with its own extension folder and working folder left writable.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
CLONE_NEWNS = 0x00020000
CAP_SYS_ADMIN = 21
PR_CAPBSET_DROP = 24
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _mount(libc, target: str, flags: int, source: str | None = None) -> None:
    if libc.mount(source.encode() if source else None, target.encode(), None, flags, None) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {target}: {os.strerror(err)}")


def private_namespace() -> bool:
    """Move this process into a mount namespace of its own whose mounts do not propagate back (root only)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        return False
    return libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) == 0


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def protect(read_only: list[str], writable: list[str]) -> str | None:
    """Make every existing folder of ``read_only`` read-only in this mount namespace except the ``writable``
    folders under them. Returns None, or why it could not (the folders handled before the failure stay so).

    Order matters: the writable folders are bound onto themselves first, so the recursive bind of their root
    carries them along, and the read-only remount then applies to the root's own mount alone."""
    libc = ctypes.CDLL(None, use_errno=True)
    roots = sorted({Path(os.path.realpath(r)) for r in read_only if r and os.path.isdir(r)}, key=lambda p: len(p.parts))
    roots = [r for i, r in enumerate(roots) if not any(_under(r, o) for o in roots[:i])]  # nested: the outer one
    keep = [Path(os.path.realpath(w)) for w in writable if w and os.path.isdir(w)]
    roots = [r for r in roots if not any(_under(r, w) for w in keep)]  # a folder named both stays writable
    try:
        for w in keep:
            if any(_under(w, r) for r in roots):
                _mount(libc, str(w), MS_BIND, str(w))
                _mount(libc, str(w), MS_REMOUNT | MS_BIND)
        for r in roots:
            _mount(libc, str(r), MS_BIND | MS_REC, str(r))
            _mount(libc, str(r), MS_REMOUNT | MS_BIND | MS_RDONLY)
    except OSError as exc:
        return str(exc)
    return None


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_mount_capability() -> str | None:
    """Give up CAP_SYS_ADMIN for good (bounding set first, so no exec regains it; then effective and permitted):
    as root in its own mount namespace the process could otherwise remount the read-only folders writable or
    unmount them. Nothing the harness or a kernel needs after the view is made asks for it. Returns None, or why."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_CAPBSET_DROP, CAP_SYS_ADMIN, 0, 0, 0) != 0:
        return f"prctl(PR_CAPBSET_DROP): {os.strerror(ctypes.get_errno())}"
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        return f"capget: {os.strerror(ctypes.get_errno())}"
    mask = ~(1 << CAP_SYS_ADMIN) & 0xFFFFFFFF
    data[0].effective &= mask
    data[0].permitted &= mask
    data[0].inheritable &= mask
    if libc.capset(ctypes.byref(header), data) != 0:
        return f"capset: {os.strerror(ctypes.get_errno())}"
    return None
