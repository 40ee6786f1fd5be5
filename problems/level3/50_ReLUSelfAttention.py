import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """Causal multi-head self-attention that applies ReLU to the masked scores instead of softmax.

    The output projection c_proj is created (it takes part in the default init) but not applied.
    """

    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        mask = torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, 1, max_seqlen, max_seqlen)
        self.register_buffer("bias", mask)
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        q, k, v = (z.view(b, t, self.n_head, c // self.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = F.relu(att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf")))
        return (att @ v).transpose(1, 2).contiguous().view(b, t, c)


batch_size = 16
max_seqlen = 1024
n_embd = 768
n_head = 12


def get_inputs():
    x = torch.rand(batch_size, max_seqlen, n_embd)
    return [x]


def get_init_inputs():
    return [n_embd, n_head, max_seqlen]
