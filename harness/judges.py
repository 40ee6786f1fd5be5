"""The running judges of one Evaluator (``harness.judge.judge``), one per problem: each started on first use with
seeds drawn then, holding that problem's reference outputs; at most ``settings.max_judges`` at once, the least
recently used ending first. Every candidate's own seeds are drawn here too, for the judge alone."""

from __future__ import annotations

import contextlib
import secrets
import shutil
import socket
import subprocess
import tempfile
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection
from pathlib import Path

import problems as P

from .children import Setup, _child_env
from .judge.gate import GATE_ENV
from .judge.inputs import seeds_needed
from .sandbox import Child, kill_group, spawn_module, tail
from .wire.conn import Conn, WireError


def _judge_env(cache_dir: Path, device: str, gpu_index: int | None) -> dict[str, str]:
    """The judge's environment: torch.compile's caches (Inductor's FX graphs and kernels, Triton's binaries) in folders
    of this evaluator's cache, which only trusted processes write, so a second or resumed sweep compiles the baseline
    of a problem it has seen from the cache instead of from scratch; and its device's timing gate
    (``harness.judge.gate``), a file there too, so that judges of one device take turns between timing and preparing
    (whichever evaluator or process they belong to)."""
    env = _child_env(cache_dir / "extensions" / "_reference", device, gpu_index)
    gates = cache_dir / "gates"
    gates.mkdir(parents=True, exist_ok=True)
    env.update(TORCHINDUCTOR_CACHE_DIR=str(cache_dir / "inductor"), TRITON_CACHE_DIR=str(cache_dir / "triton"),
               **{GATE_ENV: str(gates / f"{device}{gpu_index or 0}.lock")})
    return env


def _end_child(helper: tuple[Child, Path]) -> None:
    """End a helper process of the harness's own (the clock peer) and delete its folder."""
    child, work = helper
    with contextlib.suppress(Exception):
        child.proc.wait(timeout=5)
    child.end()
    shutil.rmtree(work, ignore_errors=True)


class _JudgeHandle:
    """A running judge (``harness.judge.judge``) for one problem: its process and the control connection."""

    def __init__(self, problem_id: str, child: Child, conn: Conn, environment: dict, work: Path,
                 peer: tuple[Child, Path] | None = None) -> None:
        self.problem_id, self.child, self.conn, self.environment, self.work = problem_id, child, conn, environment, work
        self.peer = peer  # its calibration peer (harness.candidate.clock_peer), ended with it
        self.warmed: dict | None = None  # a spare judge's warm-up (harness.judge.warm), when it was one
        self.lock = threading.Lock()
        self._job_seeds_unused = True  # drawn for its first candidate, whose references it computed ahead

    def first_serve(self) -> bool:
        """True once: the first candidate served takes the seeds of the judge's job (drawn by the evaluator when the
        judge started, for that candidate alone, and already used for its references: Judge.precompute); every later
        one is told fresh seeds of its own."""
        first, self._job_seeds_unused = self._job_seeds_unused, False
        return first

    def alive(self) -> bool:
        return self.child.proc.poll() is None

    def close(self) -> None:
        if self.problem_id:  # a spare (no problem yet) holds nothing to end politely
            with contextlib.suppress(Exception):
                self.conn.send("close")
            try:
                self.child.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        kill_group(self.child.proc)
        self.child.proc.wait()
        self.conn.close()
        if self.peer is not None:  # it ends by itself once the judge is gone; this collects it
            _end_child(self.peer)
        shutil.rmtree(self.work, ignore_errors=True)


def _close_all(judges: dict, spares: list) -> None:
    for h in [*judges.values(), *spares]:
        h.close()
    judges.clear()
    spares.clear()


