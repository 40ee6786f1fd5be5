import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked bidirectional batch-first LSTM from given (h0, c0); returns a linear layer on the last time step."""

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout,
                            bidirectional=True)
        self.fc = nn.Linear(hidden_size * 2, output_size)

    def forward(self, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :])


batch_size = 10
sequence_length = 512
input_size = 128
hidden_size = 256
num_layers = 6
output_size = 10
dropout = 0.0


def get_inputs():
    x = torch.rand(batch_size, sequence_length, input_size)
    h0 = torch.rand((num_layers * 2, batch_size, hidden_size))
    c0 = torch.rand((num_layers * 2, batch_size, hidden_size))
    return [x, h0, c0]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
