"""The work before every call of a candidate's, judged or timed, declared once: the candidate process does it before
each call, and the judge's calibration of a batch of timed calls does it between its calls as the candidate's do."""

from __future__ import annotations

import torch

from .device import DeviceOps


def poison(ops: DeviceOps, like: torch.Tensor | tuple[int, torch.dtype] | None, value: float) -> None:
    """Fill freed memory with ``value`` so a candidate reading uninitialised memory sees garbage.
    On CUDA the caching allocator hands the same blocks out again; on the CPU malloc usually does.
    ``like`` is a tensor or just (numel, dtype) of the expected output, which must not stay alive."""
    if like is None:
        return
    try:
        n, dtype = (like.numel(), like.dtype) if isinstance(like, torch.Tensor) else like
        dev = like.device if isinstance(like, torch.Tensor) else ops.device
        # Several blocks held at once, then freed: whichever free block the allocator hands out next holds it.
        bufs = [torch.empty(n, dtype=dtype if dtype.is_floating_point else torch.float32, device=dev)
                for _ in range(2 if torch.device(dev).type == "cuda" else 6)]
        for buf in bufs:  # NaN as 0xFF bytes, outside torch's dispatcher (DeviceOps.fill_bytes)
            ops.fill_bytes(buf, 0xFF) if value != value else buf.fill_(value)
        del bufs
    except Exception:  # noqa: BLE001 - poisoning is best effort (e.g. out of memory)
        pass


def pre_call(ops: DeviceOps, like: tuple[int, torch.dtype] | None, seed: int, *, wait: bool = True) -> None:
    """The work before every call, judged or timed, the same each time so none of it tells them apart: freed memory
    poisoned (sized like the expected output: ``like``, its (numel, dtype)), the cache flushed, the persisting-L2
    limit reset, the judge's seed. ``wait``: the host waits for the device's part (False inside a batch of timed calls:
    the stream orders it before the call, and the host goes on queueing)."""
    if like is not None:
        poison(ops, like, float("nan"))
    ops.flush_l2()
    ops.reset_persisting_l2()
    if wait:
        ops.sync()
    torch.manual_seed(seed)
