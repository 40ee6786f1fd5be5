"""The Ray executor: one long-lived evaluation actor per GPU, on a Ray cluster (issue 9).

    with RayExecutor("cuda", "full", address="auto", gpu_type="H200") as ex:
        evaluation = ex.submit(kernel_source, "level1/19_ReLU").result()

It has the same interface as ``LocalExecutor`` (``submit``, ``stats``, ``close``); ``ray`` is an
optional dependency (``pip install -e '.[ray]'``) imported only when a ``RayExecutor`` is created.

Design:

* **Workers.** One actor per GPU. Each holds a ``harness.Evaluator``, so the reference outputs of a
  problem are computed once per worker and builds are cached on the worker's node. An actor asks for
  ``num_gpus=1`` (Ray then sets ``CUDA_VISIBLE_DEVICES`` for it, and the harness's children inherit
  it), ``num_cpus=cpus_per_worker`` and one unit of the custom resource ``gpu_type:<TYPE>`` that each
  node declares (``ray start --resources '{"gpu_type:H200": 8}'``). On ``device="cpu"`` actors ask for
  CPUs only (plus the GPU-type resource when a type is given). ``fake_gpus=True`` asks for the
  GPU-type resource and nothing else, and evaluates on the CPU: that is how the tests build a
  heterogeneous "GPU" cluster on a CPU-only host.
* **Routing.** Jobs of this executor run on workers of ``gpu_type`` and of the types in
  ``allow_gpu_types``; ``submit(..., gpu_type="H100")`` pins one job to one type. A speedup is only
  comparable with a baseline measured on the same GPU type, so nothing else is ever used.
* **Builds run inside the worker that evaluates**, in a second actor thread, while the worker's
  previous job is being timed (the driver keeps up to ``prefetch`` jobs on each worker; one is timed
  at a time). Builds are cached by source hash in the node's ``TORCH_EXTENSIONS_DIR``; a build on a
  separate CPU node would have to ship the compiled extension to the GPU node (or need a shared
  filesystem), and short-lived Ray tasks churn worker processes. This keeps the local executor's
  overlap of compile and timing without either.
* **Faults.** A bad kernel runs in the harness's child process, so a CUDA fault, hang or segfault in
  it ends that child, not the worker. When a worker itself dies (killed, out of memory, node lost, or
  stopped by the driver's ``job_timeout_s`` watchdog), Ray restarts it (``max_restarts``) and the
  driver resubmits its jobs, preferring other workers, up to ``max_job_retries`` times. Ray's own task
  retries are off, so the driver always knows where a job is.
* **One writer.** Results come back as return values (``Evaluation.model_dump(mode="json")``) and
  resolve the job's future exactly once; workers never write results anywhere, the driver's run
  store does.

``address``: ``None`` connects to the Ray instance this process already started, else starts a
local one; ``"auto"`` or ``"HOST:PORT"`` joins a cluster started by ``ray start`` (which is what
Ray's Slurm and Kubernetes tooling starts). See docs/cluster.md.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import socket
import sys
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .executor import Executor, ExecutorStats

log = logging.getLogger(__name__)

RESOURCE_PREFIX = "gpu_type:"


def gpu_type_resource(gpu_type: str) -> str:
    """The custom Ray resource a node declares once per GPU of that type, e.g. ``gpu_type:H200``."""
    return RESOURCE_PREFIX + gpu_type


def gpu_type_of(device_name: str) -> str:
    """A short GPU type from a CUDA device name: 'NVIDIA H100 80GB HBM3' -> 'H100', 'NVIDIA L40S' -> 'L40S'."""
    words = [w for w in re.split(r"[\s_]+", device_name.strip()) if w]
    words = [w for w in words if w.lower() not in ("nvidia", "tesla", "geforce", "quadro")] or ["unknown"]
    if words[0].upper() == "RTX" and len(words) > 1:
        return "RTX" + words[1]
    return words[0].split("-")[0]


class RayExecutorStats(ExecutorStats):
    retries: int = 0  # jobs resubmitted after their worker was lost
    worker_losses: int = 0  # worker deaths seen (each is restarted by Ray up to max_restarts)


class WorkerLost(RuntimeError):
    """A job's worker died ``max_job_retries + 1`` times in a row; the harness never finished it."""


