import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked bidirectional sequence-first GRU from a given h0; returns the final hidden state of every layer and direction."""

    def __init__(self, input_size, hidden_size, num_layers=3, bias=True, batch_first=False):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first, dropout=0, bidirectional=True)

    def forward(self, x: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        output, h_n = self.gru(x, h0)
        return h_n


batch_size = 10
seq_len = 512
input_size = 128
hidden_size = 256
num_layers = 6


def get_inputs():
    x = torch.rand(seq_len, batch_size, input_size)
    h0 = torch.rand((num_layers * 2, batch_size, hidden_size))
    return [x, h0]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
