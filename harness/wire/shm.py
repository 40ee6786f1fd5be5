"""Tensor bytes between the judge and the candidate process: a memfd both map, laid out by the judge.

Tensors cross as descriptors (offset, shape, dtype) plus raw bytes; the reader validates the
descriptor and copies the values out, so nothing it receives is executed or unpickled.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import mmap
import os
from typing import Any

import torch

from .conn import WireError
from .device_buffer import DeviceBuffer, DeviceBufferError, emulated, shared_buffer_type
from .memfd import grow, shared_memfd
from .messages import MAX_DIMS

# dtypes that may cross; anything else is refused (the judge never getattr's a name it did not list).
DTYPES: dict[str, torch.dtype] = {str(d).removeprefix("torch."): d for d in (
    torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.int16,
    torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex128)}


def dtype_name(d: torch.dtype) -> str:
    return str(d).removeprefix("torch.")


def same_device(a: str | torch.device, b: str | torch.device) -> bool:
    """Whether two device names name one device. ``cuda`` without an index is the current CUDA device, where torch
    puts a tensor made on it: the job names its device ``cuda`` while a mapped device buffer's tensor says ``cuda:0``,
    which torch.device's own equality tells apart (that made every GPU timing set a copy refilled on the judge's
    clock instead of the shared buffer read in place)."""
    a, b = torch.device(a), torch.device(b)
    if a.type != b.type:
        return False
    if a.index == b.index:
        return True
    if a.type == "cuda":
        current = torch.cuda.current_device()
        return (current if a.index is None else a.index) == (current if b.index is None else b.index)
    return (a.index or 0) == (b.index or 0)


def dense_order(t: torch.Tensor) -> list[int] | None:
    """The order of ``t``'s dimensions, outermost first, in which its storage holds its elements densely when that is
    not row-major (a channels-last tensor: [0, 2, 3, 1]); None when ``t`` is contiguous or not dense (overlapping or
    with gaps: copied row-major)."""
    if t.is_contiguous() or t.dim() < 2:
        return None
    order = sorted(range(t.dim()), key=lambda d: (-t.stride(d), d))
    return order if t.permute(order).is_contiguous() else None


def stored_flat(t: torch.Tensor) -> tuple[torch.Tensor, list[int] | None]:
    """``t``'s values as one flat tensor in the order its storage holds them where that is dense (``dense_order``), else
    row-major; and that order (None: row-major). What an output's hand-over copies, whichever way it goes."""
    order = dense_order(t)
    return (t.permute(order).reshape(-1) if order is not None else t.contiguous().reshape(-1)), order


def _inverse(order: list[int]) -> list[int]:
    inv = [0] * len(order)
    for i, d in enumerate(order):
        inv[d] = i
    return inv


