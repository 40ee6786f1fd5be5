"""Two times of a problem on a device, from datasheet peaks (the optimistic side) on a GPU and from the host's
measured peaks on a CPU (``harness.host_peaks``); unknown GPUs get neither.

* T_SOL = max(FLOPs / peak FLOP/s, bytes / peak bandwidth) of the reference's own algorithm: the SOL score's
  yardstick. Not a bound on the function: structure the problem states (a diagonal or triangular operand)
  lets an honest kernel skip FLOPs and input bytes the reference spends.
* T_floor = output bytes / peak bandwidth: every implementation writes its outputs, so a time below it is
  physically impossible. Only this one may call a kernel a hack (guard ``roofline_floor``).
"""

from __future__ import annotations

from pathlib import Path

from problems import Problem, Size
from problems.roofline import count

from .host_peaks import FLOOR_MARGIN, host_peaks
from .measure.precision import casts
from .measure.record import Roofline

# name fragment -> (fp32 non-tensor FLOP/s, TF32 dense FLOP/s, HBM bytes/s). Datasheet, dense.
PEAKS: dict[str, tuple[float, float, float]] = {
    "H200": (67e12, 495e12, 4.8e12),
    "H100": (67e12, 495e12, 3.35e12),
    "A100": (19.5e12, 156e12, 2.04e12),
    "L40S": (91.6e12, 183e12, 0.864e12),
    "B200": (80e12, 1100e12, 8.0e12),
}


def device_peaks(device_name: str) -> tuple[float, float, float] | None:
    for key, val in PEAKS.items():
        if key in device_name:
            return val
    return None


# A bf16/fp16 run: dense 16-bit tensor-core rates are twice the TF32 ones on every device above (datasheet),
# packed 16-bit arithmetic twice fp32's, and a floating element takes half the bytes.
HALF_SPEEDUP = 2.0


def roofline_for(problem: Problem, size: Size, device: str, device_name: str | None = None,
                 precision: str = "fp32", cache_dir: Path | str | None = None) -> Roofline:
    """``cache_dir``: where a CPU host's measured peaks are kept (measured there on first use); without it a CPU
    gets no bound."""
    c = count(problem, size)
    r = Roofline(flops=c.flops, bytes=c.bytes, matmul_flops=c.matmul_flops, output_bytes=c.output_bytes,
                 device_name=device_name or device)
    if not device.startswith("cuda"):
        return _cpu_roofline(r, c, precision, cache_dir) if cache_dir is not None else r
    peaks = device_peaks(device_name or "")
    if peaks:
        # A 16-bit run's outputs may take half the bytes; the floor may only err low.
        r.t_floor_ms = c.output_bytes / (HALF_SPEEDUP if casts(precision) else 1.0) / peaks[2] * 1e3
    if peaks and casts(precision):
        # Every byte counted as halved (integer inputs too): the bound may only err low, never flag an honest kernel.
        fp32_peak, tf32_peak, bw = peaks
        half_peak = HALF_SPEEDUP * tf32_peak
        r.bytes = c.bytes / HALF_SPEEDUP
        r.peak_flops, r.peak_bandwidth, r.precision = half_peak, bw, precision
        r.t_sol_ms = max(c.matmul_flops / half_peak, (c.flops - c.matmul_flops) / (HALF_SPEEDUP * fp32_peak),
                         r.bytes / bw) * 1e3
    elif peaks:
        _, tf32_peak, bw = peaks
        # A candidate may legitimately use TF32 tensor cores, so the compute bound uses the TF32 rate.
        r.peak_flops, r.peak_bandwidth, r.precision = tf32_peak, bw, "tf32"
        fp32_peak = peaks[0]
        r.t_sol_ms = max(c.matmul_flops / tf32_peak, (c.flops - c.matmul_flops) / fp32_peak, c.bytes / bw) * 1e3
    return r


def _cpu_roofline(r: Roofline, c, precision: str, cache_dir: Path | str) -> Roofline:
    """The host's measured best rates give T_SOL; the floor takes FLOOR_MARGIN times the measured bandwidth (a
    measurement errs low, and the floor may only err low). A bf16/fp16 run's bytes count as halved, as on a GPU;
    its FLOP rate is fp32's (the CPU's 16-bit arithmetic is no faster than that here, and T_SOL judges nothing)."""
    peaks = host_peaks(cache_dir)
    bw, flops = float(peaks["bandwidth"]), float(peaks["flops"])
    half = HALF_SPEEDUP if casts(precision) else 1.0
    r.bytes = c.bytes / half
    r.peak_flops, r.peak_bandwidth, r.precision = flops, bw, precision
    r.t_sol_ms = max(c.flops / flops, r.bytes / bw) * 1e3
    r.t_floor_ms = c.output_bytes / half / (FLOOR_MARGIN * bw) * 1e3
    r.peaks_source = (f"measured on this host {peaks.get('measured_at', '')[:19]} (best fill/copy and fp32 matmul on "
                      f"{peaks.get('threads')} CPUs); floor at {FLOOR_MARGIN:g}x the measured bandwidth")
    return r
