"""The parent side: an evaluation is a short pipeline over the parent's parts.

    evaluate(source, problem_id, device="cpu", size="small") -> Evaluation(record, results)

    build      harness.builder    the candidate compiled in a sandbox, cached by source hash under ``cache_dir``
    judge      harness.judges     the problem's judge, started once per Evaluator with seeds drawn then: it holds the
                                  reference outputs its candidates share; each candidate's own seeds go to it alone
    candidate  harness.workers    a sandboxed candidate process in a fresh folder (or one started ahead), and the
                                  reports it sends
    record     harness.assemble   the measurement record from the judge's verdicts and the candidate's reports
    score      harness.scoring    each protocol's verdict on the record

The parent never imports the candidate. What the parts share (device, size, settings, cache and temporary folders)
is the evaluator's ``Setup`` (``harness.children``).
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Collection
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field

import problems as P

from .assemble import assemble, phase_durations
from .builder import Builder
from .builds import DEFAULT_CACHE, BuildResult, _builds_ahead, _copy_build, _source_lock
from .candidate.load import source_hash
from .children import Setup
from .errors import HarnessError
from .judges import JudgePool, _JudgeHandle
from .measure.guard_registry import outcome
from .measure.record import (
    Environment,
    MeasurementRecord,
    ShapeCheck,
)
from .roofline_bound import roofline_for
from .sandbox import EXT_MOUNT, disk, sandbox_setup_failed, wait_child
from .scoring import shapes
from .scoring.protocols import PROTOCOLS, Protocol, ProtocolResult, score
from .scoring.static_scan import scan
from .wire.conn import WireError
from .wire.job import EvalSettings
from .workers import Workers, read_reports


class Evaluation(BaseModel):
    record: MeasurementRecord
    results: dict[str, ProtocolResult] = Field(default_factory=dict)


def _shared(name: str) -> property:
    """An attribute of the evaluator's ``Setup``: its parts read it there at each use, so replacing it here
    (``harness.eval.bounded_evaluate`` replaces ``settings`` between steps) reaches all of them."""
    return property(lambda self: getattr(self._setup, name), lambda self, value: setattr(self._setup, name, value))


class Evaluator:
    """Evaluates candidates: build, the problem's judge, a candidate process, the record, its scores. Holds the
    build cache location and, in its judges, per-problem reference outputs."""

    device = _shared("device")
    size = _shared("size")
    gpu_index = _shared("gpu_index")
    settings = _shared("settings")
    cache_dir = _shared("cache_dir")
    problems_dir = _shared("problems_dir")

    def __init__(self, device: str = "cpu", size: P.Size = "small", *, settings: EvalSettings | None = None,
                 cache_dir: Path | str | None = None, problems_dir: str | Path | None = None,
                 keep_temp: bool = False, gpu_index: int | None = None) -> None:
        """``gpu_index`` pins every child of this evaluator to one physical GPU (a pool runs one per GPU)."""
        self._tmp_root = Path(tempfile.mkdtemp(prefix="kv-eval-"))
        self._setup = Setup(device, size, gpu_index, settings or EvalSettings(),
                            Path(cache_dir) if cache_dir else DEFAULT_CACHE, problems_dir, self._tmp_root)
        self.keep_temp = keep_temp
        # Reference outputs and work folders live here (tens of MB per problem): removed on close, and
        # also when an evaluator nobody closed is collected or the interpreter exits.
        self._remove_tmp = weakref.finalize(self, _remove_root, self._tmp_root, keep_temp)
        self._builder = Builder(self._setup)
        self._judges = JudgePool(self._setup)  # made after _remove_tmp: at exit its judges end before the folder goes
        self._workers = Workers(self._setup)
        self._lock = threading.Lock()  # the shape evaluator is made once
        self._shape_ev: Evaluator | None = None  # the extra shapes' judges (settings.extra_shapes), made on first use
        self._shape_refused: dict[str, str] = {}  # shaped problem id -> why its reference does not run there

    def close(self) -> None:
        if self._shape_ev is not None:
            self._shape_ev.close()
        self._workers.discard_spares()
        self._judges.close()
        self._remove_tmp()

    def __enter__(self) -> Evaluator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- builds (harness.builder) -------------------------------------------------------------------
    def extensions_dir(self, source: str) -> Path:
        """The source's build folder in the cache (``Builder.extensions_dir``)."""
        return self._builder.extensions_dir(source)

    def build(self, source: str, problem_id: str | None = None) -> BuildResult:
        """Compile a candidate in a sandboxed process of its own, or find its build cached (``Builder.build``)."""
        return self._builder.build(source, problem_id)

    def build_many(self, sources: list[str], workers: int | None = None) -> list[BuildResult]:
        """``build`` every source at once on the host's cores, in order (``Builder.build_many``)."""
        return self._builder.build_many(sources, workers)

    # -- judges (harness.judges) --------------------------------------------------------------------
    def judge(self, problem: P.Problem) -> _JudgeHandle:
        """The running judge of ``problem``, started on first use (``JudgePool.judge``)."""
        return self._judges.judge(problem)

    def live_judges(self) -> set[str]:
        """The problems whose judges are running (``JudgePool.live``): a pool takes their candidates first."""
        return self._judges.live()

    @property
    def keep_judges(self) -> Callable[[], Collection[str]] | None:
        """Problems whose judges this evaluator ends last when it must end one (a pool's waiting candidates')."""
        return self._judges.keep

    @keep_judges.setter
    def keep_judges(self, problems: Callable[[], Collection[str]] | None) -> None:
        self._judges.keep = problems

    def prepare(self, problem_id: str) -> bool:
        """Start a problem's judge (its reference outputs) ahead of its first evaluation; False when that failed
        (``JudgePool.prepare``)."""
        return self._judges.prepare(problem_id)

    # -- evaluation ---------------------------------------------------------------------------------
    def evaluate(self, source: str, problem_id: str, protocols: list[str | Protocol] | None = None,
                 build: BuildResult | None = None) -> Evaluation:
        """Measure and score. ``build``: the result of an ``Evaluator.build`` already run for this source
        (a pool builds ahead of evaluation); without it the build runs here, or hits the cache."""
        problem = self._setup.problem(problem_id)
        record = self.measure(source, problem, build)
        chosen = protocols or list(PROTOCOLS)
        results = {}
        for p in chosen:
            r = score(record, p)
            results[p if isinstance(p, str) else r.protocol] = r  # 'verified@2' beside 'verified': both kept
        return Evaluation(record=record, results=results)

    def measure(self, source: str, problem: P.Problem, build: BuildResult | None = None) -> MeasurementRecord:
        started = time.perf_counter()
        record = MeasurementRecord(candidate_hash=source_hash(source), problem_id=problem.id, size=self.size,
                                   device=self.device, precision=self.settings.precision,
                                   created_at=datetime.now(UTC).isoformat(),
                                   problem_flags=[f.kind for f in problem.meta.flags])
        record.provenance = scan(source)
        if problem.meta.borrowed_from:
            record.provenance.notes.append(f"input domains and flags from the built-in {problem.meta.borrowed_from}")
        record.gpu_index = self.gpu_index
        built = build or self.build(source, problem.id)
        record.build_seconds, record.build_cached = built.seconds, built.cached
        if not built.ok:
            if _disk_full(built.error, self.cache_dir):
                raise HarnessError(f"the build ran out of disk (not the candidate's fault): {built.error[-500:]}")
            record.status = "timeout" if built.timed_out else "compile_error"
            record.failed_phase, record.error = "build", built.error[-4000:]
            record.eval_seconds = time.perf_counter() - started
            return record

        t_ref = time.perf_counter()
        judge = self.judge(problem)
        record.phase_seconds["reference"] = time.perf_counter() - t_ref
        if judge.environment:
            record.environment = Environment.model_validate(judge.environment)
        try:
            name = record.environment.device_name if record.environment else ""
            # a CPU's peaks are measured once per host by this (trusted) process and kept under the cache dir
            record.roofline = roofline_for(problem, self.size, self.device, name, self.settings.precision,
                                           cache_dir=self.cache_dir)
        except Exception:  # noqa: BLE001 - a missing bound never blocks an evaluation
            record.roofline = None
        ext = self.extensions_dir(source)
        unmeasured = record.model_copy(deep=True)
        with judge.lock:  # held across both measurements: the judge weighs the second with the first it just made
            record = self._measure_sandboxed(judge, record, source, problem, ext)
            if self.settings.witness_remeasure and (why := _witness_only_failure(record)):
                record, record.remeasured = unmeasured, why
                record = self._measure_sandboxed(judge, record, source, problem, ext, pool_witness=True)
        if self.settings.extra_shapes and record.status == "ok":
            self._check_shapes(record, source, problem, built)
        record.eval_seconds = time.perf_counter() - started
        return record

    # -- the candidate process (harness.workers), its record (harness.assemble) ---------------------
    def _measure_sandboxed(self, judge: _JudgeHandle, record: MeasurementRecord, source: str, problem: P.Problem,
                           ext: Path, pool_witness: bool = False) -> MeasurementRecord:
        """``_measure_with``, made once more on a fresh copy of ``record`` where bubblewrap's own setup of the
        candidate's sandbox failed (``sandbox_setup_failed``: nothing of the candidate's ran). The measured record."""
        fresh = record.model_copy(deep=True)
        try:
            self._measure_with(judge, record, source, problem, ext, pool_witness=pool_witness)
            return record
        except HarnessError as exc:
            if not sandbox_setup_failed(str(exc).partition("\n")[2]):
                raise
        self._measure_with(judge, fresh, source, problem, ext, pool_witness=pool_witness)
        return fresh

    def _measure_with(self, judge: _JudgeHandle, record: MeasurementRecord, source: str, problem: P.Problem,
                      ext: Path, pool_witness: bool = False) -> None:
        spare = self._workers.take_spare()
        slot = spare.slot if spare is not None else self._workers.new_slot()
        record.worker_prespawned = spare is not None
        # The candidate's own copy of its build, at the path its build wrote (nothing it does there reaches the cache).
        with _source_lock(ext):
            _copy_build(ext, slot.policy.ext, slot.policy.uid)
        nonce = secrets.token_hex(16)
        # The candidate's job holds no seed, no perturbation and no expected output: those stay in the judge.
        job = self._setup.base_job(problem).model_copy(update=dict(
            candidate_source=source, candidate_hash=record.candidate_hash, work_dir=str(slot.work),
            extensions_dir=EXT_MOUNT, result_fd=slot.write_fd, judge_fd=slot.cand_sock.fileno(), nonce=nonce))
        job_line = (job.model_dump_json() + "\n").encode()  # through the worker's stdin, never a file
        # Started before the judge is told to serve it: the judge gets its cgroup's freezer with the session.
        child = spare.child if spare is not None else self._workers.spawn(slot, "--job-on-stdin")
        serve, fds = ({} if judge.first_serve() else self._judges.fresh_seeds()), [slot.judge_sock.fileno()]
        serve["pool_witness"] = pool_witness
        freezer = _open_freezer(child)
        if freezer is not None:
            serve["freezer"], freezer_fds = freezer
            fds += freezer_fds
        cpu = _open_cpu_usage(child)  # after the freezer's: the judge takes it as the last descriptor
        if cpu is not None:
            serve["cpu_usage"], cpu_fd = cpu
            fds.append(cpu_fd)
        try:  # every candidate its own seeds (the first, those of the judge's job), told to the judge alone
            judge.conn.send("serve", serve, fds=fds)
        except WireError as exc:
            self._judges.drop(judge)
            if spare is not None:
                spare.discard()
            else:
                child.end()
                slot.close_fds()
            raise HarnessError(f"the judge of {problem.id} is gone: {exc}") from exc
        finally:
            for fd in fds[1:]:
                os.close(fd)
        slot.judge_sock.close()
        messages: list[dict] = []
        breaches: list[str] = []
        t = {"thread": None}

        def on_start(proc, deadline):
            th = threading.Thread(target=read_reports, args=(slot, nonce, messages, breaches), daemon=True)
            th.start()
            t["thread"] = th
            if self.settings.prespawns():  # the next candidate's process imports torch while this one runs
                self._workers.refill_spares()

        t_worker = time.perf_counter()
        timeout_s = self.settings.eval_timeout_s + (self.settings.build_timeout_s if _builds_ahead(source) else 0.0)
        cap = self._workers.memory_cap()
        if spare is not None:
            try:
                spare.child.proc.stdin.write(job_line)
                spare.child.proc.stdin.close()
            except OSError:  # it died just now: its socket end is gone with it, the judge session ends
                spare.discard()
                raise HarnessError("a pre-started candidate process died before its job") from None
            # Its clock starts now, at the job, not when it was started.
            res = wait_child(spare.child, timeout_s, on_start, started=t_worker, memory_cap=cap)
        else:
            try:
                child.proc.stdin.write(job_line)
                child.proc.stdin.close()
            except OSError:
                pass  # it died at start: wait_child reports how
            res = wait_child(child, timeout_s, on_start, started=t_worker, memory_cap=cap)
        if t["thread"] is not None:
            t["thread"].join(timeout=10)
        try:
            kind, verdicts = judge.conn.recv(timeout=120)
        except WireError as exc:
            self._judges.drop(judge)
            raise HarnessError(f"the judge of {problem.id} did not report: {exc}") from exc
        if kind != "result" or not isinstance(verdicts, dict) or verdicts.get("harness_error"):
            self._judges.drop(judge)
            raise HarnessError(str((verdicts or {}).get("harness_error") if isinstance(verdicts, dict) else verdicts))
        if breaches:  # reports the worker never sends reached the parent: tampering with the result pipe
            record.guards.append(outcome("judge_protocol", False, detail=(
                f"the candidate process sent the evaluator {len(breaches)} malformed report(s): {breaches[0]}")[:1000]))
        assemble(record, messages, res, verdicts)
        record.phase_seconds.update(phase_durations(messages, t_worker, t_worker + res.seconds))
        spent = verdicts.get("seconds")
        if isinstance(spent, dict):  # the judge's side of the same phases: where a slow evaluation's time went
            record.phase_seconds.update({f"judge_{k}": float(v) for k, v in spent.items()
                                         if isinstance(v, (int, float)) and k.isidentifier()})
        record.stdout_tail = (res.stdout_tail or "")[-2000:]
        # The host's disk (the evaluator's temporary root's), not the candidate's capped work folder: filling that is
        # the candidate's own error.
        if record.status in ("compile_error", "runtime_error") and _disk_full(record.error or "", self._tmp_root):
            raise HarnessError(f"the evaluation ran out of disk (not the candidate's fault): {(record.error or '')[-500:]}")
        if (note := disk.capped_note()) and note not in record.provenance.notes:
            record.provenance.notes.append(note)
        if not self.keep_temp:
            disk.release(slot.work)

    # -- extra shapes (harness.scoring.shapes) ------------------------------------------------------------------
    def _shape_evaluator(self) -> Evaluator:
        """An evaluator of its own for the extra shapes: correctness only (no timing, no compile baseline), and
        judges apart from this one's, so checking N shapes never ends the published shape's judge. It keeps one
        problem's N judges alive (each at most the evaluated size's memory) for that problem's next candidate."""
        with self._lock:
            if self._shape_ev is None:
                n = self.settings.extra_shapes
                settings = self.settings.model_copy(update=dict(
                    measure_timing=False, compile_baseline=False, extra_shapes=0,
                    max_judges=max(n, self.settings.max_judges)))
                self._shape_ev = Evaluator(self.device, self.size, settings=settings, cache_dir=self.cache_dir,
                                           problems_dir=self.problems_dir, keep_temp=self.keep_temp,
                                           gpu_index=self.gpu_index)
            return self._shape_ev

    def _check_shapes(self, record: MeasurementRecord, source: str, problem: P.Problem, built: BuildResult) -> None:
        """Run the candidate at each extra shape and record pass/fail per shape; only for a kernel some default
        protocol calls correct at the published shape (otherwise it cannot be shape-specialised)."""
        if not shapes.published_trials(record):
            record.shapes_note = "not correct at the published shape under any protocol: extra shapes not checked"
            return
        t0 = time.perf_counter()
        todo, record.shapes, record.shapes_note = shapes.plan(problem, self.size, self.settings.extra_shapes)
        ev = self._shape_evaluator()
        for sp in todo:
            name = sp.id.rsplit("@", 1)[1]
            why = self._shape_refused.get(sp.id)
            if why is None:
                try:
                    ev.judge(sp)  # the reference at this shape, started once per shape and evaluator
                except Exception as exc:  # noqa: BLE001 - a shape the problem does not admit: skipped with its reason
                    # remembered: the next candidate of the problem does not start a judge that fails again
                    why = self._shape_refused[sp.id] = str(exc).removeprefix(f"reference for {sp.id} failed: ")[-400:]
            if why is not None:
                record.shapes.append(ShapeCheck(name=name, overrides=sp.overrides,
                                                reason=f"skipped: the reference does not run at this shape: {why}"))
                continue
            try:
                at = ev.measure(source, sp, built)
            except HarnessError as exc:
                record.shapes.append(ShapeCheck(name=name, overrides=sp.overrides,
                                                reason=f"skipped: the harness failed at this shape: {str(exc)[-400:]}"))
                continue
            record.shapes.append(shapes.result(name, sp.overrides, at))
        record.shapes.sort(key=lambda s: int(s.name.removeprefix("shape")))
        record.shape_specialised = shapes.specialised(record)
        record.phase_seconds["shapes"] = time.perf_counter() - t0


