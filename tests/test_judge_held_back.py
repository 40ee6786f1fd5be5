"""A timed call held back: while no pick has fallen on a timed call, the judge keeps one unpicked output (each
equally likely) and checks it as timing ends, so a kernel wrong on every timed call is caught even when the
picks, random by design, miss all of them (hacks/cpu/approximate_when_timed_relu once passed a CI run so)."""

from __future__ import annotations

import random
from types import SimpleNamespace

from harness.judge.judge import Session


class _Slot:
    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def _session(seed: int) -> Session:
    s = Session.__new__(Session)  # only what holding back touches: no judge process, no candidate
    s.j = SimpleNamespace(rng=random.Random(seed))
    s.timing_keys = [(("set", k, 0), 100 + k) for k in range(4)]
    s.timing_specs = [(1.0, None)] * 4
    s.timed_checked, s.timed_failures, s.spent, s.random_picks = 0, [], {}, 0
    s._reserve, s._reserve_seen = None, 0
    s._snapshot = lambda sent, slot, offset: f"copy of {sent}"
    return s


def _calls(start: int, n: int, sealed: bool = True) -> list[tuple]:
    return [(k % 4, f"call {k}", _Slot(), sealed, 0) for k in range(start, start + n)]


def test_each_unpicked_call_is_equally_likely_to_be_held():
    held = {}
    for seed in range(3000):
        s = _session(seed)
        for batch in range(5):  # five batches of two, no pick on any
            s._hold_back(_calls(2 * batch, 2))
        held[s._reserve.sent] = held.get(s._reserve.sent, 0) + 1
    assert sorted(held) == sorted(f"call {k}" for k in range(10))
    assert all(200 < n < 400 for n in held.values()), held  # 300 expected each


def test_held_call_keeps_its_sealed_file_until_let_go():
    s = _session(1)
    calls = _calls(0, 6)
    s._hold_back(calls)
    kept = s._reserve
    assert kept.slot is not None and kept.snapshot is None and not kept.slot.closed
    assert kept.slot in [c[2] for c in calls]
    s._drop_reserve()  # as timing ends, or the session does
    assert kept.slot.closed and s._reserve is None


def test_unsealed_output_is_held_as_a_copy_made_now():
    s = _session(2)
    s._hold_back(_calls(0, 1, sealed=False))
    assert s._reserve.slot is None and s._reserve.snapshot == "copy of call 0"
    assert (s._reserve.key, s._reserve.seed) == (("set", 0, 0), 100)  # the set's key and seed as the call ran: its reference is redrawn


def test_a_pick_at_random_lets_the_held_one_go():
    s = _session(3)
    calls = _calls(0, 3)
    s._hold_back(calls)
    s.timed_checked = 2  # a release among the fastest, checked whole, does not: its checks were no pick at random
    s._hold_back(_calls(3, 2))
    assert s._reserve is not None  # still held (this one or a later unpicked call)
    slot = s._reserve.slot
    s.random_picks = 1
    s._hold_back(_calls(3, 2))
    assert s._reserve is None and slot.closed


def _floor_session(intervals: list[float], prior: list[float] | None = None) -> Session:
    s = Session.__new__(Session)
    s.calls = [(i, [0.0]) for i in intervals]
    s.batch = 1
    s.prior = None if prior is None else {"batch": 1, "intervals": prior}
    return s


def test_releases_that_set_the_low_quantile_are_checked():
    assert _floor_session([2.0])._sets_the_floor(2.0)  # the first
    # fewer than ten so far: the fastest of all, when faster than their high quantile by more than the allowance (3%)
    assert _floor_session([2.0, 2.1, 1.8])._sets_the_floor(1.8)
    assert not _floor_session([2.0, 2.01, 1.99])._sets_the_floor(1.99)  # steady: no check
    # most calls fast (and wrong) do not make the fast ones look typical: the slow tenth sets the comparison
    assert _floor_session([2.0, *[0.5] * 8, 0.45])._sets_the_floor(0.45)
    assert not _floor_session([2.0, 1.5, 1.8])._sets_the_floor(1.8)  # not the fastest
    # twenty releases: the three fastest set the tenth percentile (_quantile's index 2)
    spread = [2.0 + 0.1 * k for k in range(19)]
    assert _floor_session([*spread, 2.15])._sets_the_floor(2.15)  # two faster ones before it
    assert not _floor_session([*spread, 2.25])._sets_the_floor(2.25)
    # a fast call under a forged clock is the fastest of all when it comes: always checked
    assert _floor_session([*[2.0] * 19, 0.1])._sets_the_floor(0.1)


def test_a_second_measurement_ranks_against_both():
    first = [2.0] * 20  # the first measurement's releases, weighed with the second's
    assert not _floor_session([2.0, 2.0, 1.5], prior=[1.0] * 20)._sets_the_floor(1.5)
    assert _floor_session([2.0, 2.0, 0.4], prior=first)._sets_the_floor(0.4)
    assert not _floor_session([2.0], prior=first)._sets_the_floor(2.0)  # not the first release of the two
