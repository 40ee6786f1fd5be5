"""Timed calls drawn from the verified trials' distributions (``EvalSettings.timed_hidden_distributions``).

A kernel can tell the hidden trials from torch.rand's inputs with a probe of a few hundred values (x3 and shift leave
[0, 1), x-1 and heavy tails are negative, sparse is mostly zeros, x0.01 never reaches 0.9) and take a shortcut right
only on U[0,1): a closed-form loss (open_attacks/cpu/probe_closed_form_mse, 3.1-3.2x verified), zeros where the
default draw makes the output zero (level2/9: ReLU of a default Linear minus 2). When every timed call drew x1 values,
the shortcut ran on every timed call and passed every check. Drawn from the trials' distributions, it runs on about
one timed call in nine, below the median. Both sides: the setting on, few timed calls look like U[0,1); off, all do.
"""

from __future__ import annotations

import harness
from harness import EvalSettings

PROBE = """
import torch, torch.nn as nn
counts = {"plain": 0, "hidden": 0}
class ModelNew(nn.Module):
    def forward(self, x):
        p = x.reshape(-1)[:: max(1, x.numel() // 512)]
        plain = bool(p.ge(0).all()) and bool(p.lt(1).all()) and float(p.max()) > 0.9 and int(p.eq(0).sum()) < 4
        counts["plain" if plain else "hidden"] += 1
        print(f"PROBE {counts['plain']} {counts['hidden']}", flush=True)
        return torch.relu(x)
"""


def _run(hidden: bool) -> tuple[int, int, int]:
    settings = EvalSettings(naive_timing_trials=10, verified_min_iters=40, verified_max_iters=40,
                            verified_seconds_per_subject=3.0, cpu_threads=1, timed_hidden_distributions=hidden)
    with harness.Evaluator("cpu", "small", settings=settings) as e:
        r = e.evaluate(PROBE, "level1/19_ReLU")
    assert r.results["verified"].verdict == "correct"
    last = [x for x in r.record.stdout_tail.splitlines() if x.startswith("PROBE ")][-1]
    plain, hidden_calls = map(int, last.split()[1:])
    return plain, hidden_calls, r.record.timing.verified_kernel.n


def test_timed_calls_mostly_draw_hidden_distributions_and_plain_ones_without_the_setting():
    plain_off, _hidden_off, timed_off = _run(False)
    plain_on, _hidden_on, timed_on = _run(True)
    assert timed_off >= 40 and timed_on >= 40
    judged_plain = plain_off - timed_off  # every timed call looked like U[0,1) without the setting
    assert judged_plain >= 0
    # with it about one in nine (x1 among the problem's nine distributions); +2: the guard calls' sets may differ
    assert plain_on - judged_plain <= timed_on // 2 + 2, (plain_on, judged_plain, timed_on)


def test_a_timed_call_on_adversarial_inputs_is_judged_as_an_adversarial_trial():
    """Timed calls now draw heavy tails too: the honest row-sequential cumsum that an adversarial trial passes against
    the output's scale (verified@4) must pass a timed call's check on the same inputs, and a gross error fail both."""
    import torch
    from test_adversarial_distributions import _row_sequential_cumsum

    from harness.judge.adversarial import apply
    from harness.judge.judge import Expected, verified_pass
    from harness.measure.compare import error_stats
    from problems.domains import Domain

    x = apply("heavy_tail", torch.full((16, 32768), 0.5), Domain.REAL, 6)
    exact = x.double().cumsum(1)
    exp = Expected(exact)
    st = error_stats(_row_sequential_cumsum(x), exact)
    assert st.min_tolerance > 1e-3  # fails elementwise: on an x1 call it would be judged so
    assert verified_pass(st, exp, adversarial=True) and not verified_pass(st, exp, adversarial=False)
    wrong = error_stats(_row_sequential_cumsum(x) * (1 + 2e-3), exact)
    assert not verified_pass(wrong, exp, adversarial=True)
