"""Test doubles for the loop tests: a scripted model client and Python-only candidates (no C++ builds)."""

from __future__ import annotations

from agents.models import Completion, ModelRequest, Usage

RELU_OK = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(x, 0.0)
'''

RELU_SYNTAX_ERROR = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.clamp_min(x, 0.0)) + undefined_thing
'''

RELU_WRONG = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 0.5
'''


def fenced(code: str, prose: str = "Here is the kernel.") -> str:
    return f"{prose}\n\n```python\n{code.strip()}\n```\n"


class ScriptedClient:
    """Answers turn t of every request with script[t-1] (the last entry repeats); records requests."""

    provider = "scripted"
    model = "scripted-1"

    def __init__(self, script: list[str], spec: str = "scripted", cost: float | None = 0.01) -> None:
        self.script = script
        self.spec = spec
        self.cost = cost
        self.requests: list[ModelRequest] = []

    async def complete(self, request: ModelRequest) -> Completion:
        self.requests.append(request)
        text = self.script[min(request.context.turn, len(self.script)) - 1]
        return Completion(text=text, finish="stop", usage=Usage(input_tokens=100, output_tokens=50),
                          cost_usd=self.cost, model=self.model, provider=self.provider)

    async def aclose(self) -> None:
        return None
