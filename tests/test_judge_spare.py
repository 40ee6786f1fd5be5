"""A spare judge: started and warmed up before its problem is known, then used by the next problem's judge; and the
warm-up's compile runs outside the device gate, only its run on the device inside it."""

import os

import harness
from harness.judge.gate import DeviceGate
from harness.judge.warm import warm_up
from harness.wire.job import EvalSettings

SETTINGS = EvalSettings(spare_judge=True, compile_baseline=False, prespawn_worker=False)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_next_problems_judge_is_the_spare_started_ahead_and_none_outlives_the_evaluator(tmp_path):
    with harness.Evaluator("cpu", "small", settings=SETTINGS, cache_dir=tmp_path) as ev:
        pool = ev._judges
        assert pool.prepare("level1/19_ReLU")
        first = pool.running["level1/19_ReLU"]
        assert first.warmed is None  # no spare existed yet: started from scratch
        (spare,) = pool._spares  # started beside the first, warming up while no problem needs it
        assert spare.problem_id == "" and spare.alive()
        assert pool.prepare("level1/21_Sigmoid")
        second = pool.running["level1/21_Sigmoid"]
        assert second.child.proc.pid == spare.child.proc.pid  # the spare became this problem's judge
        assert second.warmed is not None and second.warmed["compile_error"] is None
        assert len(pool._spares) == 1 and pool._spares[0] is not spare  # and another waits in its place
        pids = [first.child.proc.pid, second.child.proc.pid, pool._spares[0].child.proc.pid]
    for pid in pids:
        assert not _alive(pid)


def test_without_a_spare_every_judge_starts_from_scratch(tmp_path):
    settings = SETTINGS.model_copy(update={"spare_judge": False})
    with harness.Evaluator("cpu", "small", settings=settings, cache_dir=tmp_path) as ev:
        assert ev._judges.prepare("level1/19_ReLU")
        assert ev._judges._spares == [] and ev._judges.running["level1/19_ReLU"].warmed is None


def test_a_dead_spare_is_replaced_not_used(tmp_path):
    with harness.Evaluator("cpu", "small", settings=SETTINGS, cache_dir=tmp_path) as ev:
        pool = ev._judges
        assert pool.prepare("level1/19_ReLU")
        (spare,) = pool._spares
        spare.child.proc.kill()
        spare.child.proc.wait()
        assert pool.prepare("level1/21_Sigmoid")  # started from scratch instead
        assert pool.running["level1/21_Sigmoid"].child.proc.pid != spare.child.proc.pid


def test_the_warm_up_compiles_outside_the_gate_and_runs_inside_it(tmp_path):
    log = tmp_path / "holds.log"
    gate = DeviceGate(str(tmp_path / "cpu0.lock"), str(log))
    out = warm_up("cpu", True, gate)
    assert out["compile_error"] is None
    holds = [line.split() for line in log.read_text().splitlines()]
    assert len(holds) >= 2 and all(what == "prepare" for _pid, what, _a, _b in holds)  # the context, then the run
    held = sum(float(b) - float(a) for _pid, _what, a, b in holds)
    # Compiling (Dynamo, Inductor, the C++ build on a CPU) took seconds without the gate; running the result took
    # a small part of that with it.
    assert out["seconds"] > 1.0 and held < 0.25 * out["seconds"]


def test_a_spare_that_dies_after_it_is_taken_costs_nothing_but_a_fresh_start(tmp_path):
    with harness.Evaluator("cpu", "small", settings=SETTINGS, cache_dir=tmp_path) as ev:
        pool = ev._judges
        assert pool.prepare("level1/19_ReLU")
        (spare,) = pool._spares
        real_take = pool._take_spare

        def take_a_dying_spare():
            taken = real_take()
            taken.child.proc.kill()  # dies between being taken and receiving its job
            taken.child.proc.wait()
            return taken

        pool._take_spare = take_a_dying_spare
        assert pool.prepare("level1/21_Sigmoid")
        judge = pool.running["level1/21_Sigmoid"]
        assert judge.alive() and judge.child.proc.pid != spare.child.proc.pid
