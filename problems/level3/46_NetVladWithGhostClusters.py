import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """NetVLAD pooling with ghost clusters: soft-assign to K+G centres, drop the G ghosts, aggregate residuals."""

    def __init__(self, cluster_size, feature_size, ghost_clusters):
        super().__init__()
        self.feature_size = feature_size
        self.cluster_size = cluster_size
        self.ghost_clusters = ghost_clusters
        init_sc = 1 / math.sqrt(feature_size)
        clusters = cluster_size + ghost_clusters
        self.clusters = nn.Parameter(init_sc * torch.randn(feature_size, clusters))
        self.batch_norm = nn.BatchNorm1d(clusters)
        self.clusters2 = nn.Parameter(init_sc * torch.randn(1, feature_size, cluster_size))
        self.out_dim = cluster_size * feature_size

    def forward(self, x: torch.Tensor, mask=None) -> torch.Tensor:
        # x: (B, N, D) descriptors; returns (B, D*K). mask is accepted and ignored.
        n = x.size()[1]
        x = x.view(-1, self.feature_size)  # (B*N, D)
        if x.device != self.clusters.device:
            raise ValueError(f"x.device {x.device} != cluster.device {self.clusters.device}")

        assignment = F.softmax(self.batch_norm(torch.matmul(x, self.clusters)), dim=1)  # (B*N, K+G)
        assignment = assignment[:, : self.cluster_size].view(-1, n, self.cluster_size)  # (B, N, K)
        a = torch.sum(assignment, dim=1, keepdim=True) * self.clusters2  # (B, D, K)

        x = x.view(-1, n, self.feature_size)
        vlad = torch.matmul(assignment.transpose(1, 2), x).transpose(1, 2)  # (B, D, K)
        vlad = F.normalize(vlad - a)  # intra-normalisation over D
        vlad = vlad.reshape(-1, self.cluster_size * self.feature_size)
        return F.normalize(vlad)


batch_size = 2048
num_features = 100
num_clusters = 32
feature_size = 512
ghost_clusters = 16


def get_inputs():
    x = torch.rand(batch_size, num_features, feature_size)
    return [x]


def get_init_inputs():
    return [num_clusters, feature_size, ghost_clusters]