class _EvalWorker:
    """The actor body (wrapped with ``ray.remote`` when an executor starts): one per GPU."""

    def __init__(self, label: str, gpu_type: str | None, device: str, size: str, settings: dict,
                 problems_dir: str | None, cache_dir: str | None) -> None:
        import ray

        import harness

        self.label, self.gpu_type, self.device = label, gpu_type, device
        gpu_index = None
        if device == "cuda" and not os.environ.get("CUDA_VISIBLE_DEVICES"):
            ids = ray.get_gpu_ids()  # Ray was told not to set CUDA_VISIBLE_DEVICES: pin the children ourselves
            gpu_index = int(ids[0]) if ids and str(ids[0]).isdigit() else None
        self.evaluator = harness.Evaluator(device, size, settings=harness.EvalSettings.model_validate(settings),
                                           problems_dir=problems_dir, cache_dir=cache_dir, gpu_index=gpu_index)
        self._timing = threading.Lock()  # one kernel timed at a time; builds overlap with it
        ctx = ray.get_runtime_context()
        self._info = dict(label=label, gpu_type=gpu_type, node_id=ctx.get_node_id(), host=socket.gethostname(),
                          pid=os.getpid(), cuda_visible_devices=os.environ.get("CUDA_VISIBLE_DEVICES"),
                          restarted=bool(ctx.was_current_actor_reconstructed))

    def info(self) -> dict:
        return dict(self._info)

    def run(self, source: str, problem_id: str, protocols: list[str] | None) -> dict:
        started = time.time()
        # The problem's reference outputs are computed on the GPU while the candidate compiles on the
        # CPU (under the timing lock: never while another kernel is timed), not after.
        prep = threading.Thread(target=self._prepare, args=(problem_id,), daemon=True)
        prep.start()
        built = self.evaluator.build(source, problem_id)
        prep.join()
        if built.ok:
            with self._timing:
                ev = self.evaluator.evaluate(source, problem_id, protocols, build=built)
        else:  # a failed build needs no GPU time
            ev = self.evaluator.evaluate(source, problem_id, protocols, build=built)
        return {"evaluation": ev.model_dump(mode="json"), "worker": self.info(), "seconds": time.time() - started}

    def _prepare(self, problem_id: str) -> None:
        with self._timing:
            self.evaluator.prepare(problem_id)


@dataclass(eq=False)
class _Job:
    source: str
    problem_id: str
    types: tuple[str | None, ...]
    future: Future
    key: tuple
    attempts: int = 0
    lost_on: set[str] = field(default_factory=set)


@dataclass(eq=False)
class _Slot:
    """The driver's view of one worker actor."""

    label: str
    gpu_type: str | None
    handle: Any
    ready: bool = False  # answered its last ping (created, or restarted after a loss)
    dead: bool = False  # out of restarts: never used again
    ping: Any = None
    info: dict = field(default_factory=dict)
    inflight: dict = field(default_factory=dict)  # ObjectRef -> _Job, in dispatch order
    busy_since: float = 0.0


