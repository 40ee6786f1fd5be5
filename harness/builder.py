"""Builds candidates into the build cache (``harness.builds``): each build in a sandboxed process of its own
(``harness.build.build``), one per source at a time across evaluators and processes sharing the cache, its output
filed by this process; the precompiled headers a build missed, made afterwards in sandboxes of their own."""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from .build.build import (
    BUILD_DEADLINE_ENV,
    IMPORTED_MARKER,
    MAX_PCH_VARIANTS,
    PCH_REQUESTS_ENV,
    _evict_pch_variants,
    _pch_plan,
    build_env,
    prune_pch_folder,
    try_lock_pch,
)
from .builds import (
    BuildResult,
    _build_environment,
    _builds_ahead,
    _clear_torch_batons,
    _empty,
    _file_hashes,
    _filed,
    _folder_bytes,
    _source_lock,
    build_marker,
    pch_dir,
)
from .candidate.load import source_hash
from .children import Setup
from .measure.device import usable_cpus
from .sandbox import disk, own, read_bounded, run_module, sandbox_setup_failed


class Builder:
    """Compiles candidates for one Evaluator (``Evaluator.build`` and ``build_many`` are this)."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self._lock = threading.Lock()
        self._pch_made: set[tuple[str, str, str]] = set()  # flag sets whose PCH this evaluator made or is making

    def extensions_dir(self, source: str) -> Path:
        """The source's build folder, keyed by the build environment too: a build made by another interpreter or
        torch (a moved venv, an upgrade) is not this one's, and trusting its marker made every candidate process
        rebuild inside its evaluation (counted as load time, on the GPU worker)."""
        d = self.setup.cache_dir / "extensions" / source_hash(source + _build_environment())[:20]
        d.mkdir(parents=True, exist_ok=True)
        return d

    def build(self, source: str, problem_id: str | None = None) -> BuildResult:
        """Compile a candidate in its own process. A source that builds nothing ahead of time (no
        ``cpp_extension``, no Triton) skips that process: the candidate process imports it anyway and
        reports import errors as compile errors, so the separate step would only cost a Python start.
        With ``problem_id``, a source whose import compiled nothing is also built once as ModelNew(*init)
        there (``harness.build.build``), for the extensions it compiles in its constructor."""
        if not _builds_ahead(source):
            return BuildResult(True, 0.0, "", False)
        ext = self.extensions_dir(source)
        marker = build_marker(ext)
        if _filed(ext, marker):
            return BuildResult(True, 0.0, "", True)
        # One build per source at a time across evaluators and processes sharing the cache.
        with _source_lock(ext):
            if _filed(ext, marker):  # built by whoever held the lock before us
                return BuildResult(True, 0.0, "", True)
            _clear_torch_batons(ext)
            return self._build_locked(source, ext, marker, problem_id)

    def build_many(self, sources: list[str], workers: int | None = None) -> list[BuildResult]:
        """``build`` every source at once on the host's cores (``workers`` threads, default the CPUs
        this process may use), in order; for scripts that compile everything before anything is timed."""
        from concurrent.futures import ThreadPoolExecutor

        if not sources:
            return []
        with ThreadPoolExecutor(min(len(sources), workers or usable_cpus())) as pool:
            return list(pool.map(self.build, sources))

    def _build_locked(self, source: str, ext: Path, marker: Path, problem_id: str | None = None) -> BuildResult:
        # Both folders the build may write are capped (harness.sandbox.disk): its extensions folder is moved onto the
        # cache's disk only once the build is filed, and whatever a failed build left there is dropped with its tmpfs.
        setup = self.setup
        work = Path(tempfile.mkdtemp(prefix="build-", dir=setup.tmp_root))
        disk.cap(work, setup.settings.sandbox_disk_bytes)
        disk.cap(ext, setup.settings.sandbox_disk_bytes)
        try:
            return self._run_build(source, work, ext, marker, problem_id)
        finally:
            disk.release(work)
            disk.uncap(ext)  # still capped: not filed, the tmpfs and what the build left in it go

    def _run_build(self, source: str, work: Path, ext: Path, marker: Path, problem_id: str | None) -> BuildResult:
        setup = self.setup
        src_path = work / "candidate_src.py"
        src_path.write_text(source)
        args = [str(src_path)]
        if problem_id is not None:
            try:
                (work / "problem_src.py").write_text(setup.problem(problem_id).source(setup.size))
                args.append(str(work / "problem_src.py"))
            except Exception:  # noqa: BLE001 - only a speed-up: the evaluation reports a missing problem itself
                pass
        env = setup.sandboxed_env(work)
        env[BUILD_DEADLINE_ENV] = str(time.time() + 0.8 * setup.settings.build_timeout_s)
        env[PCH_REQUESTS_ENV] = str(work / "pch-requests.jsonl")
        # The build imports the candidate: it runs sandboxed, with only its build folder and this source's own
        # extensions folder writable (at EXT_MOUNT); what it leaves there is filed below by this process.
        for _ in range(2):  # once more where bubblewrap failed to set the sandbox up (sandbox_setup_failed)
            res = run_module("harness.build.build", args, cwd=work, env=env, sandbox=setup.policy(work, ext),
                             timeout_s=setup.settings.build_timeout_s, max_file_bytes=setup.settings.max_output_file_bytes,
                             niceness=setup.settings.build_niceness, memory_cap=setup.settings.memory_limit_bytes)
            if res.returncode == 0 or res.timed_out or not sandbox_setup_failed(res.stderr_tail):
                break
        own(ext, 0)
        # The cache keeps the folder for good and copies it into every evaluation of this source: what a build leaves
        # there is bounded (a build once left 300 MB of ballast, and nothing bounded how much more).
        left = _folder_bytes(ext)
        if left > setup.settings.max_build_folder_bytes:
            _empty(ext)
            return BuildResult(False, res.seconds, f"the build left {left / 2**20:.0f} MiB in its extensions folder, "
                               "over the limit (EvalSettings.max_build_folder_bytes)", False)
        # A build process that ended after the import succeeded ended in the constructor run after it, which the
        # evaluation runs again and reports: not a compile error.
        imported = (work / IMPORTED_MARKER).exists()
        self._make_missing_pchs(work / "pch-requests.jsonl")
        if res.timed_out:
            return BuildResult(False, res.seconds, f"build exceeded {setup.settings.build_timeout_s:.0f} s", False, True)
        if res.memory_exceeded:
            return BuildResult(False, res.seconds, f"the build used {res.memory_exceeded / 2**30:.1f} GiB of host memory, "
                                                   "over the limit (EvalSettings.memory_limit_bytes)", False)
        if res.returncode != 0 and not imported:
            err = res.stderr_tail or res.stdout_tail or f"build process ended with {res.signal_name or res.returncode}"
            return BuildResult(False, res.seconds, err, False)
        disk.persist(ext)  # onto the cache's disk (a folder the cache keeps for good)
        # Filed by this process: the hash of every shared object the build left, checked before each later load.
        marker.write_text(json.dumps({"built": datetime.now(UTC).isoformat(), "sha256": _file_hashes(ext)}))
        return BuildResult(True, res.seconds, "", False)

    def _make_missing_pchs(self, requests: Path) -> None:
        """Make, in the background, the PCHs a sandboxed build missed, each in a sandbox of its own that no candidate
        code runs in and that may write only that PCH's folder. Only flag sets for this evaluator's own compiler
        shim are taken, and only flags that neither run a program nor write a file (``pch_flags_refused``): the build
        chose the flags (they are part of the PCH's key), never the program."""
        root = pch_dir()
        shim = build_env(root, None).get("CXX") if root is not None else None
        # the build's folder: read as a file candidate code may have replaced (a FIFO, a symlink to /dev/zero)
        lines = read_bounded(requests, 65536).decode("utf-8", "replace").splitlines()[:4] if shim else []
        for line in lines:
            try:
                req = json.loads(line)
                cxx, cflags, post = str(req["cxx"]), str(req["cflags"]), str(req.get("post_cflags", ""))
            except (ValueError, KeyError, TypeError):
                continue
            if shlex.split(cxx) != [shim]:
                continue
            key = (cxx, cflags, post)
            with self._lock:
                if key in self._pch_made:
                    continue
                self._pch_made.add(key)
            threading.Thread(target=self._make_pch, args=(root, *key), daemon=True).start()

    def _make_pch(self, root: Path, cxx: str, cflags: str, post: str) -> None:
        plan = _pch_plan(root, cxx, cflags, post)
        if plan is None:
            return
        d = plan[0]
        if (d / "torch" / "extension.h.gch").is_file() or (d / "failed").exists():
            return
        if not d.exists():
            _evict_pch_variants(root, MAX_PCH_VARIANTS - 1)
        (d / "torch").mkdir(parents=True, exist_ok=True)
        # Held while the maker works, as a trusted build's maker holds it: another evaluator sharing the cache evicts
        # only unlocked folders (it once removed this one under the compile, and the PCH was marked failed for good).
        if (lock := try_lock_pch(d)) is None:  # another evaluator is making it
            return
        setup = self.setup
        # Not under the evaluator's temporary root: an evaluator closed right after a build (a one-shot evaluation)
        # removed that root before this thread made its folder there, and the PCH was never made.
        work = Path(tempfile.mkdtemp(prefix="kv-pch-"))
        timeout = setup.settings.build_timeout_s / 3
        try:
            run_module("harness.build.build", ["--make-pch", str(root), cxx, cflags, post, str(timeout)], cwd=work,
                       env=setup.sandboxed_env(work), sandbox=setup.policy(work, writable=(d,)),
                       timeout_s=timeout + 30, max_file_bytes=setup.settings.max_output_file_bytes,
                       niceness=setup.settings.build_niceness, memory_cap=setup.settings.memory_limit_bytes)
        finally:
            own(d, 0)
            prune_pch_folder(d)  # the maker could write only here; anything but a PCH's files goes
            lock.close()
            shutil.rmtree(work, ignore_errors=True)
