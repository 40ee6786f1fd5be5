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
the driver) never wait on either. The first submission for a problem also queues the computation of
its reference outputs (``Evaluator.prepare``), which an idle worker does while the candidate still
compiles; with several workers, the one that takes it is ready and the others compute theirs on first
use, as before. The same (source, problem) is measured once per executor: a
re-submitted kernel gets the first submission's future ("measure once, score many").

A Ray executor (issue 9) implements the same three methods: ``submit``, ``stats`` and ``close``.
"""

from __future__ import annotations

import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel

_PREPARE = object()  # queue item tag: compute a problem's reference outputs ahead of its candidates


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
                 memoize: bool = True) -> None:
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
        self._queue: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self._builds: dict[str, Future] = {}
        self._results: dict[tuple[str, str], Future] = {}
        self._prepared: set[str] = set()
        self._stats = ExecutorStats(workers=self.n_workers, per_worker=[0] * self.n_workers)
        self._closed = False
        self._threads = [threading.Thread(target=self._worker, args=(i,), name=f"kv-eval-{i}", daemon=True)
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
            if problem_id not in self._prepared:
                self._prepared.add(problem_id)
                self._queue.put((_PREPARE, problem_id))
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

    def close(self, cancel: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if cancel:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None and item[0] is not _PREPARE:
                    item[2].cancel()
        self._build_pool.shutdown(wait=not cancel, cancel_futures=cancel)
        for _ in self._threads:
            self._queue.put(None)
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
        if result.cancelled():
            return
        if build.cancelled():
            result.cancel()
            return
        exc = build.exception()
        if exc is not None:
            result.set_exception(exc)
            return
        built = build.result()
        if not built.ok:
            # A failed build needs no GPU: record it here, through the evaluator, without queueing.
            try:
                ev = self._builder.evaluate(source, problem_id, self.protocols, build=built)
            except BaseException as e:  # noqa: BLE001
                result.set_exception(e)
                return
            with self._lock:
                self._stats.failed_builds += 1
                self._stats.done += 1
            result.set_result(ev)
            return
        with self._lock:
            self._stats.queued_evals += 1
        self._queue.put((source, problem_id, result, built))

    def _worker(self, index: int) -> None:
        evaluator = self._evaluators[index]
        while True:
            item = self._queue.get()
            if item is None:
                return
            if item[0] is _PREPARE:
                if evaluator.prepare(item[1]):
                    with self._lock:
                        self._stats.prepared += 1
                continue
            source, problem_id, result, built = item
            with self._lock:
                self._stats.queued_evals -= 1
                self._stats.evaluating += 1
            if not result.set_running_or_notify_cancel():
                with self._lock:
                    self._stats.evaluating -= 1
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


def _gpu_count() -> int:
    try:
        import torch

        return max(1, torch.cuda.device_count())
    except Exception:  # noqa: BLE001
        return 1
