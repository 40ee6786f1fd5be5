"""The judge's own values of the timing sets, which it times the baselines on.

The judge keeps them apart from the shared buffer, where code in the candidate process could change them (write
denormals into a set, say, to slow a baseline down). Small sets are kept as drawn. At full size a set can be several
GiB, held beside the shared buffer (which holds the same sets for the candidate) and the float64 reference. Past
``EvalSettings.timing_copies_bytes`` only the set in use is held, and another is drawn again from its seed when a
baseline call moves to it. That costs a device-side draw per call, made before the call's flush and sync, outside its
interval.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Args = list[Any]


class BaselineSets:
    """``sets[idx]``: timing set ``idx``'s current values. ``draw(idx)`` draws them again from the seed and
    distribution the set has now (the judge's bookkeeping, updated when it renews a set)."""

    def __init__(self, draw: Callable[[int], Args], count: int, keep_all: bool):
        self._draw, self._count, self.keep_all = draw, count, keep_all
        self._kept: dict[int, Args] = {}

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __getitem__(self, idx: int) -> Args:
        if idx not in self._kept:
            if not self.keep_all:
                self._kept.clear()  # the set in use goes before another is drawn: one set's memory at a time
            self._kept[idx] = self._draw(idx)
        return self._kept[idx]

    def keep(self, idx: int, values: Args) -> None:
        """Values the judge has just drawn for set ``idx`` (its first draw, a renewal): kept where that set would
        be, so a baseline call on it does not draw the same values again. Holding one set, the judge keeps them only
        in place of that set's old values; another set's are drawn again from its new seed when next used."""
        if self.keep_all or idx in self._kept or not self._kept:
            self._kept[idx] = values

    def clear(self) -> None:
        self._kept.clear()
        self._count = 0
