import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# GEMM through PyTorch's BLAS (addmm), then the multiply and LeakyReLU fused into one
# in-place pass over the output instead of two extra elementwise kernels.
cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

torch::Tensor gemm_scale_leaky_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                                       double multiplier, double negative_slope) {
    at::Tensor y = torch::addmm(bias, x.contiguous(), weight.t());
    float* p = y.data_ptr<float>();
    const float m = static_cast<float>(multiplier);
    const float slope = static_cast<float>(negative_slope);
    at::parallel_for(0, y.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float v = p[i] * m;
            p[i] = v > 0.0f ? v : v * slope;
        }
    });
    return y;
}
"""

fused_ext = load_inline(
    name="kv_demo_cpu_l2_12_gemm_multiply_leaky_relu",
    cpp_sources=cpp_source,
    functions=["gemm_scale_leaky_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int, multiplier: float, negative_slope: float):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features)  # same parameter names as Model
        self.multiplier = multiplier
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return fused_ext.gemm_scale_leaky_forward(
            x.float(), self.gemm.weight.float(), self.gemm.bias.float(), self.multiplier, self.negative_slope
        ).to(x.dtype)
