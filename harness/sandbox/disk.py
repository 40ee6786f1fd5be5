"""Size-capped folders for sandboxed processes: what candidate code may write is bounded by the kernel, not checked after.

A sandbox's writable folders (a build's work and extensions folders, an evaluation's work folder with its copy of the
build) would otherwise lie on the host's disk, where a candidate writing without end fills it for every process on
the host, the evaluator's records included, and its ENOSPC read as the harness's failure. ``cap(folder, size)``
mounts a tmpfs of ``size`` bytes over the folder (mount(2): root, or CAP_SYS_ADMIN, in the evaluator's own mount
namespace). A write beyond it fails inside the sandbox with ENOSPC, which is the candidate's error. Its pages are
charged to the memory cgroup of the process that wrote them, so the sandbox's memory cap bounds them too. Where the
evaluator may not mount, ``cap`` returns False and the folder stays on the disk (``capped_note`` says so).

``release(folder)`` unmounts (detached, so an open file cannot keep it) and removes the folder; ``release_under(root)``
unmounts every capped folder under ``root``, for the evaluator's last clean-up.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import stat
import threading
from pathlib import Path

MNT_DETACH = 2
_libc = ctypes.CDLL(None, use_errno=True)
_lock = threading.Lock()
_capped: set[str] = set()  # folders this process mounted a tmpfs over
_refused: list[str] = []  # why the first mount failed, once


def cap(folder: Path, size: int) -> bool:
    """A tmpfs of ``size`` bytes mounted over ``folder`` (an existing, empty folder). False where mounting is not
    allowed here (the folder is left as it was, on its own file system)."""
    path = os.fsencode(str(folder))
    opts = f"size={int(size)},mode=0755".encode()
    if _libc.mount(b"tmpfs", path, b"tmpfs", ctypes.c_ulong(0), opts) != 0:
        err = ctypes.get_errno()
        with _lock:
            if not _refused:
                _refused.append(f"mount refused ({os.strerror(err)})")
        return False
    with _lock:
        _capped.add(str(folder))
    return True


def is_capped(folder: Path) -> bool:
    with _lock:
        return str(folder) in _capped


def capped_note() -> str | None:
    """Why sandboxes' folders lie on the host disk uncapped, where a mount was refused; None otherwise."""
    with _lock:
        return f"the sandbox's folders were on the host disk without a size cap: {_refused[0]}" if _refused else None


def _unmount(folder: str) -> None:
    with _lock:
        if folder not in _capped:
            return
        _capped.discard(folder)
    _libc.umount2(os.fsencode(folder), MNT_DETACH)


def uncap(folder: Path) -> None:
    """Unmount ``folder``'s tmpfs, if this process mounted one (its files go with it), keeping the folder below."""
    _unmount(str(folder))


def release(folder: Path) -> None:
    """Unmount ``folder``'s tmpfs (if this process mounted one) and remove the folder."""
    _unmount(str(folder))
    shutil.rmtree(folder, ignore_errors=True)


def release_under(root: Path) -> None:
    """Unmount every capped folder under ``root`` (the evaluator's temporary root, before it is removed)."""
    prefix = str(root).rstrip("/") + "/"
    with _lock:
        under = [f for f in _capped if f.startswith(prefix)]
    for f in under:
        _unmount(f)


def _special(folder: str, names: list[str]) -> set[str]:
    """What is neither a folder, a regular file nor a symlink (a FIFO, a socket a build left): not copied (copying one
    blocks or raises), and so not kept."""
    out = set()
    for n in names:
        try:
            mode = os.lstat(os.path.join(folder, n)).st_mode
        except OSError:
            continue
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
            out.add(n)
    return out


def persist(folder: Path) -> None:
    """A capped folder's contents moved onto the file system below it (the extensions cache keeps a build for good):
    copied beside it, the tmpfs released, the copy renamed into its place. Nothing where the folder is not capped."""
    if not is_capped(folder):
        return
    filing = folder.with_name(folder.name + ".filing")
    shutil.rmtree(filing, ignore_errors=True)
    shutil.copytree(folder, filing, symlinks=True, ignore=_special)
    _unmount(str(folder))
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(folder)
    os.rename(filing, folder)


def persist_under(root: Path) -> None:
    """``persist`` every capped folder under ``root`` (an evaluator keeping its temporary folders for inspection)."""
    prefix = str(root).rstrip("/") + "/"
    with _lock:
        under = [f for f in _capped if f.startswith(prefix)]
    for f in under:
        with contextlib.suppress(OSError):
            persist(Path(f))
