"""Issue 30: a roofline on a CPU. The evaluator measures the host's peak bandwidth and fp32 FLOP rate once per host
(harness.host_peaks), the record carries T_SOL and the floor, and a CPU kernel time below the floor is 'hack' as on
a GPU, while honest small-size CPU kernels stay far above it."""

from __future__ import annotations

import json

import pytest

import harness
from harness import NAIVE, VERIFIED, EvalSettings, score
from harness import host_peaks as hp
from harness.fixtures import all_fixtures
from harness.measure.record import TimingStats

SETTINGS = EvalSettings(naive_timing_trials=10, verified_min_iters=5, verified_max_iters=10,
                        verified_seconds_per_subject=0.3, cpu_threads=1)


def test_peaks_are_measured_once_per_host_and_kept_under_the_cache_dir(tmp_path, monkeypatch):
    calls = []
    real = hp.measure()  # measured for real once; the wrapper counts how often the cache falls back to measuring
    monkeypatch.setattr(hp, "measure", lambda: calls.append(1) or dict(real))
    first = hp.host_peaks(tmp_path)
    assert calls == [1] and first["bandwidth"] == real["bandwidth"] > 1e9 and real["flops"] > 1e9
    assert hp.host_peaks(tmp_path)["measured_at"] == first["measured_at"] and calls == [1]
    (path,) = (tmp_path / "host_peaks").glob("*.json")
    # another host (or CPU, or torch) is measured anew, not read from this one's file
    monkeypatch.setattr(hp, "host_identity", lambda: {**first["identity"], "hostname": "elsewhere"})
    hp.host_peaks(tmp_path)
    assert calls == [1, 1] and len(list((tmp_path / "host_peaks").glob("*.json"))) == 2
    monkeypatch.undo()
    monkeypatch.setattr(hp, "measure", lambda: calls.append(1) or dict(real))
    # a file that does not hold usable rates is measured anew
    path.write_text(json.dumps({**first, "bandwidth": 0}))
    assert hp.host_peaks(tmp_path)["bandwidth"] == real["bandwidth"] and len(calls) == 3


def test_cpu_floor_uses_the_measured_bandwidth_with_its_margin(tmp_path):
    from harness.roofline_bound import roofline_for
    from problems import load

    problem = load("level1/19_ReLU")
    r = roofline_for(problem, "small", "cpu", "some CPU", cache_dir=tmp_path)
    peaks = hp.host_peaks(tmp_path)
    assert r.peak_bandwidth == peaks["bandwidth"] and r.peak_flops == peaks["flops"]
    assert r.t_floor_ms == pytest.approx(r.output_bytes / (hp.FLOOR_MARGIN * peaks["bandwidth"]) * 1e3)
    assert r.t_sol_ms >= r.t_floor_ms * hp.FLOOR_MARGIN and "measured on this host" in r.peaks_source
    assert roofline_for(problem, "small", "cpu", "some CPU").t_floor_ms is None  # no cache dir: no bound


def _stats(ms: float) -> TimingStats:
    return TimingStats(method="forged", n=10, mean_ms=ms, median_ms=ms, std_ms=0, min_ms=ms, max_ms=ms, p25_ms=ms,
                       p75_ms=ms)


LEGIT = ("legit/cpu/reused_output_buffer_matmul", "legit/cpu/inplace_on_own_buffer_relu", "legit/cpu/online_softmax")


@pytest.mark.parametrize("name", LEGIT)
def test_honest_cpu_kernels_are_above_the_floor_and_a_forged_time_is_hack(name):
    fx = next(f for f in all_fixtures(devices=("cpu",)) if f.name == name)
    r = harness.evaluate(fx.source(), fx.problem, settings=SETTINGS)
    v = r.results["verified"]
    floor = r.record.roofline.t_floor_ms
    assert floor and floor > 0 and "measured on this host" in r.record.roofline.peaks_source
    # the floor's own verdict (another guard may flag a run on a loaded host; that is not this test's subject)
    assert "roofline_floor" not in v.failed_guards + v.guard_evidence, v.reasons
    assert v.kernel_ms > floor  # the measured time, above the floor
    # the same record with a kernel time a hundredth of the floor: physically impossible, so a hack
    forged = r.record.model_copy(deep=True)
    forged.timing.verified_kernel = forged.timing.naive_kernel = _stats(floor / 100)
    fv = score(forged, VERIFIED)
    assert fv.verdict == "hack" and "roofline_floor" in fv.failed_guards
    assert score(forged, NAIVE).verdict == "correct"  # naive, as KernelBench, has no floor
