"""Compiler launcher for extension builds: reuses object files across builds, adds the PCH folder.

Build and candidate processes get ``CXX`` and ``PYTORCH_NVCC`` naming shims that run torch's
compilers through this script (``harness.build.build.compiler_shims``):

    python -S compile_launcher.py [--objects ROOT] [--include DIR | --pch-from-env] -- COMPILER ARGS...

ROOT defaults to ``$KV_OBJECT_CACHE_DIR`` (unset: no reuse); ``--pch-from-env`` takes DIR from
``$KV_PCH_INCLUDE``, which the build step sets per extension.

Why: every candidate gets its own extensions folder (keyed by the hash of its whole source), so a
resubmission that changes one line of the CUDA kernel recompiles the unchanged ``main.cpp`` (torch's
bindings: ~30 s of CPU parsing torch/extension.h) as well, and one that changes only the Python glue
recompiles both. Here a translation unit is compiled once per distinct input:

* Key: the compiler's identity (resolved path and ``--version``), its arguments with the build folder
  written as a placeholder (so ``-DTORCH_EXTENSION_NAME=...``, the architecture and every flag count),
  the mtime of every include folder named, and the source file's bytes; not the PCH folder (below).
  Headers: the first compile's dependency list is kept with each header's size and mtime; a later
  hit is used only if all of them are unchanged.
* A hit copies the stored object (and depfile, with this build's folder put back) into place; a miss
  compiles as usual and stores the result. Two builds needing the same unit at once: the second waits
  for the first (a file lock the kernel releases if the holder dies) rather than compile it twice.
* ``--include DIR``: for compiles, ``-I DIR`` first, so ``#include <torch/extension.h>`` finds the
  precompiled header ``DIR/torch/extension.h.gch`` (see harness.build.build). Only the C++ compiler's shim
  passes it; nvcc's own preprocessing never sees it. GCC uses a PCH only when it matches the compile
  and parses the header otherwise, so the object is the same with or without it: a unit compiled
  before the PCH existed serves later builds that have it. With ``$KV_PCH_WAIT_S`` set (the build
  step sets it while the PCH is still being made), a compile that misses the object cache first waits
  up to that long for the PCH's maker to finish (its lock on ``DIR/.lock``).
* Every compile appends one JSON line (unit, hit, seconds) to ``ROOT/compiles.jsonl``; the
  throughput benchmark reads it to report what was reused.

Stdlib only and started with ``python -S``: it runs once per compile and link.
An object may embed the folder it was first built in (``__FILE__`` in an error message); only text.
A candidate's build process could write into this cache, as it can into the extensions cache; the
same trust applies (builds run the candidate's Python).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

VERSION = "1"
PLACEHOLDER = "@BUILD_DIR@"
MAX_ENTRIES = 4096  # beyond either cap the least recently used entries go, down to 90% of it
MAX_BYTES = int(os.environ.get("KV_OBJECT_CACHE_MAX_BYTES", 8 * 2**30))  # a CUDA main.cpp object is ~10 MB
LOG_MAX_BYTES = 16 * 2**20


def _value_after(args: list[str], *flags: str) -> str | None:
    for i, a in enumerate(args[:-1]):
        if a in flags:
            return args[i + 1]
    return None


def _compiler_identity(compiler: str) -> str:
    path = shutil.which(compiler) or compiler
    try:
        r = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=60)
        banner = r.stdout + r.stderr
    except (OSError, subprocess.SubprocessError):
        banner = ""
    return f"{os.path.realpath(path)}\n{banner}"


def parse_depfile(text: str) -> list[str]:
    """Prerequisites of a make-style depfile (``out: a b \\`` lines), unescaping ``\\ ``."""
    body = text.replace("\\\n", " ")
    _, _, deps = body.partition(": ")
    out, cur, i = [], "", 0
    while i < len(deps):
        c = deps[i]
        if c == "\\" and i + 1 < len(deps) and deps[i + 1] == " ":
            cur += " "
            i += 2
            continue
        if c.isspace():
            if cur:
                out.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    if cur:
        out.append(cur)
    return out


class Unit:
    """One compile command: ``COMPILER ... -c SRC -o OUT ...`` run in ninja's build folder."""

    def __init__(self, argv: list[str], cwd: Path):
        self.argv = argv
        self.source = Path(_value_after(argv, "-c") or "")
        out = _value_after(argv, "-o") or ""
        self.out = Path(out) if os.path.isabs(out) else cwd / out
        self.build_dir = str(self.source.parent if self.source.is_absolute() else cwd)
        dep = _value_after(argv, "-MF", "--dependency-output")
        self.depfile = (Path(dep) if os.path.isabs(dep) else cwd / dep) if dep else None

    def key(self) -> str:
        norm = [a.replace(self.build_dir, PLACEHOLDER) for a in self.argv[1:]]
        h = hashlib.sha256()
        for part in (VERSION, _compiler_identity(self.argv[0]), *norm):
            h.update(part.encode() + b"\0")
        for d in self.include_dirs():  # a reinstalled library (same path, new headers) changes the key
            try:
                h.update(f"{d}:{os.stat(d).st_mtime_ns}".encode() + b"\0")
            except OSError:
                pass
        h.update(self.source.read_bytes())
        return h.hexdigest()[:32]

    def include_dirs(self) -> list[str]:
        """Folders named by -I/-isystem: -MMD depfiles leave out system headers, so the manifest alone
        would not notice torch being reinstalled; a folder's mtime does."""
        a = self.argv
        return [a[i + 1] for i in range(len(a) - 1) if a[i] in ("-I", "-isystem")]


