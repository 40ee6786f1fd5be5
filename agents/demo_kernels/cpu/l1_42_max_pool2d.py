import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <limits>

// MaxPool2d over (N, C, H, W), floor mode; padded positions never win (they are -inf).
torch::Tensor max_pool2d_forward(torch::Tensor x, int64_t k, int64_t s, int64_t p, int64_t d) {
    TORCH_CHECK(x.dim() == 4 && x.scalar_type() == torch::kFloat, "expected a 4-D float32 input");
    at::Tensor xc = x.contiguous();
    const int64_t planes = xc.size(0) * xc.size(1), h = xc.size(2), w = xc.size(3);
    const int64_t oh = (h + 2 * p - d * (k - 1) - 1) / s + 1;
    const int64_t ow = (w + 2 * p - d * (k - 1) - 1) / s + 1;
    at::Tensor out = torch::empty({xc.size(0), xc.size(1), oh, ow}, xc.options());
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    at::parallel_for(0, planes, 1, [&](int64_t begin, int64_t end) {
        for (int64_t pl = begin; pl < end; ++pl) {
            const float* src = in + pl * h * w;
            float* dst = o + pl * oh * ow;
            for (int64_t i = 0; i < oh; ++i) {
                for (int64_t j = 0; j < ow; ++j) {
                    float m = -std::numeric_limits<float>::infinity();
                    for (int64_t a = 0; a < k; ++a) {
                        const int64_t y = i * s - p + a * d;
                        if (y < 0 || y >= h) continue;
                        for (int64_t b = 0; b < k; ++b) {
                            const int64_t xx = j * s - p + b * d;
                            if (xx < 0 || xx >= w) continue;
                            m = std::max(m, src[y * w + xx]);
                        }
                    }
                    dst[i * ow + j] = m;
                }
            }
        }
    });
    return out;
}
"""

pool_ext = load_inline(
    name="kv_demo_cpu_l1_42_max_pool2d",
    cpp_sources=cpp_source,
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
