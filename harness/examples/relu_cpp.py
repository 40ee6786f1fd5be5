"""An honest C++ ReLU for the CPU backend (KernelBench format: ModelNew + load_inline)."""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>

torch::Tensor relu_forward(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat32, "expected float32");
    auto xc = x.contiguous();
    auto out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        o[i] = in[i] > 0.f ? in[i] : 0.f;
    }
    return out;
}
"""

_ext = load_inline(name="kv_example_relu_cpp", cpp_sources=_SRC, functions=["relu_forward"],
                   extra_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.relu_forward(x)
