"""Output comparison a chunk at a time: the same answers as whole-tensor comparison (full-size outputs do not
fit a float64 copy beside the candidate)."""

from __future__ import annotations

import torch

from harness.measure import compare
from harness.measure.compare import close_in_chunks, error_stats


def test_chunked_closeness_agrees_with_allclose_on_both_sides(monkeypatch):
    monkeypatch.setattr(compare, "CHUNK", 7)
    a = torch.randn(5, 9)
    assert close_in_chunks(a, a.clone(), rtol=1e-5, atol=1e-6)
    nan = a.clone()
    nan[4, 8] = float("nan")
    assert close_in_chunks(nan, nan.clone(), rtol=1e-5, atol=1e-6)  # NaN where both have it: repeatable
    off = a.clone()
    off[4, 8] += 1e-3  # in the last chunk only
    assert not close_in_chunks(a, off, rtol=1e-5, atol=1e-6)
    assert not close_in_chunks(a, a.reshape(9, 5), rtol=1e-5, atol=1e-6)


def test_chunked_error_stats_match_a_single_chunk(monkeypatch):
    out, exp = torch.randn(10, 13), torch.randn(10, 13).double()
    whole = error_stats(out, exp)
    monkeypatch.setattr(compare, "CHUNK", 8)
    parts = error_stats(out, exp)
    assert parts.max_abs == whole.max_abs and parts.min_tolerance == whole.min_tolerance
    assert abs(parts.mean_abs - whole.mean_abs) < 1e-12
