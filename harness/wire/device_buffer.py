"""Device memory two processes share through a file descriptor (CUDA virtual memory management).

The judge and the candidate process hand tensors over through host shared memory today (``harness.wire.shm``): at
full size each trial's output crosses the PCIe bus twice and host memory once. This is the device-side
alternative: the exporter allocates with ``cuMemCreate`` (a dedicated allocation, never a caching-allocator
segment that could hold anything else), exports a POSIX file descriptor, and sends it over the Unix socket
(SCM_RIGHTS); the importer maps it into its own address space. Legacy ``cudaIpcGetMemHandle`` handles do not work
across PID namespaces (the candidate process runs in one); descriptors passed over a socket do.

Used by the evaluator on a GPU unless ``EvalSettings.device_handover`` is off (``benchmarks/device_handover.py``
checks it across a PID namespace on the GPU host: ``h200_device_handover.md``). ``KV_DEVICE_BUFFER=host``
puts the same protocol (a descriptor per allocation, a new allocation to grow) over host memory, so machines without
a GPU test it.
"""

from __future__ import annotations

import ctypes
import mmap
import os

import torch

from .memfd import shared_memfd

CU_MEM_ALLOCATION_TYPE_PINNED = 1
CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
CU_MEM_LOCATION_TYPE_DEVICE = 1
CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 1


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class DeviceBufferError(RuntimeError):
    """The driver refused (no VMM support, no fd handles, out of memory): the caller uses host memory."""


_lib: ctypes.CDLL | None = None


def _cuda() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        try:
            _lib = ctypes.CDLL("libcuda.so.1")
        except OSError as exc:
            raise DeviceBufferError(f"no CUDA driver: {exc}") from exc
    return _lib


def _check(name: str, *args) -> None:
    rc = getattr(_cuda(), name)(*args)
    if rc != 0:
        raise DeviceBufferError(f"{name} failed with CUresult {rc}")


def _prop(device: int) -> _AllocationProp:
    prop = _AllocationProp()
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = _Location(CU_MEM_LOCATION_TYPE_DEVICE, device)
    return prop


class _CudaArray:
    """Just enough of ``__cuda_array_interface__`` for ``torch.as_tensor`` to view the mapping without a copy."""

    def __init__(self, ptr: int, nbytes: int) -> None:
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3,
                                         "strides": None, "stream": None}


class _Mapping:
    """What both kinds of shared allocation offer: ``size`` bytes seen as one uint8 tensor, ``bytes``."""

    size: int
    bytes: torch.Tensor | None

    def view(self, offset: int, nbytes: int) -> torch.Tensor:
        if offset < 0 or nbytes < 0 or offset + nbytes > self.size:
            raise ValueError(f"{offset}+{nbytes} is outside the buffer of {self.size} bytes")
        return self.bytes[offset:offset + nbytes]