class JudgePool:
    """One Evaluator's judges, by problem id (``Evaluator.judge`` and ``prepare`` are this)."""

    def __init__(self, setup: Setup) -> None:
        self.setup = setup
        self.running: OrderedDict[str, _JudgeHandle] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self._ref_locks: dict[str, threading.Lock] = {}
        # The problems whose judges end last when one must (a pool's problems with candidates still waiting).
        self.keep: Callable[[], Collection[str]] | None = None
        self.starting: set[str] = set()  # problems whose judge a thread is starting now
        self._spares: list[_JudgeHandle] = []  # at most one judge started ahead of its problem (spare_judge)
        # Also when an evaluator nobody closed is collected or the interpreter exits.
        self._finalize = weakref.finalize(self, _close_all, self.running, self._spares)

    def close(self) -> None:
        self._finalize()

    def live(self) -> set[str]:
        """The problems whose judges are running now or being started (a slot each: a pool that counted only the
        running ones started a third judge beside a starting second, and the third's start ended a needed first)."""
        with self._lock:
            return {p for p, h in self.running.items() if h.alive()} | self.starting

    def judge(self, problem: P.Problem) -> _JudgeHandle:
        """The running judge of ``problem``, started (seeds drawn now, reference built) on first use. At most
        ``settings.max_judges`` run at once: the least recently used one ends first, and its expected
        outputs with it."""
        with self._lock:
            lock = self._ref_locks.setdefault(problem.id, threading.Lock())
        keep = set(self.keep()) if self.keep is not None else set()  # asked before this pool's lock is taken
        with lock:
            with self._lock:
                handle = self.running.get(problem.id)
                if handle is not None and handle.alive():
                    self.running.move_to_end(problem.id)
                    return handle
                if handle is not None:
                    del self.running[problem.id]
                self.starting.add(problem.id)
            try:
                handle = self._start_judge(problem)
            except BaseException:
                with self._lock:
                    self.starting.discard(problem.id)
                raise
            with self._lock:  # from starting to running at once: never out of live() in between
                self.starting.discard(problem.id)
                self.running[problem.id] = handle
                old = []
                while len(self.running) > self.setup.settings.max_judges:
                    # the least recently used of those no waiting candidate needs, else the least recently used
                    victim = next((p for p in self.running if p not in keep and p != problem.id),
                                  next(iter(self.running)))
                    old.append(self.running.pop(victim))
            for h in old:
                with h.lock:
                    h.close()
            return handle

    def prepare(self, problem_id: str) -> bool:
        """Compute (or find) a problem's reference outputs now, so a later ``evaluate`` of it skips that
        step. A pool calls it while candidates are still compiling, when the GPU would sit idle. False
        when that failed: the evaluation then tries again and reports the failure to its candidate."""
        try:
            self.judge(self.setup.problem(problem_id))
        except Exception:  # noqa: BLE001 - reported by the evaluation that needs it
            return False
        return True

    def drop(self, judge: _JudgeHandle) -> None:
        """End a judge that failed, so its problem's next evaluation starts a fresh one."""
        with self._lock:
            if self.running.get(judge.problem_id) is judge:
                del self.running[judge.problem_id]
        judge.close()

    def fresh_seeds(self) -> dict:
        """Seeds drawn now, by this process, for one candidate's trials, timing sets, perturbation and construction."""
        settings = self.setup.settings
        n_seeds = seeds_needed(settings.verified_base_trials, settings.verified_adversarial_trials) \
            + max(settings.timing_input_sets, settings.timed_batch)
        return {"fresh_seeds": [secrets.randbelow(2**31 - 1) for _ in range(n_seeds)],
                "perturb_seed": secrets.randbelow(2**31 - 1)}

    def _start_clock_peer(self) -> tuple[tuple[Child, Path], socket.socket]:
        """The judge's calibration peer (``harness.candidate.clock_peer``), sandboxed as a candidate's evaluation is, on the same
        device; returns it and the socket end the judge gets. Its folder is deleted with it."""
        work = Path(tempfile.mkdtemp(prefix="clock-peer-", dir=self.setup.tmp_root))
        ours, theirs = socket.socketpair()
        try:
            child = spawn_module("harness.candidate.clock_peer", [str(theirs.fileno())], cwd=work,
                                 env=self.setup.sandboxed_env(work), max_file_bytes=2**30,
                                 pass_fds=(theirs.fileno(),), die_with_parent=False, sandbox=self.setup.policy(work))
        except BaseException:
            ours.close()
            shutil.rmtree(work, ignore_errors=True)
            raise
        finally:
            theirs.close()
        return (child, work), ours

    def _spawn(self) -> _JudgeHandle:
        """A judge process with no problem yet (its handle's problem_id is empty): told its problem by ``_start_judge``."""
        setup = self.setup
        work = Path(tempfile.mkdtemp(prefix="judge-", dir=setup.tmp_root))
        mine, theirs = socket.socketpair()
        peer_args, peer_fds, peer = [], [], None
        try:
            if setup.settings.witness_calibration == "peer":
                peer, judge_end = self._start_clock_peer()
                peer_args, peer_fds = [str(judge_end.fileno())], [judge_end]
            # Not tied to the starting thread's life (PR_SET_PDEATHSIG would end it with a pool thread):
            # it ends when its control connection closes, which the kernel does when this process dies.
            child = spawn_module("harness.judge.judge", [str(theirs.fileno()), *peer_args], cwd=work,
                                 env=_judge_env(setup.cache_dir, setup.device, setup.gpu_index),
                                 max_file_bytes=2**40,  # its shared buffer grows past 2 GiB
                                 pass_fds=(theirs.fileno(), *(f.fileno() for f in peer_fds)), die_with_parent=False)
        except BaseException:
            if peer is not None:
                _end_child(peer)
            mine.close()
            shutil.rmtree(work, ignore_errors=True)
            raise
        finally:
            theirs.close()
            for f in peer_fds:
                f.close()
        return _JudgeHandle("", child, Conn(mine), {}, work, peer)

    def _spare_judge(self) -> _JudgeHandle | None:
        """A judge started ahead and warming up (``harness.judge.warm``), or None when the settings keep no spare."""
        settings = self.setup.settings
        if not settings.spares_judge():
            return None
        handle = self._spawn()
        try:
            handle.conn.send("warm", {"device": self.setup.device, "threads": settings.torch_threads(self.setup.device),
                                      "compile": settings.compiles_baseline(self.setup.device)})
        except (WireError, OSError):
            handle.close()
            return None
        return handle

    def _take_spare(self) -> _JudgeHandle | None:
        """The waiting spare judge if it still runs, and the next spare started in its place."""
        with self._lock:
            spare = self._spares.pop(0) if self._spares else None
            refill = not self._spares
        if spare is not None and not spare.alive():
            spare.close()
            spare = None
        if refill:
            with contextlib.suppress(Exception):  # no spare: the next judge starts from scratch, as without one
                nxt = self._spare_judge()
                if nxt is not None:
                    with self._lock:
                        self._spares.append(nxt)
        return spare

    def _start_judge(self, problem: P.Problem) -> _JudgeHandle:
        job = self.setup.base_job(problem).model_copy(update=self.fresh_seeds())
        spare = self._take_spare()
        if spare is not None:
            handle, _failure = self._assign(spare, job)
            if handle is not None:
                return handle
            # It may have died of its own warm-up before the job came: once more from scratch (a problem whose
            # reference fails fails there too, reported as before).
        handle, failure = self._assign(self._spawn(), job)
        if handle is None:
            raise RuntimeError(f"reference for {problem.id} failed: {failure}".strip())
        return handle

    def _assign(self, handle: _JudgeHandle, job) -> tuple[_JudgeHandle | None, str]:
        """Give a started judge its problem; the judge once its references are ready, or None (ended) and why not."""
        handle.problem_id = job.problem_id
        try:
            handle.conn.send("job", job.model_dump(mode="json"))
            kind, payload = handle.conn.recv(timeout=self.setup.settings.reference_timeout_s)
        except (WireError, OSError) as exc:
            kind, payload = "failed", f"{exc}"
        if kind == "ready":
            handle.environment = (payload or {}).get("environment") or {}
            handle.warmed = (payload or {}).get("warmed")
            return handle, ""
        err = tail(handle.child.err_path, 2000)
        kill_group(handle.child.proc)
        handle.close()
        return None, f"{payload or ''} {err}"
