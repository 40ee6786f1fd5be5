"""The requested kernel backends are declared once; config validation and the extractor's instruction follow."""

from __future__ import annotations

import typing

import pytest

from agents.backends import BACKENDS, Backend, default_backend, runs_on
from agents.config import SweepConfig
from agents.extract import expected


def test_every_backend_has_one_declaration_and_its_instruction():
    assert set(typing.get_args(Backend)) == set(BACKENDS)
    for name, spec in BACKENDS.items():
        assert spec.how in expected(name)
    assert default_backend("cuda") == "cuda" and default_backend("cpu") == "cpu"
    assert runs_on("triton", "cuda") and not runs_on("triton", "cpu") and not runs_on("cpu", "cuda")


def test_a_backend_on_the_wrong_device_is_refused_up_front():
    with pytest.raises(ValueError, match="does not run on device"):
        SweepConfig(models=["demo"], backend="triton", device="cpu")
    assert SweepConfig(models=["demo"], backend="cpu", device="cpu").backend == "cpu"
