"""The evaluation pool: where candidates are built and measured, apart from the model calls.

    with LocalExecutor("cuda", "full", gpus=8) as ex:
        future = ex.submit(kernel_source, "level1/19_ReLU")      # concurrent.futures.Future[Evaluation]
        evaluation = future.result()

``Executor`` is the interface the driver uses; ``LocalExecutor`` runs on this host:

* builds run in a thread pool of ``build_workers`` (default: CPU count), each build in its own process
  (``Evaluator.build``, cached by source hash), started as soon as a candidate is submitted;
* evaluations run on ``gpus`` workers, one thread per GPU, each owning an ``Evaluator`` pinned to its
  GPU (``gpu_index``), pulling built candidates from one queue. On the CPU, ``gpus`` is the number of
  parallel evaluation workers (default 1, so timings do not compete with each other).

So a GPU worker only ever picks up candidates whose build has finished, and model calls (asyncio, in
the driver) never wait on either. Beside each GPU worker, a preparer starts the judges of the next
problems (``Evaluator.prepare``: the judge process, reference model, torch.compile baseline) while the
current candidate runs; the judges' device work and a candidate's timing take turns on the device
(``harness.judge.gate``). It starts one only into a free judge slot: never by ending a judge that a
waiting candidate needs (an evaluator keeps ``settings.max_judges``; a judge prepared ahead and ended
before its candidates came cost its whole preparation twice). A GPU worker takes first the built
candidates whose judge runs. Each worker's spans (preparing, evaluating) are kept for ``timeline()``
and appended to ``timeline_path`` as they end. The same (source, problem) is measured once per
executor: a re-submitted kernel gets the first submission's future ("measure once, score many").

A Ray executor (issue 9) implements the same three methods: ``submit``, ``stats`` and ``close``.
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel


class ExecutorStats(BaseModel):
    queued_builds: int = 0
    building: int = 0
    queued_evals: int = 0
    evaluating: int = 0
    done: int = 0
    failed_builds: int = 0
    reused: int = 0
    prepared: int = 0  # problems whose reference outputs a worker computed ahead of their candidates
    workers: int = 0
    per_worker: list[int] = []  # evaluations finished by each worker (one per GPU): is every GPU used?


class Executor(ABC):
    """Evaluates candidates somewhere; every method is thread-safe and non-blocking except close()."""

    @abstractmethod
    def submit(self, kernel_source: str, problem_id: str) -> Future:
        """Start building and then measuring ``kernel_source`` on ``problem_id``; the future yields a
        ``harness.Evaluation``, or raises when the harness itself failed (never for a bad candidate)."""

    @abstractmethod
    def stats(self) -> ExecutorStats: ...

    @abstractmethod
    def close(self, cancel: bool = False) -> None:
        """Stop the workers; with ``cancel``, pending work is dropped (its futures are cancelled)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close(cancel=exc[0] is not None)


