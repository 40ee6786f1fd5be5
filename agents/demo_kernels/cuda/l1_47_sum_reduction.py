import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest (demo): sum over `dim` with keepdim. The input is viewed as (outer, reduced, inner); one
# thread per output accumulates its column in double, and neighbouring threads read neighbouring
# inner elements, so every step of the reduction loop is a coalesced load.
cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <vector>

__global__ void sum_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t outer, int64_t reduced,
                           int64_t inner) {
    const int64_t n = outer * inner;
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = o / inner, i = o - b * inner;
        const float* col = x + b * reduced * inner + i;
        double acc = 0.0;
        for (int64_t r = 0; r < reduced; ++r) acc += col[r * inner];
        y[o] = static_cast<float>(acc);
    }
}

torch::Tensor sum_forward(torch::Tensor x, int64_t dim) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "expected a float32 CUDA tensor");
    at::Tensor xc = x.contiguous();
    if (dim < 0) dim += xc.dim();
    TORCH_CHECK(dim >= 0 && dim < xc.dim(), "dim out of range");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < dim; ++d) outer *= xc.size(d);
    for (int64_t d = dim + 1; d < xc.dim(); ++d) inner *= xc.size(d);
    const int64_t reduced = xc.size(dim);
    std::vector<int64_t> shape(xc.sizes().begin(), xc.sizes().end());
    shape[dim] = 1;
    at::Tensor y = torch::empty(shape, xc.options());
    const int64_t n = outer * inner;
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535 * 8);
    if (n > 0) {
        sum_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<float>(), y.data_ptr<float>(), outer, reduced, inner);
    }
    return y;
}
"""

cpp_source = "torch::Tensor sum_forward(torch::Tensor x, int64_t dim);"

sum_ext = load_inline(
    name="kv_demo_cuda_l1_47_sum_reduction",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
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
