import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest (demo): MaxPool2d over (N, C, H, W), floor mode, one thread per output; padded positions
# are skipped (the running max starts at -inf) and dilation scales the window offsets.
cuda_source = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void max_pool2d_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t planes, int64_t h,
                                  int64_t w, int64_t oh, int64_t ow, int64_t k, int64_t s, int64_t p, int64_t d) {
    const int64_t n = planes * oh * ow;
    for (int64_t o = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; o < n; o += (int64_t)gridDim.x * blockDim.x) {
        const int64_t j = o % ow;
        const int64_t i = (o / ow) % oh;
        const int64_t pl = o / (oh * ow);
        const float* src = x + pl * h * w;
        float m = -INFINITY;
        for (int64_t a = 0; a < k; ++a) {
            const int64_t yy = i * s - p + a * d;
            if (yy < 0 || yy >= h) continue;
            for (int64_t b = 0; b < k; ++b) {
                const int64_t xx = j * s - p + b * d;
                if (xx < 0 || xx >= w) continue;
                m = fmaxf(m, src[yy * w + xx]);
            }
        }
        y[o] = m;
    }
}

torch::Tensor max_pool2d_forward(torch::Tensor x, int64_t k, int64_t s, int64_t p, int64_t d) {
    TORCH_CHECK(x.is_cuda() && x.dim() == 4 && x.scalar_type() == torch::kFloat, "expected a 4-D float32 CUDA tensor");
    at::Tensor xc = x.contiguous();
    const int64_t planes = xc.size(0) * xc.size(1), h = xc.size(2), w = xc.size(3);
    const int64_t oh = (h + 2 * p - d * (k - 1) - 1) / s + 1;
    const int64_t ow = (w + 2 * p - d * (k - 1) - 1) / s + 1;
    at::Tensor y = torch::empty({xc.size(0), xc.size(1), oh, ow}, xc.options());
    const int64_t n = planes * oh * ow;
    const int threads = 256;
    const int blocks = (int)std::min<int64_t>((n + threads - 1) / threads, 65535 * 8);
    if (n > 0) {
        max_pool2d_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
            xc.data_ptr<float>(), y.data_ptr<float>(), planes, h, w, oh, ow, k, s, p, d);
    }
    return y;
}
"""

cpp_source = "torch::Tensor max_pool2d_forward(torch::Tensor x, int64_t k, int64_t s, int64_t p, int64_t d);"

pool_ext = load_inline(
    name="kv_demo_cuda_l1_42_max_pool2d",
    cpp_sources=cpp_source,
    cuda_sources=cuda_source,
    functions=["max_pool2d_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride else kernel_size
        self.padding = padding
        self.dilation = dilation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return pool_ext.max_pool2d_forward(x.float(), self.kernel_size, self.stride, self.padding,
                                           self.dilation).to(x.dtype)
