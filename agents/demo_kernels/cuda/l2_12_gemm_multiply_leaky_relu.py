import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest (demo): GEMM through PyTorch's cuBLAS (addmm), then the multiply and LeakyReLU fused into
# one in-place kernel over the output instead of two extra elementwise kernels.
cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void scale_leaky_kernel(float* __restrict__ y, float multiplier, float negative_slope, int64_t n) {
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const float v = y[i] * multiplier;
        y[i] = v > 0.0f ? v : v * negative_slope;
    }
}

torch::Tensor gemm_scale_leaky_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias,
                                       double multiplier, double negative_slope) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat, "expected a float32 CUDA tensor");
    at::Tensor y = at::addmm(bias, x.contiguous(), weight.t());
    const int64_t n = y.numel();
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535 * 8);
    if (n > 0) {
        scale_leaky_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            y.data_ptr<float>(), static_cast<float>(multiplier), static_cast<float>(negative_slope), n);
    }
    return y;
}
"""

cpp_source = (
    "torch::Tensor gemm_scale_leaky_forward(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, "
    "double multiplier, double negative_slope);"
)

fused_ext = load_inline(
    name="kv_demo_cuda_l2_12_gemm_multiply_leaky_relu",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
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
