"""The judge: the process that decides, which no candidate can reach.

One judge per (Evaluator, problem), started by the parent, serves that problem's candidates one after
another. It alone holds the fresh seeds, the parameter perturbation and the expected outputs, in its
own memory (bounded; recomputed beyond the budget), never in a file. For each candidate it:

* draws every input set (correctness trials, timing sets) and hands it over in shared memory,
  so the candidate process never sees a seed and cannot precompute what it will be timed on;
* maps the reference's parameters onto the candidate's and perturbs both sides (``harness.params``);
* computes every error statistic, the NaN/zero/dtype checks and the tolerance decisions of timed
  outputs from the bytes the candidate handed back, against expected outputs it computed itself;
* picks, after each timed call has returned, whether that call's (already captured) output is
  checked, so a candidate cannot tell checked calls from unchecked ones;
* witnesses the timing with its own clock: the time between consecutive timed calls, which no
  rewrite inside the candidate's interpreter can shorten (``timing_witness``).

Run as ``python -m harness.judge CONTROL_FD`` (the parent's end of a socketpair).
"""

from __future__ import annotations

import contextlib
import copy
import ctypes
import math
import os
import random
import statistics
import sys
import time
from typing import Any

import torch

from problems.domains import Domain
from problems.module import exec_source, forward_arg_names

from . import messages as M
from .compare import error_stats
from .device import Clock, DeviceOps
from .device_buffer import DeviceBufferError, emulated
from .guard_registry import outcome
from .inputs import (
    KERNELBENCH_SEED,
    VerifiedParameters,
    construction_seed,
    forward_seed,
    make_inputs,
    verified_parameters,
)
from .job import JobSpec
from .params import ParamMapping, map_parameters
from .precision import casts, torch_dtype
from .protocols import VERIFIED
from .record import ErrorStats, GuardOutcome, TrialResult
from .reference import build_model, environment, module_to, pytorch_default_flags, tf32, trial_plan
from .shm import DTYPES, DeviceSharedBuffer, SharedBuffer, args_nbytes, pack_args
from .tf32_truncation import TruncatedTF32
from .timing import naive_samples, verified_call
from .wire import Conn, WireError

PR_SET_DUMPABLE = 4
# timing_witness on a GPU: time between timed calls the reported kernel time and the timer's own work leave
# unexplained, tolerated per call: an absolute part and a share of the gap. This bounds what a rewrite of the
# candidate-side timer can hide: 1.5 ms + 25% of each call (benchmarks/results/h200_hack_suite_judge.md).
WITNESS_SLACK_MS = 1.5
WITNESS_SLACK_REL = 0.25
# On a CPU host the timer's own work (cache flush) dominates small kernels and two busy cores stretch every
# message round trip: only forgeries hiding more than this, or twice the timer's own work (it grows with the
# load as the candidate process's bookkeeping does), per call are findings there.
CPU_WITNESS_SLACK_MS = 25.0
# Baselines the judge times, by request name -> record field.
BASELINE_SUBJECTS = {"naive": "naive_baseline_fp32", "tf32": "verified_baseline_tf32", "fp32": "verified_baseline_fp32",
                     "compile": "verified_baseline_compile"}


def placement(nbytes: int, *, cuda: bool, device_cached: int, host_cached: int, device_budget: int,
              host_budget: int) -> str | None:
    """Where an expected output is kept for the problem's later candidates: 'device' (compared in place), 'host'
    (one copy to the device per comparison, no recomputation) or None (recomputed when needed). Either way the use
    at hand compares against the copy just computed, where it was computed: an output that will not be kept on the
    host never makes the trip there and back."""
    if cuda and device_cached + nbytes <= device_budget:
        return "device"
    if host_cached + nbytes <= host_budget:
        return "host"
    return None


def check_probability(fraction: float, min_iters: int) -> float:
    """Chance that a timed call's output is checked: at least a few checks expected even when the timer stops at its
    minimum number of calls, and at most half, so the timing witness has unchecked calls to read (witness_gaps)."""
    return min(0.5, max(fraction, 4.0 / max(1, min_iters))) if fraction < 0.5 else fraction


def witness_gaps(called_at: list[tuple[float, float, bool]]) -> list[float]:
    """Seconds from the judge's reply to one timed call to the next call's message, ``called_at`` holding (arrived,
    released, checked) per call. Only the gaps after unchecked calls where there are three: the work of a check (the
    judge's comparison of GBs at full size, the candidate side's hand-over) can run on past the judge's reply and into
    the gap after it. (A harness.eval --quick run on the H200, checking 80% of the calls, read 39 ms
    between the timed calls of an honest kernel with a 1 GB output where 1.6 ms was accounted for; which side's work
    after a check that was is not yet measured, and either way it follows the checked calls.)"""
    gaps = [(b[0] - a[1], a[2]) for a, b in zip(called_at, called_at[1:], strict=False)]
    unchecked = [g for g, checked in gaps if not checked]
    return unchecked if len(unchecked) >= 3 else [g for g, _ in gaps]


