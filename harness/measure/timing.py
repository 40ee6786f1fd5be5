"""The two timing methods.

naive:    KernelBench as published: 3 warm-ups, 100 trials on the same inputs, CUDA events on the
          current stream, no L2 flush, mean.
verified: L2 flush and persisting-L2 reset before every iteration, a short device-side hold before
          the start event (the host's launch latency stays out of the interval), a rotating pool of input sets
          (distinct pointers, fresh contents), candidate and baselines interleaved in rounds so drift
          cancels in the ratio, repetitions adapted to a target precision, median with spread. The
          candidate is also timed with a device-wide sync before the end event, to expose work left
          running on other streams.
"""

from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .device import Clock, DeviceOps
from .record import TimingStats
from .stats import summarize


def naive_samples(fn: Callable[[], object], ops: DeviceOps, warmup: int = 3, trials: int = 100,
                  after_warmup: Callable[[], object] | None = None) -> list[float]:
    """KernelBench's loop; the raw samples (the parent summarizes them). ``after_warmup`` runs between the warm-up
    and the trials (the candidate process asks the judge to start its clock there)."""
    clock = Clock(ops)
    for _ in range(warmup):
        fn()
        ops.sync()
    if after_warmup is not None:
        after_warmup()
    samples = []
    for _ in range(trials):
        ops.sync()
        ms, _ = clock.interval(fn, sync_before_end=False)
        samples.append(ms)
    return samples


def time_naive(fn: Callable[[], object], ops: DeviceOps, warmup: int = 3, trials: int = 100) -> TimingStats:
    return summarize(naive_samples(fn, ops, warmup, trials), "naive")


@dataclass
class Subject:
    """Something to time with the verified method: a callable over an input-set index, or a round timed
    elsewhere (``remote(start_set, calls, timed) -> times``: the judge's process times the baselines, where
    the candidate's code cannot slow them down)."""

    name: str
    fn: Callable[[int], object] | None = None
    samples: list[float] = field(default_factory=list)
    on_output: Callable[[int, object], None] | None = None
    remote: Callable[[int, int, bool], list[float]] | None = None
    # Whole timed iterations done by the caller from an input set on (pre-call work, the call, the output's hand-over;
    # one, or a batch the judge lets go at once), returning the times it measured: the candidate's kernel, whose
    # iterations the judge's clock encloses.
    timed: Callable[[int], list[float]] | None = None

    def call(self, idx: int) -> None:
        if self.remote is not None:
            self.remote(idx, 1, False)
        else:
            self.fn(idx)


@dataclass
class VerifiedBudget:
    min_iters: int = 20
    max_iters: int = 500
    target_rel_stderr: float = 0.002
    max_seconds_per_subject: float = 6.0
    round_size: int = 5
    warmup: int = 3
    warmup_seconds: float = 0.0
    launch_lead_us: float = 0.0


def warm_up(subjects: list[Subject], n_sets: int, ops: DeviceOps, calls: int, seconds: float) -> None:
    """``calls`` untimed calls of each subject, then rounds of all of them until ``seconds`` have
    passed: on an H200 the first 50-200 ms of work after an idle second or more ran up to 15% slow
    (benchmarks/clock_ramp.py), and the first timed rounds of a short kernel would catch that."""
    for s in subjects:
        for i in range(calls):
            s.call(i % n_sets)
    ops.sync()
    t0 = time.perf_counter()
    i = 0
    while time.perf_counter() - t0 < seconds:
        for s in subjects:
            s.call(i % n_sets)
        i += 1
        ops.sync()


def time_verified(subjects: list[Subject], n_sets: int, ops: DeviceOps, budget: VerifiedBudget) -> None:
    """Interleave subjects round by round until each is precise enough or out of budget."""
    clock = Clock(ops)
    warm_up(subjects, n_sets, ops, budget.warmup, budget.warmup_seconds)
    spent = {s.name: 0.0 for s in subjects}
    it = 0
    while True:
        active = [s for s in subjects if not _done(s, spent[s.name], budget)]
        if not active:
            break
        for s in active:
            if s.remote is not None:
                t0 = time.perf_counter()
                s.samples.extend(s.remote(it % n_sets, budget.round_size, True))
                it += budget.round_size
                spent[s.name] += time.perf_counter() - t0
                continue
            target = len(s.samples) + budget.round_size
            while len(s.samples) < target:
                # Each subject walks the sets in turn on its own count, so two consecutive calls of it never see
                # the same set (a kernel that recomputes into one reused output buffer is then told from one
                # that hands back the output it kept for that set).
                idx = len(s.samples) % n_sets
                it += 1
                t0 = time.perf_counter()
                if s.timed is not None:
                    s.samples.extend(s.timed(idx))
                    spent[s.name] += time.perf_counter() - t0
                    continue
                ms, out = verified_call(clock, ops, functools.partial(s.fn, idx), budget.launch_lead_us)
                s.samples.append(ms)
                if s.on_output is not None:
                    s.on_output(idx, out)
                del out
                spent[s.name] += time.perf_counter() - t0


def verified_call(clock: Clock, ops: DeviceOps, fn: Callable[[], object], lead_us: float) -> tuple[float, object]:
    """One timed iteration of the verified method: L2 flushed, persisting L2 reset, device idle, then the
    interval (behind the launch hold where the device has one)."""
    ops.flush_l2()
    ops.reset_persisting_l2()
    ops.sync()
    return clock.interval(fn, sync_before_end=False, lead_us=lead_us)


def _done(s: Subject, spent: float, b: VerifiedBudget) -> bool:
    n = len(s.samples)
    if n < b.min_iters:
        return False
    if n >= b.max_iters or spent >= b.max_seconds_per_subject:
        return True
    mean = statistics.fmean(s.samples)
    stderr = statistics.stdev(s.samples) / n**0.5
    return mean > 0 and stderr / mean <= b.target_rel_stderr


def event_vs_synced(fn: Callable[[], object], ops: DeviceOps, iters: int = 10) -> tuple[float, float, float]:
    """Median time with events on the current stream only, and with a device-wide sync before the end
    event, alternating so both see the same conditions (catalog T1, side-stream work); and what the sync alone adds,
    the same two ways around no call at all: the host's turnaround from the sync to the end event, which an honest
    one-stream kernel pays too, of the size of side_stream_excess's absolute threshold."""
    clock = Clock(ops)
    plain, synced, idle_plain, idle_synced = [], [], [], []
    for i in range(2 * iters):
        with_sync = i % 2 == 1
        for call, (p, s) in ((fn, (plain, synced)), (lambda: None, (idle_plain, idle_synced))):
            ops.flush_l2()
            ops.sync()
            ms, out = clock.interval(call, sync_before_end=with_sync)
            del out
            ops.sync()
            (s if with_sync else p).append(ms)
    cost = max(0.0, statistics.median(idle_synced) - statistics.median(idle_plain))
    return statistics.median(plain), statistics.median(synced), cost


def side_stream_excess(plain: float, synced: float, sync_cost: float) -> bool:
    """Whether a device-wide sync found work the caller's stream did not wait for: it lengthened the call by more than
    half and by more than 20 us, beyond what the sync alone costs."""
    extra = synced - plain - sync_cost
    return extra > 0.5 * plain and extra > 0.02


