"""The parent side: build, reference, candidate process; assemble the measurement record.

    evaluate(source, problem_id, device="cpu", size="small") -> Evaluation(record, results)

The parent never imports the candidate. Each evaluation gets a fresh temporary directory; builds
are cached by source hash under ``cache_dir``; the reference outputs of a (problem, size, device)
are computed once per Evaluator (with seeds drawn fresh when it starts) and shared by its candidates.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple

from pydantic import BaseModel, Field

import problems as P

from .build import build_env, usable_cpus
from .candidate import source_hash
from .job import EvalSettings, JobSpec
from .protocols import PROTOCOLS, Protocol, ProtocolResult, score
from .record import Environment, GuardOutcome, MeasurementRecord, Memory, Timing, TrialResult
from .roofline_bound import roofline_for
from .sandbox import Child, kill_group, run_module, spawn_module, wait_child
from .static_scan import scan

DEFAULT_CACHE = Path(os.environ.get("KV_CACHE_DIR", Path.home() / ".cache" / "kernelverify"))


def pch_dir() -> Path | None:
    """Where build processes keep precompiled ``torch/extension.h`` headers (``harness.build``):
    ``KV_PCH_DIR`` if set (empty: off), else ``DEFAULT_CACHE/pch``. Not under an Evaluator's own
    ``cache_dir``: a PCH is keyed by compiler, flags and torch version, never by candidate, so every
    cache on the machine shares it (a test's temporary cache does not make a new ~0.8 GB one)."""
    env = os.environ.get("KV_PCH_DIR")
    if env is not None:
        return Path(env) if env.strip() else None
    return DEFAULT_CACHE / "pch"


def object_cache_dir() -> Path | None:
    """Where build processes keep compiled translation units for reuse (``harness.compile_launcher``):
    ``KV_OBJECT_CACHE_DIR`` if set (empty: off), else ``DEFAULT_CACHE/objects``; machine-wide like
    the PCH, since its keys cover everything an object depends on."""
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


class Evaluation(BaseModel):
    record: MeasurementRecord
    results: dict[str, ProtocolResult] = Field(default_factory=dict)


def _child_env(ext_dir: Path, device: str, gpu_index: int | None = None) -> dict[str, str]:
    env = dict(os.environ)
    if gpu_index is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu_index)  # the child sees one GPU, as cuda:0
    env["TORCH_EXTENSIONS_DIR"] = str(ext_dir)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # The harness and problems packages must be importable from the child's private cwd.
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    if device == "cpu":
        env["CUDA_VISIBLE_DEVICES"] = ""
    # Same compilers (shims through the compile launcher) for the build and the candidate's own
    # load_inline: a command that differs between them would make the candidate rebuild.
    env.update(build_env(pch_dir(), object_cache_dir()))
    return env


