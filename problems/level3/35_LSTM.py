import torch
import torch.nn as nn


class Model(nn.Module):
    """Stacked batch-first LSTM followed by a linear layer on the last time step.

    When h0/c0 are not passed (get_inputs passes only x) they are drawn with torch.randn on every
    call, so the output depends on the global RNG state at call time.
    """

    def __init__(self, input_size, hidden_size, num_layers, output_size, dropout=0.0):
        super().__init__()
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout,
                            bidirectional=False)
        self.fc = nn.Linear(hidden_size, output_size)

    def forward(self, x: torch.Tensor, h0=None, c0=None) -> torch.Tensor:
        state_shape = (self.num_layers, x.size(0), self.hidden_size)
        if h0 is None:
            h0 = torch.randn(*state_shape, device=x.device)
        if c0 is None:
            c0 = torch.randn(*state_shape, device=x.device)
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
    return [x]


def get_init_inputs():
    return [input_size, hidden_size, num_layers, output_size, dropout]
