"""Which timed calls the judge checks, and what its clock trusts of them.

* A call held back: while no pick at random has fallen on a timed call, the judge keeps one unpicked output (each
  equally likely) and checks it as timing ends, so a kernel wrong on every timed call is caught even when the picks
  miss all of them (hacks/cpu/approximate_when_timed_relu once passed a CI run so).
* The releases that could pull the judge's low quantile of intervals down are checked whole, and the quantile is
  taken over checked releases alone: a few calls fast because wrong, under a forged clock, once set it
  (hacks/cpu/few_fast_wrong_calls_set_the_floor_relu).
"""

from __future__ import annotations

import random
import statistics
from types import SimpleNamespace

from harness.judge.judge import Session, timing_floor


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


def test_the_floor_is_read_over_checked_releases_alone():
    """A clock forged at a thirtieth over 2 ms of honest work, and every fifth release 0.2 ms because its output is
    zeros: read over all releases, those set the low quantile and the forged reports are credited; read over the
    checked ones (the first, a random fifth), the honest releases set it."""
    n, cal = 20, [0.4] * 20
    intervals = [0.2 + 0.4 if k % 5 == 4 else 2.0 + 0.4 + 0.01 * k for k in range(n)]
    reports = [2.0 / 30] * n
    over_all = timing_floor(intervals, reports, cal, cuda=False)
    assert over_all["credited_ms"] < 0.3 and over_all["ok"]  # the hole: 8x credited, the witness content
    checked = [k in (0, 3, 8, 11) for k in range(n)]  # no wrong call among them (else the kernel is caught)
    w = timing_floor(intervals, reports, cal, cuda=False, checked=checked)
    assert w["checked_releases"] == 4
    assert w["credited_ms"] > 1.75 and not w["ok"]  # its real time less the credit allowance, and the forgery seen
    # an honest kernel's credit is what it was: its reports explain its intervals, checked or not
    honest = [2.0 + 0.01 * k for k in range(n)]
    plain = timing_floor([h + 0.4 for h in honest], honest, cal, cuda=False)
    assert timing_floor([h + 0.4 for h in honest], honest, cal, cuda=False, checked=checked)["credited_ms"] \
        == plain["credited_ms"] == statistics.median(honest)


def test_a_kernel_rightly_fast_on_a_minority_of_draws_does_not_set_the_floor_for_all():
    """Zeros where every input is negative is a ReLU's right answer, and fast: under a forged clock, those releases
    (checked, and right) once set the floor of all. Each distribution's own low quantile, and a typical release's of
    those, is the floor: the forged reports are seen."""
    classes = ["1", "3", "0.01", "-1", "1 shift", "1 large"] * 4
    intervals = [0.2 + 0.4 if c == "-1" else 2.0 + 0.4 + 0.01 * k for k, c in enumerate(classes)]
    reports = [i / 30 for i in intervals]
    checked = [True] * len(classes)
    cal = [0.4] * len(classes)
    mixed = timing_floor(intervals, reports, cal, cuda=False, checked=checked)
    assert mixed["credited_ms"] < 0.3 and mixed["ok"]  # the floor set by the negative draws: forged, credited
    w = timing_floor(intervals, reports, cal, cuda=False, checked=checked, classes=classes)
    assert w["credited_ms"] > 1.7 and not w["ok"]
    # the same kernel with its clock honest: credited its median report, as before
    honest = [i - 0.4 for i in intervals]
    h = timing_floor(intervals, honest, cal, cuda=False, checked=checked, classes=classes)
    assert h["ok"] and h["credited_ms"] == statistics.median(honest)
