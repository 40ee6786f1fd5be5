import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <cmath>

torch::Tensor sigmoid_forward(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "expected float32");
    at::Tensor xc = x.contiguous();
    at::Tensor out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    at::parallel_for(0, xc.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            o[i] = 1.0f / (1.0f + std::exp(-in[i]));
        }
    });
    return out;
}
"""

sigmoid_ext = load_inline(
    name="kv_demo_cpu_l1_21_sigmoid",
    cpp_sources=cpp_source,
    functions=["sigmoid_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return sigmoid_ext.sigmoid_forward(x.float()).to(x.dtype)