@contextlib.contextmanager
def _source_lock(ext: Path):
    """Exclusive per-source lock across threads and processes sharing the cache: a flock, which the
    kernel releases when its holder dies, unlike the ``lock`` file torch's cpp_extension leaves behind
    when a build is killed (every later load_inline of that source then waits on it)."""
    with open(ext / ".kv-build.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def _clear_torch_batons(ext: Path) -> None:
    """Remove torch's per-extension ``lock`` files; called under ``_source_lock``, so no build of ours
    holds one. A candidate process of the same source loading it at this moment may lose its lock: it
    then runs ninja on a finished build (nothing to do) alongside the next one, which is harmless."""
    for stale in ext.glob("*/lock"):
        stale.unlink(missing_ok=True)


class _Spare(NamedTuple):
    """A candidate process started ahead of its job, with its working folder and result pipe."""

    child: Child
    work: Path
    read_fd: int
    write_fd: int

    def discard(self) -> None:
        kill_group(self.child.proc)
        self.child.proc.wait()
        with contextlib.suppress(OSError):
            if self.child.proc.stdin is not None:
                self.child.proc.stdin.close()
        for fd in (self.read_fd, self.write_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.work, ignore_errors=True)


class Evaluator:
    """Evaluates candidates; holds the build cache location and per-problem reference outputs."""

    def __init__(self, device: str = "cpu", size: P.Size = "small", *, settings: EvalSettings | None = None,
                 cache_dir: Path | str | None = None, problems_dir: str | Path | None = None,
                 keep_temp: bool = False, gpu_index: int | None = None) -> None:
        """``gpu_index`` pins every child of this evaluator to one physical GPU (a pool runs one per GPU)."""
        self.device, self.size = device, size
        self.gpu_index = gpu_index
        self.settings = settings or EvalSettings()
        self.cache_dir = Path(cache_dir) if cache_dir else DEFAULT_CACHE
        self.problems_dir = problems_dir
        self.keep_temp = keep_temp
        self._tmp_root = Path(tempfile.mkdtemp(prefix="kv-eval-"))
        # Reference outputs and work folders live here (tens of MB per problem): removed on close, and
        # also when an evaluator nobody closed is collected or the interpreter exits.
        self._remove_tmp = None if keep_temp else weakref.finalize(self, shutil.rmtree, self._tmp_root, True)
        self._refs: dict[str, tuple[Path, JobSpec, dict]] = {}
        self._lock = threading.Lock()
        self._spare: _Spare | None = None
        self._ref_locks: dict[str, threading.Lock] = {}

    def close(self) -> None:
        self._discard_spare()
        if self._remove_tmp is not None:
            self._remove_tmp()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- builds -------------------------------------------------------------------------------------
    def extensions_dir(self, source: str) -> Path:
        d = self.cache_dir / "extensions" / source_hash(source)[:20]
        d.mkdir(parents=True, exist_ok=True)
        return d

    def build(self, source: str) -> BuildResult:
        """Compile a candidate in its own process. A source that builds nothing ahead of time (no
        ``cpp_extension``, no Triton) skips that process: the candidate process imports it anyway and
        reports import errors as compile errors, so the separate step would only cost a Python start."""
        if not _builds_ahead(source):
            return BuildResult(True, 0.0, "", False)
        ext = self.extensions_dir(source)
        marker = ext / ".built-ok"
        if marker.exists():
            return BuildResult(True, 0.0, "", True)
        # One build per source at a time across evaluators and processes sharing the cache.
        with _source_lock(ext):
            if marker.exists():  # built by whoever held the lock before us
                return BuildResult(True, 0.0, "", True)
            _clear_torch_batons(ext)
            return self._build_locked(source, ext, marker)

    def build_many(self, sources: list[str], workers: int | None = None) -> list[BuildResult]:
        """``build`` every source at once on the host's cores (``workers`` threads, default the CPUs
        this process may use), in order; for scripts that compile everything before anything is timed."""
        from concurrent.futures import ThreadPoolExecutor

        if not sources:
            return []
        with ThreadPoolExecutor(min(len(sources), workers or usable_cpus())) as pool:
            return list(pool.map(self.build, sources))

    def _build_locked(self, source: str, ext: Path, marker: Path) -> BuildResult:
        work = Path(tempfile.mkdtemp(prefix="build-", dir=self._tmp_root))
        src_path = work / "candidate_src.py"
        src_path.write_text(source)
        env = _child_env(ext, self.device, self.gpu_index)
        env["KV_PCH_TIMEOUT_S"] = str(self.settings.build_timeout_s / 3)
        res = run_module("harness.build", [str(src_path)], cwd=work, env=env,
                         timeout_s=self.settings.build_timeout_s, max_file_bytes=self.settings.max_output_file_bytes,
                         niceness=self.settings.build_niceness)
        shutil.rmtree(work, ignore_errors=True)
        if res.timed_out:
            return BuildResult(False, res.seconds, f"build exceeded {self.settings.build_timeout_s:.0f} s", False, True)
        if res.returncode != 0:
            err = res.stderr_tail or res.stdout_tail or f"build process ended with {res.signal_name or res.returncode}"
            return BuildResult(False, res.seconds, err, False)
        marker.write_text(datetime.now(UTC).isoformat())
        return BuildResult(True, res.seconds, "", False)

    # -- reference ----------------------------------------------------------------------------------
    def _problem(self, problem_id: str) -> P.Problem:
        return P.load(problem_id, self.problems_dir)

    def reference(self, problem: P.Problem) -> tuple[Path, JobSpec, dict]:
        with self._lock:
            lock = self._ref_locks.setdefault(problem.id, threading.Lock())
        with lock:
            if problem.id in self._refs:
                return self._refs[problem.id]
            ref_dir = Path(tempfile.mkdtemp(prefix="ref-", dir=self._tmp_root))
            job = JobSpec(
                problem_id=problem.id, problem_source=problem.source(self.size), size=self.size, device=self.device,
                domains={k: str(v) for k, v in problem.meta.domains.items()},
                fresh_seeds=[secrets.randbelow(2**31 - 1) for _ in range(self.settings.verified_base_trials + 4 + self.settings.timing_input_sets)],
                perturb_seed=secrets.randbelow(2**31 - 1), ref_dir=str(ref_dir), work_dir=str(ref_dir),
                settings=self.settings,
            )
            (ref_dir / "job.json").write_text(job.model_dump_json())
            res = run_module("harness.reference", [str(ref_dir / "job.json")], cwd=ref_dir,
                             env=_child_env(self.cache_dir / "extensions" / "_reference", self.device, self.gpu_index),
                             timeout_s=self.settings.reference_timeout_s, max_file_bytes=2**40, isolate_network=False)
            summary_path = ref_dir / "summary.json"
            if res.timed_out or res.returncode != 0 or not summary_path.exists():
                raise RuntimeError(f"reference for {problem.id} failed: {res.stderr_tail[-2000:] or res.signal_name}")
            summary = json.loads(summary_path.read_text())
            self._refs[problem.id] = (ref_dir, job, summary)
            return self._refs[problem.id]

    def prepare(self, problem_id: str) -> bool:
        """Compute (or find) a problem's reference outputs now, so a later ``evaluate`` of it skips that
        step. A pool calls it while candidates are still compiling, when the GPU would sit idle. False
        when that failed: the evaluation then tries again and reports the failure to its candidate."""
        try:
            self.reference(self._problem(problem_id))
        except Exception:  # noqa: BLE001 - reported by the evaluation that needs it
            return False
        return True

    # -- evaluation ---------------------------------------------------------------------------------
    def evaluate(self, source: str, problem_id: str, protocols: list[str | Protocol] | None = None,
                 build: BuildResult | None = None) -> Evaluation:
        """Measure and score. ``build``: the result of an ``Evaluator.build`` already run for this source
        (a pool builds ahead of evaluation); without it the build runs here, or hits the cache."""
        problem = self._problem(problem_id)
        record = self.measure(source, problem, build)
        chosen = protocols or list(PROTOCOLS)
        results = {}
        for p in chosen:
            r = score(record, p)
            results[r.protocol] = r
        return Evaluation(record=record, results=results)

    def measure(self, source: str, problem: P.Problem, build: BuildResult | None = None) -> MeasurementRecord:
        started = time.perf_counter()
        record = MeasurementRecord(candidate_hash=source_hash(source), problem_id=problem.id, size=self.size,
                                   device=self.device, created_at=datetime.now(UTC).isoformat(),
                                   problem_flags=[f.kind for f in problem.meta.flags])
        record.provenance = scan(source)
        record.gpu_index = self.gpu_index
        built = build or self.build(source)
        record.build_seconds, record.build_cached = built.seconds, built.cached
        if not built.ok:
            record.status = "timeout" if built.timed_out else "compile_error"
            record.failed_phase, record.error = "build", built.error[-4000:]
            record.eval_seconds = time.perf_counter() - started
            return record

        t_ref = time.perf_counter()
        ref_dir, ref_job, summary = self.reference(problem)
        record.phase_seconds["reference"] = time.perf_counter() - t_ref
        if summary.get("environment"):
            record.environment = Environment.model_validate(summary["environment"])
        try:
            name = record.environment.device_name if record.environment else ""
            record.roofline = roofline_for(problem, self.size, self.device, name)
        except Exception:  # noqa: BLE001 - a missing bound never blocks an evaluation
            record.roofline = None
        ext = self.extensions_dir(source)
        if _builds_ahead(source):
            # The candidate's own load_inline takes torch's lock file too, even on a cache hit: one
            # left by a worker killed there (a timeout, a killed sweep before --resume) would make this
            # evaluation wait until its time limit.
            with _source_lock(ext):
                _clear_torch_batons(ext)
        spare = self._take_spare()
        work, read_fd, write_fd = (spare.work, spare.read_fd, spare.write_fd) if spare is not None else self._new_slot()
        record.worker_prespawned = spare is not None
        nonce = secrets.token_hex(16)
        job = ref_job.model_copy(update=dict(candidate_source=source, candidate_hash=record.candidate_hash,
                                             work_dir=str(work), extensions_dir=str(ext), result_fd=write_fd, nonce=nonce))
        (work / "job.json").write_text(job.model_dump_json())
        messages: list[dict] = []

        def reader(proc, deadline):
            os.close(write_fd)
            buf = b""
            with os.fdopen(read_fd, "rb", buffering=0) as f:
                while True:
                    chunk = f.read(65536)
                    if not chunk:
                        break
                    buf += chunk
                    while b"\n" in buf:
                        line, buf = buf.split(b"\n", 1)
                        try:
                            msg = json.loads(line)
                        except json.JSONDecodeError:
                            continue
                        if isinstance(msg, dict) and msg.get("nonce") == nonce:
                            msg["received_at"] = time.perf_counter()  # parent clock: phase durations
                            messages.append(msg)

        t = {"thread": None}

        def on_start(proc, deadline):
            th = threading.Thread(target=reader, args=(proc, deadline), daemon=True)
            th.start()
            t["thread"] = th
            if self.settings.prespawns():  # the next candidate's process imports torch while this one runs
                self._refill_spare()

        t_worker = time.perf_counter()
        timeout_s = self.settings.eval_timeout_s + self.settings.build_timeout_s
        if spare is not None:
            try:
                spare.child.proc.stdin.write(f"{work / 'job.json'}\n".encode())
                spare.child.proc.stdin.close()
            except OSError:  # it died just now: start a fresh process for this job instead
                spare.discard()
                spare = None
                record.worker_prespawned = False
                work, read_fd, write_fd = self._new_slot()  # the reader reads these names when it starts
                job = job.model_copy(update=dict(work_dir=str(work), result_fd=write_fd))
                (work / "job.json").write_text(job.model_dump_json())
        if spare is not None:
            # Its clock starts now, at the job, not when it was started.
            res = wait_child(spare.child, timeout_s, on_start, started=t_worker)
        else:
            res = run_module("harness.worker", [str(work / "job.json")], cwd=work,
                             env=_child_env(ext, self.device, self.gpu_index), timeout_s=timeout_s,
                             max_file_bytes=self.settings.max_output_file_bytes, pass_fds=(write_fd,), on_start=on_start)
        if t["thread"] is not None:
            t["thread"].join(timeout=10)
        self._assemble(record, messages, res)
        record.phase_seconds.update(_phase_durations(messages, t_worker, t_worker + res.seconds))
        record.stdout_tail = (res.stdout_tail or "")[-2000:]
        record.eval_seconds = time.perf_counter() - started
        if not self.keep_temp:
            shutil.rmtree(work, ignore_errors=True)
        return record

    # -- candidate processes, fresh or pre-started ------------------------------------------------
    def _new_slot(self) -> tuple[Path, int, int]:
        """A private working folder and the result pipe (read end, write end) for one candidate process."""
        read_fd, write_fd = os.pipe()
        return Path(tempfile.mkdtemp(prefix="cand-", dir=self._tmp_root)), read_fd, write_fd

    def _refill_spare(self) -> None:
        """Start a worker that imports torch and the harness, then waits on stdin for its job. Started
        from the measuring thread: a child's PR_SET_PDEATHSIG follows the thread that forked it."""
        with self._lock:
            if self._spare is not None:
                return
        work, read_fd, write_fd = self._new_slot()
        try:
            # TORCH_EXTENSIONS_DIR is set per job by the worker (wait_for_job), from the job file.
            child = spawn_module("harness.worker", ["--spare"], cwd=work,
                                 env=_child_env(self.cache_dir / "extensions" / "_spare", self.device, self.gpu_index),
                                 max_file_bytes=self.settings.max_output_file_bytes, pass_fds=(write_fd,),
                                 stdin_pipe=True)
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            shutil.rmtree(work, ignore_errors=True)
            return
        spare = _Spare(child, work, read_fd, write_fd)
        with self._lock:
            spare, self._spare = (spare, self._spare) if self._spare is not None else (None, spare)
        if spare is not None:  # another thread refilled it meanwhile: keep one
            spare.discard()

    def _take_spare(self) -> _Spare | None:
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is None:
            return None
        if spare.child.proc.poll() is not None:  # died while waiting (killed, or its thread ended)
            spare.discard()
            return None
        return spare

    def _discard_spare(self) -> None:
        with self._lock:
            spare, self._spare = self._spare, None
        if spare is not None:
            spare.discard()

    @staticmethod
    def _assemble(record: MeasurementRecord, messages: list[dict], res) -> None:
        phase = "load"
        done = False
        for m in messages:
            kind, payload = m["kind"], m["payload"]
            if kind == "phase":
                phase = payload
                done = done or payload == "done"
            elif kind == "error":
                record.status = payload["status"]
                record.failed_phase = payload["phase"]
                record.error = payload["error"]
                return
            elif kind == "naive_trials":
                record.naive_trials = [TrialResult.model_validate(x) for x in payload]
            elif kind == "verified_trials":
                record.verified_trials = [TrialResult.model_validate(x) for x in payload["trials"]]
                if payload.get("reference_precision"):
                    record.provenance.notes.append(f"exact reference computed in {payload['reference_precision']}")
            elif kind == "output_dtype":
                record.output_dtype = payload
            elif kind == "custom_code_called":
                record.provenance.custom_kernel_called = bool(payload)
            elif kind == "timing":
                record.timing = Timing.model_validate(payload)
            elif kind == "memory":
                record.memory = Memory.model_validate(payload)
            elif kind == "guards":
                # extend, not replace: "guard" findings sent earlier (harness_introspection) must survive
                record.guards.extend(GuardOutcome.model_validate(x) for x in payload)
            elif kind == "guard":
                record.guards.append(GuardOutcome.model_validate(payload))
        if done:
            return
        if res.timed_out:
            record.status, record.failed_phase = "timeout", phase
            record.error = f"no result within {res.seconds:.0f} s (stopped during {phase})"
        else:
            record.status, record.failed_phase = "runtime_error", phase
            how = f"killed by {res.signal_name}" if res.signal_name else f"exited with code {res.returncode}"
            record.error = f"candidate process {how} during {phase}\n{res.stderr_tail[-3000:]}"
            if phase == "load":
                record.status = "compile_error"


def _builds_ahead(source: str) -> bool:
    return "cpp_extension" in source or "load_inline" in source or "triton" in source


def _phase_durations(messages: list[dict], started: float, ended: float) -> dict[str, float]:
    """Seconds per worker phase, from when each phase message reached the parent; 'startup' is process
    start and imports up to the first message."""
    marks = [(m["payload"], m["received_at"]) for m in messages if m["kind"] == "phase"]
    if not marks:
        return {"startup": ended - started}
    out = {"startup": marks[0][1] - started}
    for (name, t0), (_, t1) in zip(marks, [*marks[1:], ("end", ended)], strict=True):
        if name != "done":
            out[name] = out.get(name, 0.0) + (t1 - t0)
    return out


def evaluate(source: str, problem_id: str, *, device: str = "cpu", size: P.Size = "small",
             protocols: list[str | Protocol] | None = None, settings: EvalSettings | None = None,
             problems_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> Evaluation:
    """Measure one candidate once and score it under each protocol."""
    with Evaluator(device, size, settings=settings, problems_dir=problems_dir, cache_dir=cache_dir) as ev:
        return ev.evaluate(source, problem_id, protocols)
