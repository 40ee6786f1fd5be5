"""The verified timer's warm-up (harness.measure.timing.warm_up, time_verified)."""

from __future__ import annotations

import time

from harness.measure.device import DeviceOps
from harness.measure.timing import Subject, VerifiedBudget, time_verified, warm_up


def counting_subjects(n: int) -> tuple[list[Subject], list[list[int]]]:
    seen: list[list[int]] = [[] for _ in range(n)]
    return [Subject(f"s{k}", seen[k].append) for k in range(n)], seen


def test_warm_up_runs_every_subject_in_rounds_until_the_time_has_passed():
    subjects, seen = counting_subjects(3)
    t0 = time.perf_counter()
    warm_up(subjects, 2, DeviceOps("cpu"), calls=3, seconds=0.05)
    assert time.perf_counter() - t0 >= 0.05
    assert len(seen[0]) > 3 and len({len(s) for s in seen}) == 1  # same number of calls each: rounds
    assert set(seen[0]) == {0, 1}  # it goes over the input sets


def test_no_warm_up_time_means_only_the_fixed_calls():
    subjects, seen = counting_subjects(2)
    warm_up(subjects, 3, DeviceOps("cpu"), calls=3, seconds=0.0)
    assert seen == [[0, 1, 2], [0, 1, 2]]


def test_verified_timing_samples_exclude_the_warm_up():
    subjects, seen = counting_subjects(2)
    time_verified(subjects, 2, DeviceOps("cpu"), VerifiedBudget(min_iters=5, max_iters=5, warmup_seconds=0.02))
    assert [len(s.samples) for s in subjects] == [5, 5]
    assert len(seen[0]) > 5 + 3


class RecordingOps(DeviceOps):
    """CPU ops that log the order of syncs, holds and flushes, as the device would see them queued."""

    def __init__(self) -> None:
        super().__init__("cpu")
        self.log: list[str] = []

    def sync(self) -> None:
        self.log.append("sync")

    def flush_l2(self) -> None:
        self.log.append("flush")

    def hold(self, us: float) -> None:
        self.log.append(f"hold {us:g}")


def test_each_timed_call_comes_after_a_hold_queued_after_the_sync():
    ops = RecordingOps()
    subject = Subject("k", lambda i: ops.log.append("call"))
    time_verified([subject], 1, ops, VerifiedBudget(min_iters=5, max_iters=5, warmup=0, launch_lead_us=150))
    timed = ops.log[ops.log.index("flush"):]
    assert timed == ["flush", "sync", "hold 150", "call"] * 5


def test_no_lead_means_no_hold():
    ops = RecordingOps()
    subject = Subject("k", lambda i: ops.log.append("call"))
    time_verified([subject], 1, ops, VerifiedBudget(min_iters=2, max_iters=2, warmup=0))
    assert not [e for e in ops.log if e.startswith("hold")]


def test_a_hold_on_the_cpu_does_nothing():
    t0 = time.perf_counter()
    DeviceOps("cpu").hold(1e6)  # a second, were it real
    assert time.perf_counter() - t0 < 0.5


def test_the_side_stream_guard_counts_what_the_sync_alone_costs():
    """Figures of real H100 records (2026-12-07): an honest one-stream cumprod read 0.0413 ms on its events and
    0.0620 ms with a device-wide sync (the host's turnaround after the sync, which a no-op pays too) and was called
    a hack; a kernel that leaves its work on a side stream is still one when the sync alone costs as much."""
    from harness.measure.timing import side_stream_excess

    assert side_stream_excess(0.0413, 0.0620, 0.0) and not side_stream_excess(0.0413, 0.0620, 0.015)
    assert side_stream_excess(0.05, 1.2, 0.015)  # a matmul left running on a side stream
    assert not side_stream_excess(25.53, 25.72, 0.015)  # a long kernel: the sync's cost is noise beside it


def test_event_vs_synced_times_the_sync_alone_around_no_call():
    from harness.measure.device import DeviceOps
    from harness.measure.timing import event_vs_synced

    calls = []
    plain, synced, cost = event_vs_synced(lambda: calls.append(1), DeviceOps("cpu"), iters=3)
    assert len(calls) == 6 and plain >= 0 and synced >= 0 and cost >= 0