def _remove_root(root: Path, keep: bool) -> None:
    """The evaluator's temporary root at its end: every capped folder under it unmounted (its files first copied onto
    the disk below where the root is kept), then the root removed unless kept."""
    if keep:
        disk.persist_under(root)
        return
    disk.release_under(root)
    shutil.rmtree(root, ignore_errors=True)


def _witness_only_failure(record: MeasurementRecord) -> str | None:
    """Why to measure a candidate again: timing_witness is the only `hack` guard its measurement failed (on a loaded
    host an honest call's wake-up can exceed the witness's allowance). The judge then weighs both measurements'
    series together: the calls of a forged clock hide time in both, a load that delayed one measurement's calls is
    outweighed by the other's. None otherwise."""
    failed = [g for g in record.guards if not g.passed and g.applicable and g.severity == "hack"]
    if record.status != "ok" or [g.name for g in failed] != ["timing_witness"]:
        return None
    return f"timing_witness failed on the first measurement: {failed[0].detail}"[:2000]


def _open_freezer(child) -> tuple[str, list[int]] | None:
    """Descriptors of the candidate's cgroup freezer for its judge (``harness.judge.pause``): ("v1"|"v2", fds), or
    None where its cgroup has none (the record's ``paused_while_judging`` then says the pauses did not happen)."""
    files = child.cgroup.freeze_files() if child.cgroup is not None else None
    if files is None:
        return None
    kind, paths = files
    fds: list[int] = []
    try:
        for i, path in enumerate(paths):  # the control file read-write, v2's events file read-only
            fds.append(os.open(path, os.O_RDWR if i == 0 else os.O_RDONLY))
    except OSError:
        for fd in fds:
            os.close(fd)
        return None
    return kind, fds


