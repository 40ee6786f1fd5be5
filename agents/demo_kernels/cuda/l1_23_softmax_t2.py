import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <cfloat>

constexpr int THREADS = 512;

// One block per row: block-wide max, then sum of exp(x - max), then normalise.
__global__ void softmax_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t cols) {
    __shared__ float red[THREADS];
    const float* row = x + blockIdx.x * cols;
    float* out = y + blockIdx.x * cols;

    float m = -FLT_MAX;
    for (int64_t c = threadIdx.x; c < cols; c += THREADS) m = fmaxf(m, row[c]);
    red[threadIdx.x] = m;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + s]);
        __syncthreads();
    }
    m = red[0];
    __syncthreads();

    float sum = 0.0f;
    for (int64_t c = threadIdx.x; c < cols; c += THREADS) sum += __expf(row[c] - m);
    red[threadIdx.x] = sum;
    __syncthreads();
    for (int s = THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    const float inv = 1.0f / red[0];

    for (int64_t c = threadIdx.x; c < cols; c += THREADS) out[c] = __expf(row[c] - m) * inv;
}

torch::Tensor softmax_forward(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 2 && x.scalar_type() == torch::kFloat, "expected 2-D float32 CUDA");
    at::Tensor xc = x.contiguous();
    at::Tensor y = torch::empty_like(xc);
    if (xc.numel() > 0) {
        softmax_kernel<<<xc.size(0), THREADS, 0, at::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<float>(), y.data_ptr<float>(), xc.size(1));
    }
    return y;
}
"""

cpp_source = "torch::Tensor softmax_forward(torch::Tensor x);"

softmax_ext = load_inline(
    name="kv_demo_cuda_l1_23_softmax_t2",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
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
