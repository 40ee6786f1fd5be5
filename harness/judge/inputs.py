"""Input sets and parameters for correctness trials, identical in the reference and candidate processes.

Everything is derived from seeds chosen by the parent, so two processes regenerate bit-identical
inputs without ever exchanging tensors. Inputs are generated directly on the evaluation device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from problems.domains import Domain, allowed_scales

from ..measure.reference import KERNELBENCH_SEED
from ..wire.job import JobSpec
from . import adversarial

# Hidden distributions of the verified protocol: name -> scale applied to floating inputs.
HIDDEN_SCALES: dict[str, float] = {"x1": 1.0, "x3": 3.0, "x0.01": 0.01, "neg": -1.0}


@dataclass(frozen=True)
class TrialSpec:
    distribution: str  # 'naive', 'base', a HIDDEN_SCALES key or an adversarial distribution (harness.judge.adversarial)
    seed: int
    scale: float
    params: str  # 'default' | 'perturbed'


def forward_seed(input_seed: int) -> int:
    """The RNG seed both sides set before a forward pass (dropout and the like draw the same numbers). A
    one-way function of the input seed: the candidate process gets this, never the seed of its inputs."""
    import hashlib

    return int.from_bytes(hashlib.sha256(f"kv-forward-{input_seed}".encode()).digest()[:4], "little") & 0x7FFFFFFF


def kernelbench_trial_seeds(n: int) -> list[int]:
    """KernelBench's per-trial seeds: seed 42, then one randint draw per trial."""
    g = torch.Generator().manual_seed(KERNELBENCH_SEED)
    return [int(torch.randint(0, 2**32 - 1, (1,), generator=g).item()) for _ in range(n)]


def plan_trials(n_naive: int, n_base: int, fresh_seeds: list[int], domains: dict[str, Domain],
                float_args: list[str], n_adversarial: int = 0,
                ) -> tuple[list[TrialSpec], list[TrialSpec], list[tuple[str, str]]]:
    """Naive trials (KernelBench seeds, default parameters), verified trials (fresh seeds, perturbed parameters,
    ordinary draws, then hidden scales, then ``n_adversarial`` draws of each adversarial distribution), and the
    adversarial distributions left out with the reason. A hidden scale that no input's domain admits is dropped:
    it would only repeat x1."""
    naive = [TrialSpec("naive", s, 1.0, "default") for s in kernelbench_trial_seeds(n_naive)]
    seeds = iter(fresh_seeds)
    verified = [TrialSpec("base", next(seeds), 1.0, "perturbed") for _ in range(n_base)]
    for name, scale in HIDDEN_SCALES.items():
        if scale != 1.0 and float_args and not any(
            scale in allowed_scales(domains.get(a, Domain.REAL)) for a in float_args
        ):
            continue
        verified.append(TrialSpec(name, next(seeds), scale, "perturbed"))
    skipped = []
    for a in adversarial.ADVERSARIAL if n_adversarial else ():
        why = adversarial.not_applicable(a, domains, float_args)
        if why:
            skipped.append((a.name, why))
            continue
        verified += [TrialSpec(a.name, next(seeds), 1.0, "perturbed") for _ in range(n_adversarial)]
    return naive, verified, skipped


def seeds_needed(n_base: int, n_adversarial: int) -> int:
    """Fresh seeds the verified trials of any problem may use (before the timing sets' seeds)."""
    return n_base + len(HIDDEN_SCALES) + n_adversarial * len(adversarial.ADVERSARIAL)


def make_inputs(get_inputs, arg_names: list[str], seed: int, scale: float, domains: dict[str, Domain],
                device: str, distribution: str | None = None) -> list[Any]:
    """``get_inputs()`` under ``seed`` on ``device``; floating tensors scaled where their domain allows, and
    drawn from an adversarial ``distribution`` where their domain admits it (one draw of its scalars for every
    input of the trial)."""
    torch.manual_seed(seed)
    with torch.device(device):
        inputs = list(get_inputs())
    adv = distribution if distribution in adversarial.NAMES else None
    draw = adversarial.Draw(seed, adv) if adv else None
    out = []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            x = x.to(device)
            name = arg_names[i] if i < len(arg_names) else f"arg{i}"
            domain = domains.get(name, Domain.REAL)
            if scale != 1.0 and x.is_floating_point() and scale in allowed_scales(domain):
                x = x * scale
            if adv:
                x = adversarial.apply(adv, x, domain, seed, draw)
        out.append(x)
    return out