class RayExecutor(Executor):
    def __init__(self, device: str = "cuda", size: str = "full", *, address: str | None = None,
                 gpu_type: str | None = None, allow_gpu_types: Sequence[str] | None = None,
                 gpus: int | None = None, fake_gpus: bool = False, cpus_per_worker: float | None = None,
                 prefetch: int = 2, settings: Any = None, problems_dir: str | Path | None = None,
                 cache_dir: str | Path | None = None, protocols: Sequence[str] | None = None,
                 memoize: bool = True, max_restarts: int = 4, max_job_retries: int = 2,
                 job_timeout_s: float | None = None, runtime_env: dict | None = None,
                 init_kwargs: dict | None = None) -> None:
        """``gpus``: at most this many workers per GPU type (default: as many as the cluster declares; on
        the CPU without a type, exactly ``gpus``, default 1). ``job_timeout_s``: a worker busy with one
        job longer than this is killed and restarted (the harness's own timeouts normally end a hung
        kernel first). ``runtime_env``: extra Ray runtime environment for the workers; ``init_kwargs``:
        for ``ray.init`` when this starts Ray."""
        try:
            import ray
        except ImportError as e:
            raise ImportError("the Ray executor needs ray: pip install -e '.[ray]'") from e
        import harness

        self._ray = ray
        self.device, self.size = device, size
        self.fake_gpus = fake_gpus
        self.protocols = list(protocols) if protocols else None
        self.settings = settings or harness.EvalSettings()
        self.memoize, self.prefetch = memoize, max(1, prefetch)
        self.max_job_retries, self.job_timeout_s = max_job_retries, job_timeout_s
        types: list[str | None] = []
        for t in [gpu_type, *(allow_gpu_types or [])]:
            if t not in types:
                types.append(t)
        if None in types and len(types) > 1:
            raise ValueError("allow_gpu_types needs gpu_type")
        self.gpu_types = types
        self.eval_device = "cpu" if fake_gpus else device

        self._owns_ray = False
        if not ray.is_initialized():
            kw = dict(include_dashboard=False, log_to_driver=False)
            if address is None and gpu_type is not None:
                # A local instance declares its own GPUs (or, on the CPU, `gpus` slots) under the type asked for.
                n = _local_gpu_count() if device == "cuda" and not fake_gpus else (gpus or 1)
                kw["resources"] = {gpu_type_resource(gpu_type): n}
            kw.update(init_kwargs or {})
            ray.init(address=address, **kw)
            self._owns_ray = True
        elif address is not None:
            log.info("Ray is already initialised in this process; ignoring address %s", address)

        total = ray.cluster_resources()
        counts: dict[str | None, int] = {}
        for t in types:
            if t is not None:
                declared: int | None = int(total.get(gpu_type_resource(t), 0))
            elif device == "cuda" or fake_gpus:
                declared = int(total.get("GPU", 0))
            else:
                declared = None  # CPU workers: `gpus` of them, default 1
            counts[t] = (gpus or 1) if declared is None else min(gpus, declared) if gpus else declared
        if not any(counts.values()):
            what = " or ".join(repr(gpu_type_resource(t)) for t in types if t) or "GPUs"
            self._shutdown_ray()
            raise ValueError(f"the Ray cluster declares no {what}; start its GPU nodes with "
                             f"ray start ... --resources '{{\"{gpu_type_resource(gpu_type or 'H200')}\": 8}}'")

        opts_env = dict(runtime_env or {})
        root = _source_checkout()
        if root is not None:  # running from a checkout rather than an install: let local workers import it
            env_vars = dict(opts_env.get("env_vars") or {})
            env_vars.setdefault("PYTHONPATH", root + (os.pathsep + env_vars["PYTHONPATH"] if "PYTHONPATH" in env_vars else ""))
            opts_env["env_vars"] = env_vars
        if cpus_per_worker is None:
            cpus_per_worker = 0 if fake_gpus else max(1, getattr(self.settings, "cpu_threads", 1) or 1)
        actor_cls = ray.remote(_EvalWorker)
        settings_json = self.settings.model_dump(mode="json")
        self._slots: list[_Slot] = []
        for t in types:
            for i in range(counts[t]):
                label = f"{t or self.eval_device}#{i}"
                resources = {gpu_type_resource(t): 1} if t else {}
                num_gpus = 0 if fake_gpus or device != "cuda" else 1
                if fake_gpus and t is None:
                    num_gpus = 1  # fake GPUs declared as ray.init(num_gpus=N)
                handle = actor_cls.options(
                    num_cpus=cpus_per_worker, num_gpus=num_gpus, resources=resources,
                    max_restarts=max_restarts, max_task_retries=0, max_concurrency=self.prefetch + 1,
                    runtime_env=opts_env or None,
                ).remote(label, t, self.eval_device, size, settings_json,
                         str(problems_dir) if problems_dir else None, str(cache_dir) if cache_dir else None)
                slot = _Slot(label, t, handle)
                slot.ping = handle.info.remote()
                self._slots.append(slot)

        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._pending: collections.deque[_Job] = collections.deque()
        self._results: dict[tuple, Future] = {}
        self._stats = RayExecutorStats(workers=0)
        self._closing = self._closed = False
        self._started = time.monotonic()
        self._warned_pending = False
        #: one entry per finished or lost attempt: where each job ran (the driver's record of placement).
        self.history: list[dict] = []
        self._thread = threading.Thread(target=self._loop, name="kv-ray-dispatch", daemon=True)
        self._thread.start()

    # -- public -----------------------------------------------------------------------------------
    def submit(self, kernel_source: str, problem_id: str, *, gpu_type: str | None = None) -> Future:
        """As ``Executor.submit``; ``gpu_type`` restricts this job to one of the executor's GPU types."""
        from harness.candidate.load import source_hash

        if gpu_type is not None and gpu_type not in self.gpu_types:
            raise ValueError(f"gpu_type {gpu_type!r} is not one of this executor's types {self.gpu_types}")
        types = (gpu_type,) if gpu_type is not None else tuple(self.gpu_types)
        key = (source_hash(kernel_source), problem_id, types)
        with self._lock:
            if self._closing:
                raise RuntimeError("executor is closed")
            if self.memoize and key in self._results:
                self._stats.reused += 1
                return self._results[key]
            fut: Future = Future()
            self._results[key] = fut
            self._pending.append(_Job(kernel_source, problem_id, types, fut, key))
            self._stats.queued_evals += 1
        self._wake.set()
        return fut

    def stats(self) -> RayExecutorStats:
        with self._lock:
            s = self._stats.model_copy()
            s.workers = sum(1 for x in self._slots if x.ready and not x.dead)
            return s

    def workers(self) -> list[dict]:
        """Each worker: label, GPU type, state, its last ``info()`` (node, host, pid, CUDA_VISIBLE_DEVICES)
        and the problems it is running now."""
        with self._lock:
            return [dict(label=s.label, gpu_type=s.gpu_type, ready=s.ready, dead=s.dead, info=dict(s.info),
                         running=[j.problem_id for j in s.inflight.values()]) for s in self._slots]

    def actor(self, label: str) -> Any:
        """The Ray actor handle of a worker (for operators and tests: ``ray.kill(ex.actor("H200#0"))``)."""
        return next(s.handle for s in self._slots if s.label == label)

    def close(self, cancel: bool = False) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = self._closing = True
            if cancel:
                for job in self._pending:
                    job.future.cancel()
                self._pending.clear()
                for s in self._slots:
                    for job in s.inflight.values():
                        job.future.cancel()
                    s.inflight.clear()
        self._wake.set()
        self._thread.join()
        for s in self._slots:
            try:
                self._ray.kill(s.handle, no_restart=True)
            except Exception:  # noqa: BLE001
                pass
        self._shutdown_ray()

    # -- the dispatcher (one thread in the driver) ---------------------------------------------------
    def _loop(self) -> None:
        try:
            self._dispatch()
        except BaseException as e:  # noqa: BLE001 - Ray went away: fail every open future rather than hang
            log.error("Ray dispatcher stopped: %s: %s", type(e).__name__, e)
            with self._lock:
                self._closing = True  # later submits fail at once
                jobs = list(self._pending) + [j for s in self._slots for j in s.inflight.values()]
                self._pending.clear()
                for s in self._slots:
                    s.inflight.clear()
            for job in jobs:
                _set(job.future, exc=RuntimeError(f"Ray executor stopped: {type(e).__name__}: {e}"))

    def _dispatch(self) -> None:
        ray = self._ray
        while True:
            with self._lock:
                if self._closing and not self._pending and not any(s.inflight for s in self._slots):
                    return
                self._assign()
                self._watchdog()
                refs = [r for s in self._slots for r in s.inflight]
                refs += [s.ping for s in self._slots if s.ping is not None]
            if not refs:
                self._wake.wait(0.2)
                self._wake.clear()
                continue
            try:
                done, _ = ray.wait(refs, num_returns=1, timeout=0.2)
            except Exception:  # noqa: BLE001 - Ray is shutting down under us
                if self._closing:
                    return
                raise
            for ref in done:
                self._collect(ref)

    def _assign(self) -> None:
        """Hand pending jobs to ready workers of an allowed type, least loaded first (caller holds the lock)."""
        if not self._pending:
            return
        if not any(s.ready for s in self._slots) and not self._warned_pending \
                and time.monotonic() - self._started > 120:
            self._warned_pending = True
            log.warning("no Ray worker has started after 120 s; does the cluster have free %s?",
                        ", ".join(gpu_type_resource(t) if t else "GPUs/CPUs" for t in self.gpu_types))
        keep: collections.deque[_Job] = collections.deque()
        while self._pending:
            job = self._pending.popleft()
            if job.future.cancelled():
                self._stats.queued_evals -= 1
                continue
            eligible = [s for s in self._slots if not s.dead and s.gpu_type in job.types]
            if not eligible:
                self._stats.queued_evals -= 1
                self._stats.done += 1
                job.future.set_exception(WorkerLost(f"no live Ray worker of type {'/'.join(map(str, job.types))} "
                                                    f"for {job.problem_id}"))
                continue
            free = [s for s in eligible if s.ready and len(s.inflight) < self.prefetch]
            fresh = [s for s in free if s.label not in job.lost_on]
            if not fresh and any(s.label not in job.lost_on for s in eligible):
                free = []  # wait for a worker this job has not died on yet
            chosen = min(fresh or free, key=lambda s: len(s.inflight), default=None)
            if chosen is None:
                keep.append(job)
                continue
            ref = chosen.handle.run.remote(job.source, job.problem_id, self.protocols)
            if not chosen.inflight:
                chosen.busy_since = time.monotonic()
            chosen.inflight[ref] = job
            self._stats.queued_evals -= 1
            self._stats.evaluating += 1
        self._pending = keep

    def _watchdog(self) -> None:
        if self.job_timeout_s is None:
            return
        now = time.monotonic()
        for s in self._slots:
            if s.inflight and s.ready and now - s.busy_since > self.job_timeout_s:
                log.warning("Ray worker %s has run one job for over %.0f s; restarting it", s.label, self.job_timeout_s)
                s.ready = False  # its jobs come back as lost and are resubmitted
                try:
                    self._ray.kill(s.handle, no_restart=False)
                except Exception:  # noqa: BLE001
                    pass

    def _collect(self, ref: Any) -> None:
        import harness

        ray = self._ray
        lost = (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.ObjectLostError,
                getattr(ray.exceptions, "NodeDiedError", ray.exceptions.RayActorError))
        with self._lock:
            slot = next((s for s in self._slots if s.ping is not None and s.ping == ref), None)
            if slot is not None:  # a worker came up (or failed to)
                slot.ping = None
                try:
                    slot.info = ray.get(ref)
                    slot.ready = True
                except ray.exceptions.ActorUnavailableError:
                    slot.ping = slot.handle.info.remote()
                except Exception as e:  # noqa: BLE001 - out of restarts, or its constructor failed
                    log.warning("Ray worker %s is gone: %s", slot.label, e)
                    slot.dead, slot.ready = True, False
                    slot.info["error"] = f"{type(e).__name__}: {e}"
                self._wake.set()
                return
            slot = next((s for s in self._slots if ref in s.inflight), None)
            if slot is None:
                return
            job = slot.inflight.pop(ref)
            slot.busy_since = time.monotonic()
            self._stats.evaluating -= 1
        job.attempts += 1
        entry = dict(candidate_hash=job.key[0], problem_id=job.problem_id, worker=slot.label,
                     gpu_type=slot.gpu_type, attempt=job.attempts)
        try:
            out = ray.get(ref)
            evaluation = harness.Evaluation.model_validate(out["evaluation"])
        except lost as e:
            with self._lock:
                if slot.ping is None and not slot.dead:  # the first of this death's lost jobs
                    self._stats.worker_losses += 1
                    slot.ready = False
                    slot.ping = slot.handle.info.remote()  # answered once Ray has restarted it
                job.lost_on.add(slot.label)
                self.history.append({**entry, "outcome": "worker_lost", "error": f"{type(e).__name__}"})
                if job.future.cancelled():
                    return
                if job.attempts <= self.max_job_retries:
                    self._stats.retries += 1
                    self._stats.queued_evals += 1
                    self._pending.appendleft(job)
                    self._wake.set()
                    return
                self._stats.done += 1
            _set(job.future, exc=WorkerLost(f"{job.problem_id}: worker lost {job.attempts} times "
                                            f"(last on {slot.label}: {type(e).__name__})"))
            return
        except Exception as e:  # noqa: BLE001 - the harness itself failed on the worker
            cause = e.as_instanceof_cause() if isinstance(e, ray.exceptions.RayTaskError) else e
            with self._lock:
                self._stats.done += 1
                self.history.append({**entry, "outcome": "error", "error": f"{type(e).__name__}"})
            _set(job.future, exc=cause)
            return
        with self._lock:
            self._stats.done += 1
            slot.info = out["worker"]
            self.history.append({**entry, "outcome": "ok", "pid": out["worker"]["pid"],
                                 "node_id": out["worker"]["node_id"],
                                 "device_name": evaluation.record.environment.device_name
                                 if evaluation.record.environment else ""})
        _set(job.future, result=evaluation)

    def _shutdown_ray(self) -> None:
        if self._owns_ray:
            self._owns_ray = False
            try:
                self._ray.shutdown()
            except Exception:  # noqa: BLE001
                pass