def _open_cpu_usage(child) -> tuple[str, int] | None:
    """A read-only descriptor of the file counting the candidate's cgroup's CPU time, for its judge
    (``harness.judge.tree_cpu``): ("v1"|"v2", fd), or None where its cgroup has none."""
    files = child.cgroup.cpu_usage_file() if child.cgroup is not None else None
    if files is None:
        return None
    try:
        return files[0], os.open(files[1], os.O_RDONLY)
    except OSError:
        return None


def _disk_full(error: str, where: Path) -> bool:
    """A failure caused by a full disk: the message says so and the disk is (nearly) full right now."""
    if "No space left on device" not in error and "ENOSPC" not in error and "errno 28" not in error.lower():
        return False
    try:
        return shutil.disk_usage(where).free < 2 * 2**30
    except OSError:
        return True


def evaluate(source: str, problem_id: str, *, device: str = "cpu", size: P.Size = "small",
             protocols: list[str | Protocol] | None = None, settings: EvalSettings | None = None,
             problems_dir: str | Path | None = None, cache_dir: str | Path | None = None) -> Evaluation:
    """Measure one candidate once and score it under each protocol."""
    with Evaluator(device, size, settings=settings, problems_dir=problems_dir, cache_dir=cache_dir) as ev:
        return ev.evaluate(source, problem_id, protocols)