class LocalExecutor(Executor):
    def __init__(self, device: str = "cpu", size: str = "small", *, gpus: int | None = None,
                 build_workers: int | None = None, settings: Any = None, problems_dir: str | Path | None = None,
                 cache_dir: str | Path | None = None, protocols: Sequence[str] | None = None,
                 memoize: bool = True, timeline_path: str | Path | None = None) -> None:
        import harness

        self.device, self.size = device, size
        self.protocols = list(protocols) if protocols else None
        self.problems_dir = problems_dir
        self.settings = settings or harness.EvalSettings()
        if gpus is None:
            gpus = _gpu_count() if device == "cuda" else 1
        self.n_workers = max(1, gpus)
        self.memoize = memoize
        kw = dict(settings=self.settings, problems_dir=problems_dir, cache_dir=cache_dir)
        self._evaluators = [
            harness.Evaluator(device, size, gpu_index=i if device == "cuda" else None, **kw)
            for i in range(self.n_workers)
        ]
        self._builder = self._evaluators[0]
        self._build_pool = ThreadPoolExecutor(max_workers=build_workers or harness.usable_cpus(),
                                              thread_name_prefix="kv-build")
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)  # a submission, a built candidate, a finished one, close
        self._ready: deque = deque()  # built candidates: (source, problem_id, future, build)
        # problem -> its submitted candidates not yet finished, in order of first submission: what judges are for
        self._waiting: dict[str, int] = {}
        self._tried: list[set[str]] = [set() for _ in range(self.n_workers)]  # problems each worker prepared ahead
        self._spans: list[dict] = []
        self._timeline_path = Path(timeline_path) if timeline_path else None
        self._t0 = time.monotonic()
        self._builds: dict[str, Future] = {}
        self._results: dict[tuple[str, str], Future] = {}
        self._stats = ExecutorStats(workers=self.n_workers, per_worker=[0] * self.n_workers)
        self._closed = self._stopping = False
        for ev in self._evaluators:  # a judge a waiting candidate needs is the last one an evaluator ends
            ev.keep_judges = self._waiting_problems
        self._threads = [threading.Thread(target=self._worker, args=(i,), name=f"kv-eval-{i}", daemon=True)
                         for i in range(self.n_workers)]
        self._threads += [threading.Thread(target=self._preparer, args=(i,), name=f"kv-prepare-{i}", daemon=True)
                          for i in range(self.n_workers)]
        for t in self._threads:
            t.start()

    # -- public -----------------------------------------------------------------------------------
    def submit(self, kernel_source: str, problem_id: str) -> Future:
        from harness.candidate.load import source_hash

        h = source_hash(kernel_source)
        with self._lock:
            if self._closed:
                raise RuntimeError("executor is closed")
            if self.memoize and (h, problem_id) in self._results:
                self._stats.reused += 1
                return self._results[(h, problem_id)]
            result: Future = Future()
            self._results[(h, problem_id)] = result
            self._waiting[problem_id] = self._waiting.get(problem_id, 0) + 1
            self._wake.notify_all()  # an idle worker may start its judge while it builds
            build = self._builds.get(h)
            if build is None:
                self._stats.queued_builds += 1
                build = self._build_pool.submit(self._build, kernel_source, problem_id)
                self._builds[h] = build
        build.add_done_callback(lambda b: self._after_build(b, kernel_source, problem_id, result))
        return result

    def stats(self) -> ExecutorStats:
        with self._lock:
            return self._stats.model_copy(deep=True)

    def timeline(self) -> list[dict]:
        """Each worker's finished spans: ``{"worker", "kind": "prepare"|"evaluate", "problem", "start_s", "end_s"}``
        in seconds since the executor started (what a throughput benchmark splits the wall time by)."""
        with self._lock:
            return [dict(s) for s in self._spans]

    def close(self, cancel: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True  # no more submissions
            dropped = list(self._ready) if cancel else []
            if cancel:
                self._ready.clear()
        for item in dropped:
            item[2].cancel()
            self._finished(item[1])
        self._build_pool.shutdown(wait=not cancel, cancel_futures=cancel)
        with self._lock:
            self._stopping = True  # every build has handed its candidate over: workers end once none is left
            self._wake.notify_all()
        if not cancel:
            for t in self._threads:
                t.join()
        for ev in self._evaluators:
            ev.close()

    # -- internals --------------------------------------------------------------------------------
    def _build(self, source: str, problem_id: str | None = None):
        with self._lock:
            self._stats.queued_builds -= 1
            self._stats.building += 1
        try:
            return self._builder.build(source, problem_id)
        finally:
            with self._lock:
                self._stats.building -= 1

    def _after_build(self, build: Future, source: str, problem_id: str, result: Future) -> None:
        if result.cancelled() or build.cancelled():
            result.cancel()
            self._finished(problem_id)
            return
        exc = build.exception()
        if exc is not None:
            result.set_exception(exc)
            self._finished(problem_id)
            return
        built = build.result()
        if not built.ok:
            # A failed build needs no GPU: record it here, through the evaluator, without queueing.
            try:
                ev = self._builder.evaluate(source, problem_id, self.protocols, build=built)
            except BaseException as e:  # noqa: BLE001
                result.set_exception(e)
            else:
                with self._lock:
                    self._stats.failed_builds += 1
                    self._stats.done += 1
                result.set_result(ev)
            self._finished(problem_id)
            return
        with self._lock:
            self._stats.queued_evals += 1
            self._ready.append((source, problem_id, result, built))
            self._wake.notify_all()

    def _waiting_problems(self) -> set[str]:
        with self._lock:
            return set(self._waiting)

    def _finished(self, problem_id: str) -> None:
        """One candidate of ``problem_id`` is done (or dropped): one fewer needs its judge."""
        with self._lock:
            n = self._waiting.get(problem_id, 0) - 1
            if n > 0:
                self._waiting[problem_id] = n
            else:
                self._waiting.pop(problem_id, None)
            self._wake.notify_all()

    def _next_evaluation(self, index: int) -> tuple | None:
        """The built candidate worker ``index`` evaluates next (called holding the lock): first one whose judge runs on
        its evaluator, else the first built; None: none is built."""
        if not self._ready:
            return None
        live = self._evaluators[index].live_judges()
        pick = next((i for i, item in enumerate(self._ready) if item[1] in live), 0)
        item = self._ready[pick]
        del self._ready[pick]
        return item

    def _next_preparation(self, index: int) -> str | None:
        """The problem whose judge worker ``index``'s preparer starts next (called holding the lock): that of the first
        built candidate, else of the first problem waiting for candidates, whose judge is neither running nor
        started before, while a judge slot is free without ending one a waiting candidate needs; None: none now."""
        evaluator = self._evaluators[index]
        live = evaluator.live_judges()
        if evaluator.settings.max_judges - sum(1 for p in live if p in self._waiting) <= 0:
            return None
        for problem_id in [item[1] for item in self._ready] + list(self._waiting):
            if problem_id not in live and problem_id not in self._tried[index]:
                self._tried[index].add(problem_id)
                return problem_id
        return None

    def _span(self, worker: int, kind: str, problem_id: str, started: float) -> None:
        """Keep a worker's finished span (called holding the lock), and append it to the timeline file, so a sweep
        stopped at a deadline keeps the spans it finished."""
        span = {"worker": worker, "kind": kind, "problem": problem_id, "start_s": round(started - self._t0, 3),
                "end_s": round(time.monotonic() - self._t0, 3)}
        self._spans.append(span)
        if self._timeline_path is not None:
            try:
                with self._timeline_path.open("a") as f:
                    f.write(json.dumps(span) + "\n")
            except OSError:  # a benchmark's figure, never a reason to fail an evaluation
                pass

    def _preparer(self, index: int) -> None:
        """Starts judges ahead on worker ``index``'s evaluator, beside its evaluations: their device work waits while
        a candidate is timed (harness.judge.gate), the rest (process start, imports, compiling) overlaps."""
        evaluator = self._evaluators[index]
        while True:
            with self._lock:
                while (problem_id := None if self._stopping else self._next_preparation(index)) is None:
                    if self._stopping:
                        return
                    self._wake.wait()
            started = time.monotonic()
            ok = evaluator.prepare(problem_id)
            with self._lock:
                self._stats.prepared += ok
                self._span(index, "prepare", problem_id, started)
                self._wake.notify_all()

    def _worker(self, index: int) -> None:
        evaluator = self._evaluators[index]
        while True:
            with self._lock:
                while (item := self._next_evaluation(index)) is None:
                    if self._stopping:
                        return
                    self._wake.wait()
            started = time.monotonic()
            source, problem_id, result, built = item
            with self._lock:
                self._stats.queued_evals -= 1
                self._stats.evaluating += 1
            if not result.set_running_or_notify_cancel():
                with self._lock:
                    self._stats.evaluating -= 1
                self._finished(problem_id)
                continue
            try:
                ev = evaluator.evaluate(source, problem_id, self.protocols, build=built)
            except BaseException as e:  # noqa: BLE001 - a harness failure belongs to this future only
                result.set_exception(e)
            else:
                result.set_result(ev)
            finally:
                with self._lock:
                    self._stats.evaluating -= 1
                    self._stats.done += 1
                    self._stats.per_worker[index] += 1
                    self._span(index, "evaluate", problem_id, started)
                self._finished(problem_id)


def _gpu_count() -> int:
    try:
        import torch

        return max(1, torch.cuda.device_count())
    except Exception:  # noqa: BLE001
        return 1
