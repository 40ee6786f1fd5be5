import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Honest speedup (demo): PyTorch evaluates the tanh-GELU formula as ~8 separate elementwise
# ops, each reading and writing a full temporary; this does it in one pass over memory, with a
# branch-free exp the compiler can vectorise (tanh(u) = 1 - 2 / (1 + exp(2u))).
cpp_source = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <algorithm>
#include <cstdint>
#include <cstring>

// exp(x) = 2^k * e^r with |r| <= ln2/2; degree-6 Taylor on r (relative error ~1e-7).
static inline float fast_exp(float x) {
    x = std::min(std::max(x, -87.0f), 88.0f);
    const int32_t k = static_cast<int32_t>(x * 1.44269504f + (x >= 0.0f ? 0.5f : -0.5f));
    const float r = x - static_cast<float>(k) * 0.693147181f;
    const float p = 1.0f + r * (1.0f + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120 + r * (1.0f / 720))))));
    const int32_t bits = (k + 127) << 23;
    float scale;
    std::memcpy(&scale, &bits, sizeof(scale));
    return p * scale;
}

torch::Tensor gelu_forward(torch::Tensor x) {
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "expected float32");
    at::Tensor xc = x.contiguous();
    at::Tensor out = torch::empty_like(xc);
    const float* in = xc.data_ptr<float>();
    float* o = out.data_ptr<float>();
    const float c = 0.7978845608028654f;  // sqrt(2 / pi)
    at::parallel_for(0, xc.numel(), 1 << 14, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const float v = in[i];
            const float u = std::min(std::max(c * (v + 0.044715f * v * v * v), -9.0f), 9.0f);
            const float t = 1.0f - 2.0f / (1.0f + fast_exp(2.0f * u));
            o[i] = 0.5f * v * (1.0f + t);
        }
    });
    return out;
}
"""

gelu_ext = load_inline(
    name="kv_demo_cpu_l1_88_gelu",
    cpp_sources=cpp_source,
    functions=["gelu_forward"],
    extra_cflags=["-O3"],
    verbose=False,
)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The kernel is written for float32: bf16/fp16 inputs are upcast and the result is cast back
        # to the input dtype (both casts are no-ops in a float32 run).
        return gelu_ext.gelu_forward(x.float()).to(x.dtype)
