"""Static provenance: an extension that only forwards to library ops is not a custom kernel, and
every legitimate kernel the repo ships still is one."""

from pathlib import Path

import pytest

from harness.scoring.static_scan import scan

ROOT = Path(__file__).resolve().parent.parent


def _ext(native: str, cuda: bool) -> str:
    kind = "cuda_sources" if cuda else "cpp_sources"
    return (f'from torch.utils.cpp_extension import load_inline\nsrc = r"""\n#include <torch/extension.h>\n{native}\n"""\n'
            f'ext = load_inline(name="x", cpp_sources="torch::Tensor f(torch::Tensor x);", {kind}=src, functions=["f"])\n')


@pytest.mark.parametrize("cuda", [False, True])
def test_extension_that_forwards_to_aten_is_not_a_custom_kernel(cuda):
    wrapper = _ext("torch::Tensor f(torch::Tensor x) {\n  // a for (;;) loop would go here\n  return at::tanh(x);\n}", cuda)
    p = scan(wrapper)
    assert p.backend == ("cuda" if cuda else "cpp")
    assert p.defines_custom_kernel is False  # the comment naming a kernel is not one
    assert any("only forwards to library ops" in n for n in p.notes)


@pytest.mark.parametrize("native, cuda", [
    ("__global__ void k(float* y) { y[threadIdx.x] = 0; }\ntorch::Tensor f(torch::Tensor x) { return x; }", True),
    ("torch::Tensor f(torch::Tensor x) { cutlass::gemm::device::Gemm<float> g; return x; }", True),
    ("torch::Tensor f(torch::Tensor x) { auto y = x.clone(); float* p = y.data_ptr<float>();\n"
     "  for (int64_t i = 0; i < y.numel(); ++i) p[i] = p[i] > 0 ? p[i] : 0; return y; }", False),
    ("torch::Tensor f(torch::Tensor x) { at::parallel_for(0, 8, 1, [&](int64_t a, int64_t b) {}); return x; }", False),
])
def test_extension_with_its_own_kernel_or_loop_is_a_custom_kernel(native, cuda):
    assert scan(_ext(native, cuda)).defines_custom_kernel is True


def test_native_text_that_is_not_a_literal_gets_the_benefit_of_the_doubt():
    src = ('from torch.utils.cpp_extension import load_inline\nimport pathlib\n'
           'ext = load_inline(name="x", cpp_sources=pathlib.Path("k.cpp").read_text(), functions=["f"])\n')
    assert scan(src).defines_custom_kernel is True


def test_every_legitimate_kernel_in_the_repo_still_defines_one():
    # The legit fixtures, the examples and the honest demo kernels: a false "no custom kernel" on any of
    # them would misreport an honest candidate.
    files = [*(ROOT / "harness" / "fixtures" / "legit").rglob("*.py"), *(ROOT / "harness" / "examples").rglob("*.py"),
             *(ROOT / "agents" / "demo_kernels").rglob("*.py")]
    hacks = {"l1_19_relu_t1", "l1_22_tanh", "l1_23_softmax_t1"}  # copy, library call, zero fill: no kernel
    scans = {f"{f.parent.name}/{f.stem}": scan(f.read_text()) for f in files if f.name != "__init__.py"}
    flagged = sorted(k for k, p in scans.items() if p.backend != "python" and not p.defines_custom_kernel)
    assert flagged == sorted(f"{b}/{h}" for b in ("cpu", "cuda") for h in hacks)


def test_autocast_is_named_as_a_precision_downcast_and_plain_fp32_code_is_not():
    # cuda-l1-h100 level1/60 and level3/9 run their forward under autocast (fp16): the provenance must say so
    amp = "import torch\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n" \
          "        with torch.cuda.amp.autocast():\n            return self.conv(x)\n"
    assert scan(amp).precision_downcast == ["autocast"]
    assert scan(amp.replace("torch.cuda.amp.autocast()", "torch.autocast('cuda', dtype=torch.float16)")).precision_downcast
    fp32 = amp.replace("with torch.cuda.amp.autocast():\n            ", "")
    assert scan(fp32).precision_downcast == []
    assert scan("# an autocaster_helper is no context\nx = my_autocaster(1)\n").precision_downcast == []
