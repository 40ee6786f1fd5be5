"""Is a ``--device`` usable here? Checked before any work starts, so a wrong device is one line, not a
traceback from a child process minutes later."""

from __future__ import annotations

import re

KNOWN = ("cpu", "cuda")


def device_error(device: str) -> str | None:
    """None when ``device`` ('cpu', 'cuda', 'cuda:N') can run here, else why not, as one line."""
    m = re.fullmatch(r"(cpu|cuda)(?::(\d+))?", device or "")
    if m is None or (m.group(1) == "cpu" and m.group(2)):
        return f"unknown device {device!r}; use one of: {', '.join(KNOWN)}"
    if m.group(1) == "cpu":
        return None
    import torch

    if not torch.cuda.is_available():
        build = f"CUDA {torch.version.cuda}" if torch.version.cuda else "a CPU-only build"
        return (f"--device {device}: no CUDA GPU is visible here (torch {torch.__version__}, {build}); "
                "use --device cpu")
    n = torch.cuda.device_count()
    if m.group(2) and int(m.group(2)) >= n:
        return f"--device {device}: only {n} GPU(s) visible (cuda:0..cuda:{n - 1})"
    return None
