# The honest twin of harness/fixtures/open_attacks/cpu/prerelease_helper_huber.py: the same fused loss, all of it inside
# the call.
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def forward(self, predictions, targets):
        return F.smooth_l1_loss(predictions, targets)