class SharedBuffer:
    """A memfd both processes map. The judge creates and grows it; the other side maps the size it is told."""

    # a descriptor the other side must map before its next use (a grown device buffer is a new allocation; a memfd
    # grows in place and never has one)
    pending_fd: int | None = None

    def __init__(self, fd: int, size: int, *, pin: bool = False) -> None:
        self.fd = fd
        self.size = 0
        self._mm: mmap.mmap | None = None
        self.pin = pin and torch.cuda.is_available()
        self._pinned: int | None = None  # address registered with CUDA
        self.map(size)

    @classmethod
    def create(cls, size: int = 1 << 20, *, pin: bool = False) -> SharedBuffer:
        return cls(shared_memfd("kv-shm", size), size, pin=pin)

    def map(self, size: int) -> None:
        if size == self.size and self._mm is not None:
            return
        self._unpin()
        # Tensors made by frombuffer keep the old map alive until they go; it is never closed by hand.
        self._mm = mmap.mmap(self.fd, size) if size else None
        self.size = size
        if self.pin and self._mm is not None:
            self._pin()

    def _pin(self) -> None:
        """Page-lock this mapping for CUDA (EvalSettings.pin_shared_memory): copies between the device and a
        registered range run as DMA instead of through staging buffers. Best effort: unpinned on failure."""
        addr = ctypes.addressof(ctypes.c_char.from_buffer(self._mm))
        if int(torch.cuda.cudart().cudaHostRegister(addr, self.size, 0)) == 0:
            self._pinned = addr
        else:
            self.pin = False

    def _unpin(self) -> None:
        if self._pinned is not None:
            torch.cuda.cudart().cudaHostUnregister(self._pinned)
            self._pinned = None

    def close(self) -> None:
        """Let the buffer go: the descriptor now, the pages once no tensor made from the map is left (closing the
        map by hand would fail while one is). Idempotent."""
        self._unpin()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self._mm = None

    def ensure(self, size: int) -> None:
        """Judge side: grow the file (never shrink) and remap."""
        if size > self.size:
            grow(self.fd, size)
            self.map(size)

    def _bytes(self, offset: int, nbytes: int) -> torch.Tensor:
        if offset < 0 or nbytes < 0 or offset + nbytes > self.size:
            raise WireError(f"descriptor outside the shared buffer ({offset}+{nbytes} > {self.size})")
        return self._view(offset, nbytes)

    def _view(self, offset: int, nbytes: int) -> torch.Tensor:
        return torch.frombuffer(self._mm, dtype=torch.uint8, count=nbytes, offset=offset)

    def write(self, t: torch.Tensor, offset: int, *, wait: bool = True) -> dict:
        """Copy ``t``'s values to ``offset``, in the order its storage holds them where that is dense (one flat copy
        whatever the layout: a channels-last output is not permuted on the way, which the judge's calibration, a
        contiguous copy, would not have paid for); returns its descriptor (``dim_order`` when not row-major). ``wait``:
        see ``DeviceSharedBuffer.write`` (host memory: the copy is done when this returns)."""
        t = t.detach()
        nbytes = t.numel() * t.element_size()
        flat, order = stored_flat(t)
        if nbytes:
            self._bytes(offset, nbytes).copy_(flat.view(torch.uint8))
        desc = {"offset": offset, "shape": list(t.shape), "dtype": dtype_name(t.dtype), "nbytes": nbytes}
        if order is not None:
            desc["dim_order"] = order
        return desc

    def _described(self, desc: dict) -> tuple[torch.dtype, list[int], int, int, list[int] | None]:
        """(dtype, shape, offset, bytes, dim order) of a descriptor, validated against this buffer before anything is
        allocated: the shape may claim any size."""
        try:
            dtype = DTYPES[str(desc["dtype"])]
            shape = [int(x) for x in desc["shape"]]
            offset = int(desc["offset"])
            order = None if desc.get("dim_order") is None else [int(x) for x in desc["dim_order"]]
        except (KeyError, TypeError, ValueError) as exc:
            raise WireError(f"bad tensor descriptor: {desc!r:.200}") from exc
        if any(x < 0 for x in shape) or len(shape) > MAX_DIMS:
            raise WireError(f"bad shape in a tensor descriptor: {shape!r:.200}")
        if order is not None and sorted(order) != list(range(len(shape))):
            raise WireError(f"bad dim_order in a tensor descriptor: {order!r:.200}")
        nbytes = math.prod(shape) * dtype.itemsize
        if offset < 0 or offset + nbytes > self.size:
            raise WireError(f"descriptor outside the shared buffer ({offset}+{nbytes} > {self.size})")
        return dtype, shape, offset, nbytes, order

    def read(self, desc: dict, device: str | torch.device = "cpu") -> torch.Tensor:
        """A new contiguous tensor on ``device`` holding the described values (validated, copied out)."""
        dtype, shape, offset, nbytes, order = self._described(desc)
        out = torch.empty(shape if order is None else [shape[d] for d in order], dtype=dtype, device=device)
        if nbytes:
            self._copy_out(out.reshape(-1).view(torch.uint8), offset, nbytes)
        return out if order is None else out.permute(_inverse(order)).contiguous()

    def _copy_out(self, dest: torch.Tensor, offset: int, nbytes: int) -> None:
        """``nbytes`` bytes from ``offset`` into ``dest`` (uint8, contiguous, validated against the buffer)."""
        dest.copy_(self._bytes(offset, nbytes))

    def view(self, desc: dict, device: str | torch.device) -> torch.Tensor | None:
        """The described tensor in place in this buffer (validated; writes to it are writes to the buffer) when the
        buffer's memory is on ``device``; None otherwise (``read`` copies it there)."""
        dtype, shape, offset, nbytes, order = self._described(desc)
        if not same_device(device, self._device()):
            return None
        if not nbytes:
            return torch.empty(shape, dtype=dtype, device=device)
        if order is not None:
            return self._bytes(offset, nbytes).view(dtype).reshape([shape[d] for d in order]).permute(_inverse(order))
        return self._bytes(offset, nbytes).view(dtype).reshape(shape)

    def _device(self) -> torch.device:
        return torch.device("cpu")

    def read_into(self, desc: dict, out: torch.Tensor) -> None:
        """The described values copied into ``out`` in place (same storage, new contents): a contiguous tensor of
        exactly the described shape and dtype."""
        dtype, shape, offset, nbytes, order = self._described(desc)
        if out.dtype != dtype or list(out.shape) != shape or not out.is_contiguous() or order is not None:
            raise WireError(f"descriptor {desc!r:.200} does not describe the tensor it should refill")
        if nbytes:
            self._copy_out(out.reshape(-1).view(torch.uint8), offset, nbytes)


