"""Adversarial input distributions of the verified protocol (verified@3): they change a distribution's shape,
not only its scale.

The hidden scales (x3, x0.01, x-1) keep the form of ``torch.rand``'s U[0,1): a kernel that is only right for
that form (softmax without max subtraction, one-pass variance, a loss on a strided subsample, a loss returned
as a closed-form expectation of the inputs' means) passes them all. Each distribution below is one
declaration: its name, how it transforms one floating input tensor, and which input domains
(``problems.domains.Domain``) admit it. The planner (``harness.judge.inputs.plan_trials``), the judge
(``harness.judge.inputs.make_inputs``), the docs (docs/protocols.md, ``describe()``) and the fixture headers all read this table.

Magnitudes are chosen so that an honest fp32 kernel passes the verified tolerance (|d| <= 1e-3 (1 + |e|)
against a float64 reference, or 4x the TF32 baseline's own error): floating point is scale-invariant, so a
large or heavy-tailed input costs an honest kernel only what the reference's fp32 rounding costs it, and the
cancellation each one provokes stays within what a pairwise/tree/Welford reduction absorbs (see each entry).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass

import torch

from problems.domains import Domain

D = Domain
# The domains whose values are free reals up to structure; the structured-matrix ones admit only what keeps
# their structure (a pure scale keeps every linear structure; a shift keeps symmetry; an elementwise mask keeps
# triangular and diagonal zeros).
_FREE = frozenset({D.REAL})
_SIGNLESS = frozenset({D.POSITIVE, D.NONNEGATIVE})


@dataclass(frozen=True)
class Adversarial:
    name: str
    summary: str  # one sentence for the docs and the record's reasons
    targets: str  # the class of kernel it exposes
    admits: frozenset[Domain]
    transform: Callable[[torch.Tensor, Domain, Draw], torch.Tensor]

    def admitted(self, domain: Domain | str) -> bool:
        return Domain(domain) in self.admits


class Draw:
    """Random numbers of one trial and one distribution, from the trial's seed: the judge draws the same
    tensors every time it recomputes a trial. Scalars (one per trial, shared by every input: a shift moves
    predictions and targets together, so their differences keep their size) come from a CPU generator;
    tensors from a generator on the input's device."""

    def __init__(self, seed: int, name: str) -> None:
        self.seed = int.from_bytes(hashlib.sha256(f"kv-adv-{name}-{seed}".encode()).digest()[:6], "little")
        g = torch.Generator().manual_seed(self.seed)
        self.sign = 1.0 if torch.rand((), generator=g).item() < 0.5 else -1.0
        self.u = float(torch.rand((), generator=g).item())
        self._n = 0

    def gen(self, device: torch.device) -> torch.Generator:
        self._n += 1  # each tensor of the trial its own stream
        return torch.Generator(device=device).manual_seed(self.seed + self._n)

    def randn(self, x: torch.Tensor) -> torch.Tensor:
        return torch.randn(x.shape, generator=self.gen(x.device), device=x.device, dtype=x.dtype)

    def rand(self, x: torch.Tensor) -> torch.Tensor:
        return torch.rand(x.shape, generator=self.gen(x.device), device=x.device, dtype=x.dtype)


def _rms(x: torch.Tensor) -> float:
    """The input's own magnitude (``torch.rand``: 0.58, ``randn``: 1), so distributions keep a problem's scale."""
    r = float(x.double().pow(2).mean().sqrt()) if x.numel() else 0.0
    return r if r > 0 else 1.0


def _signed(d: Domain, draw: Draw) -> float:
    return 1.0 if d in _SIGNLESS else draw.sign


# x + 100: every mean 100 units from zero (U[0,1) has std 0.29: mean/std ~350). One-pass variance
# E[x^2] - E[x]^2 then loses ~17 of fp32's 24 bits; a two-pass or Welford variance loses nothing, and an honest
# mean (pairwise/tree sum) is off by ~100 x 2^-24 x log2(n), 1e-4 of the std at most. Positive-only inputs move up.
SHIFT = 100.0
# x100: U[0,1) logits reach 100, past the 88.7 where exp overflows fp32. Floating point is scale-invariant, so
# honest kernels lose nothing but exp's own relative error, which grows to ~100 x 2^-24 = 6e-6 here.
LARGE = 100.0
# Student-t with 2 degrees of freedom (infinite variance) at the input's rms: the largest of n draws grows like
# n^(1/2) (~600 at a million), so a few entries carry a visible share of any sum: a strided subsample sees a
# different sum (a relative miss of ~1e-3 or more in ~99% of draws, hence two draws per distribution). Honest
# kernels lose nothing: the values stay far inside fp32's range, and rounding is relative. Positive-only
# inputs: Pareto with alpha 2 (minimum 2/3 of the input's rms, the same tail).
T_DF = 2
# c (1 + 1e-3 z), c in [2, 8]: rows (and every norm's group) constant up to 1e-3 of their value, far above
# fp32's resolution (6e-8 relative), the variance (4e-6 to 6e-5) near LayerNorm's eps 1e-5. One-pass
# variance then cancels 1e6 : 1 (off by ~1e-1 of the variance); two-pass/Welford are off by ~1e-4 of the std.
NEAR_CONSTANT_SPREAD = 1e-3
# One entry in 32 kept: a strided subsample or a mean-based closed form sees a different sample of the few
# non-zeros than the whole tensor holds.
SPARSE_KEEP = 1 / 32


