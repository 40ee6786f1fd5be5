"""Prompt rendering: every strategy x backend, the input-blind view, hardware blocks, feedback messages."""

from __future__ import annotations

import pytest

import problems
import prompts

STRATEGIES = prompts.list_strategies()


def test_builtin_strategies_present():
    assert {"zero_shot", "one_shot", "few_shot", "hardware_aware", "plan_then_code", "input_blind"} <= set(STRATEGIES)


@pytest.mark.parametrize("backend", prompts.BACKENDS)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_strategy_renders_for_every_backend(strategy, backend):
    problem = problems.load("level1/19_ReLU")
    msgs = prompts.render(strategy, problem, "small", backend)
    assert [m["role"] for m in msgs] == ["system", "user"]
    user = msgs[1]["content"]
    assert "ModelNew" in user and "```python" in user and "single fenced ```python block" in user
    assert "load_inline" in user if backend != "triton" else "triton.jit" in user
    if backend == "cpu":
        assert "cpp_sources" in user and "no `cuda_sources`" in user
    s = prompts.load_strategy(strategy)
    if not s.input_blind:
        assert problem.source("small").strip() in user  # the source at the size being evaluated
    if s.examples:
        assert "Example 1, optimized with" in user
    assert ("Plan:" in user) == s.plan_first
    fb = prompts.render_feedback(strategy, "Building the module failed: boom", backend)
    assert fb["role"] == "user" and "boom" in fb["content"]


def test_input_blind_hides_sizes_and_get_inputs():
    problem = problems.load("level1/19_ReLU")
    full_user = prompts.render("one_shot", problem, "small", "cuda")[1]["content"]
    user = prompts.render("input_blind", problem, "small", "cuda")[1]["content"]
    assert "def get_inputs" in full_user and "batch_size =" in full_user
    assert "def get_inputs" not in user and "def get_init_inputs" not in user
    assert "batch_size =" not in user and "dim =" not in user
    assert "rows = 64" not in user  # the worked example is stripped as well
    assert "`x`: float32 tensor of rank 2" in user
    assert "class Model(nn.Module)" in user


def test_input_blind_describes_init_args_without_values():
    problem = problems.load("level2/12_Gemm_Multiply_LeakyReLU")
    user = prompts.render("input_blind", problem, "small", "cpu")[1]["content"]
    assert "`in_features` (int)" in user and "`multiplier` (float)" in user
    for name in ("in_features =", "out_features =", "multiplier =", "batch_size ="):
        assert f"\n{name}" not in user


def test_strip_inputs_keeps_model():
    src = "import torch\nN = 4\n\nclass Model:\n    pass\n\ndef get_inputs():\n    return [N]\n\ndef get_init_inputs():\n    return []\n"
    out = prompts.strip_inputs(src)
    assert "class Model" in out and "import torch" in out and "N = 4" not in out and "get_inputs" not in out


def test_hardware_aware_shows_spec_sheet_and_roofline():
    problem = problems.load("level1/1")
    gpu = prompts.render("hardware_aware", problem, "small", "cuda")[1]["content"]
    assert "H200" in gpu and "Speed-of-light time" in gpu and "Arithmetic intensity" in gpu
    a100 = prompts.render("hardware_aware", problem, "small", "triton", hardware="A100")[1]["content"]
    assert "A100" in a100
    cpu = prompts.render("hardware_aware", problem, "small", "cpu")[1]["content"]
    assert "Logical cores" in cpu and "Floating-point operations" in cpu


def test_unknown_strategy_and_strategy_from_path(tmp_path):
    with pytest.raises(prompts.UnknownStrategy):
        prompts.load_strategy("no_such_strategy")
    path = tmp_path / "mine.toml"
    path.write_text('description = "custom"\nexamples = ["row_softmax"]\nplan_first = true\n')
    s = prompts.load_strategy(str(path))
    assert s.name == "mine" and s.plan_first
    user = prompts.render(s, "level1/23", "small", "cpu")[1]["content"]
    assert "softmax_cpu" in user