class DeviceSharedBuffer(SharedBuffer):
    """The same layout in device memory both processes map (``harness.wire.device_buffer``; EvalSettings.device_handover):
    inputs and outputs are copied device to device. It cannot grow in place: a larger one is a new allocation, whose
    descriptor goes out with the judge's next reply (``pending_fd``) and replaces the other side's mapping."""

    def __init__(self, dev: DeviceBuffer) -> None:  # not super().__init__: that maps a memfd
        self.dev, self.size, self.pin = dev, dev.size, False
        self.fd = dev.fd if dev.fd is not None else -1

    @classmethod
    def create(cls, size: int = 1 << 20, *, pin: bool = False) -> DeviceSharedBuffer:
        return cls(shared_buffer_type().create(size))

    @classmethod
    def attach(cls, fd: int, size: int) -> DeviceSharedBuffer:
        return cls(shared_buffer_type().attach(fd, size))

    def map(self, size: int) -> None:
        if size != self.size:
            raise WireError(f"the device buffer changed size ({self.size} -> {size}) without a new descriptor")

    def remap(self, fd: int, size: int) -> None:
        """Other side: the judge's new, larger allocation replaces the old one."""
        self.dev.close()
        self.dev, self.size = shared_buffer_type().attach(fd, size), size

    def ensure(self, size: int) -> None:
        if size > self.size:
            self.dev.close()
            # exactly what is asked (rounded to the allocation granularity): a trial's inputs and output are the same
            # size every trial, and the timing sets are a step no headroom would cover; at full size a quarter more
            # of a 24 GiB buffer would be 6 GiB of the candidate's device memory
            self.dev = shared_buffer_type().create(size)
            self.size, self.fd, self.pending_fd = self.dev.size, self.dev.fd, self.dev.fd

    def _view(self, offset: int, nbytes: int) -> torch.Tensor:
        return self.dev.view(offset, nbytes)

    def _device(self) -> torch.device:
        return self.dev.bytes.device

    def write(self, t: torch.Tensor, offset: int, *, wait: bool = True) -> dict:
        """``wait`` False leaves the copy queued: the writer must sync before it tells the other process."""
        desc = super().write(t, offset)
        if wait and self.dev.bytes.is_cuda:
            torch.cuda.synchronize()  # the other process reads it on its own stream once told: complete before that
        return desc

    def close(self) -> None:
        self.dev.close()
        self.fd = -1


def handover_buffer(device_handover: bool, pin: bool, cuda: bool) -> SharedBuffer:
    """The buffer a timed call's output is handed over through, judge side (and its calibration peer's): shared device
    memory where asked for and the driver allows it (EvalSettings.device_handover), else host shared memory."""
    if device_handover and (cuda or emulated()):
        with contextlib.suppress(DeviceBufferError):  # the driver refused: host memory, and the hello says so
            return DeviceSharedBuffer.create()
    return SharedBuffer.create(pin=pin and cuda)


def pack_args(buf: SharedBuffer, args: list[Any], *, grow: bool, offset: int = 0) -> list[dict]:
    """Write ``args`` to ``buf`` from ``offset`` (tensors as bytes, the rest as JSON values); ``grow``: judge side."""
    if grow:
        buf.ensure(offset + args_nbytes(args))
    out, off = [], offset
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append({"tensor": buf.write(a, off)})
            off += _aligned(a.numel() * a.element_size())
        else:
            out.append({"value": a})
    return out


def unpack_args(buf: SharedBuffer, descs: list[dict], device: str) -> list[Any]:
    return [buf.read(d["tensor"], device) if "tensor" in d else d.get("value") for d in descs]


def args_nbytes(args: list[Any]) -> int:
    return sum(_aligned(a.numel() * a.element_size()) for a in args if isinstance(a, torch.Tensor))


def _aligned(n: int) -> int:
    return (n + 255) // 256 * 256