def witness_verdict(gaps_s: list[float], reported_ms: list[float], overhead_ms: float, *,
                    cuda: bool) -> tuple[bool, float, float, float]:
    """Whether the reported kernel times explain the judge's clock between timed calls.

    Returns (ok, gap_ms, reported median ms, unaccounted ms). A low quantile of the gaps, not the median: a
    loaded host delays single wake-ups (each timed call is a few messages between two processes) by whole
    scheduler slices, and such delays only ever add time; a forged timer shortens every call's report."""
    gap_ms = sorted(gaps_s)[len(gaps_s) // 10] * 1e3
    med = statistics.median(reported_ms)
    unaccounted = gap_ms - med - overhead_ms
    if cuda:
        ok = unaccounted <= WITNESS_SLACK_MS + WITNESS_SLACK_REL * gap_ms
    else:  # a loaded CPU host: only a gross forgery (the judge saw 5x the reported time) is a finding
        ok = unaccounted <= max(CPU_WITNESS_SLACK_MS, 2 * overhead_ms) or med * 5 >= gap_ms - overhead_ms
    return ok, gap_ms, med, unaccounted


def _not_dumpable() -> None:
    """No ptrace and no /proc/<pid>/mem for processes without CAP_SYS_PTRACE (defence in depth: the
    candidate's pid namespace does not show this process at all)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)


def _run(model, inputs, seed):
    torch.manual_seed(forward_seed(seed))
    with torch.no_grad():
        return model(*inputs)


def _to_double(inputs):
    return [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]


def _nonfinite(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t).all())


class Expected:
    """An expected output and what the tolerance decision needs beside it. ``dtype``: the dtype the candidate must
    return (default: fp32 for an exact float64 value, else the output's own); ``nonfinite``: the reference gave
    NaN/Inf here (the trial is dropped)."""

    def __init__(self, out: Any, tf32_stats: ErrorStats | None = None, dtype: torch.dtype | None = None,
                 nonfinite: bool = False, truncated_stats: ErrorStats | None = None) -> None:
        self.out = out
        self.nonfinite = nonfinite or _nonfinite(out)
        self.tf32_max_abs = tf32_stats.max_abs if tf32_stats else None
        self.tf32_truncated_max_abs = truncated_stats.max_abs if truncated_stats else None
        self.tf32_min_tolerance = tf32_stats.min_tolerance if tf32_stats else None
        # PyTorch's own result rounds to all zeros here too (a sigmoid far below zero, a GELU of large negatives):
        # an all-zero output is then what the output dtype gives, not a kernel that skipped the work.
        self.tf32_all_zero = bool(tf32_stats and tf32_stats.all_zero_vs_nonzero)
        self.dtype = dtype or (None if not isinstance(out, torch.Tensor) else
                               torch.float32 if out.dtype == torch.float64 else out.dtype)

    @property
    def nbytes(self) -> int:
        return self.out.numel() * self.out.element_size() if isinstance(self.out, torch.Tensor) else 0

    def on(self, device: str) -> Expected:
        """The same expectation with its output copied to ``device``."""
        moved = copy.copy(self)
        moved.out = self.out.to(device) if isinstance(self.out, torch.Tensor) else self.out
        return moved


def _dtype_note(st: ErrorStats) -> str:
    return "" if st.dtype_ok else f"; output dtype {st.out_dtype} is not the run's"


def _why_failed(st: ErrorStats, exp: Expected) -> str:
    """What ``verified_pass`` refused, in words: the error alone read as a pass where the output was all zeros."""
    if not st.shape_ok:
        return f"output shape {st.out_shape}, not the reference's"
    why = f"max abs error {st.max_abs:.3g}, needs {st.min_tolerance:.3g}"
    if st.nonfinite:
        why += "; output contains NaN/Inf"
    if st.all_zero_vs_nonzero and not exp.tf32_all_zero:
        why += "; output is all zeros while the reference is not"
    return why + _dtype_note(st)


def verified_pass(st: ErrorStats, exp: Expected, precision: str = "fp32") -> bool:
    """The verified protocol's per-output decision, for outputs that are not stored trials (timed calls): its
    tolerance for the run's dtype and its TF32-error factor (the protocol re-decides from the stored stats)."""
    if not st.shape_ok or st.nonfinite or (st.all_zero_vs_nonzero and not exp.tf32_all_zero) or not st.dtype_ok:
        return False
    if st.min_tolerance <= VERIFIED.tolerance_for(precision, st.out_dtype):
        return True
    allowed = VERIFIED.tf32_allowance(exp.tf32_max_abs, exp.tf32_truncated_max_abs)
    return allowed is not None and math.isfinite(st.max_abs) and st.max_abs <= allowed


class Judge:
    def __init__(self, job: JobSpec) -> None:
        self.job, self.device, self.settings = job, job.device, job.settings
        self.ops = DeviceOps(self.device)
        self.mod = exec_source(job.problem_source, f"<{job.problem_id}>")
        self.names = forward_arg_names(self.mod)
        self.domains = {k: Domain(v) for k, v in job.domains.items()}
        self.naive_plan, self.verified_plan, self.skipped_distributions = trial_plan(job, self.mod, self.names)
        self.timing_seeds = job.fresh_seeds[-self.settings.timing_input_sets:]
        # A bf16/fp16 run: inputs, parameters and the reference Model in that dtype (None: fp32, nothing cast).
        self.precision = self.settings.precision
        self.dtype = torch_dtype(self.precision)
        self.model = self._cast(build_model(self.mod, self.device))
        self._values: VerifiedParameters | None = None
        self._models: dict[str, Any] = {}
        self._cache: dict[tuple, Expected] = {}
        self._cached = {"device": 0, "host": 0}
        # Host memory is shared with the candidate process (and its memory cap) and with the Evaluator's other
        # judges: all of them together keep at most a fifth of it. The device is the candidate's: a judge keeps
        # little there (an idle judge's cache is device memory no candidate can use).
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        self._host_budget = min(self.settings.expected_bytes_budget, ram // (5 * self.settings.max_judges))
        self._device_budget = self.settings.expected_device_bytes_budget if self.ops.is_cuda else 0
        self.reference_precision = "float64"
        self.rng = random.SystemRandom()
        self._overhead_ms: float | None = None
        self.compiled: Any = None
        self.compile_seconds: float | None = None
        self.compile_error: str | None = None
        wanted = self.settings.compile_baseline
        if wanted or (wanted is None and self.ops.is_cuda):
            self._compile_baseline()

    def _compile_baseline(self) -> None:
        """torch.compile(Model), default mode, compiled and warmed up now: before any candidate of this problem
        runs, so its compile time falls on no candidate's clock. A model it cannot compile gets a reason."""
        t0 = time.perf_counter()
        try:
            compiled = torch.compile(self.model)  # a wrapper: the eager model itself is untouched
            inputs = self.inputs(self.naive_plan[0].seed if self.naive_plan else 0, 1.0)
            with torch.no_grad(), pytorch_default_flags():
                for _ in range(2):
                    compiled(*inputs)
                self.ops.sync()
            self.compiled = compiled
            self.compile_seconds = time.perf_counter() - t0
        except Exception as exc:  # noqa: BLE001 - any failure to compile is that baseline's absence, with a reason
            self.compile_error = f"torch.compile failed: {type(exc).__name__}: {str(exc).strip()[:400]}"
        self.release()

    # -- reference side ---------------------------------------------------------------------------------
    def _cast(self, x: Any) -> Any:
        """A model or tensor in the run's dtype (floating ones only; fp32 runs: unchanged)."""
        if self.dtype is None:
            return x
        if isinstance(x, torch.Tensor):
            return x.to(self.dtype) if x.is_floating_point() else x
        return module_to(x, self.dtype) if isinstance(x, torch.nn.Module) else x  # Python scalars stay as they are

    def reference_params(self) -> list[tuple[str, tuple[int, ...]]]:
        return [(n, tuple(p.shape)) for n, p in self.model.named_parameters() if p.is_floating_point()]

    def values(self) -> VerifiedParameters:
        if self._values is None:
            self._values = verified_parameters(lambda s: build_model(self.mod, "cpu", s), self.job.perturb_seed)
        return self._values

    def _model(self, variant: str, exact: bool | str):
        """variant: 'default' (KernelBench's seed), 'reseeded' (built under the verified construction seed, as the
        candidate's verified instance is), 'perturbed' (reseeded, then the verified parameter values loaded) or
        'perturbed_kb' (KernelBench's seed, then those values: a candidate whose second build failed); exact:
        float64 copy (or fp32 without TF32 when a layer has no float64 kernel); 'float32': a bf16/fp16 run's fallback
        when a layer has no float64 kernel. Copies of a bf16/fp16 run are upcast from the rounded parameters, so
        they compute exactly on what the kernel holds."""
        key = (variant, exact)
        if key in self._models:
            return self._models[key]
        seed = construction_seed(self.job.perturb_seed) if variant in ("reseeded", "perturbed") else KERNELBENCH_SEED
        m = self._cast(build_model(self.mod, self.device, seed)) if (variant != "default" or exact) else self.model
        if variant in ("perturbed", "perturbed_kb"):
            params = dict(m.named_parameters())
            with torch.no_grad():
                for name, v in self.values().values.items():
                    params[name].copy_(v.to(device=params[name].device, dtype=params[name].dtype))
        if exact == "float32":
            m = module_to(m, torch.float32)
        elif exact:
            try:
                m = module_to(m, torch.float64)
            except Exception:  # noqa: BLE001
                m = None
        self._models[key] = m
        return m

    def inputs(self, seed: int, scale: float, distribution: str | None = None) -> list[Any]:
        drawn = make_inputs(self.mod.get_inputs, self.names, seed, scale, self.domains, self.device, distribution)
        # Drawn (and scaled, or made adversarial) in the problem's dtype, then rounded to the run's.
        return drawn if self.dtype is None else [self._cast(x) for x in drawn]

    def expected(self, key: tuple, seed: int, scale: float, variant: str, naive: bool,
                 distribution: str | None = None) -> Expected:
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        inputs = self.inputs(seed, scale, distribution)
        if naive:
            with tf32(None):
                exp = Expected(_run(self._model("default", False), inputs, seed))
        else:
            # The TF32 run first, so the fp32 inputs can go before their float64 copy exists: at full size
            # each is several GB on the device the candidate process shares.
            ops = TruncatedTF32(truncate=False)  # counts the matmuls and convolutions TF32 changes
            with tf32(True), ops:
                fast = _run(self._model(variant, False), inputs, seed)
            # A bf16/fp16 run: the candidate returns what the reference Model returns in that dtype, and a trial
            # whose reference overflows that dtype (fp16 beyond 65504) is dropped like any non-finite reference.
            low = casts(self.precision) and isinstance(fast, torch.Tensor)
            want, fast_nonfinite = (fast.dtype, _nonfinite(fast)) if low else (None, False)
            exact, trunc_stats = None, None
            m64 = self._model(variant, True)
            if m64 is not None and self.reference_precision == "float64":
                doubled = _to_double(inputs)
                inputs = None  # drawn again from the seed in the rare case float64 fails
                try:
                    with tf32(False):
                        exact = _run(m64, doubled, seed)
                except Exception:  # noqa: BLE001 - some layers have no float64 kernel
                    exact = None
                if exact is not None and ops.hits and not low and isinstance(exact, torch.Tensor):
                    trunc_stats = self._truncated_stats(m64, doubled, seed, exact)
                del doubled
            if exact is None:
                self.reference_precision = "float32-no-tf32"
                if inputs is None:
                    inputs = self.inputs(seed, scale, distribution)
                with tf32(False):
                    if casts(self.precision):  # upcast to fp32 from the rounded values, not the low dtype itself
                        exact = _run(self._model(variant, "float32"), [x.float() if isinstance(x, torch.Tensor)
                                     and x.is_floating_point() else x for x in inputs], seed)
                    else:
                        exact = _run(self._model(variant, False), inputs, seed)
            stats = error_stats(fast, exact) if not _nonfinite(exact) and isinstance(exact, torch.Tensor) else None
            del fast
            if isinstance(exact, torch.Tensor) and exact.dtype == torch.float64 and exact.numel() * 8 > 256 * 2**20:
                exact = exact.float()  # large outputs: an fp32 copy of the exact value bounds memory
            exp = Expected(exact, stats, dtype=want, nonfinite=fast_nonfinite, truncated_stats=trunc_stats)
        del inputs
        where = placement(exp.nbytes, cuda=self.ops.is_cuda, device_cached=self._cached["device"],
                          host_cached=self._cached["host"], device_budget=self._device_budget,
                          host_budget=self._host_budget)
        if where is not None:
            # a host-kept copy is compared chunk by chunk on the device when a later candidate needs it
            self._cache[key] = exp.on("cpu") if where == "host" and self.ops.is_cuda else exp
            self._cached[where] += exp.nbytes
        self.release()
        return exp

    def _truncated_stats(self, m64, doubled, seed: int, exact: torch.Tensor) -> ErrorStats | None:
        """The error of the float64 reference with every matmul/convolution operand truncated to TF32 (what a
        truncating tensor-core kernel computes: ``harness.tf32_truncation``), against ``exact``."""
        try:
            with tf32(False), TruncatedTF32():
                trunc = _run(m64, doubled, seed)
        except Exception:  # noqa: BLE001 - no truncation allowance then, only PyTorch's own TF32 error
            return None
        return error_stats(trunc, exact) if isinstance(trunc, torch.Tensor) and not _nonfinite(trunc) else None

    def release(self) -> None:
        """Give freed device memory back: at full size a float64 reference of one trial holds tens of GB that
        the candidate process needs next (the caching allocator would keep it reserved here)."""
        if self.ops.is_cuda:
            torch.cuda.empty_cache()

    def loop_overhead_ms(self, out_shape: torch.Size, out_dtype: torch.dtype) -> float:
        """What one verified timing iteration costs besides the kernel: L2 flush, persisting-L2 reset, sync,
        the launch hold, the events, and the device-side capture of the output, measured here with the
        same operations on the same device."""
        # On a CPU host the load changes from one candidate to the next: measured again each time, as close
        # to the candidate's timing as possible. A GPU's is stable: measured once.
        if self._overhead_ms is not None and self.ops.is_cuda:
            return self._overhead_ms
        clock = Clock(self.ops)
        dtype = out_dtype if out_dtype != torch.float64 else torch.float32
        out = torch.zeros(out_shape, dtype=dtype, device=self.device)
        slot = torch.empty_like(out)
        samples = []
        lead = self.settings.verified_launch_lead_us if self.ops.can_hold else 0.0
        for _ in range(12):
            t0 = time.perf_counter()
            self.ops.flush_l2()
            self.ops.reset_persisting_l2()
            self.ops.sync()
            clock.interval(lambda: None, sync_before_end=False, lead_us=lead)
            slot.copy_(out)
            self.ops.sync()
            samples.append((time.perf_counter() - t0) * 1e3)
        del slot, out
        self.release()
        self._overhead_ms = statistics.median(samples[2:])
        return self._overhead_ms

    # -- one candidate ----------------------------------------------------------------------------------
    def serve(self, conn: Conn) -> dict:
        return Session(self, conn).run()


class Session:
    """The judge's side of one candidate's evaluation: a strict sequence of requests."""

    def __init__(self, judge: Judge, conn: Conn) -> None:
        self.j, self.conn = judge, conn
        self.buf = self._new_buffer()
        self.naive_trials: list[TrialResult] = []
        self.verified_trials: list[TrialResult] = []
        self.guards: list[GuardOutcome] = []
        self.mapping: ParamMapping | None = None
        self.variant = "perturbed"
        self.output_dtype: str | None = None
        self.timing_keys: list[tuple] = []
        self.timed_checked = 0
        self.timed_failures: list[str] = []
        # (arrival of a timed call's report, when the judge let it go on): the time between letting one call
        # go and hearing of the next is the candidate process's alone
        self.called_at: list[tuple[float, float, bool]] = []  # (arrived, released, checked) per timed call
        self.protocol_error: str | None = None
        self.timing_started: float | None = None
        self.reported_kernel_ms: list[float] = []
        # What the witness's overhead measurement copies per call: the timed output's shape and dtype.
        self.out_like: tuple[torch.Size, torch.dtype] = (torch.Size([0]), torch.float32)
        # The baselines are timed here, on the judge's own copies of the timing sets: code in the candidate's
        # process (a global forward hook, a flag, a patched op) cannot slow them down to flatter a kernel.
        self.timing_sets: list[list[Any]] = []
        self.baseline_ms: dict[str, list[float]] = {k: [] for k in (*BASELINE_SUBJECTS.values(), "naive_baseline_compile")}
        # Where this process's time went (record.phase_seconds, judge_*): what a slow evaluation spent on
        # references, on handing tensors over, on waiting for the candidate, on comparing, on the baselines.
        self.spent: dict[str, float] = {}

    @contextlib.contextmanager
    def _clock(self, what: str):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.spent[what] = self.spent.get(what, 0.0) + time.perf_counter() - t0

    def _new_buffer(self) -> SharedBuffer:
        s, cuda = self.j.settings, self.j.ops.is_cuda
        if s.device_handover and (cuda or emulated()):
            with contextlib.suppress(DeviceBufferError):  # the driver refused: host memory, and the hello says so
                return DeviceSharedBuffer.create()
        return SharedBuffer.create(pin=s.pin_shared_memory and cuda)

    def _send(self, kind: str, payload: dict | None = None, fds: list[int] | None = None) -> None:
        """Every reply carries the device memory this process holds right then: the candidate process counts
        device-level memory outside its allocator, and the judge's share (expected outputs, references, the
        baselines' buffers) moves between calls; it must not be counted as the kernel's."""
        if self.j.ops.is_cuda:  # a device hand-over buffer is the judge's too, outside its allocator
            held = torch.cuda.memory_reserved() + (self.buf.size if isinstance(self.buf, DeviceSharedBuffer) else 0)
            payload = {**(payload or {}), "judge_device_bytes": held}
        if self.buf.pending_fd is not None and not fds:  # a device buffer grew: its new descriptor goes with this reply
            fds, self.buf.pending_fd = [self.buf.pending_fd], None
        self.conn.send(kind, payload, fds=fds)

    @property
    def handover(self) -> str:
        """'device', 'host', or 'host-fallback' (device hand-over asked for, refused by the driver)."""
        if isinstance(self.buf, DeviceSharedBuffer):
            return "device"
        asked = self.j.settings.device_handover and (self.j.ops.is_cuda or emulated())
        return "host-fallback" if asked else "host"

    # Each request kind may come once per index, in this order; anything else ends the session.
    def run(self) -> dict:
        j = self.j
        hello = {"naive": len(j.naive_plan), "verified": [t.distribution for t in j.verified_plan],
                 "construction_seed": construction_seed(j.job.perturb_seed),
                 "timing_sets": len(j.timing_seeds), "size": self.buf.size, "compile_baseline": j.compiled is not None,
                 "buffer": self.handover}
        try:
            self._send("hello", hello, fds=[self.buf.fd])
            self._loop()
        except WireError:
            pass  # the candidate process ended (or broke the protocol): judge what arrived
        except Exception as exc:  # noqa: BLE001 - a judge failure is the harness's, reported as such
            return {"harness_error": f"judge failed: {exc!r}"[:2000]}
        finally:
            self.timing_sets = []
            self.buf.close()  # GiBs at full size: the judge serves every later candidate of its problem
        return self._result()

    def _loop(self) -> None:
        j = self.j
        timeout = j.settings.eval_timeout_s + j.settings.build_timeout_s
        next_naive, next_verified = 0, 0
        while True:
            kind, p = self.conn.recv(timeout=timeout)
            self._arrived = time.perf_counter()  # before anything else: the timing witness's clock
            try:
                req = M.parse(kind, p)
                if self._handle(kind, req, next_naive, next_verified):
                    next_naive += kind == "naive_trial"
                    next_verified += kind == "verified_trial"
                    continue
            except M.ProtocolBreach as exc:
                self.protocol_error = self.protocol_error or f"unexpected request {kind!r} {str(p)[:120]} ({exc})"
                return
            if kind == "finish":
                self._send("ok")
            else:  # a request out of its turn
                self.protocol_error = f"unexpected request {kind!r} {str(p)[:120]}"
            return

    def _handle(self, kind: str, req: M.Request, next_naive: int, next_verified: int) -> bool:
        """Serve one request that came in its turn; False: out of order (or 'finish', which ends the session)."""
        j = self.j
        if kind == "naive_trial" and req.index == next_naive < len(j.naive_plan) and next_verified == 0:
            spec = j.naive_plan[next_naive]
            with self._clock("expected"):
                exp = j.expected(("naive", next_naive), spec.seed, spec.scale, "default", naive=True)
            tr = TrialResult(distribution=spec.distribution, seed=spec.seed, params=spec.params,
                             reference_nonfinite=exp.nonfinite)
            self.naive_trials.append(tr)
            self._trial(spec.seed, spec.scale, exp, tr)
        elif kind == "params" and self.mapping is None and next_verified == 0:
            self._params(req.params, req.built_under)
        elif kind == "verified_trial" and req.index == next_verified < len(j.verified_plan):
            if self.mapping is None:
                # a candidate that never said what it holds holds nothing: the reference alone is perturbed
                self._params([], construction_seed(j.job.perturb_seed))
            spec = j.verified_plan[next_verified]
            with self._clock("expected"):
                exp = j.expected(("verified", next_verified, self.variant), spec.seed, spec.scale, self.variant,
                                 naive=False, distribution=spec.distribution)
            tr = TrialResult(distribution=spec.distribution, seed=spec.seed,
                             params="perturbed" if self.variant.startswith("perturbed") else self.variant,
                             tf32_baseline_max_abs=exp.tf32_max_abs, tf32_baseline_min_tolerance=exp.tf32_min_tolerance,
                             tf32_truncated_max_abs=exp.tf32_truncated_max_abs,
                             tf32_baseline_all_zero=exp.tf32_all_zero,
                             reference_nonfinite=exp.nonfinite)
            self.verified_trials.append(tr)
            self._trial(spec.seed, spec.scale, exp, tr, spec.distribution)
        elif kind == "timing_inputs" and self.timing_started is None and next_verified:
            with self._clock("timing_setup"):
                self._timing_inputs()
        elif kind == "called" and self.timing_started is not None:
            self._called(req)
        elif kind == "baseline" and self.timing_started is not None and self.timing_sets:
            with self._clock("baselines"):
                self._baseline(req)
        elif kind == "guard_output" and self.timing_started is not None:
            self._guard_output(req)
        elif kind == "timing_done" and self.timing_started is not None:
            self.timing_sets = []
            self.j.release()
            self._witness()
            self._send("ok")
        else:
            return False
        return True

    # -- helpers --------------------------------------------------------------------------------------
    def _out_slot(self, in_bytes: int, exp: Expected) -> tuple[int, int]:
        """Where the candidate writes its output: after the inputs, room for the expected shape in any dtype."""
        n = exp.out.numel() if isinstance(exp.out, torch.Tensor) else 0
        cap = n * 8 if n * 8 <= 2**30 else exp.nbytes
        self.buf.ensure(in_bytes + cap)
        return in_bytes, cap

    def _receive_output(self, offset: int, cap: int, exp: Expected) -> tuple[ErrorStats | None, str | None]:
        """Read the candidate's 'output' message: (stats, exception text)."""
        with self._clock("waiting"):
            kind, meta = self.conn.recv(timeout=self.j.settings.eval_timeout_s)
        with self._clock("compare"):
            return self._judge_output(kind, meta, offset, cap, exp)

    def _judge_output(self, kind: str, meta: Any, offset: int, cap: int,
                      exp: Expected) -> tuple[ErrorStats | None, str | None]:
        if kind != "output":
            self.protocol_error = f"sent {kind!r} {str(meta)[:120]} where its output was due"
            raise WireError(self.protocol_error)
        try:
            sent = M.parse(kind, meta)
        except M.ProtocolBreach as exc:
            self.protocol_error = f"sent a malformed output ({exc})"
            raise
        if sent.type == "exception":
            return None, sent.text[-4000:]
        if sent.type != "tensor":
            return error_stats(object(), exp.out) if isinstance(exp.out, torch.Tensor) else None, None
        shape = list(sent.shape)
        dtype = str(sent.dtype)
        if dtype not in DTYPES:
            raise WireError(f"unknown dtype {dtype!r}")
        nbytes = (torch.Size(shape).numel()) * torch.empty((), dtype=DTYPES[dtype]).element_size()
        if not isinstance(exp.out, torch.Tensor):
            return None, None
        if nbytes > cap or list(exp.out.shape) != shape:
            out = torch.empty(shape, dtype=DTYPES[dtype], device="meta")  # judged on shape alone
        else:
            out = self.buf.read({"offset": offset, "shape": shape, "dtype": dtype}, self.j.device)
        st = error_stats(out, exp.out)
        if exp.out.is_floating_point() and out.device.type != "meta":
            st.dtype_ok = out.dtype == exp.dtype  # the run's nominal dtype (fp32 for an fp32 run's exact value)
        if self.output_dtype is None:
            self.output_dtype = dtype
        return st, None

    def _trial(self, seed: int, scale: float, exp: Expected, tr: TrialResult, distribution: str | None = None) -> None:
        with self._clock("handover"):
            inputs = self.j.inputs(seed, scale, distribution)
            in_bytes = args_nbytes(inputs)
            off, cap = self._out_slot(in_bytes, exp)
            descs = pack_args(self.buf, inputs, grow=False)
            del inputs
            self.j.release()
        like = {"numel": exp.out.numel(), "dtype": str(exp.out.dtype).removeprefix("torch.")} \
            if isinstance(exp.out, torch.Tensor) else {}
        self._send("inputs", {"args": descs, "size": self.buf.size, "out_offset": off, "out_capacity": cap,
                                  "expected_like": like, "forward_seed": forward_seed(seed)})
        try:
            tr.error, tr.exception = self._receive_output(off, cap, exp)
        except WireError:
            tr.exception = "no output reached the judge (the candidate process ended or broke the protocol)"
            raise
        self._send("ok")

    def _params(self, params: list[tuple[str, list[int]]], built_under: int | None = None) -> None:
        cand = [(name, tuple(shape)) for name, shape in params]
        self.mapping = map_parameters(self.j.reference_params(), cand)
        rebuilt = built_under == construction_seed(self.j.job.perturb_seed)
        if rebuilt:
            # No safe mapping: the models as the verified seed draws them, on both sides, with nothing loaded.
            self.variant = "reseeded" if self.mapping.skipped else "perturbed"
        else:  # its instance holds KernelBench's draw (a second build failed): loaded into that, as before
            self.variant = "default" if self.mapping.skipped else "perturbed_kb"
        # A candidate built under the construction seed holds its own draw of the random parameters and the problem's
        # constants, and whatever it derived from them when built (cuda-l1-h100 level2/71 folds the problem's divisor
        # into its conv weight, 2/87 two subtrahends into its bias): loading the reference's values over that would
        # undo the folding. Only the perturbed constants (ones, zeros) are loaded. An instance of KernelBench's draw
        # (a second build failed) gets every value.
        verified = None if self.mapping.skipped else self.j.values()  # two builds of the model: only when used
        sent = {} if verified is None else {
            c: verified.values[r] for c, r in self.mapping.pairs.items() if not (rebuilt and r in verified.built)}
        self.mapping.loaded = list(sent)
        names = list(sent)
        descs = pack_args(self.buf, [sent[n] for n in names], grow=True)
        self._send("params", {"mapping": self.mapping.to_json(), "values": dict(zip(names, descs, strict=True)),
                                  "size": self.buf.size})

    def _timing_inputs(self) -> None:
        j = self.j
        for i, seed in enumerate(j.timing_seeds):
            self.timing_keys.append((("timing", i, self.variant), seed))
        # Every expected output now, before the candidate process holds its timing sets and outputs: at full
        # size a float64 reference needs tens of GB of the device the two processes share. Beyond the
        # memory budget they are recomputed at the checked calls instead.
        first = self._expected_timing(0)
        if isinstance(first.out, torch.Tensor):
            self.out_like = (first.out.shape, first.dtype)
        if self.timing_keys[0][0] in j._cache:
            for i in range(1, len(self.timing_keys)):
                self._expected_timing(i)
        # Kept for the baselines, which the judge times on the same values the kernel gets.
        self.timing_sets = [j.inputs(seed, 1.0) for _key, seed in self.timing_keys]
        off, cap = self._out_slot(sum(args_nbytes(s) for s in self.timing_sets), first)
        descs, base = [], 0
        for s in self.timing_sets:
            descs.append(pack_args(self.buf, s, grow=False, offset=base))
            base += args_nbytes(s)
        self.j.release()
        self.out_off, self.out_cap = off, cap
        self.timing_started = time.perf_counter()
        self._send("timing_inputs", {"sets": descs, "size": self.buf.size, "out_offset": off, "out_capacity": cap})

    def _baseline(self, req: M.Baseline) -> None:
        """Time the reference here: a naive loop, or one round of the verified method (or untimed warm-up
        calls), on the input sets the kernel is timed on. Settings come from the job, not the request."""
        subject, n, start = req.subject, req.n, req.start
        j, sets = self.j, self.timing_sets
        if subject == "compile" and j.compiled is None:
            raise M.ProtocolBreach("no torch.compile baseline to time")
        model = j.compiled if subject == "compile" else j._model(self.variant, False)
        st = j.settings
        flags = tf32(True) if subject == "tf32" else pytorch_default_flags()
        samples: list[float] = []
        with torch.no_grad(), flags:
            if subject == "naive":
                if self.baseline_ms["naive_baseline_fp32"]:
                    raise M.ProtocolBreach("the naive baseline was asked for twice")
                samples = naive_samples(lambda: model(*sets[0]), j.ops, st.naive_warmup, st.naive_timing_trials)
                if j.compiled is not None:
                    self.baseline_ms["naive_baseline_compile"] = naive_samples(
                        lambda: j.compiled(*sets[0]), j.ops, st.naive_warmup, st.naive_timing_trials)
            elif not req.timed:
                for k in range(n):
                    model(*sets[(start + k) % len(sets)])
                j.ops.sync()
            else:
                clock = Clock(j.ops)
                lead = st.verified_launch_lead_us if j.ops.can_hold else 0.0
                for k in range(n):
                    idx = (start + k) % len(sets)
                    ms, out = verified_call(clock, j.ops, lambda idx=idx: model(*sets[idx]), lead)
                    del out
                    samples.append(ms)
                j.ops.sync()
        self.baseline_ms[BASELINE_SUBJECTS[subject]].extend(samples)
        self._send("baseline", {"ms": samples})

    def _expected_timing(self, idx: int) -> Expected:
        key, seed = self.timing_keys[idx]
        return self.j.expected(key, seed, 1.0, self.variant, naive=False)

    def _called(self, req: M.Called) -> None:
        arrived = self._arrived
        idx = req.set
        if idx >= len(self.timing_keys):
            raise M.ProtocolBreach("timed call on an unknown input set")
        if req.ms is not None:
            self.reported_kernel_ms.append(req.ms)
        # Decided only now, after the call returned and its output was captured: unpredictable to it.
        s = self.j.settings
        check = self.j.rng.random() < check_probability(s.timed_check_fraction, s.verified_min_iters)
        # The release time is read before the reply goes out: the candidate process may run on before this
        # process is scheduled again, and a late reading would shorten the next gap.
        released = time.perf_counter()
        self._send("check", {"check": check})
        if not check:
            self.called_at.append((arrived, released, False))
            return
        with self._clock("expected"):
            exp = self._expected_timing(idx)
        st, exc = self._receive_output(self.out_off, self.out_cap, exp)
        self.timed_checked += 1
        if exc is not None or st is None or not verified_pass(st, exp, self.j.precision):
            why = exc[-200:] if exc else (_why_failed(st, exp) if st else "no output")
            self.timed_failures.append(f"timed call on set {idx}: {why}")
        released = time.perf_counter()
        self._send("ok")
        self.called_at.append((arrived, released, True))

    def _guard_output(self, req: M.GuardOutput) -> None:
        name, idx = req.guard, req.expect_set
        if idx >= len(self.timing_keys):
            raise M.ProtocolBreach("guard output checked against an unknown input set")
        exp = self._expected_timing(idx)
        self._send("check", {"check": True})
        st, exc = self._receive_output(self.out_off, self.out_cap, exp)
        ok = exc is None and st is not None and verified_pass(st, exp, self.j.precision)
        detail = "" if ok else (
            f"inputs rewritten in place with new values, call raised: {exc[-200:]}" if exc else
            f"inputs rewritten in place with new values (behind a {req.hold_us:.0f} us hold): "
            f"{_why_failed(st, exp) if st else 'no output'} against the new answer (a stale or cached result, or work "
            f"that read the inputs before the rewrite)")
        self.guards.append(outcome(name, ok, detail=detail))
        self._send("ok")

    def _witness(self) -> None:
        """Compare the kernel times the candidate process reports with the judge's own clock."""
        reported = self.reported_kernel_ms
        gaps = witness_gaps(self.called_at)
        if len(gaps) < 3 or not reported:
            self.guards.append(outcome("timing_witness", True, applicable=False,
                                            detail="too few timed calls to witness"))
            return
        over = self.j.loop_overhead_ms(*self.out_like)
        ok, gap_ms, med, unaccounted = witness_verdict(gaps, reported, over, cuda=self.j.ops.is_cuda)
        self.witness = {"gap_ms": gap_ms, "reported_median_ms": med, "overhead_ms": over, "unaccounted_ms": unaccounted}
        self.guards.append(outcome(
            "timing_witness", ok,
            detail=(f"judge's clock: {gap_ms:.4g} ms between timed calls, of which {over:.4g} ms are the timer's own "
                    f"work; the candidate process reported {med:.4g} ms per call") if not ok else
                   f"judge's clock {gap_ms:.4g} ms per timed call, reported {med:.4g} ms + {over:.4g} ms overhead"))

    def _result(self) -> dict:
        guards = list(self.guards)
        if self.timed_checked or self.timed_failures:
            guards.append(outcome("timed_outputs_correct", not self.timed_failures,
                detail="; ".join(self.timed_failures[:4]) or
                       f"{self.timed_checked} timed call(s), picked after each returned, pass the verified tolerance"))
        if self.protocol_error:
            guards.append(outcome("judge_protocol", False, detail=self.protocol_error))
        return {
            "naive_trials": [t.model_dump(mode="json") for t in self.naive_trials],
            "verified_trials": [t.model_dump(mode="json") for t in self.verified_trials],
            "skipped_distributions": [list(x) for x in self.j.skipped_distributions],
            "guards": [g.model_dump(mode="json") for g in guards],
            "mapping": self.mapping.to_json() if self.mapping else None,
            "output_dtype": self.output_dtype,
            "reference_precision": self.j.reference_precision,
            "witness": getattr(self, "witness", None),
            # The kernel times as they reached the judge, one per timed call, the ones the witness checked:
            # the record takes these, not a second copy the candidate process could send the parent.
            "kernel_ms": self.reported_kernel_ms,
            "baseline_ms": self.baseline_ms,
            "compile": {"seconds": self.j.compile_seconds, "error": self.j.compile_error},
            "seconds": self.spent,
            "handover": self.handover,
        }


def main(control_fd: int) -> int:
    _not_dumpable()
    conn = Conn.from_fd(control_fd)
    kind, payload = conn.recv()
    if kind != "job":
        return 2
    job = JobSpec.model_validate(payload)
    torch.set_grad_enabled(False)
    if (threads := job.settings.torch_threads(job.device)) is not None:
        torch.set_num_threads(threads)
    try:
        judge = Judge(job)
    except Exception as exc:  # noqa: BLE001
        conn.send("failed", f"reference for {job.problem_id} failed: {exc!r}"[:4000])
        return 1
    conn.send("ready", {"environment": environment(job.device)})
    while True:
        try:
            kind, payload, fds = conn.recv(with_fds=True)
        except WireError:
            return 0
        if kind == "serve" and fds:
            session = Conn.from_fd(fds[0])
            try:
                result = judge.serve(session)
            finally:
                session.close()
            conn.send("result", result)
        elif kind == "close":
            return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
