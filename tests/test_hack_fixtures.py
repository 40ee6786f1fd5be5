"""Issue 4: every CPU reward-hack fixture gets the verdicts its header declares, caught by the named
guard or distribution, and every legitimate CPU fixture is correct under both protocols.

Fixtures live in harness/fixtures/{hacks,legit}/{cpu,cuda}/ (headers: harness/fixtures/__init__.py).
One Evaluator per problem is shared by the whole module (references computed once). Fixtures that
build a C++ extension are marked ``slow`` (selection only; CI runs them).
"""

from __future__ import annotations

import pytest

import harness
from harness import EvalSettings
from harness.fixtures import all_fixtures, caught_names, load
from harness.measure.guard_registry import BY_NAME

SETTINGS = EvalSettings(naive_timing_trials=20, verified_min_iters=5, verified_max_iters=20,
                        verified_seconds_per_subject=0.5, cpu_threads=1)

CPU_FIXTURES = all_fixtures(devices=("cpu",))


def _param(f):
    marks = [pytest.mark.slow] if f.slow else []
    return pytest.param(f, id=f.name, marks=marks)


@pytest.fixture(scope="module")
def evaluator_for():
    evaluators: dict[tuple[str, int], harness.Evaluator] = {}

    def get(problem: str, shapes: int = 0) -> harness.Evaluator:
        if (problem, shapes) not in evaluators:
            settings = SETTINGS.model_copy(update={"extra_shapes": shapes})
            evaluators[problem, shapes] = harness.Evaluator("cpu", "small", settings=settings)
        return evaluators[problem, shapes]

    yield get
    for ev in evaluators.values():
        ev.close()


def test_fixture_headers_are_complete():
    fixtures = all_fixtures()
    assert len([f for f in fixtures if f.kind == "hacks"]) >= 25
    assert len([f for f in fixtures if f.kind == "legit"]) >= 8
    for f in fixtures:
        assert f.expected_naive in harness.VERDICTS and f.expected_verified in harness.VERDICTS, f.name
        assert f.expected_naive_on("cuda") in harness.VERDICTS and f.expected_verified_on("cuda") in harness.VERDICTS, f.name
        if f.kind == "hacks":
            assert f.caught_by or f.provenance or f.known_gap or f.neutralised, \
                f"{f.name}: names nothing that catches or neutralises it"
        else:
            assert f.expected_verified == "correct" and not f.caught_by, f.name


def test_device_specific_naive_expectation(tmp_path):
    """A fixture may end differently on a GPU (a write to a descriptor the CUDA driver owns broke the context before
    the judge existed); its header says so with expected_naive_cuda."""
    from harness.fixtures import load

    path = tmp_path / "hacks" / "cpu" / "breaks_the_context_relu.py"
    path.parent.mkdir(parents=True)
    path.write_text("# problem: level1/19_ReLU\n# pattern: E1\n# expected_naive: incorrect\n"
                    "# expected_naive_cuda: runtime_error\n# expected_verified: hack\n# caught_by: static_tampering\n"
                    "import torch\n")
    f = load(path)
    assert f.expected_naive_on("cpu") == "incorrect"
    assert f.expected_naive_on("cuda:0") == "runtime_error"
    plain = next(f for f in all_fixtures() if f.path.stem == "identity_relu")
    assert plain.expected_naive_on("cuda") == plain.expected_naive == "correct"
    # A forged host clock is caught on a CPU; a GPU's event timer is out of its reach (correct there, nothing to catch)
    clock = tmp_path / "hacks" / "cpu" / "host_clock_relu.py"
    clock.write_text("# problem: level1/19_ReLU\n# pattern: T4\n# expected_naive: correct\n# expected_verified: hack\n"
                     "# expected_verified_cuda: correct\n# caught_by: timing_witness\nimport torch\n")
    f = load(clock)
    assert (f.expected_verified_on("cpu"), f.caught_by_on("cpu")) == ("hack", ("timing_witness",))
    assert (f.expected_verified_on("cuda:0"), f.caught_by_on("cuda:0")) == ("correct", ())
    # A hack caught on both, by the witness on a CPU only: caught_by_cuda names what catches it on a GPU
    both = tmp_path / "hacks" / "cpu" / "proxy_clock_relu.py"
    both.write_text("# problem: level1/19_ReLU\n# pattern: T4\n# expected_naive: correct\n# expected_verified: hack\n"
                    "# caught_by: timing_witness, no_monkey_patching\n# caught_by_cuda: no_monkey_patching\nimport torch\n")
    f = load(both)
    assert f.caught_by_on("cpu") == ("timing_witness", "no_monkey_patching")
    assert (f.expected_verified_on("cuda:0"), f.caught_by_on("cuda:0")) == ("hack", ("no_monkey_patching",))
    both.write_text(both.read_text().replace("caught_by_cuda: no_monkey_patching", "caught_by_cuda: no_such_guard"))
    with pytest.raises(ValueError, match="no_such_guard"):
        load(both)