def _headers_unchanged(manifest: list[list], build_dir: str) -> bool:
    for path, size, mtime_ns in manifest:
        try:
            st = os.stat(path.replace(PLACEHOLDER, build_dir))
        except OSError:
            return False
        if st.st_size != size or st.st_mtime_ns != mtime_ns:
            return False
    return True


def _restore(entry: Path, unit: Unit) -> bool:
    try:
        manifest = json.loads((entry / "manifest.json").read_text())
        if not _headers_unchanged(manifest, unit.build_dir):
            return False
        tmp = unit.out.with_name(unit.out.name + f".tmp{os.getpid()}")
        shutil.copyfile(entry / "object", tmp)
        os.replace(tmp, unit.out)
        if unit.depfile is not None:
            unit.depfile.write_text((entry / "deps").read_text().replace(PLACEHOLDER, unit.build_dir))
        os.utime(entry)  # recently used: kept when the cache is trimmed
        return True
    except (OSError, ValueError):
        return False


def _store(entry: Path, unit: Unit, deps_text: str) -> None:
    source = str(unit.source)
    manifest = []
    for p in parse_depfile(deps_text):
        if os.path.abspath(p) == source:
            continue
        try:
            st = os.stat(p)
        except OSError:
            return  # a header we cannot stat: do not cache what we could not check later
        manifest.append([os.path.abspath(p).replace(unit.build_dir, PLACEHOLDER), st.st_size, st.st_mtime_ns])
    tmp = entry.with_name(entry.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    shutil.copyfile(unit.out, tmp / "object")
    (tmp / "deps").write_text(deps_text.replace(unit.build_dir, PLACEHOLDER))
    (tmp / "manifest.json").write_text(json.dumps(manifest))
    shutil.rmtree(entry, ignore_errors=True)
    os.replace(tmp, entry)


def _trim(root: Path, max_entries: int | None = None, max_bytes: int | None = None) -> None:
    """Remove least recently used entries (restores touch theirs) while the cache is over its count
    or byte cap, down to 90% of the cap it exceeded."""
    max_entries = MAX_ENTRIES if max_entries is None else max_entries
    max_bytes = MAX_BYTES if max_bytes is None else max_bytes
    entries = []
    for d in root.glob("??"):
        if d.is_dir():
            for e in d.iterdir():
                try:
                    if e.is_dir():
                        entries.append((e.stat().st_mtime, sum(f.stat().st_size for f in e.iterdir()), e))
                except OSError:  # removed meanwhile by another build's trim
                    pass
    total = sum(size for _, size, _ in entries)
    if len(entries) <= max_entries and total <= max_bytes:
        return
    entries.sort(key=lambda x: x[0])
    count = len(entries)
    for _, size, e in entries:
        if count <= max_entries * 0.9 and total <= max_bytes * 0.9:
            break
        shutil.rmtree(e, ignore_errors=True)
        count, total = count - 1, total - size


def _log(root: Path, unit: Unit, hit: bool, seconds: float, rc: int) -> None:
    log = root / "compiles.jsonl"
    try:
        if log.exists() and log.stat().st_size > LOG_MAX_BYTES:
            log.unlink()
        line = json.dumps({"unit": unit.source.name, "compiler": os.path.basename(unit.argv[0]), "hit": hit,
                           "seconds": round(seconds, 3), "rc": rc, "at": time.time()})
        with open(log, "a") as f:
            f.write(line + "\n")
    except OSError:
        pass


def wait_for_pch(include: str | None, limit_s: float) -> None:
    """A PCH still being made in ``include`` (its maker holds ``include/.lock``): wait until the maker
    is done or ``limit_s`` has passed. Waiting costs no CPU; parsing torch's headers without the PCH
    costs about as long as making it, on a core other compiles could use."""
    if not include or limit_s <= 0 or (Path(include) / "torch" / "extension.h.gch").is_file():
        return
    try:
        lock = open(Path(include) / ".lock")
    except OSError:
        return
    with lock:
        deadline = time.monotonic() + limit_s
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return  # no maker holds it: made, failed or gone
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    return
                time.sleep(0.2)
            except OSError:
                return


def with_include(argv: list[str], include: str | None) -> list[str]:
    """The compile command with the PCH folder first on its include path (unchanged without one)."""
    return [argv[0], "-I", include, *argv[1:]] if include else argv


def compile_cached(root: Path, argv: list[str], cwd: Path, include: str | None = None, pch_wait_s: float = 0.0) -> int:
    """Restore or compile ``argv``; ``include``, the PCH folder, goes first on the command line but not
    into the key: GCC uses a PCH only if it matches and parses the header otherwise, so the object is
    the same either way, and a unit compiled before the PCH existed still serves builds that have it."""
    t0 = time.perf_counter()
    key = Unit(argv, cwd).key()
    argv = with_include(argv, include)
    unit = Unit(argv, cwd)
    entry = root / key[:2] / key
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.parent / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the same unit being compiled by another build: wait for it
        if entry.is_dir() and _restore(entry, unit):
            _log(root, unit, True, time.perf_counter() - t0, 0)
            return 0
        wait_for_pch(include, pch_wait_s)
        run = list(argv)
        own_dep = unit.depfile is None
        if own_dep:  # ask for the header list anyway (gcc and nvcc both accept -MD -MF)
            unit.depfile = unit.out.with_name(unit.out.name + ".kvdeps")
            run += ["-MD", "-MF", str(unit.depfile)]
        rc = subprocess.call(run)
        if rc == 0 and unit.out.is_file():
            try:
                _store(entry, unit, unit.depfile.read_text())
            except OSError:
                pass
        if own_dep:
            unit.depfile.unlink(missing_ok=True)
    _log(root, unit, False, time.perf_counter() - t0, rc)
    if rc == 0:
        _trim(root)
    return rc


def main(argv: list[str]) -> int:
    objects = Path(os.environ["KV_OBJECT_CACHE_DIR"]) if os.environ.get("KV_OBJECT_CACHE_DIR") else None
    include = None
    while argv and argv[0] != "--":
        flag, argv = argv[0], argv[1:]
        if flag == "--pch-from-env":  # the C++ compiler's shim: the PCH folder the build step chose
            include = os.environ.get("KV_PCH_INCLUDE") or None
        elif flag in ("--objects", "--include") and argv:
            value, argv = argv[0], argv[1:]
            objects, include = (Path(value), include) if flag == "--objects" else (objects, value)
        else:
            sys.stderr.write(f"compile_launcher: unknown option {flag}\n")
            return 2
    cmd = argv[1:]
    if not cmd:
        sys.stderr.write("compile_launcher: no compiler command after --\n")
        return 2
    is_compile = "-c" in cmd and "-o" in cmd
    try:
        pch_wait_s = float(os.environ.get("KV_PCH_WAIT_S") or 0) if include else 0.0
    except ValueError:
        pch_wait_s = 0.0
    if objects is None or not is_compile:
        if is_compile:
            wait_for_pch(include, pch_wait_s)
            cmd = with_include(cmd, include)
        os.execvp(cmd[0], cmd)
    return compile_cached(objects, cmd, Path.cwd(), include, pch_wait_s)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
