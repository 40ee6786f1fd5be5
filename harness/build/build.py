"""Build step: import a candidate once so ``load_inline`` compiles into its cached extensions folder.

Run as ``python -m harness.build.build SOURCE.py``; exit 0 on success, 3 with the error on stderr otherwise.
Builds run in parallel with evaluation (one process each), and a later import hits the cache.

Two build caches below the per-source extensions cache, both applied by running torch's compilers
through ``harness/build/compile_launcher.py`` (``CXX`` and ``PYTORCH_NVCC`` name shims, see ``compiler_shims``):

* Object reuse (``KV_OBJECT_CACHE_DIR``): a translation unit whose compiler, flags and source are unchanged is not
  compiled again. For trusted in-process builds only (the demo kernels' tests): ``Evaluator`` never sets it, since
  an object a candidate's build made could be served to another candidate whose unit has the same text.
* Precompiled header (``KV_PCH_DIR``). Most of a C++ extension's compile time is GCC parsing
  ``torch/extension.h`` (torch plus pybind11: ~30 s of CPU per build, of a total ~35 s). This process
  precompiles that header once per distinct set of compiler flags, into
  ``KV_PCH_DIR/<key>/torch/extension.h.gch``, and the launcher puts ``-I KV_PCH_DIR/<key>`` first on
  the C++ compiler's command line, so ``#include <torch/extension.h>`` (which ``load_inline`` puts
  first in every ``main.cpp``, CUDA extensions included) loads the PCH instead of parsing the headers.
  That halves the CPU time of every later C++ build with the same flags. nvcc's compile of the
  ``.cu`` file never sees it (its preprocessing runs the host compiler on the real headers).

* Exact flags: the PCH is compiled with the ``cxx``, ``cflags`` and ``post_cflags`` that torch has
  just written into the extension's ``build.ninja`` (minus ``-DTORCH_EXTENSION_NAME``, which no
  torch header reads), so it matches the real compile. GCC checks a PCH's compiler and flags when it
  finds one and silently parses the real header if they differ, so a PCH can make a build faster but
  never changes what is compiled; the folder also holds a copy of ``torch/extension.h`` for that case.
* Only what torch's own ``load_inline(use_pch=True)`` would do, minus its shared state: torch writes
  its PCH into the torch install folder (racy between parallel builds, and removed by every
  ``use_pch=False`` call); this one lives in the cache, is written to a temporary name and renamed,
  and the candidate's ``use_pch`` flag is left alone.
* Who makes it: a sandboxed build (``KV_PCH_REQUESTS`` set, the PCH folder read-only to it) only looks a PCH up
  and lists the flags it missed in that file; the evaluator makes the missing ones afterwards in a sandbox of their
  own where no candidate code runs (``harness.builder``, filed by ``harness.builds``). Elsewhere (a trusted in-process build):
* Scope: Linux, GCC, the ``main.cpp`` of C++ and CUDA extensions (not SYCL). The first build that
  needs a PCH starts a detached process to make it (one at a time: a non-blocking file lock, handed
  to that process) and, by default, compiles without it, as does every build until it is ready.
  ``KV_PCH_WAIT_MAX_S`` > 0 makes a build's compile of ``main.cpp`` wait for it in the launcher
  instead (up to that long) while the build's other units compile: fewer core-seconds (torch's
  headers parsed once, not once per build) but a later first build, since making the PCH takes
  longer than one parse (2-core CPU, two builds at once: 81-104 s instead of 62-75 s,
  ``benchmarks/pch_wait.py``); not measured on a many-core host, where core-seconds bound a sweep. Making one
  may take at most ``KV_PCH_TIMEOUT_S`` (the Evaluator passes a third of its build timeout). A failed or timed-out
  PCH is remembered (a ``failed`` file in its folder; delete the folder to retry) and not retried.
  At most ``MAX_PCH_VARIANTS`` flag sets keep one (each is ~0.8 GB); a new one replaces the least
  recently used.
* Mechanism: the build process wraps ``torch.utils.cpp_extension._write_ninja_file`` (private; if a
  torch version lacks it, builds run without a PCH) to choose the PCH for the flags torch just wrote
  and hand it to the launcher as ``KV_PCH_INCLUDE``; ``build.ninja`` itself is left as torch wrote it.
  Only this build process has the wrapper; the candidate's evaluation process gets the same shims, so
  its own ``load_inline`` sees identical commands and finds the build up to date.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import re
import shlex
import shutil
import stat
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

from ..candidate.load import import_candidate

PCH_ENV = "KV_PCH_DIR"
PCH_TIMEOUT_ENV = "KV_PCH_TIMEOUT_S"
OBJECTS_ENV = "KV_OBJECT_CACHE_DIR"
# When (epoch seconds) a build that is still running ModelNew's constructor stops it and succeeds (Evaluator sets it
# inside its build timeout).
BUILD_DEADLINE_ENV = "KV_BUILD_DEADLINE"
IMPORTED_MARKER = ".imported"  # written in the build folder once the import succeeded, before the constructor runs
MAX_PCH_VARIANTS = 4
PCH_KEY_CHARS = 20  # a PCH folder's name: this many hex digits of its key
PCH_FILES = ("torch", "torch/extension.h", "torch/extension.h.gch", ".lock", "failed")  # all a PCH folder holds

# The flags a PCH is made with. They come from a sandboxed build, that is from candidate code, and the evaluator makes
# the PCH outside that build's sandbox: a flag that runs or loads a program (-wrapper, -B, -specs, -fplugin,
# -fmodule-mapper, @file), hands options to a sub-tool (-Wp, -Xpreprocessor), writes a file (-o, -M*, -save-temps,
# -fdump-*) or adds text to the header (-include) gets no PCH; such a build compiles without one. What is allowed:
# what torch writes for load_inline and ordinary extra_cflags (macros, include folders, -std, -O, warnings, -m and
# -f code-generation options).
_PCH_FLAG = re.compile(
    r"-[DU]\S+|-I\S+|-(isystem|iquote|idirafter)\S*|-std=[\w+]+|-O[0-3sgz]?|-Ofast|-W[\w=+-]+|-w|-g(gdb)?[0-3]?"
    r"|-m[\w=.+-]+|-pthread|-pedantic(-errors)?"
    r"|-f(?!plugin|dump|profile|auto-profile|module|deps|save|opt-info|stack-usage|callgraph|diagnostics-format"
    r"|test-coverage|coverage|record|debug-prefix|file-prefix|macro-prefix)[A-Za-z0-9][\w+-]*(=[\w.+-]*)?")
_PCH_FLAG_WITH_VALUE = ("-isystem", "-iquote", "-idirafter")  # the next word is a folder


def pch_flags_refused(flags: list[str]) -> str | None:
    """The first flag no PCH is made with (see ``_PCH_FLAG``), or None when all of them are allowed."""
    it = iter(flags)
    for f in it:
        if not _PCH_FLAG.fullmatch(f):
            return f
        if f in _PCH_FLAG_WITH_VALUE and next(it, "-").startswith("-"):
            return f
    return None


def _open_lock(path: Path, create: bool = True):
    """A PCH folder's ``.lock``, opened without following a link or waiting on a FIFO, and only if it is a regular
    file: the evaluator (root) opens it, and a folder a maker wrote in is not to be trusted with a path."""
    fd = os.open(path, (os.O_RDWR | os.O_CREAT if create else os.O_RDONLY) | os.O_NOFOLLOW | os.O_NONBLOCK
                 | os.O_CLOEXEC, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return os.fdopen(fd, "a" if create else "r")


def try_lock_pch(d: Path):
    """``d``'s ``.lock`` opened (``_open_lock``) and held exclusively, or None: another process holds it (a maker at
    work), or it is no regular file."""
    try:
        lock = _open_lock(d / ".lock")
    except OSError:
        return None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    return lock


def prune_pch_folder(d: Path) -> None:
    """Remove from a PCH folder whatever a PCH folder never holds (``PCH_FILES``): links, FIFOs, other files."""
    if d.is_symlink() or not d.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(d, topdown=False):  # never into a linked folder
        for name in (*filenames, *dirnames):
            p = Path(dirpath, name)
            rel = p.relative_to(d).as_posix()
            if rel in PCH_FILES and not p.is_symlink() and (p.is_dir() if rel == "torch" else p.is_file()):
                continue
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def _ninja_vars(build_ninja: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in build_ninja.read_text().splitlines():
        if line and not line[0].isspace() and " = " in line:
            k, v = line.split(" = ", 1)
            out.setdefault(k.strip(), v.strip())
    return out


def _compiler_id(cxx: list[str]) -> str | None:
    """GCC's ``-v`` banner (the PCH depends on the exact compiler), or None for a compiler that is not GCC."""
    try:
        r = subprocess.run([*cxx, "-v"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    text = r.stderr + r.stdout
    return text if "gcc version" in text and "clang" not in text.lower() else None


def _is_pch_variant(p: Path) -> bool:
    """A PCH folder (named by ``_pch_plan``'s key); the root also holds the compiler shims (``SHIM_DIR``), which
    every build and candidate process runs and which eviction must never take (it once did: the shims, older
    than any PCH, went first, and builds in flight failed with "kv-shims/<hash>/c++: not found")."""
    return (len(p.name) == PCH_KEY_CHARS and all(c in "0123456789abcdef" for c in p.name) and p.is_dir()
            and not p.is_symlink())


def _evict_pch_variants(root: Path, keep: int) -> None:
    """Remove the least recently used PCH folders beyond ``keep`` (one being made is left alone; a
    compile already reading a removed one keeps its open file, later ones parse the real header)."""
    variants = sorted((p for p in root.iterdir() if _is_pch_variant(p)), key=lambda p: p.stat().st_mtime)
    for old in variants[: max(0, len(variants) - keep)]:
        try:
            lock = _open_lock(old / ".lock")
        except OSError:  # a link or a FIFO where the lock should be: no maker holds it, and the folder is junk
            shutil.rmtree(old, ignore_errors=True)
            continue
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue
            shutil.rmtree(old, ignore_errors=True)


@functools.lru_cache(maxsize=16)
def _pch_plan(root: Path, cxx: str, cflags: str, post_cflags: str) -> tuple[Path, tuple[str, ...], tuple[str, ...], str] | None:
    """(folder, compiler argv, flags, header text) of the PCH for these (ninja-syntax) flags; None where
    there is none (not GCC, no torch header). Cached: a build asks twice (``ensure_pch``, then
    ``pending_pch``), and each answer costs a ``cxx -v`` run and a hash of torch's header."""
    import torch

    header = Path(torch.__file__).resolve().parent / "include" / "torch" / "extension.h"
    cxx_argv = shlex.split(cxx)
    flags = [f for f in shlex.split(cflags) if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    flags += shlex.split(post_cflags)
    if not header.is_file() or not cxx_argv or pch_flags_refused(flags) is not None:
        return None
    compiler = _compiler_id(cxx_argv)
    if compiler is None:
        return None
    text = header.read_text()
    key = hashlib.sha256("\0".join([torch.__version__, compiler, *cxx_argv, text, *flags]).encode()).hexdigest()[:PCH_KEY_CHARS]
    return root / key, tuple(cxx_argv), tuple(flags), text


def pending_pch(root: Path, cxx: str, cflags: str, post_cflags: str = "") -> Path | None:
    """The folder of a PCH for these flags that is being made (its maker holds ``.lock``), for the
    launcher to wait on; None if there is none to wait for (ready, failed, other compiler)."""
    plan = _pch_plan(root, cxx, cflags, post_cflags)
    if plan is None:
        return None
    d = plan[0]
    if (d / "failed").exists() or (d / "torch" / "extension.h.gch").is_file() or not (d / ".lock").exists():
        return None
    try:
        with _open_lock(d / ".lock", create=False) as lock:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return d  # held: a maker is at work
    except OSError:
        return None
    return None


def ensure_pch(root: Path, cxx: str, cflags: str, post_cflags: str = "",
               timeout_s: float | None = None, background: bool = False, lock_held: bool = False) -> Path | None:
    """The folder to put first on the include path of a compile with these (ninja-syntax) flags, making its PCH if
    needed (giving up after ``timeout_s``); None when there is none to use yet (not GCC, being made,
    failed or timed out before). ``background``: a missing PCH is made by a detached process
    (``python -m harness.build.build --make-pch``) that inherits the lock taken here, and this call returns
    None at once; a compile that wants it waits in the launcher (``pending_pch``), not here.
    ``lock_held``: that detached process, which holds the lock already."""
    plan = _pch_plan(root, cxx, cflags, post_cflags)
    if plan is None:
        return None
    d, cxx_argv, flags, text = plan
    gch = d / "torch" / "extension.h.gch"
    if gch.is_file():
        with contextlib.suppress(OSError):  # read-only inside a sandbox: the evaluator evicts by its own use
            os.utime(d)  # recently used: the last to be evicted
        return d
    if (d / "failed").exists():
        return None
    root.mkdir(parents=True, exist_ok=True)
    if not d.exists():
        _evict_pch_variants(root, MAX_PCH_VARIANTS - 1)
    (d / "torch").mkdir(parents=True, exist_ok=True)
    if lock_held:
        try:
            lock = _open_lock(d / ".lock")
        except OSError:
            return None
    elif (lock := try_lock_pch(d)) is None:
        return None  # another process is making it
    with lock:
        if background:
            _start_pch_maker(root, cxx, cflags, post_cflags, timeout_s, lock)
            return None
        if gch.is_file():
            return d
        hdr = d / "torch" / "extension.h"
        if not hdr.is_file():
            tmp_h = hdr.with_name(f"extension.h.tmp{os.getpid()}")
            tmp_h.write_text(text)
            os.replace(tmp_h, hdr)
        tmp = gch.with_name(f"extension.h.gch.tmp{os.getpid()}")
        try:
            r = subprocess.run([*cxx_argv, "-x", "c++-header", str(hdr), "-o", str(tmp), *flags],
                               capture_output=True, text=True, timeout=timeout_s)
            if r.returncode == 0 and not tmp.is_file():  # the folder was removed under the compile: not the header's fault
                return None
            ok = r.returncode == 0 and tmp.is_file()
            err = r.stderr[-4000:] or f"exit {r.returncode}"
        except subprocess.TimeoutExpired:  # the child is killed; a loaded host, not a broken header: try again later
            tmp.unlink(missing_ok=True)
            return None
        except (OSError, subprocess.SubprocessError) as e:
            ok, err = False, f"{type(e).__name__}: {e}"
        if not ok:
            tmp.unlink(missing_ok=True)
            (d / "failed").write_text(err)
            return None
        os.replace(tmp, gch)
        return d


def ready_pch(root: Path, cxx: str, cflags: str, post_cflags: str = "") -> Path | None:
    """The folder of a finished PCH for these flags, or None; looks only, writes nothing (a sandboxed build)."""
    plan = _pch_plan(root, cxx, cflags, post_cflags)
    if plan is None or not (plan[0] / "torch" / "extension.h.gch").is_file():
        return None
    return plan[0]


def _start_pch_maker(root: Path, cxx: str, cflags: str, post_cflags: str, timeout_s: float | None, lock) -> None:
    """A process of its own session: it outlives this build (whose group is killed when it ends). It
    inherits the held lock (the same open file), so the lock stays taken until the PCH is made or has
    failed, with no moment free for another maker or for a waiting compile to give up early."""
    try:
        subprocess.Popen([sys.executable, "-m", "harness.build.build", "--make-pch", str(root), cxx, cflags, post_cflags,
                          str(timeout_s or 300)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=(lock.fileno(),),
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(
                             [str(Path(__file__).resolve().parents[2]), os.environ.get("PYTHONPATH", "")])})
    except OSError:
        pass


LAUNCHER = Path(__file__).with_name("compile_launcher.py")
PCH_INCLUDE_ENV = "KV_PCH_INCLUDE"
PCH_REQUESTS_ENV = "KV_PCH_REQUESTS"  # a sandboxed build lists the PCHs it missed here, for the evaluator to make
PCH_WAIT_ENV = "KV_PCH_WAIT_S"  # set with a PCH being made: how long the launcher may wait for it
PCH_WAIT_MAX_ENV = "KV_PCH_WAIT_MAX_S"  # opt-in: how long a compile may wait for a PCH being made (default 0)
SHIM_DIR = "kv-shims"


def _real_nvcc() -> str | None:
    """The nvcc torch would run (its CUDA_HOME), or None without a CUDA toolkit."""
    try:
        from torch.utils.cpp_extension import CUDA_HOME
    except Exception:  # noqa: BLE001
        return None
    nvcc = Path(CUDA_HOME) / "bin" / "nvcc" if CUDA_HOME else None
    return str(nvcc) if nvcc is not None and nvcc.is_file() else None


def _compiler_behind(shim: Path) -> str | None:
    """The real compiler a shim of ``compiler_shims`` runs (the word after ``--`` on its exec line)."""
    try:
        words = shlex.split(shim.read_text().splitlines()[-1])
        return words[words.index("--") + 1]
    except (OSError, IndexError, ValueError):
        return None


def compiler_shims(root: Path) -> dict[str, str]:
    """Environment for build and candidate processes alike: ``CXX`` and ``PYTORCH_NVCC`` (both read by
    torch's cpp_extension) naming small scripts under ``root/kv-shims`` that run the real compilers
    through ``compile_launcher.py``. Through the environment, not by editing ``build.ninja``: the
    candidate's own ``load_inline`` at evaluation writes the same file again, and ninja rebuilds
    everything whose command text changed, so both processes must see identical commands."""
    out: dict[str, str] = {}
    nvcc = os.environ.get("PYTORCH_NVCC") or _real_nvcc()
    cxx = shutil.which(os.environ.get("CXX") or "c++")
    for var, real, opts in (("CXX", cxx, "--pch-from-env "), ("PYTORCH_NVCC", nvcc, "")):
        if real and f"/{SHIM_DIR}/" in real:  # a shim made for another root (this process's own caches)
            real = _compiler_behind(Path(real))
        if not real:
            continue
        text = (f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -S {shlex.quote(str(LAUNCHER))} {opts}-- "
                f"{shlex.quote(real)} \"$@\"\n")
        path = root / SHIM_DIR / hashlib.sha256(text.encode()).hexdigest()[:16] / Path(real).name
        try:
            current = path.read_text()
        except OSError:
            current = None
        if current != text:  # written by this (trusted) process, and written again if anything changed it
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.{threading.get_ident()}")  # pool threads share a pid
            tmp.write_text(text)
            tmp.chmod(0o755)
            os.replace(tmp, path)
        out[var] = str(path)
    return out


def build_env(pch_root: Path | None, objects: Path | None) -> dict[str, str]:
    """What ``Evaluator`` adds to every child's environment so builds use the caches (empty when both are off)."""
    if not sys.platform.startswith("linux") or (pch_root is None and objects is None):
        return {}
    # The shims live beside the PCHs whenever there are PCHs: a PCH is keyed by the compiler's path too, so trusted
    # in-process builds (shims under the object cache, as they once were) and sandboxed builds of the same flags made
    # two identical ~0.8 GB PCHs, each costing a full parse of torch's headers.
    env = compiler_shims(pch_root if pch_root is not None else objects)
    if pch_root is not None:
        env[PCH_ENV] = str(pch_root)
    if objects is not None:
        env[OBJECTS_ENV] = str(objects)
    return env


def enable_build_caches(pch_root: Path | None, objects: Path | None = None, timeout_s: float | None = None) -> None:
    """Make this process's ``load_inline`` builds reuse compiled translation units under ``objects``
    and give ``main.cpp`` a precompiled ``torch/extension.h`` under ``pch_root`` (made in the
    background on first use). The build step calls it; so may any process that builds in-process
    (the demo-kernel tests). The PCH folder for an extension's exact flags reaches the launcher as
    ``KV_PCH_INCLUDE``, set here after torch writes ``build.ninja`` and before ninja runs."""
    env = build_env(pch_root, objects)
    if not env:
        return
    os.environ.update(env)
    if pch_root is None:
        return
    try:
        import torch.utils.cpp_extension as cx
    except Exception:  # noqa: BLE001
        return
    original = getattr(cx, "_write_ninja_file", None)
    if original is None or getattr(original, "_kv_pch", False):
        return

    def write_ninja_file(*args, **kwargs):
        result = original(*args, **kwargs)
        os.environ.pop(PCH_INCLUDE_ENV, None)
        os.environ.pop(PCH_WAIT_ENV, None)
        try:
            v = _ninja_vars(Path(kwargs["path"] if "path" in kwargs else args[0]))
            if v.get("cxx") and v.get("cflags") and "sycl" not in v:
                args3 = (pch_root, v["cxx"], v["cflags"], v.get("post_cflags", ""))
                requests = os.environ.get(PCH_REQUESTS_ENV)
                if requests:  # sandboxed: the PCH folder is read-only here; the evaluator makes a missing one
                    d = ready_pch(*args3)
                    if d is None:
                        with open(requests, "a") as f:
                            f.write(json.dumps({"cxx": v["cxx"], "cflags": v["cflags"],
                                                "post_cflags": v.get("post_cflags", "")}) + "\n")
                else:
                    d = ensure_pch(*args3, timeout_s, background=True)
                wait_s = min(timeout_s or 300.0, float(os.environ.get(PCH_WAIT_MAX_ENV) or 0))
                if d is None and wait_s > 0 and (d := pending_pch(*args3)) is not None:
                    # Being made: the compile of main.cpp waits for it in the launcher (cores go to
                    # other compiles meanwhile) instead of parsing torch's headers once more.
                    os.environ[PCH_WAIT_ENV] = str(wait_s)
                if d is not None:
                    os.environ[PCH_INCLUDE_ENV] = str(d)
        except Exception:  # noqa: BLE001 - only a speed-up: build without it
            pass
        return result

    write_ninja_file._kv_pch = True  # type: ignore[attr-defined]
    cx._write_ninja_file = write_ninja_file


def _count_extension_loads() -> list[str]:
    """Names of the extensions ``load_inline``/``load`` are asked for from now on in this process."""
    import torch.utils.cpp_extension as cx

    calls: list[str] = []

    def counted(original):
        @functools.wraps(original)
        def wrapper(*args, **kwargs):
            calls.append(str(kwargs.get("name", args[0] if args else "")))
            return original(*args, **kwargs)
        return wrapper

    for name in ("load_inline", "load"):
        if hasattr(cx, name):
            setattr(cx, name, counted(getattr(cx, name)))
    return calls


def _build_in_constructor(mod, problem_source: str, deadline: float) -> None:
    """ModelNew(*get_init_inputs()) once, for the extensions a candidate compiles in its constructor rather than
    at import (72 of 591 published kernels, most of CUDA-L1's): they would otherwise compile inside the
    evaluation, on the GPU worker's time (up to 68 s each on the H200). Only a speed-up: whatever the constructor
    raises is left to the evaluation to report, and a constructor still running at ``deadline`` (epoch seconds)
    ends this process as a successful build, before the parent's build timeout could call it a compile error."""
    from problems.module import exec_source

    from ..measure.reference import construct

    def stop() -> None:
        sys.stdout.flush()
        os._exit(0)

    watchdog = threading.Timer(max(0.0, deadline - time.time()), stop)
    watchdog.daemon = True
    watchdog.start()
    try:
        construct(mod.ModelNew, exec_source(problem_source, "<problem>"))
    except BaseException:  # noqa: BLE001, S110 - the evaluation builds it again and reports what it raises
        pass
    finally:
        watchdog.cancel()


def main(path: str, problem_path: str | None = None) -> int:
    src = Path(path).read_text()
    try:
        pch_root, objects = os.environ.get(PCH_ENV), os.environ.get(OBJECTS_ENV)
        enable_build_caches(Path(pch_root) if pch_root else None, Path(objects) if objects else None,
                            float(os.environ.get(PCH_TIMEOUT_ENV) or 300))
        loads = _count_extension_loads()
        mod = import_candidate(src, Path(path).parent, name="build")
    except BaseException:  # noqa: BLE001
        sys.stderr.write(traceback.format_exc()[-6000:])
        sys.stderr.flush()
        os._exit(3)
    if problem_path and not loads and "cpp_extension" in src and hasattr(mod, "ModelNew"):
        # The import is done: whatever the constructor does to this process now (a crash, an exit) is not a
        # compile error, the evaluation meets it again and reports it.
        (Path(path).parent / IMPORTED_MARKER).write_text("")
        _build_in_constructor(mod, Path(problem_path).read_text(),
                              float(os.environ.get(BUILD_DEADLINE_ENV) or time.time() + 120))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    if sys.argv[1] == "--make-pch":  # ROOT CXX CFLAGS POST_CFLAGS TIMEOUT_S, started by ensure_pch
        root, cxx, cflags, post, timeout = sys.argv[2:7]
        try:  # a session of its own: keep the build's low priority for its autogroup too (harness.sandbox)
            with open("/proc/self/autogroup", "w") as f:
                f.write(str(os.nice(0)))
        except OSError:
            pass
        sys.exit(0 if ensure_pch(Path(root), cxx, cflags, post, float(timeout), lock_held=True) else 1)
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
