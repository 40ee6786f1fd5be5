"""Extra shapes (issue 19 part 4, ``--shapes N``): a kernel correct only at the published shape is marked
shape_specialised, reported under the default protocols and incorrect under one with require_shapes; a legitimate
kernel passes every extra shape; shapes a problem does not admit are skipped with a reason."""

from __future__ import annotations

import math

import pytest

import harness
import problems as P
from harness import NAIVE, VERIFIED, EvalSettings, MeasurementRecord, score
from harness.eval import main as eval_cli
from harness.scoring.shapes import SHAPE_STEPS, ShapedProblem, plan, scale_int, size_constants
from problems.module import exec_source

SETTINGS = EvalSettings(naive_timing_trials=10, verified_min_iters=5, verified_max_iters=10,
                        verified_seconds_per_subject=0.3, cpu_threads=1, extra_shapes=2)
RELU = "level1/19_ReLU"  # small preset: batch_size 64, dim 8192
STRICT = {p.name: p.model_copy(update={"require_shapes": True}) for p in (NAIVE, VERIFIED)}

# Computes ReLU only at the published small shape; elsewhere returns a copy of its input, which is ReLU on the
# naive trials' torch.rand inputs (all >= 0) but not on the verified trials' negated ones.
LITERAL_SHAPE = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        if tuple(x.shape) == (64, 8192):
            return torch.relu(x)
        return x.clone()