# Probability rows (softmax outputs) admit what keeps each row a distribution: reshaped, then renormalised along the
# dimension that sums to 1. Without them a loss over two such inputs (level1/98's KL divergence of softmax(U[0,1))
# rows) is a constant, 1/(e-1) - 1/2 to within 3e-4 over 256 x 4096 values, and a kernel returning that constant
# passed every verified trial (hacks/cpu/closed_form_kldiv). Sharpened rows are softmax of the logits x8 (largest
# to smallest value e^8: nothing near fp32's underflow, so a log stays finite); near-constant rows are uniform to 1e-3.
PROB_SHARPEN = 8.0


def _prob_dim(x: torch.Tensor) -> int | None:
    """The dimension along which ``x`` sums to 1 (the last such), or None: then it is left as drawn."""
    for dim in reversed(range(x.dim())):
        sums = x.double().sum(dim)
        if sums.numel() and bool(((sums - 1).abs() <= 1e-4).all()):
            return dim
    return None


def _renormalised(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    dim = _prob_dim(x)
    return x if dim is None else y / y.sum(dim, keepdim=True)


def _shift(x, d, draw):
    return x + _signed(d, draw) * SHIFT


def _large(x, d, draw):
    if d == D.PROBABILITY:  # softmax(u) -> softmax(8u): a few entries carry each row
        return _renormalised(x.double().pow(PROB_SHARPEN), x)
    return x * LARGE


def _heavy_tail(x, d, draw):
    s = _rms(x)
    if d in _SIGNLESS:  # Pareto(alpha=T_DF): x_m U^(-1/alpha), strictly positive
        u = draw.rand(x).clamp_min(1e-12)
        return (2.0 / 3.0) * s * u.pow(-1.0 / T_DF)
    z = draw.randn(x)
    chi2 = sum(draw.randn(x).pow(2) for _ in range(T_DF)).clamp_min(1e-12)  # 0 would give inf
    return s * z / (chi2 / T_DF).sqrt()


def _near_constant(x, d, draw):
    if d == D.PROBABILITY:
        return _renormalised(1.0 + NEAR_CONSTANT_SPREAD * draw.randn(x).double(), x)
    c = 0.25 + 0.5 * draw.u if d == D.UNIT_INTERVAL else _signed(d, draw) * (2.0 + 6.0 * draw.u)
    return c * (1.0 + NEAR_CONSTANT_SPREAD * draw.randn(x))


def _sparse(x, d, draw):
    return x * (draw.rand(x) < SPARSE_KEEP).to(x.dtype)


ADVERSARIAL: tuple[Adversarial, ...] = (
    Adversarial("shift", f"x + {SHIFT:g} (positive-only inputs: up; otherwise a sign drawn per trial), the same "
                "shift for every input of the trial", "one-pass variance, kernels that assume a mean near zero",
                _FREE | _SIGNLESS | {D.SYMMETRIC}, _shift),
    Adversarial("large", f"x x {LARGE:g}: U[0,1) logits reach {LARGE:g}, past fp32 exp's overflow at 88.7",
                "softmax/logsumexp without max subtraction, exp-based kernels that overflow; probability rows: "
                f"p^{PROB_SHARPEN:g} renormalised (the logits x{PROB_SHARPEN:g}), against closed forms of near-uniform rows",
                _FREE | _SIGNLESS | {D.SYMMETRIC, D.LOWER_TRIANGULAR, D.UPPER_TRIANGULAR, D.DIAGONAL, D.PROBABILITY},
                _large),
    Adversarial("heavy_tail", f"Student-t ({T_DF} degrees of freedom) at the input's rms; positive-only inputs "
                f"Pareto (alpha {T_DF})", "losses on a subsample, closed forms from means, fixed-range assumptions",
                _FREE | _SIGNLESS, _heavy_tail),
    Adversarial("near_constant", f"c (1 + {NEAR_CONSTANT_SPREAD:g} z), c drawn per trial in [2, 8] (sign as shift; "
                "unit-interval inputs: c in [0.25, 0.75]; probability rows: uniform to 1e-3, renormalised)",
                "one-pass variance E[x^2] - E[x]^2, closed forms",
                _FREE | _SIGNLESS | {D.UNIT_INTERVAL, D.PROBABILITY}, _near_constant),
    Adversarial("sparse", f"all but 1 in {round(1 / SPARSE_KEEP)} entries set to zero",
                "losses on a subsample, closed forms from means",
                _FREE | {D.NONNEGATIVE, D.LOWER_TRIANGULAR, D.UPPER_TRIANGULAR, D.DIAGONAL}, _sparse),
)
BY_NAME: dict[str, Adversarial] = {a.name: a for a in ADVERSARIAL}
NAMES: frozenset[str] = frozenset(BY_NAME)


def not_applicable(a: Adversarial, domains: dict[str, Domain], float_args: list[str]) -> str | None:
    """Why ``a`` would change no input of a problem (its trial would only repeat an ordinary draw), or None."""
    if not float_args:
        return "no floating-point input"
    if any(a.admitted(domains.get(n, D.REAL)) for n in float_args):
        return None
    held = ", ".join(f"{n} ({domains.get(n, D.REAL)})" for n in float_args)
    return f"no input's domain admits it: {held}"


def apply(name: str, x: torch.Tensor, domain: Domain, seed: int, draw: Draw | None = None) -> torch.Tensor:
    """``x`` under distribution ``name`` when its domain admits it (same shape, dtype, device), else ``x``."""
    a = BY_NAME[name]
    if not (x.is_floating_point() and a.admitted(domain)):
        return x
    return a.transform(x, Domain(domain), draw or Draw(seed, name)).to(x.dtype)


def describe() -> list[tuple[str, str, str, str]]:
    """(name, what it draws, what it exposes, admitting domains) for the docs."""
    return [(a.name, a.summary, a.targets, ", ".join(sorted(str(d) for d in a.admits))) for a in ADVERSARIAL]
