"""Whether a protocol component can change anything for a given measurement record.

A component that cannot apply to a kernel must not move its score: scoring reuses the one measurement
both sides of the component would otherwise read (two timings of the same computation differ only by
noise, and on a loaded host that noise read as a x1.19 geomean move; issue 20, item 2).
"""

from __future__ import annotations

from ..measure.precision import tf32_not_applicable
from ..measure.record import MeasurementRecord


def tf32_applies(record: MeasurementRecord) -> tuple[bool, str]:
    """(applies, why not). TF32 exists only on a CUDA device and switches only matmul-like ops (matmul,
    cuDNN convolution, attention): on the CPU, or for a reference without any, the TF32 baseline is the
    fp32 baseline. A record that does not say whether its reference has matmul-like ops counts as
    applicable (the older records: their TF32 baseline is read as measured). Below fp32 (a bf16/fp16 run) TF32
    changes nothing: both baselines run the same low-precision computation."""
    if why := tf32_not_applicable(record.precision):
        return False, why
    if not record.device.startswith("cuda"):
        return False, f"TF32 does not exist on {record.device}"
    r = record.roofline
    if r is not None and r.matmul_flops is not None and r.matmul_flops <= 0:
        return False, "the reference has no matmul or convolution"
    return True, ""
