"""Pre-started candidate processes: the next worker imports torch while the current one runs, and
nothing about isolation or verdicts changes."""

import os
from pathlib import Path

import harness
from harness import EvalSettings

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "harness" / "fixtures"
HONEST = (FIX / "legit" / "cpu" / "inplace_on_own_buffer_relu.py").read_text()
IDENTITY = (FIX / "hacks" / "cpu" / "identity_relu.py").read_text()
FORGE = (FIX / "hacks" / "cpu" / "forge_result_channel_relu.py").read_text()
QUICK = dict(naive_timing_trials=5, verified_min_iters=3, verified_max_iters=6, verified_seconds_per_subject=0.2)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_spare_workers_run_candidates_with_the_same_verdicts(tmp_path):
    settings = EvalSettings(prespawn_worker=True, **QUICK)
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=tmp_path) as ev:
        first = ev.evaluate(HONEST, "level1/19_ReLU")
        hack = ev.evaluate(IDENTITY, "level1/19_ReLU")
        forged = ev.evaluate(FORGE, "level1/19_ReLU")
        honest_again = ev.evaluate(HONEST + "\n# again\n", "level1/19_ReLU")
        spare_pids = [sp.child.proc.pid for sp in ev._workers.spares]
        assert len(spare_pids) == settings.spare_workers == 2 and all(_alive(p) for p in spare_pids)
    assert not first.record.worker_prespawned  # nothing was started before the first
    assert hack.record.worker_prespawned and forged.record.worker_prespawned and honest_again.record.worker_prespawned
    assert first.results["verified"].verdict == honest_again.results["verified"].verdict == "correct"
    assert hack.results["verified"].verdict == "hack"
    assert forged.results["verified"].verdict == "hack"  # the job file and nonce are as hidden as before
    assert not any(_alive(p) for p in spare_pids)  # closing the evaluator ends the waiting spares


def test_a_spare_that_died_is_replaced_by_a_fresh_process(tmp_path):
    settings = EvalSettings(prespawn_worker=True, **QUICK)
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=tmp_path) as ev:
        ev.evaluate(HONEST, "level1/19_ReLU")
        for sp in ev._workers.spares:
            sp.child.proc.kill()
            sp.child.proc.wait()
        r = ev.evaluate(HONEST + "\n# after the kill\n", "level1/19_ReLU")
    # every dead spare skipped, none taken; unless the witness failed the first measurement under load, when the second
    # takes a spare refilled during the first (a CI run of 2026-12-07)
    assert not r.record.worker_prespawned or r.record.remeasured
    assert r.record.status == "ok" and r.results["verified"].verdict == "correct"


def test_spare_is_off_by_default_on_a_small_host(tmp_path, monkeypatch):
    import harness.measure.device

    monkeypatch.setattr(harness.measure.device, "usable_cpus", lambda: 2)
    with harness.Evaluator("cpu", "small", settings=EvalSettings(**QUICK), cache_dir=tmp_path) as ev:
        a = ev.evaluate(HONEST, "level1/19_ReLU")
        b = ev.evaluate(HONEST + "\n# b\n", "level1/19_ReLU")
        assert ev._workers.spares == []
    assert not a.record.worker_prespawned and not b.record.worker_prespawned


def test_candidate_time_limit_counts_from_the_job_not_from_the_spare_start(tmp_path):
    import time

    def sleeping(seconds: float) -> str:
        return HONEST.replace("class ModelNew", f"import time as _t\n_t.sleep({seconds})\n\n\nclass ModelNew", 1)

    # Limit 15 s; the spare waits 16 s before its job. Margins are wide: CI runs tests two at a time.
    # No adversarial trials: this is about when the clock starts, and the run must fit 14 s on a loaded host.
    settings = EvalSettings(prespawn_worker=True, eval_timeout_s=14, build_timeout_s=1, verified_adversarial_trials=0,
                            **QUICK)
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=tmp_path) as ev:
        ev.evaluate(HONEST, "level1/19_ReLU")
        time.sleep(16)  # the waiting spare is now older than the limit
        within = ev.evaluate(sleeping(1), "level1/19_ReLU")  # ~1 s + the run: well inside 15 s from the job
        too_long = ev.evaluate(sleeping(60), "level1/19_ReLU")
    assert within.record.worker_prespawned and within.record.status == "ok", within.record.error
    assert too_long.record.worker_prespawned and too_long.record.status == "timeout"


def test_prespawn_is_on_by_default_only_where_there_are_cores_to_spare(monkeypatch):
    import harness.measure.device

    monkeypatch.setattr(harness.measure.device, "usable_cpus", lambda: 16)
    assert EvalSettings().prespawns()  # a 16-core GPU host: measured to cut the median overhead 5.4 -> 1.6-1.9 s
    assert not EvalSettings(prespawn_worker=False).prespawns()
    monkeypatch.setattr(harness.measure.device, "usable_cpus", lambda: 2)
    assert not EvalSettings().prespawns()  # 2 cores: the spare's imports cost the measured process what they save
    assert EvalSettings(prespawn_worker=True).prespawns()
