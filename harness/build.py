"""Build step: import a candidate once so ``load_inline`` compiles into its cached extensions folder.

Run as ``python -m harness.build SOURCE.py``; exit 0 on success, 3 with the error on stderr otherwise.
Builds run in parallel with evaluation (one process each), and a later import hits the cache.

Precompiled header. Most of a C++ extension's compile time is GCC parsing ``torch/extension.h``
(torch plus pybind11: ~30 s of CPU per build, of a total ~35 s). When ``KV_PCH_DIR`` names a
folder (``Evaluator`` sets it, see ``harness.runner.pch_dir``), this process precompiles that header
once per distinct set of compiler flags, into ``KV_PCH_DIR/<key>/torch/extension.h.gch``, and puts
``KV_PCH_DIR/<key>`` on GCC's ``CPATH`` for the extension's compile, so ``#include
<torch/extension.h>`` (which ``load_inline`` puts first in every ``main.cpp``) loads the PCH instead
of parsing the headers. That halves the CPU time of every later build with the same flags.

* Exact flags: the PCH is compiled with the ``cxx``, ``cflags`` and ``post_cflags`` that torch has
  just written into the extension's ``build.ninja`` (minus ``-DTORCH_EXTENSION_NAME``, which no
  torch header reads), so it matches the real compile. GCC checks a PCH's compiler and flags when it
  finds one and silently parses the real header if they differ, so a PCH can make a build faster but
  never changes what is compiled; the folder also holds a copy of ``torch/extension.h`` for that case.
* Only what torch's own ``load_inline(use_pch=True)`` would do, minus its shared state: torch writes
  its PCH into the torch install folder (racy between parallel builds, and removed by every
  ``use_pch=False`` call); this one lives in the cache, is written to a temporary name and renamed,
  and the candidate's ``use_pch`` flag is left alone.
* Scope: Linux, GCC, C++-only extensions (no ``.cu``/SYCL sources). One build at a time makes a given
  PCH (non-blocking file lock); a build that finds it being made compiles without it rather than
  wait. Making one may take at most ``KV_PCH_TIMEOUT_S`` (the Evaluator passes a third of its
  build timeout), so the build that makes it stays well within its own limit. A failed or timed-out
  PCH is remembered (a ``failed`` file in its folder; delete the folder to retry) and not retried.
  At most ``MAX_PCH_VARIANTS`` flag sets get one (each is ~0.8 GB).
* Mechanism: the build process wraps ``torch.utils.cpp_extension._write_ninja_file`` (private; if a
  torch version lacks it, builds simply run without a PCH). Only this build process is affected; the
  candidate's evaluation process never sees the wrapper. A candidate could write to the PCH folder
  at build time, as it already can to the extensions cache or the torch install.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import subprocess
import sys
import traceback
from pathlib import Path

from .candidate import import_candidate

PCH_ENV = "KV_PCH_DIR"
PCH_TIMEOUT_ENV = "KV_PCH_TIMEOUT_S"
MAX_PCH_VARIANTS = 4


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


def ensure_pch(root: Path, cxx: str, cflags: str, post_cflags: str = "",
               timeout_s: float | None = None) -> Path | None:
    """The folder to put on CPATH for a compile with these (ninja-syntax) flags, making its PCH if
    needed (giving up after ``timeout_s``); None when there is none to use (not GCC, being made by
    another build, failed or timed out before, too many variants)."""
    import torch

    header = Path(torch.__file__).resolve().parent / "include" / "torch" / "extension.h"
    cxx_argv = shlex.split(cxx)
    flags = [f for f in shlex.split(cflags) if not f.startswith("-DTORCH_EXTENSION_NAME=")]
    flags += shlex.split(post_cflags)
    if not header.is_file() or not cxx_argv:
        return None
    compiler = _compiler_id(cxx_argv)
    if compiler is None:
        return None
    text = header.read_text()
    key = hashlib.sha256("\0".join([torch.__version__, compiler, *cxx_argv, text, *flags]).encode()).hexdigest()[:20]
    d = root / key
    gch = d / "torch" / "extension.h.gch"
    if gch.is_file():
        return d
    if (d / "failed").exists():
        return None
    root.mkdir(parents=True, exist_ok=True)
    if not d.exists() and sum(1 for p in root.iterdir() if p.is_dir()) >= MAX_PCH_VARIANTS:
        return None
    (d / "torch").mkdir(parents=True, exist_ok=True)
    with open(d / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # another build is making it: compile without, do not wait
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
            ok = r.returncode == 0 and tmp.is_file()
            err = r.stderr[-4000:] or f"exit {r.returncode}"
        except (OSError, subprocess.SubprocessError) as e:  # includes TimeoutExpired (the child is killed)
            ok, err = False, f"{type(e).__name__}: {e}"
        if not ok:
            tmp.unlink(missing_ok=True)
            (d / "failed").write_text(err)
            return None
        os.replace(tmp, gch)
        return d


def enable_precompiled_headers(root: Path, timeout_s: float | None = None) -> None:
    """Make this process's C++ ``load_inline`` builds use a precompiled ``torch/extension.h`` under
    ``root`` (built on first use). The build step calls it; so may any process that builds in-process."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import torch.utils.cpp_extension as cx
    except Exception:  # noqa: BLE001
        return
    original = getattr(cx, "_write_ninja_file", None)
    if original is None or getattr(original, "_kv_pch", False):
        return
    base_cpath = os.environ.get("CPATH")

    def write_ninja_file(*args, **kwargs):
        result = original(*args, **kwargs)
        try:
            path = Path(kwargs["path"] if "path" in kwargs else args[0])
            v = _ninja_vars(path)
            if v.get("cxx") and v.get("cflags") and "nvcc" not in v and "sycl" not in v:
                d = ensure_pch(root, v["cxx"], v["cflags"], v.get("post_cflags", ""), timeout_s)
                # Only this extension's PCH folder: GCC uses the first folder holding the header.
                cpath = ([str(d)] if d is not None else []) + ([base_cpath] if base_cpath else [])
                if cpath:
                    os.environ["CPATH"] = os.pathsep.join(cpath)
                else:
                    os.environ.pop("CPATH", None)
        except Exception:  # noqa: BLE001 - the PCH is only a speed-up; build as usual without it
            pass
        return result

    write_ninja_file._kv_pch = True  # type: ignore[attr-defined]
    cx._write_ninja_file = write_ninja_file


def main(path: str) -> int:
    src = Path(path).read_text()
    try:
        pch_root = os.environ.get(PCH_ENV)
        if pch_root:
            enable_precompiled_headers(Path(pch_root), float(os.environ.get(PCH_TIMEOUT_ENV) or 300))
        import_candidate(src, Path(path).parent, name="build")
    except BaseException:  # noqa: BLE001
        sys.stderr.write(traceback.format_exc()[-6000:])
        sys.stderr.flush()
        os._exit(3)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main(sys.argv[1])
