"""The demo model: deterministic scripted answers (kernels parsed here, built in test_agents_demo_build)."""

from __future__ import annotations

import ast
import asyncio
import re

import pytest

from agents.demo import KERNEL_DIR, SCRIPT, demo_answer
from agents.extract import ExtractionError, extract_code
from agents.models import Message, ModelRequest, RequestContext, resolve


def ask(level, number, backend="cpu", turn=1, sample=0):
    ctx = RequestContext(problem_id=f"level{level}/{number}", level=level, number=number, backend=backend,
                         turn=turn, sample=sample)
    client = resolve("demo")
    return asyncio.run(client.complete(ModelRequest(messages=[Message(role="user", content="x" * 400)],
                                                    context=ctx)))


def test_deterministic_and_free():
    a, b = ask(1, 19), ask(1, 19, sample=3)
    assert a.text == b.text and a.finish == "stop" and a.cost_usd == 0.0
    assert a.usage.input_tokens == 100 and a.usage.output_tokens == len(a.text) // 4


def test_compile_error_then_fix():
    t1 = extract_code(ask(1, 20, turn=1).text, "cpu").code
    t2 = extract_code(ask(1, 20, turn=2).text, "cpu").code
    assert "data_ptr<flaot>" in t1 and "flaot" not in t2
    assert ask(1, 20, turn=5).text == ask(1, 20, turn=2).text  # later turns repeat the last answer


def test_prose_only_turn_then_code():
    with pytest.raises(ExtractionError):
        extract_code(ask(1, 42, turn=1).text, "cpu")
    assert "class ModelNew" in extract_code(ask(1, 42, turn=2).text, "cpu").code


def test_backend_switch():
    cpu = extract_code(ask(1, 19, "cpu").text, "cpu").code
    cuda = extract_code(ask(1, 19, "cuda").text, "cuda").code
    assert "cuda_sources" not in cpu and "cuda_sources=cuda_source" in cuda
    assert "cuda_sources=cuda_source" in extract_code(ask(1, 21, "cuda").text, "cuda").code
    with pytest.raises(ExtractionError):  # no triton kernels at all
        extract_code(ask(1, 19, "triton").text, "triton")


def test_every_scripted_kernel_exists_for_cpu_and_cuda():
    stems = {t.kernel for p in SCRIPT.values() for t in p.turns if t.kernel is not None}
    for backend in ("cpu", "cuda"):
        missing = sorted(s for s in stems if not (KERNEL_DIR / backend / f"{s}.py").is_file())
        assert not missing, (backend, missing)


def test_unknown_problem_answers_without_code():
    with pytest.raises(ExtractionError):
        extract_code(ask(3, 1).text, "cpu")


def test_script_covers_the_required_behaviours():
    behaviours = {t.behaviour for p in SCRIPT.values() for t in p.turns}
    assert {"compile_error", "honest", "honest_speedup", "slow", "no_code"} <= behaviours
    assert len({b for b in behaviours if b.startswith("hack:")}) >= 3
    assert len(SCRIPT) >= 12
    for backend in ("cpu", "cuda"):
        for stem in ("l1_19_relu_t1", "l1_23_softmax_t1", "l1_1_matmul"):
            assert (KERNEL_DIR / backend / f"{stem}.py").is_file()


ALL_KERNELS = sorted(KERNEL_DIR.glob("*/*.py"))


@pytest.mark.parametrize("path", ALL_KERNELS, ids=[f"{p.parent.name}/{p.stem}" for p in ALL_KERNELS])
def test_kernel_files_follow_the_candidate_format(path):
    source = path.read_text()
    tree = ast.parse(source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    assert "ModelNew" in classes
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "load_inline"]
    assert len(calls) == 1
    kwargs = {k.arg for k in calls[0].keywords}
    assert {"name", "cpp_sources", "functions", "extra_cflags", "verbose"} <= kwargs
    assert ("cuda_sources" in kwargs) == (path.parent.name == "cuda")
    if path.parent.name == "cpu":
        assert "__global__" not in source and "torch::Tensor" in source


def test_extension_names_are_unique():
    names = [re.search(r'name="([^"]+)"', p.read_text())[1] for p in ALL_KERNELS]
    assert len(names) == len(set(names))


def test_demo_answers_match_problem_signatures():
    """ModelNew takes the same constructor and forward arguments as the problem's Model, where present."""
    from pathlib import Path

    problems = Path(__file__).resolve().parents[1] / "problems"
    checked = 0
    for (level, number), entry in SCRIPT.items():
        ref = problems / f"level{level}" / f"{entry.name}.py"
        if not ref.is_file():
            continue
        for backend in ("cpu", "cuda"):
            for turn in range(1, len(entry.turns) + 1):
                try:
                    code = extract_code(demo_answer(level, number, backend, turn), backend).code
                except ExtractionError:
                    continue
                assert _signatures(code, "ModelNew") == _signatures(ref.read_text(), "Model"), (ref, backend, turn)
                checked += 1
    assert checked >= 1


def _signatures(source: str, cls: str) -> dict[str, list[str]]:
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == cls)
    return {f.name: [a.arg for a in f.args.args] for f in node.body
            if isinstance(f, ast.FunctionDef) and f.name in ("__init__", "forward")}
