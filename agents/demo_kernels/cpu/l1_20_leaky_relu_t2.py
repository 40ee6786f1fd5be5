import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>

torch::Tensor leaky_relu_forward(torch::Tensor x, double negative_slope) {
    at::Tensor xc = x.contiguous();
    at::Tensor out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const float slope = static_cast<float>(negative_slope);
    const int64_t n = xc.numel();
    for (int64_t i = 0; i < n; ++i) {
        o[i] = in[i] > 0.0f ? in[i] : in[i] * slope;
    }
    return out;
}
"""

leaky_ext = load_inline(
    name="kv_demo_cpu_l1_20_leaky_relu_t2",
    cpp_sources=cpp_source,
    functions=["leaky_relu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.negative_slope = 0.01  # the problem's fixed slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return leaky_ext.leaky_relu_forward(x.float(), self.negative_slope).to(x.dtype)
