import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked batch-first LSTM from given (h0, c0); returns the final hidden state h_n (the head is evaluated but unused)."""

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout,
                            bidirectional=False)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor) -> torch.Tensor:
        out, state = self.lstm(x, (h0, c0))
        self.fc(out[:, -1, :])  # computed but not returned
        return state[0]


batch_size = 10
sequence_length = 512
input_size = 128
hidden_size = 256
num_layers = 6
output_size = 10
dropout = 0.0


def get_inputs():
    x = torch.rand(batch_size, sequence_length, input_size)
    h0 = torch.rand((num_layers, batch_size, hidden_size))
    c0 = torch.rand((num_layers, batch_size, hidden_size))
    return [x, h0, c0]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