"""
ZEROS = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return torch.zeros_like(x)\n"


def reference_as_candidate(pid: str) -> str:
    return P.load(pid).reference_as_candidate()


def input_shapes(problem: P.Problem) -> list[list[int]]:
    mod = exec_source(problem.source("small"), f"<{problem.id}>")
    return [list(x.shape) for x in mod.get_inputs()]


@pytest.fixture(scope="module")
def ev():
    with harness.Evaluator("cpu", "small", settings=SETTINGS) as e:
        yield e


# -- choosing shapes (pure) -------------------------------------------------------------------------------

@pytest.mark.parametrize("factor,rounding", SHAPE_STEPS)
def test_scaled_sizes_stay_within_the_evaluated_size(factor, rounding):
    for v in (*range(1, 70), 127, 128, 1000, 8192, 393216):
        s = scale_int(v, factor, rounding)
        assert 1 <= s <= v
        assert abs(s - v * factor) <= 2  # the nearest odd integer (or the nearest one) to v * factor
        if rounding == "odd":
            assert s % 2 == 1


def test_relu_shapes_at_small_and_full():
    relu = P.load(RELU)
    small, _, _ = plan(relu, "small", 3)
    assert [s.overrides for s in small] == [{"batch_size": 63, "dim": 8191}, {"batch_size": 31, "dim": 4095},
                                           {"batch_size": 48, "dim": 6144}]
    assert [s.id for s in small] == [f"{RELU}@shape{i}" for i in (1, 2, 3)]
    assert input_shapes(small[0]) == [[63, 8191]]  # the file rendered with the shape's constants
    assert input_shapes(relu) == [[64, 8192]]
    assert size_constants(relu, "full") == {"batch_size": 4096, "dim": 393216}  # the file's own values
    full, _, _ = plan(relu, "full", 1)
    assert full[0].overrides == {"batch_size": 4095, "dim": 393215}


def test_constants_that_must_agree_still_agree():
    # level2/37: GroupNorm over out_features, and a bias of bias_shape = [out_features]
    todo, _, _ = plan(P.load("level2/37_Matmul_Swish_Sum_GroupNorm"), "small", 8)
    assert todo and all(s.overrides["bias_shape"] == [s.overrides["out_features"]] for s in todo)


def test_shapes_equal_to_the_published_one_are_skipped_and_no_constants_means_none():
    alexnet = P.load("level3/5_AlexNet")  # small preset: batch_size = 1, which no factor changes
    todo, skipped, note = plan(alexnet, "small", 3)
    assert not todo and note is None
    assert [s.reason for s in skipped] == ["skipped: the same as the published shape"] * 3
    bare = P.load(RELU).model_copy(update={"meta": P.ProblemMeta()})  # a problem directory without metadata
    todo, skipped, note = plan(bare, "full", 3)
    assert not todo and not skipped and "no size constants" in note


def test_old_records_load_and_new_ones_round_trip():
    old = MeasurementRecord.model_validate({"candidate_hash": "h", "problem_id": RELU, "size": "small",
                                            "device": "cpu"})
    assert old.shapes == [] and old.shape_specialised is None and old.shapes_note is None
    assert score(old, STRICT["verified"]).verdict == score(old, VERIFIED).verdict


# -- checking shapes (CPU, size small) --------------------------------------------------------------------

def test_reference_as_candidate_passes_every_extra_shape(ev):
    r = ev.evaluate(reference_as_candidate(RELU), RELU)
    rec = r.record
    assert [(s.name, s.naive_pass, s.verified_pass) for s in rec.shapes] == [("shape1", True, True),
                                                                             ("shape2", True, True)]
    assert rec.shape_specialised is False and rec.phase_seconds["shapes"] > 0
    for name, strict in STRICT.items():
        assert r.results[name].verdict == "correct" and score(rec, strict).verdict == "correct"


def test_kernel_specialised_to_the_published_shape(ev):
    r = ev.evaluate(LITERAL_SHAPE, RELU)
    rec = r.record
    assert rec.shape_specialised is True
    # Naive's trials (torch.rand) pass at every shape; verified's (negated inputs) fail at each extra one.
    assert [(s.naive_pass, s.verified_pass) for s in rec.shapes] == [(True, False), (True, False)]
    assert all("neg" in s.reason for s in rec.shapes)
    # Reported only: the default protocols keep their verdicts ...
    assert r.results["naive"].verdict == r.results["verified"].verdict == "correct"
    # ... and a protocol asking for shapes fails it under the trial set that fails there.
    assert score(rec, STRICT["naive"]).verdict == "correct"
    strict = score(rec, STRICT["verified"])
    assert strict.verdict == "incorrect"
    assert strict.reasons[0].startswith("shape_specialised: correct at the published shape, not at shape1 "
                                        "(batch_size=63, dim=8191)")
    again = MeasurementRecord.model_validate_json(rec.model_dump_json())  # stored, re-scored: the same verdict
    assert again.shapes == rec.shapes and score(again, STRICT["verified"]).verdict == "incorrect"


def test_a_kernel_wrong_at_the_published_shape_is_not_checked_further(ev):
    rec = ev.evaluate(ZEROS, RELU).record
    assert rec.shapes == [] and rec.shape_specialised is None
    assert "not correct at the published shape" in rec.shapes_note


def test_a_shape_whose_reference_does_not_run_is_skipped_with_its_reason(tmp_path):
    pid = "level2/37_Matmul_Swish_Sum_GroupNorm"  # GroupNorm(64 groups) over an odd out_features cannot be built
    with harness.Evaluator("cpu", "small", settings=SETTINGS.model_copy(update={"extra_shapes": 3})) as e:
        rec = e.evaluate(reference_as_candidate(pid), pid).record
        again = e.evaluate(reference_as_candidate(pid) + "\n# another candidate\n", pid).record
    assert again.shapes == rec.shapes  # the same shapes refused for the next candidate of the problem
    skipped, checked = rec.shapes[:2], rec.shapes[2]
    for s in skipped:
        assert s.naive_pass is None and s.verified_pass is None and s.overrides["out_features"] % 2 == 1
        assert s.reason.startswith("skipped: the reference does not run at this shape") and "num_groups" in s.reason
    assert checked.overrides["out_features"] == 384 and checked.naive_pass and checked.verified_pass
    assert rec.shape_specialised is False


def test_a_shaped_problem_renders_only_its_constants():
    sp = plan(P.load(RELU), "small", 1)[0][0]
    assert isinstance(sp, ShapedProblem) and sp.base_id == RELU
    text = sp.source("small")
    assert "batch_size = 63" in text and "dim = 8191" in text
    assert text.replace("63", "4096").replace("8191", "393216") == P.load(RELU).full_source()
    assert math.prod(input_shapes(sp)[0]) < math.prod(input_shapes(P.load(RELU))[0])


def test_cli_shapes_option(tmp_path, capsys):
    kernel = tmp_path / "k.py"
    kernel.write_text(LITERAL_SHAPE)
    assert eval_cli([str(kernel), "--problem", RELU, "--shapes", "9"]) == 2
    assert "--shapes takes 0 to 8" in capsys.readouterr().err
    assert eval_cli([str(kernel), "--problem", RELU, "--shapes", "1", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "shapes: shape-specialised: correct at the published shape only" in out
    assert "shape1 (batch_size=63, dim=8191): naive pass, verified FAIL" in out


def test_sweep_shapes_option_sets_the_eval_setting():
    from agents.sweep import build_parser, config_from_args
    from agents.sweep import main as sweep_cli

    args = build_parser().parse_args(["--models", "demo", "--shapes", "2", "--eval-set", "cpu_threads=1"])
    config = config_from_args(args)
    assert config.eval_settings == {"cpu_threads": 1, "extra_shapes": 2}
    assert config.eval_settings_obj().extra_shapes == 2
    assert config_from_args(build_parser().parse_args(["--models", "demo"])).eval_settings == {}
    assert sweep_cli(["--models", "demo", "--shapes", "-1"]) == 2
