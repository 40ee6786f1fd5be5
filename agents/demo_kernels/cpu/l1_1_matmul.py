import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Slow but correct (demo): textbook i-j-k loops. B is walked down its columns, one cache line
# per multiply-add, single-threaded, so this is far slower than PyTorch's BLAS.
cpp_source = r"""
#include <torch/extension.h>

torch::Tensor matmul_forward(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.dim() == 2 && b.dim() == 2 && a.size(1) == b.size(0), "shape mismatch");
    at::Tensor ac = a.contiguous(), bc = b.contiguous();
    const int64_t n = ac.size(0), k = ac.size(1), m = bc.size(1);
    at::Tensor c = torch::empty({n, m}, ac.options());
    const float* pa = ac.data_ptr<float>();
    const float* pb = bc.data_ptr<float>();
    float* pc = c.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) {
        for (int64_t j = 0; j < m; ++j) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; ++p) {
                acc += pa[i * k + p] * pb[p * m + j];
            }
            pc[i * m + j] = acc;
        }
    }
    return c;
}
"""

matmul_ext = load_inline(
    name="kv_demo_cpu_l1_1_matmul",
    cpp_sources=cpp_source,
    functions=["matmul_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return matmul_ext.matmul_forward(A.float(), B.float()).to(A.dtype)