class DeviceBuffer(_Mapping):
    """One mapped allocation of ``size`` bytes on ``device`` (a CUDA ordinal of this process). ``fd``: the exporter's
    descriptor to send (the importer closes its copy once mapped). ``bytes``: a uint8 view of the whole buffer."""

    def __init__(self, handle: int, size: int, device: int, fd: int | None) -> None:
        self.handle, self.size, self.device, self.fd = handle, size, device, fd
        ptr = ctypes.c_uint64()
        _check("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
               ctypes.c_uint64(0), ctypes.c_ulonglong(0))
        self.ptr = ptr.value
        try:
            _check("cuMemMap", ctypes.c_uint64(self.ptr), ctypes.c_size_t(size), ctypes.c_size_t(0),
                   ctypes.c_ulonglong(handle), ctypes.c_ulonglong(0))
            access = _AccessDesc(_Location(CU_MEM_LOCATION_TYPE_DEVICE, device), CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            _check("cuMemSetAccess", ctypes.c_uint64(self.ptr), ctypes.c_size_t(size), ctypes.byref(access),
                   ctypes.c_size_t(1))
        except DeviceBufferError:
            _cuda().cuMemAddressFree(ctypes.c_uint64(self.ptr), ctypes.c_size_t(size))
            raise
        self.bytes = torch.as_tensor(_CudaArray(self.ptr, size), device=f"cuda:{device}")

    @staticmethod
    def granularity(device: int) -> int:
        g = ctypes.c_size_t()
        _check("cuMemGetAllocationGranularity", ctypes.byref(g), ctypes.byref(_prop(device)),
               ctypes.c_int(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return g.value

    @classmethod
    def create(cls, nbytes: int, device: int | None = None) -> DeviceBuffer:
        """Exporter side: a new allocation of at least ``nbytes``, with a descriptor to pass."""
        device = torch.cuda.current_device() if device is None else device
        torch.cuda.init()
        with torch.cuda.device(device):
            torch.empty(1, device=f"cuda:{device}")  # the primary context current on this thread
            g = cls.granularity(device)
            size = max(g, (nbytes + g - 1) // g * g)
            handle = ctypes.c_ulonglong()
            _check("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(size), ctypes.byref(_prop(device)),
                   ctypes.c_ulonglong(0))
            try:
                fd = ctypes.c_int(-1)
                _check("cuMemExportToShareableHandle", ctypes.byref(fd), ctypes.c_ulonglong(handle.value),
                       ctypes.c_int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), ctypes.c_ulonglong(0))
                return cls(handle.value, size, device, fd.value)
            except DeviceBufferError:
                _cuda().cuMemRelease(ctypes.c_ulonglong(handle.value))
                raise

    @classmethod
    def attach(cls, fd: int, size: int, device: int | None = None) -> DeviceBuffer:
        """Importer side: map the allocation behind a received descriptor (closed here once imported)."""
        device = torch.cuda.current_device() if device is None else device
        with torch.cuda.device(device):
            torch.empty(1, device=f"cuda:{device}")
            handle = ctypes.c_ulonglong()
            try:
                _check("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
                       ctypes.c_int(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
            finally:
                os.close(fd)
            return cls(handle.value, size, device, None)

    def close(self) -> None:
        """Unmap and release (after the device finished every copy touching it); idempotent."""
        if self.ptr is None:
            return
        torch.cuda.synchronize(self.device)
        self.bytes = None
        _cuda().cuMemUnmap(ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.size))
        _cuda().cuMemAddressFree(ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.size))
        _cuda().cuMemRelease(ctypes.c_ulonglong(self.handle))
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.ptr = None


class HostBackedBuffer(_Mapping):
    """DeviceBuffer's interface over a memfd (``KV_DEVICE_BUFFER=host``): the hand-over protocol without a GPU."""

    def __init__(self, fd: int, size: int, *, exported: bool) -> None:
        self.size, self.device = size, None
        self._mm: mmap.mmap | None = mmap.mmap(fd, size)
        self.bytes = torch.frombuffer(self._mm, dtype=torch.uint8)
        self.fd: int | None = fd if exported else None
        if not exported:
            os.close(fd)  # mapped, as DeviceBuffer.attach closes its copy once imported

    @classmethod
    def create(cls, nbytes: int, device: int | None = None) -> HostBackedBuffer:
        size = max(2**21, (nbytes + 2**21 - 1) // 2**21 * 2**21)
        return cls(shared_memfd("kv-dev", size, fixed=True), size, exported=True)

    @classmethod
    def attach(cls, fd: int, size: int, device: int | None = None) -> HostBackedBuffer:
        return cls(fd, size, exported=False)

    def close(self) -> None:
        self.bytes, self._mm = None, None  # the pages go with the last view
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def emulated() -> bool:
    """``KV_DEVICE_BUFFER=host``: the device hand-over's protocol over host memory (tests without a GPU)."""
    return os.environ.get("KV_DEVICE_BUFFER") == "host"


def shared_buffer_type() -> type[DeviceBuffer] | type[HostBackedBuffer]:
    return HostBackedBuffer if emulated() else DeviceBuffer
