"""persisting_l2_reset blames a candidate only for a persisting-L2 limit it changed, not for the harness's own reset."""

import ctypes

from harness.candidate.worker import persisting_l2_outcome
from harness.measure.device import DeviceOps


class FakeCudart:
    """The three runtime calls DeviceOps makes, over one limit (the H200's default is not 0)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit

    def cudaCtxResetPersistingL2Cache(self) -> int:
        return 0

    def cudaDeviceSetLimit(self, what, value) -> int:
        self.limit = value.value
        return 0

    def cudaDeviceGetLimit(self, out, what) -> int:
        ctypes.cast(out, ctypes.POINTER(ctypes.c_size_t))[0] = self.limit
        return 0


def _ops(limit: int) -> DeviceOps:
    ops = DeviceOps("cpu")
    ops._cudart = FakeCudart(limit)
    return ops


def test_the_harness_reset_before_every_call_is_not_the_candidates_change():
    ops = _ops(11796480)
    before = ops.persisting_l2_limit()  # the device's own setting, read before the candidate loads
    ops.reset_persisting_l2()  # the harness's pre-call work: limit 0
    assert persisting_l2_outcome(ops, before).passed


def test_a_candidate_that_sets_a_carve_out_after_the_reset_is_flagged():
    ops = _ops(11796480)
    before = ops.persisting_l2_limit()
    ops.reset_persisting_l2()
    ops._cudart.limit = 48 * 2**20  # cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, ...) from the kernel's code
    g = persisting_l2_outcome(ops, before)
    assert not g.passed and "from 0 to 50331648" in g.detail
    # and without any reset (nothing the harness set), a change from the device's own setting is the candidate's
    fresh = _ops(11796480)
    fresh._cudart.limit = 0
    assert not persisting_l2_outcome(fresh, 11796480).passed
