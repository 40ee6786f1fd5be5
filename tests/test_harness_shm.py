"""The judge's shared buffer: tensors cross as validated descriptors plus bytes, and it grows in place."""

from __future__ import annotations

import pytest
import torch

from harness.wire.conn import WireError
from harness.wire.shm import SharedBuffer, pack_args, unpack_args


def test_round_trip_growth_and_a_second_mapping():
    buf = SharedBuffer.create(1024, pin=True)  # no CUDA here: pinning quietly does not happen
    assert buf.pin is False
    args = [torch.arange(1000, dtype=torch.float32).reshape(10, 100), 7, torch.tensor([True, False])]
    descs = pack_args(buf, args, grow=True)
    other = SharedBuffer(buf.fd, buf.size)  # the candidate process's side maps the same file
    back = unpack_args(other, descs, "cpu")
    assert torch.equal(back[0], args[0]) and back[1] == 7 and torch.equal(back[2], args[2])
    assert back[0].data_ptr() != args[0].data_ptr()  # copied out, not a view of the shared bytes


def test_a_descriptor_outside_the_buffer_is_refused():
    buf = SharedBuffer.create(1024)
    with pytest.raises(WireError):
        buf.read({"offset": 512, "shape": [1000], "dtype": "float32"})
    with pytest.raises(WireError):
        buf.read({"offset": 0, "shape": [4], "dtype": "object"})
