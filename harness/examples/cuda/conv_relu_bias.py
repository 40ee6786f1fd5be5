"""Honest fused epilogue for level2/1_Conv2D_ReLU_BiasAdd: cuDNN convolution, then one CUDA kernel for
ReLU + per-channel bias (instead of two elementwise passes)."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>

__global__ void relu_bias(float* __restrict__ y, const float* __restrict__ bias, long n, int hw, int c) {
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < n; i += (long)blockDim.x * gridDim.x) {
        int ch = (int)((i / hw) % c);
        float v = y[i];
        y[i] = (v > 0.f ? v : 0.f) + bias[ch];
    }
}

torch::Tensor relu_bias_(torch::Tensor y, torch::Tensor bias) {
    long n = y.numel();
    int c = y.size(1), hw = y.size(2) * y.size(3);
    int threads = 256;
    int blocks = (int)std::min<long>((n + threads - 1) / threads, 65535L * 8);
    relu_bias<<<blocks, threads>>>(y.data_ptr<float>(), bias.contiguous().data_ptr<float>(), n, hw, c);
    return y;
}
"""
_CPP = "torch::Tensor relu_bias_(torch::Tensor y, torch::Tensor bias);"
_ext = load_inline(name="kv_ex_conv_relu_bias", cpp_sources=_CPP, cuda_sources=_CUDA, functions=["relu_bias_"],
                   extra_cuda_cflags=["-O3"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, bias_shape):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        y = F.conv2d(x, self.conv.weight, self.conv.bias).contiguous()
        return _ext.relu_bias_(y, self.bias)
