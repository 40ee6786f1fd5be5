import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_src = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

torch::Tensor add_cpu(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.device().is_cpu() && b.device().is_cpu(), "inputs must be CPU tensors");
    TORCH_CHECK(a.scalar_type() == torch::kFloat32 && b.scalar_type() == torch::kFloat32, "float32 expected");
    auto ac = a.contiguous();
    auto bc = b.contiguous();
    auto out = torch::empty_like(ac);
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* po = out.data_ptr<float>();
    at::parallel_for(0, ac.numel(), 1 << 15, [&](int64_t begin, int64_t end) {
        #pragma omp simd
        for (int64_t i = begin; i < end; ++i) {
            po[i] = pa[i] + pb[i];
        }
    });
    return out;
}
"""

add_ext = load_inline(
    name="example_elementwise_add_cpu",
    cpp_sources=cpp_src,
    functions=["add_cpu"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return add_ext.add_cpu(a, b)
