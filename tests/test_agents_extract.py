"""Code extraction from model answers."""

from __future__ import annotations

import pytest

from agents.extract import ExtractionError, extract_code

MODEL_NEW = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x\n"


def fence(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code}```\n"


def test_single_block_with_prose():
    text = "Here is my kernel.\n\n" + fence(MODEL_NEW) + "\nIt should be fast."
    got = extract_code(text, "cuda")
    assert got.code == MODEL_NEW and got.source == "fenced" and got.warnings == []


def test_last_python_block_defining_modelnew_wins():
    first = MODEL_NEW.replace("return x", "return x + 1")
    text = fence(first) + "Improved:\n" + fence(MODEL_NEW) + fence("print('usage example')")
    got = extract_code(text, "cuda")
    assert got.code == MODEL_NEW and got.blocks == 3
    assert any("used the last" in w for w in got.warnings)


def test_separate_cuda_block_keeps_to_python_block():
    py = "from torch.utils.cpp_extension import load_inline\next = load_inline(name='a', cpp_sources=cpp_src, " \
         "cuda_sources=cuda_src, functions=['f'])\n" + MODEL_NEW
    text = fence("__global__ void k() {}\n", "cuda") + fence("torch::Tensor f(torch::Tensor x);\n", "cpp") + fence(py)
    got = extract_code(text, "cuda")
    assert got.code == py
    assert any("cpp_src" in w and "cuda_src" in w for w in got.warnings)


def test_unlabelled_and_mislabelled_fences():
    assert extract_code(fence(MODEL_NEW, ""), "cpu").code == MODEL_NEW
    assert extract_code(fence(MODEL_NEW, "cpp"), "cpu").code == MODEL_NEW  # parses as Python


def test_no_fences_but_code():
    text = "Sure! Here it is:\n" + MODEL_NEW + "\nThis version avoids the extra copy."
    got = extract_code(text, "cpu")
    assert got.source == "unfenced" and got.code == MODEL_NEW


def test_truncated_block_still_extracted_with_warning():
    got = extract_code("```python\n" + MODEL_NEW, "cuda")
    assert got.code == MODEL_NEW and any("truncated" in w for w in got.warnings)


@pytest.mark.parametrize("text,fragment", [
    ("", "empty"),
    ("   \n", "empty"),
    ("I would tile the matmul and use shared memory.", "no code"),
    (fence("class Model(nn.Module):\n    pass\n"), "none defines `class ModelNew`"),
    (fence("__global__ void k() {}\n", "cuda"), "none defines `class ModelNew`"),
    ("My ModelNew will use shared memory.", "mentions ModelNew"),
])
def test_failures_explain_what_was_expected(text, fragment):
    with pytest.raises(ExtractionError) as err:
        extract_code(text, "cuda")
    message = str(err.value)
    assert fragment in message
    assert "```python" in message and "class ModelNew(nn.Module)" in message and "cuda_sources" in message


def test_backend_shapes_the_feedback():
    with pytest.raises(ExtractionError, match="no CUDA"):
        extract_code("", "cpu")
    with pytest.raises(ExtractionError, match="triton"):
        extract_code("", "triton")