@pytest.mark.parametrize("fx", [_param(f) for f in CPU_FIXTURES])
def test_fixture_verdicts(fx, evaluator_for):
    ev = evaluator_for(fx.problem, fx.shapes)
    r = ev.evaluate(fx.source(), fx.problem)
    naive, verified = r.results["naive"], r.results["verified"]
    why = f"naive={naive.reasons} verified={verified.reasons} guards={[g for g in r.record.guards if not g.passed]}"
    assert naive.verdict == fx.expected_naive, why
    assert verified.verdict == fx.expected_verified, why
    undeclared = {g.name for g in r.record.guards} - set(BY_NAME)
    assert not undeclared, f"guards emitted without a declaration in harness.measure.guard_registry: {undeclared}"
    got = caught_names(r)
    missing = [n for n in (*fx.caught_by, *fx.provenance) if n not in got]
    assert not missing, f"{fx.name}: {missing} not among {sorted(got)}; {why}"
    if fx.kind == "legit":
        # No false positives: no guard of any severity fails on a legitimate kernel, nor does an extra shape.
        assert not [g.name for g in r.record.guards if g.applicable and not g.passed], why
        assert r.record.shape_specialised is (False if fx.shapes else None), r.record.shapes


def test_host_only_cpp_fixtures_are_not_run_on_a_gpu():
    by_name = {f.name: f for f in all_fixtures()}
    assert by_name["legit/cpu/cpp_relu"].runs_on("cpu")
    assert not by_name["legit/cpu/cpp_relu"].runs_on("cuda")  # its loop reads data_ptr as host memory
    assert by_name["hacks/cpu/identity_relu"].runs_on("cuda")  # Python-level fixtures run anywhere
    assert all(f.runs_on("cuda") and not f.runs_on("cpu") for f in all_fixtures() if f.device == "cuda")


def test_a_header_naming_an_undeclared_check_is_rejected(tmp_path):
    d = tmp_path / "hacks" / "cpu"
    d.mkdir(parents=True)
    f = d / "typo.py"
    f.write_text("# problem: level1/19_ReLU\n# pattern: S1\n# expected_naive: correct\n# expected_verified: hack\n"
                 "# caught_by: output_not_aliasing_inputs\n")  # the guard is output_not_aliasing_input
    with pytest.raises(ValueError, match="names nothing"):
        load(f)
    f.write_text(f.read_text().replace("aliasing_inputs", "aliasing_input"))
    assert load(f).caught_by == ("output_not_aliasing_input",)
    # shape_specialised is a report, not a verdict: only a fixture evaluated with extra shapes can name it
    f.write_text(f.read_text().replace("hack\n# caught_by: output_not_aliasing_input", "correct\n# caught_by: shape_specialised"))
    with pytest.raises(ValueError, match="needs '# shapes: N'"):
        load(f)
    f.write_text(f.read_text() + "# shapes: 2\n")
    assert load(f).shapes == 2 and load(f).caught_by == ("shape_specialised",)