def floating_args(inputs: list[Any], arg_names: list[str]) -> list[str]:
    return [arg_names[i] if i < len(arg_names) else f"arg{i}"
            for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.is_floating_point()]


def construction_seed(perturb_seed: int) -> int:
    """The seed the verified trials' models are built under, reference and candidate alike (see verified_parameters)."""
    return (perturb_seed * 2654435761 + 12345) % (2**31 - 1) or 1


@dataclass(frozen=True)
class VerifiedParameters:
    values: dict[str, torch.Tensor]  # every floating parameter's value for the verified trials
    built: frozenset[str]  # those whose value the construction seed's build gives: a candidate built so holds them


def verified_parameters(build: Callable[[int], torch.nn.Module], seed: int) -> VerifiedParameters:
    """Values of every floating parameter for the verified trials (not buffers). ``build(s)``: the reference Model
    built under seed ``s``.

    A parameter drawn at random when the model is built gets the draw of ``construction_seed(seed)``: the
    candidate's verified instance is built under that seed too, so whatever it derives from its weights when it is
    built (a transposed copy, a weight with the problem's divisor folded in) it derives from these values, and they
    are not loaded into it afterwards. A parameter that holds one number other than 0 and 1 under every seed is the
    problem's constant from ``get_init_inputs`` kept as a Parameter (level2/68's ``constant``), as it would be kept
    as a float: left as built, so a kernel that folds it into a bias when built stays consistent. Any other
    parameter that comes out the same under two seeds (a LayerNorm weight of ones, a zero bias) gets a random
    spread around that value (``perturbed_parameters_of``), loaded into both sides, so a kernel that hard-codes
    the constant fails."""
    s = construction_seed(seed)
    first = {n: p.detach() for n, p in build(s).named_parameters() if p.is_floating_point()}
    again = {n: p.detach() for n, p in build(s + 1).named_parameters() if p.is_floating_point()}
    drawn = {n for n, v in first.items() if n in again and again[n].shape == v.shape and not torch.equal(again[n], v)}
    built = frozenset(drawn | {n for n, v in first.items() if n not in drawn and _problem_constant(v)})
    # a spread only where it is used: a full-size weight's noise would be drawn to be thrown away
    spread = perturbed_parameters_of({n: v for n, v in first.items() if n not in built}, seed)
    return VerifiedParameters({n: v if n in built else spread[n] for n, v in first.items()}, built)


def _problem_constant(v: torch.Tensor) -> bool:
    """Every element the same number, and not a layer's default 0 or 1."""
    if v.numel() == 0:
        return False
    x = v.reshape(-1)[0]
    return bool(torch.all(v == x)) and float(x) not in (0.0, 1.0)


def perturbed_parameters_of(params: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    """New random values for every floating parameter (not buffers: running statistics stay valid).

    A parameter initialised to a constant (LayerNorm weight of ones, a zero bias) becomes a random
    spread around it, so a kernel that hard-codes the constant fails. Magnitudes stay close to the
    original so outputs keep their scale.
    """
    g = torch.Generator().manual_seed(seed)
    new = {}
    for name, p in params.items():
        base = p.float().cpu()
        spread = float(base.std()) if base.numel() > 1 else 0.0
        spread = spread if spread > 0 else max(float(base.abs().mean()), 0.1)
        noise = torch.randn(base.shape, generator=g) * (0.5 * spread)
        new[name] = (base + noise).to(dtype=p.dtype)
    return new


def trial_plan(job: JobSpec, mod, names: list[str]) -> tuple[list[TrialSpec], list[TrialSpec], list[tuple[str, str]]]:
    """The judge's trial plan (the candidate process learns it from the judge's hello): naive and verified
    trials, and the adversarial distributions not applied, with the reason."""
    domains = {k: Domain(v) for k, v in job.domains.items()}
    with torch.device("meta"):
        meta_inputs = list(mod.get_inputs())
    fargs = floating_args(meta_inputs, names)
    return plan_trials(job.settings.naive_trials, job.settings.verified_base_trials, job.fresh_seeds, domains, fargs,
                       job.settings.verified_adversarial_trials)
