import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <vector>

// Sum over `dim` with keepdim: view the input as (outer, reduced, inner) and accumulate in
// double along contiguous inner rows.
torch::Tensor sum_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "expected float32");
    at::Tensor xc = x.contiguous();
    if (dim < 0) dim += xc.dim();
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < xc.dim(); ++d) inner *= xc.size(d);
    const int64_t reduced = xc.size(dim);
    std::vector<int64_t> shape(xc.sizes().begin(), xc.sizes().end());
    shape[dim] = 1;
    at::Tensor out = torch::empty(shape, xc.options());
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    at::parallel_for(0, outer, 1, [&](int64_t begin, int64_t end) {
        std::vector<double> acc(inner);
        for (int64_t b = begin; b < end; ++b) {
            std::fill(acc.begin(), acc.end(), 0.0);
            const float* base = in + b * reduced * inner;
            for (int64_t r = 0; r < reduced; ++r) {
                const float* row = base + r * inner;
                for (int64_t i = 0; i < inner; ++i) acc[i] += row[i];
            }
            for (int64_t i = 0; i < inner; ++i) o[b * inner + i] = static_cast<float>(acc[i]);
        }
    });
    return out;
}
"""

sum_ext = load_inline(
    name="kv_demo_cpu_l1_47_sum_reduction",
    cpp_sources=cpp_source,
    functions=["sum_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return sum_ext.sum_forward(x.float(), self.dim).to(x.dtype)
