"""Device operations the timers need: synchronisation, clocks, L2 flush, persisting-L2 reset; and the CPUs this
process may use."""

from __future__ import annotations

import ctypes
import glob
import os
import time

import torch

CPU_FLUSH_BYTES = 64 * 2**20


class DeviceOps:
    def __init__(self, device: str) -> None:
        self.device = device
        self.is_cuda = device.startswith("cuda")
        if self.is_cuda:
            props = torch.cuda.get_device_properties(torch.device(device))
            l2 = int(getattr(props, "L2_cache_size", 0) or 50 * 2**20)
            self.flush_bytes = max(2 * l2, 128 * 2**20)
        else:
            self.flush_bytes = CPU_FLUSH_BYTES
        self._flush_buf = torch.empty(self.flush_bytes // 4, dtype=torch.int32, device=device)
        self._cudart = _load_cudart() if self.is_cuda else None
        self.l2_limit_after_reset: int | None = None
        self._cycles_per_us: float | None = None
        # The hold is torch's spin kernel (private API, present for years); without it, no hold. Taken
        # now, before any candidate code runs: a replaced torch.cuda._sleep never runs inside the timer.
        self._spin = getattr(torch.cuda, "_sleep", None) if self.is_cuda else None
        self.can_hold = self._spin is not None

    def hold(self, us: float) -> None:
        """Keep the device busy for about ``us`` microseconds (a spinning kernel on the current stream),
        so that work queued after it starts only once the host has had that long to queue it. No-op on
        the CPU."""
        if not self.can_hold or us <= 0:
            return
        if self._cycles_per_us is None:
            self._cycles_per_us = self._spin_rate()
        self._spin(int(us * self._cycles_per_us))

    def _spin_rate(self) -> float:
        """Spin cycles per microsecond, measured (the SM clock the spin counts varies by GPU and state)."""
        cycles = 2_000_000
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        rates = []
        for _ in range(3):
            start.record()
            self._spin(cycles)
            end.record()
            end.synchronize()
            rates.append(cycles / max(start.elapsed_time(end) * 1e3, 1e-3))
        return max(rates)  # the fastest clock seen: a hold is never shorter than asked

    def sync(self) -> None:
        if self.is_cuda:
            torch.cuda.synchronize()

    def flush_l2(self) -> None:
        # Writing >= 2x L2 evicts the previous iteration's operands (outside the timed window).
        self.fill_bytes(self._flush_buf, 1)

    def fill_bytes(self, t: torch.Tensor, byte: int) -> None:
        """Set every byte of ``t``'s storage to ``byte`` without torch's dispatcher (libc memset, cudaMemset): work
        the harness does outside the judge's clock (flush, poison) must not be a torch op a candidate's kernel
        registered for (a torch.library override of aten::fill_) or its dispatch mode sees. 0xFF is a NaN in every
        floating dtype."""
        n = t.numel() * t.element_size()
        if not n:
            return
        if not self.is_cuda:
            _memset(t.data_ptr(), byte, n)
        elif self._cudart is not None:
            self._cudart.cudaMemset(ctypes.c_void_p(t.data_ptr()), ctypes.c_int(byte), ctypes.c_size_t(n))
        else:
            t.view(torch.uint8).fill_(byte)

    def reset_persisting_l2(self) -> bool:
        """Undo any persisting-L2 carve-out a candidate set up (catalog T7). False when unavailable."""
        if self._cudart is None:
            return False
        try:
            self._cudart.cudaCtxResetPersistingL2Cache()
            self._cudart.cudaDeviceSetLimit(ctypes.c_int(0x06), ctypes.c_size_t(0))  # cudaLimitPersistingL2CacheSize
        except Exception:
            return False
        if self.l2_limit_after_reset is None:  # what the harness's own reset leaves (0, where the device allows it)
            self.l2_limit_after_reset = self.persisting_l2_limit()
        return True

    def persisting_l2_limit(self) -> int | None:
        if self._cudart is None:
            return None
        value = ctypes.c_size_t(0)
        try:
            if self._cudart.cudaDeviceGetLimit(ctypes.byref(value), ctypes.c_int(0x06)) != 0:
                return None
        except Exception:
            return None
        return int(value.value)

    def used_bytes(self) -> int | None:
        if not self.is_cuda:
            return None
        free, total = torch.cuda.mem_get_info()
        return int(total - free)

    def room_bytes(self) -> int | None:
        """What this process could still allocate on its device: free device memory and the blocks its caching
        allocator holds unused (None on a CPU)."""
        if not self.is_cuda:
            return None
        free, _total = torch.cuda.mem_get_info()
        return int(free + torch.cuda.memory_reserved() - torch.cuda.memory_allocated())


_memset = ctypes.memset  # taken when the harness is imported, before any candidate code


def _load_cudart():
    names = ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]
    torch_lib = os.path.join(os.path.dirname(torch.__file__), "lib")
    names += sorted(glob.glob(os.path.join(torch_lib, "libcudart*.so*")))
    for site in glob.glob(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia", "cu*", "lib", "libcudart.so*")):
        names.append(site)
    for site in glob.glob(os.path.join(os.path.dirname(os.path.dirname(torch.__file__)), "nvidia", "cuda_runtime", "lib", "libcudart.so*")):
        names.append(site)
    for n in names:
        try:
            return ctypes.CDLL(n)
        except OSError:
            continue
    return None


class Clock:
    """One interval: CUDA events on the current stream, or perf_counter on the CPU."""

    def __init__(self, ops: DeviceOps) -> None:
        self.ops = ops

    def interval(self, fn, *, sync_before_end: bool, lead_us: float = 0.0) -> tuple[float, object]:
        """Run ``fn`` once and return (milliseconds, its result). ``lead_us`` > 0 queues a device-side
        hold before the start event: the host then queues ``fn``'s first launches while the device is
        still busy, so the interval starts at the device work instead of at the host's launch latency
        (which differed by up to ~60 us between otherwise identical processes on an H200). Host time
        beyond the lead still shows: the end event waits for the host to queue it."""
        if lead_us > 0:
            self.ops.hold(lead_us)  # no-op on the CPU
        if self.ops.is_cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            out = fn()
            if sync_before_end:
                torch.cuda.synchronize()
            end.record()
            end.synchronize()
            return start.elapsed_time(end), out
        t0 = time.perf_counter()
        out = fn()
        return (time.perf_counter() - t0) * 1e3, out

    def reading(self, fn, *, lead_us: float = 0.0, wait: bool = True) -> tuple[Reading, object]:
        """A timed call's reading: ``interval`` where the host waits for each call (``wait``), else ``queued`` (a
        batch's calls, read after the batch)."""
        if wait:
            ms, out = self.interval(fn, sync_before_end=False, lead_us=lead_us)
            return Reading(ms=ms), out
        return self.queued(fn, lead_us=lead_us)

    def queued(self, fn, *, lead_us: float = 0.0) -> tuple[Reading, object]:
        """``interval`` without waiting for the device: the events are recorded and the reading is taken later
        (``Reading.ms``), so a batch of timed calls runs back to back with one host wait at its end, and the host's
        own work between calls (the next call's pre-call work, the hand-over's bookkeeping) overlaps the device's
        instead of adding to the batch's interval. On the CPU the reading is taken at once."""
        if not self.ops.is_cuda:
            t0 = time.perf_counter()
            out = fn()
            return Reading(ms=(time.perf_counter() - t0) * 1e3), out
        if lead_us > 0:
            self.ops.hold(lead_us)
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        out = fn()
        end.record()
        return Reading(start, end), out


class Reading:
    """A queued interval's milliseconds, read once the device has run it (the first ``ms`` waits for its end event)."""

    def __init__(self, start=None, end=None, *, ms: float | None = None) -> None:
        self.start, self.end, self._ms = start, end, ms

    def ms(self) -> float:
        if self._ms is None:
            self.end.synchronize()
            self._ms = self.start.elapsed_time(self.end)
        return self._ms


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask: taskset, a cgroup cpuset), not the host's count;
    the build pools size themselves by it, so a pool pinned to 16 of 32 cores runs 16 compilers."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # platforms without affinity
        return os.cpu_count() or 1
