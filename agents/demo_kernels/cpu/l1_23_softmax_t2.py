import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <cmath>
#include <limits>

// Row-wise softmax over dim 1 with max subtraction, so exp never overflows.
torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.dim() == 2 && x.scalar_type() == torch::kFloat, "expected a 2-D float32 input");
    at::Tensor xc = x.contiguous();
    at::Tensor out = torch::empty_like(xc);
    const int64_t rows = xc.size(0), cols = xc.size(1);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
            const float* row = in + r * cols;
            float* dst = o + r * cols;
            float m = -std::numeric_limits<float>::infinity();
            for (int64_t c = 0; c < cols; ++c) m = std::max(m, row[c]);
            double sum = 0.0;
            for (int64_t c = 0; c < cols; ++c) {
                dst[c] = std::exp(row[c] - m);
                sum += dst[c];
            }
            const float inv = static_cast<float>(1.0 / sum);
            for (int64_t c = 0; c < cols; ++c) dst[c] *= inv;
        }
    });
    return out;
}
"""

softmax_ext = load_inline(
    name="kv_demo_cpu_l1_23_softmax_t2",
    cpp_sources=cpp_source,
    functions=["softmax_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return softmax_ext.softmax_forward(x.float()).to(x.dtype)