def _set(fut: Future, *, result: Any = None, exc: BaseException | None = None) -> None:
    if fut.done():
        return
    try:
        if exc is not None:
            fut.set_exception(exc)
        else:
            fut.set_result(result)
    except Exception:  # noqa: BLE001 - cancelled meanwhile
        pass


def _local_gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:  # noqa: BLE001
        return 0


def _source_checkout() -> str | None:
    """The repository root when ``harness`` is imported from a source tree rather than site-packages."""
    import harness

    root = Path(harness.__file__).resolve().parent.parent
    if any(part in ("site-packages", "dist-packages") for part in root.parts):
        return None
    return str(root)


def node_resources(gpu_type: str | None = None, names: Iterable[str] | None = None) -> dict[str, int]:
    """The custom resources a GPU node should declare to ``ray start --resources``: one per local GPU."""
    if names is None:
        import torch

        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    out: dict[str, int] = {}
    for name in names:
        key = gpu_type_resource(gpu_type or gpu_type_of(name))
        out[key] = out.get(key, 0) + 1
    return out


def main(argv: list[str] | None = None) -> int:
    """``python -m agents.ray_executor [--gpu-type T]``: print this node's ``--resources`` JSON."""
    import argparse
    import json

    ap = argparse.ArgumentParser(prog="python -m agents.ray_executor", description=main.__doc__)
    ap.add_argument("--gpu-type", help="override the type read from the device name")
    args = ap.parse_args(argv)
    res = node_resources(args.gpu_type)
    if not res:
        print("no CUDA GPU visible on this node", file=sys.stderr)
        return 1
    print(json.dumps(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
