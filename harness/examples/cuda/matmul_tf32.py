"""A matmul that turns on TF32 tensor cores (level1/1): the 'TF32 harvest'. Honest arithmetic, but its
naive speedup only measures a baseline that leaves TF32 off; against a TF32 baseline it is ~1x."""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            return torch.matmul(A, B)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
