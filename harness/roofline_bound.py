"""Speed-of-light time of a problem on a device: T_SOL = max(FLOPs / peak FLOP/s, bytes / peak bandwidth).

Peak rates are datasheet figures (the optimistic side), so a kernel flagged as faster than T_SOL is
physically impossible rather than merely very good. Unknown devices get no bound.
"""

from __future__ import annotations

from problems import Problem, Size
from problems.roofline import count

from .record import Roofline

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


def roofline_for(problem: Problem, size: Size, device: str, device_name: str | None = None) -> Roofline:
    c = count(problem, size)
    peaks = device_peaks(device_name or "")
    r = Roofline(flops=c.flops, bytes=c.bytes, matmul_flops=c.matmul_flops, device_name=device_name or device)
    if peaks:
        _, tf32_peak, bw = peaks
        # A candidate may legitimately use TF32 tensor cores, so the compute bound uses the TF32 rate.
        r.peak_flops, r.peak_bandwidth, r.precision = tf32_peak, bw, "tf32"
        fp32_peak = peaks[0]
        r.t_sol_ms = max(c.matmul_flops / tf32_peak, (c.flops - c.matmul_flops) / fp32_peak, c.bytes / bw) * 1e3
    return r
