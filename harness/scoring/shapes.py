"""Extra shapes (issue 19 part 4): is a kernel correct only at the shape it was shown?

A problem's shapes are set by its size constants: the keys of its ``small`` preset (``batch_size``,
``dim``, ...). Extra shape i scales every one of them, at the evaluated size (the preset's values at
``small``, the file's at ``full``), by ``SHAPE_STEPS[i]``:

* factors are at most 1, so no tensor of an extra shape is larger than at the evaluated size: the size was
  chosen to fit the device (full on a GPU) or the time budget (small on a CPU), and a correctness check
  that runs out of memory would tell nothing about the kernel;
* half the steps round to an odd integer (the first is the published shape's largest odd one, 8192 -> 8191):
  kernels tuned to a shape tend to assume multiples of 32 or 4 (vector loads, full tiles), and an odd
  size leaves a tail; the others round to the nearest integer;
* a list constant (``bias_shape = [16, 1, 1]``) is scaled element by element, and every equal value maps to
  the same result, so constants that must agree (``out_channels`` and ``bias_shape[0]``) still do.

A shape equal to the published one or to an earlier shape is skipped, with its reason; so is one whose
reference does not run (sizes a problem does not admit: a head count that no longer divides the width,
a linear layer that expects the original image size). The candidate runs at each remaining shape in a
judge of its own (``ShapedProblem``: the same file rendered with the shape's constants), correctness only.
"""

from __future__ import annotations

import ast
import math
from typing import Any, Literal

import problems as P
from problems.source import module_constants, render_at_size

from ..measure.record import MeasurementRecord, ShapeCheck
from .protocols import NAIVE, PROTOCOLS, VERIFIED, score

Rounding = Literal["odd", "round"]

#: (factor, rounding) of extra shape 1, 2, ... (``--shapes N`` takes the first N).
SHAPE_STEPS: tuple[tuple[float, Rounding], ...] = (
    (1.0, "odd"), (0.5, "odd"), (0.75, "round"), (0.25, "odd"),
    (0.625, "round"), (0.375, "odd"), (0.875, "odd"), (0.125, "round"),
)
MAX_SHAPES = len(SHAPE_STEPS)

# The verified protocol's correctness checks alone: its guards and roofline floor judge the published shape.
VERIFIED_TRIALS_ONLY = VERIFIED.model_copy(update={"enforce_guards": False, "roofline_floor": False})


class ShapedProblem(P.Problem):
    """A problem at one extra shape: its own id (``level1/19_ReLU@shape1``, hence its own judge) and source."""

    base_id: str
    overrides: dict[str, Any]

    def source(self, size: P.Size = "full") -> str:
        # The overrides name every size constant, so they apply to the file as written at either size.
        return render_at_size(self.full_source(), self.overrides)


def scale_int(value: int, factor: float, rounding: Rounding) -> int:
    """``value * factor`` as an integer in [1, value]: the nearest odd one, or the nearest one."""
    x = value * factor
    if rounding == "round":
        return max(1, min(value, math.floor(x + 0.5)))
    lo = math.floor(x)
    lo -= lo % 2 == 0  # the largest odd integer <= x
    pick = lo + 2 if (lo + 2) - x < x - lo and lo + 2 <= value else lo
    return max(1, pick)


def scale_value(value: Any, factor: float, rounding: Rounding) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | list | tuple):
        return value  # flags, floats, strings: not sizes
    if isinstance(value, int):
        return scale_int(value, factor, rounding) if value >= 1 else value
    return type(value)(scale_value(v, factor, rounding) for v in value)


def size_constants(problem: P.Problem, size: P.Size) -> dict[str, Any]:
    """The problem's size constants at ``size``: the small preset's keys, with that size's values. A constant
    the file sets by an expression (not a literal) is left out: at ``full`` it has no value to scale."""
    if size == "small":
        return dict(problem.meta.small)
    exprs = module_constants(problem.full_source())
    out = {}
    for k in problem.meta.small:
        try:
            out[k] = ast.literal_eval(exprs[k])
        except (KeyError, ValueError, TypeError, SyntaxError):
            continue
    return out


def plan(problem: P.Problem, size: P.Size, n: int) -> tuple[list[ShapedProblem], list[ShapeCheck], str | None]:
    """The first ``n`` extra shapes: (to check, skipped with their reasons, a note when there are none)."""
    base = size_constants(problem, size)
    if not base:
        return [], [], "the problem has no size constants (no small preset in its metadata): no extra shape"
    todo: list[ShapedProblem] = []
    skipped: list[ShapeCheck] = []
    seen = {repr(sorted(base.items())): "the published shape"}  # repr: list constants are not hashable
    for i, (factor, rounding) in enumerate(SHAPE_STEPS[:n], start=1):
        name = f"shape{i}"
        over = {k: scale_value(v, factor, rounding) for k, v in base.items()}
        key = repr(sorted(over.items()))
        if key in seen:
            skipped.append(ShapeCheck(name=name, overrides=over, reason=f"skipped: the same as {seen[key]}"))
            continue
        seen[key] = name
        todo.append(ShapedProblem(id=f"{problem.id}@{name}", level=problem.level, number=problem.number,
                                  name=problem.name, path=problem.path, meta=problem.meta, base_id=problem.id,
                                  overrides=over))
    return todo, skipped, None


def result(name: str, overrides: dict[str, Any], record: MeasurementRecord) -> ShapeCheck:
    """Pass/fail at one shape from the candidate's record there: each protocol's correctness checks."""
    naive, verified = score(record, NAIVE), score(record, VERIFIED_TRIALS_ONLY)
    why = next((f"{k} trials: {r.reasons[0]}" for k, r in (("naive", naive), ("verified", verified))
                if not r.correct and r.reasons), "")
    return ShapeCheck(name=name, overrides=overrides, naive_pass=naive.correct, verified_pass=verified.correct,
                      reason=why[:600])


def published_trials(record: MeasurementRecord) -> set[str]:
    """The trial sets ('naive', 'verified') under which the default protocols call the published shape correct."""
    return {p.trials for p in PROTOCOLS.values() if score(record, p).correct}


def specialised(record: MeasurementRecord) -> bool | None:
    """True when a default protocol calls the published shape correct and that protocol's trials fail at an
    extra shape; None when no extra shape was checked."""
    checked = [s for s in record.shapes if s.naive_pass is not None]
    if not checked:
        return None
    return any(s.passes(t) is False for t in published_trials(record) for s in checked)


SUMMARY = {True: "shape-specialised: correct at the published shape only",
           False: "not shape-specialised: each extra shape passes under every protocol that passes the published one",
           None: "no extra shape checked"}


def lines(record: MeasurementRecord, width: int = 200) -> list[str]:
    """The extra shapes of a record for people: a summary, then one line per shape (pass/fail per trial set,
    or why it was skipped). Empty when none was asked for."""
    if not record.shapes and not record.shapes_note:
        return []
    out = [SUMMARY[record.shape_specialised] + (f" ({record.shapes_note})" if record.shapes_note else "")]
    for s in record.shapes:
        res = "skipped" if s.naive_pass is None else ", ".join(
            f"{k} {'pass' if ok else 'FAIL'}" for k, ok in (("naive", s.naive_pass), ("verified", s.verified_pass)))
        reason = s.reason if len(s.reason) <= width else s.reason[:width - 1] + "…"
        out.append(f"{s.label()}: {res}" + (f" - {reason}" if reason else ""))
    return out
