"""Executing a problem's source: the reference ``Model``, its inputs, and input specs on meta tensors."""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Any

from .catalog import Problem, Size


@dataclass(frozen=True)
class TensorSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str  # 'float32', 'int64', ...

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class ValueSpec:
    """A non-tensor forward argument (an int dim, a float scale)."""

    name: str
    value: Any


def exec_source(source: str, filename: str = "<problem>") -> types.ModuleType:
    """Run a KernelBench-format source in a fresh module namespace."""
    mod = types.ModuleType("kernelbench_problem")
    mod.__file__ = filename
    exec(compile(source, filename, "exec"), mod.__dict__)
    for required in ("Model", "get_inputs", "get_init_inputs"):
        if required not in mod.__dict__:
            raise AttributeError(f"{filename}: missing {required}")
    return mod


def load_module(problem: Problem, size: Size = "full") -> types.ModuleType:
    return exec_source(problem.source(size), str(problem.path))


def forward_arg_names(mod: types.ModuleType) -> list[str]:
    import inspect

    params = list(inspect.signature(mod.Model.forward).parameters)
    return [p for p in params if p != "self"]


def input_specs(problem: Problem, size: Size = "full") -> list[TensorSpec | ValueSpec]:
    """Shapes and dtypes of ``get_inputs()`` computed on the meta device: nothing is allocated."""
    import torch

    mod = load_module(problem, size)
    names = forward_arg_names(mod)
    with torch.device("meta"):
        inputs = mod.get_inputs()
    specs: list[TensorSpec | ValueSpec] = []
    for i, value in enumerate(inputs):
        name = names[i] if i < len(names) else f"arg{i}"
        if isinstance(value, torch.Tensor):
            specs.append(TensorSpec(name, tuple(value.shape), str(value.dtype).removeprefix("torch.")))
        else:
            specs.append(ValueSpec(name, value))
    return specs


def init_inputs(problem: Problem, size: Size = "full") -> list[Any]:
    return list(load_module(problem, size).get_init_inputs())
