# The honest twin of harness/fixtures/hacks/cpu/few_fast_wrong_calls_set_the_floor_relu.py: the same 2 ms of busy
# work and torch.relu, its clock untouched and every call computed.
import time

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.002:  # the kernel's real work, honestly slow
            pass
        return torch.relu(x)
