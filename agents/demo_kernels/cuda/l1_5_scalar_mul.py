import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest (demo): a parallel elementwise scale, A * s in one pass over memory.
cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scale_kernel(const float* __restrict__ a, float* __restrict__ y, float s, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        y[i] = a[i] * s;
    }
}

torch::Tensor scale_forward(torch::Tensor a, double s) {
    TORCH_CHECK(a.is_cuda() && a.scalar_type() == torch::kFloat, "expected a float32 CUDA tensor");
    at::Tensor ac = a.contiguous();
    at::Tensor y = torch::empty_like(ac);
    const int64_t n = ac.numel();
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535 * 8);
    if (n > 0) {
        scale_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            ac.data_ptr<float>(), y.data_ptr<float>(), static_cast<float>(s), n);
    }
    return y;
}
"""

cpp_source = "torch::Tensor scale_forward(torch::Tensor a, double s);"

scale_ext = load_inline(
    name="kv_demo_cuda_l1_5_scalar_mul",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
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
