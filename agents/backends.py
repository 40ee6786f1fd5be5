"""The kernel backends a model can be asked for, declared once: the device each runs on and what the answer must
contain. The sweep's config, the model request, the extractor's instructions and the demo model derive from it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Backend = Literal["cuda", "triton", "cpu"]


@dataclass(frozen=True)
class BackendSpec:
    name: Backend
    device: Literal["cuda", "cpu"]
    how: str  # where the kernel goes in the answer (the extractor's instruction to the model)


BACKENDS: dict[str, BackendSpec] = {b.name: b for b in (
    BackendSpec("cuda", "cuda", "the CUDA source passed to torch.utils.cpp_extension.load_inline(cpp_sources=..., "
                                "cuda_sources=...)"),
    BackendSpec("triton", "cuda", "the @triton.jit kernels"),
    BackendSpec("cpu", "cpu", "the C++ source passed to torch.utils.cpp_extension.load_inline(cpp_sources=...) (no CUDA)"),
)}


def default_backend(device: str) -> Backend:
    return "cuda" if device == "cuda" else "cpu"


def runs_on(backend: str, device: str) -> bool:
    return BACKENDS[backend].device == device
