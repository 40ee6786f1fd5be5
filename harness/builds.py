"""The parent's build cache: where candidates' extensions are built and filed, keyed by what the evaluator computes
(source text and build environment), with the hash of every shared object checked before a load; the precompiled
header and trusted object caches shared by every cache on the machine. Builds themselves run sandboxed
(``harness.builder``, ``harness.build.build``); only this process files their output."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shutil
import stat
import sys
from pathlib import Path
from typing import NamedTuple

from .sandbox import own
from .scoring.static_scan import kernel_backend

DEFAULT_CACHE = Path(os.environ.get("KV_CACHE_DIR", Path.home() / ".cache" / "kernelverify"))


@functools.lru_cache(maxsize=1)
def _build_environment() -> str:
    """What a compiled extension depends on beyond its source: the interpreter, torch and where its headers are."""
    import torch

    return f"\0{sys.executable}\0{sys.version}\0{torch.__version__}\0{Path(torch.__file__).resolve().parent}"


def pch_dir() -> Path | None:
    """Where build processes keep precompiled ``torch/extension.h`` headers (``harness.build.build``):
    ``KV_PCH_DIR`` if set (empty: off), else ``DEFAULT_CACHE/pch``. Not under an Evaluator's own
    ``cache_dir``: a PCH is keyed by compiler, flags and torch version, never by candidate, so every
    cache on the machine shares it (a test's temporary cache does not make a new ~0.8 GB one)."""
    env = os.environ.get("KV_PCH_DIR")
    if env is not None:
        return Path(env) if env.strip() else None
    return DEFAULT_CACHE / "pch"


def object_cache_dir() -> Path | None:
    """Where trusted in-process builds (the demo kernels' tests) keep compiled translation units for reuse
    (``harness.build.compile_launcher``): ``KV_OBJECT_CACHE_DIR`` if set (empty: off), else ``DEFAULT_CACHE/objects``.
    Never given to a candidate's build: an object one candidate's build made could reach another candidate whose
    unit has the same text."""
    env = os.environ.get("KV_OBJECT_CACHE_DIR")
    if env is not None:
        return Path(env) if env.strip() else None
    return DEFAULT_CACHE / "objects"


class BuildResult(NamedTuple):
    """Outcome of compiling one candidate (``Evaluator.build``); unpacks as (ok, seconds, error, cached)."""

    ok: bool
    seconds: float
    error: str
    cached: bool
    timed_out: bool = False


def build_marker(ext: Path) -> Path:
    """Where the evaluator files ``ext``'s finished build: beside it, never inside it. A build may write anything in
    its own folder, a symlink included, and the evaluator (root) writes the marker: inside, a build's symlink once
    had it overwrite any file of the machine."""
    return ext.with_name(ext.name + ".built-ok")


def _file_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every shared object under ``folder`` (what a load executes), by relative path. A symlink, which the
    build may point anywhere (an endless ``/proc`` file), is filed by its target's name, never followed."""
    out = {}
    for p in sorted(folder.rglob("*.so")):
        if p.is_symlink():
            out[str(p.relative_to(folder))] = "symlink:" + os.readlink(p)
        elif p.is_file():
            out[str(p.relative_to(folder))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@contextlib.contextmanager
def _source_lock(ext: Path):
    """Exclusive per-source lock across threads and processes sharing the cache: a flock, which the
    kernel releases when its holder dies, unlike the ``lock`` file torch's cpp_extension leaves behind
    when a build is killed (every later load_inline of that source then waits on it). Its file lies beside ``ext``,
    out of the build's reach: opened for writing inside it, a build's symlink made the evaluator truncate any file."""
    with open(ext.with_name(ext.name + ".lock"), "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def _clear_torch_batons(ext: Path) -> None:
    """Remove torch's per-extension ``lock`` files; called under ``_source_lock``, so no build of ours
    holds one. A candidate process of the same source loading it at this moment may lose its lock: it
    then runs ninja on a finished build (nothing to do) alongside the next one, which is harmless. Only in real
    folders: through a build's symlink to a folder this would remove a ``lock`` anywhere."""
    for stale in ext.glob("*/lock"):
        if not stale.parent.is_symlink():
            stale.unlink(missing_ok=True)


def _filed(ext: Path, marker: Path) -> bool:
    """Whether ``ext`` holds a finished build whose shared objects are still the ones filed (a marker of an older
    format, or any change, means build again)."""
    try:
        filed = json.loads(marker.read_text())["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return isinstance(filed, dict) and filed == _file_hashes(ext)


def _special(folder: str, names: list[str]) -> set[str]:
    """What a build left that is neither a folder, a regular file nor a symlink (a FIFO, a socket): copying one
    raises in the evaluator."""
    out = set()
    for n in names:
        with contextlib.suppress(OSError):
            mode = os.lstat(os.path.join(folder, n)).st_mode
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                out.add(n)
    return out


_NOT_COPIED = shutil.ignore_patterns(".kv-build.lock", ".built-ok", "lock")


def _folder_bytes(folder: Path) -> int:
    """Apparent size of everything under ``folder`` (a sparse file counted whole: a copy writes it whole), links not
    followed."""
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in (*dirnames, *filenames):
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, name)).st_size
    return total


def _empty(folder: Path) -> None:
    for p in folder.iterdir():
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def _copy_build(ext: Path, dest: Path, uid: int) -> None:
    """``ext``'s files into ``dest`` (emptied first), times kept so ninja finds them up to date, given to ``uid``."""
    _empty(dest)
    shutil.copytree(ext, dest, dirs_exist_ok=True, symlinks=True,
                    ignore=lambda d, names: _NOT_COPIED(d, names) | _special(d, names))
    own(dest, uid)


def _builds_ahead(source: str) -> bool:
    """Whether a source compiles anything (an extension ahead, or Triton at run time): it gets the build allowance."""
    return kernel_backend(source) != "python"
