import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

torch::Tensor scale_forward(torch::Tensor a, double s) {
    TORCH_CHECK(a.scalar_type() == torch::kFloat, "expected float32");
    at::Tensor ac = a.contiguous();
    at::Tensor out = torch::empty_like(ac);
    const float* in = ac.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const float f = static_cast<float>(s);
    at::parallel_for(0, ac.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) o[i] = in[i] * f;
    });
    return out;
}
"""

scale_ext = load_inline(
    name="kv_demo_cpu_l1_5_scalar_mul",
    cpp_sources=cpp_source,
    functions=["scale_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, s: float) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return scale_ext.scale_forward(A.float(), float(s)).to(A.dtype)
