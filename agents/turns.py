"""Which turn of a conversation counts: defined once, for the sweep's closing table and for the report.

A conversation (one model, strategy, problem and sample) may hand in several kernels, one per turn.

* ``final`` (the default): the last turn recorded. It is what the model would hand in; taking the best
  turn would use the evaluator as an oracle.
* ``best``: the best turn under the protocol being scored (correct beats incorrect, then the speed).

Samples of one problem are then reduced best-of-k (KernelBench-Verified's rule) by the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal, TypeVar

TurnPolicy = Literal["final", "best"]
TURN_POLICIES: tuple[str, ...] = ("final", "best")
DEFAULT_TURN_POLICY: TurnPolicy = "final"

T = TypeVar("T")

# How a turn ranks under one protocol: (correct with a timing, correct, speedup).
Rank = tuple[bool, bool, float]


def rank(correct: bool, speedup: float | None) -> Rank:
    timed = bool(correct and speedup is not None and speedup > 0)
    return timed, bool(correct), (speedup or 0.0) if correct else 0.0


def choose_turn(turns: Sequence[T], policy: TurnPolicy, rank_of: Callable[[T], Rank]) -> T | None:
    """The turn that counts among ``turns`` (in turn order); ties in ``best`` go to the earlier turn."""
    if not turns:
        return None
    if policy == "final":
        return turns[-1]
    best = turns[0]
    for t in turns[1:]:
        if rank_of(t) > rank_of(best):
            best = t
    return best


def turn_label(policy: str) -> str:
    """How outputs name the policy: 'last turn' or 'best turn'."""
    return "last turn" if policy == "final" else "best turn"
