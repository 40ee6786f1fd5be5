"""The verified timer's warm-up (harness.timing.warm_up, time_verified)."""

from __future__ import annotations

import time

from harness.device import DeviceOps
from harness.timing import Subject, VerifiedBudget, time_verified, warm_up


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
