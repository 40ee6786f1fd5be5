"""Issue 19, part 1: adversarial distributions that change a distribution's shape, not only its scale.

One declaration per distribution (harness.judge.adversarial) drives the planner, the judge's draws, the protocol
(verified@3 counts them, verified@2 does not), the waterfall step and the docs. Both sides: each distribution
reaches the shape it promises and stays in the input's domain; a domain that admits none gets no trial and a
reason in the record.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import harness
from agents.report import waterfall as W
from agents.report.synthetic import record
from harness import EvalSettings
from harness.fixtures import ROOT as FIXTURES
from harness.judge.adversarial import ADVERSARIAL, BY_NAME, NAMES, apply, not_applicable
from harness.judge.inputs import HIDDEN_SCALES, make_inputs, plan_trials, seeds_needed
from harness.measure.record import MeasurementRecord, SkippedDistribution
from harness.scoring.protocols import ORDINARY_DISTRIBUTIONS, VERIFIED, VERIFIED_V2, get_protocol, score
from problems.domains import Domain

PROTOCOLS_DOC = Path(__file__).resolve().parents[1] / "docs" / "protocols.md"  # the protocols in full (README links it)
SEEDS = list(range(1000, 1040))


def test_names_are_distinct_from_the_other_trial_names():
    assert len(NAMES) == len(ADVERSARIAL) == 5
    assert not NAMES & (set(HIDDEN_SCALES) | ORDINARY_DISTRIBUTIONS)


@pytest.mark.parametrize("domain", [Domain.LABELS, Domain.MASK, Domain.SIGN])
def test_discrete_inputs_admit_none(domain):
    x = torch.rand(8, 8)
    assert not [a.name for a in ADVERSARIAL if a.admitted(domain)]
    for a in ADVERSARIAL:
        assert apply(a.name, x, domain, 7) is x


def test_probability_rows_stay_distributions_with_another_shape():
    """Softmax rows admit what keeps them rows of a distribution (large: sharpened, near_constant: near-uniform), so a
    loss over them is no longer the constant it is for softmax(U[0,1)) rows (hacks/cpu/closed_form_kldiv)."""
    assert {a.name for a in ADVERSARIAL if a.admitted(Domain.PROBABILITY)} == {"large", "near_constant"}
    torch.manual_seed(0)
    p = torch.rand(64, 512).softmax(dim=-1)
    sharp, flat = apply("large", p, Domain.PROBABILITY, 3), apply("near_constant", p, Domain.PROBABILITY, 3)
    for y in (sharp, flat):
        assert y.dtype == p.dtype and bool((y > 0).all())
        assert torch.allclose(y.double().sum(-1), torch.ones(64, dtype=torch.float64), atol=1e-5)
    assert float(sharp.max() / sharp.min()) > 1e3 > float(p.max() / p.min())  # a few entries carry each row
    assert float(flat.max() / flat.min()) < 1.01
    # not a distribution along any dimension: left as drawn
    x = torch.rand(8, 8)
    assert torch.equal(apply("large", x, Domain.PROBABILITY, 3), x)


def _admitting(*domains):
    return [(a.name, d) for a in ADVERSARIAL for d in domains if a.admitted(d)]


@pytest.mark.parametrize(("name", "domain"), _admitting(*Domain))
def test_each_draw_stays_in_its_domain_and_is_reproducible(name, domain):
    torch.manual_seed(0)
    x = torch.rand(64, 64)
    if domain == Domain.PROBABILITY:
        x = x.softmax(dim=-1)
    elif domain == Domain.SYMMETRIC:
        x = (x + x.T) / 2
    elif domain == Domain.LOWER_TRIANGULAR:
        x = torch.tril(x)
    elif domain == Domain.UPPER_TRIANGULAR:
        x = torch.triu(x)
    elif domain == Domain.DIAGONAL:
        x = torch.diag(torch.diagonal(x))
    y = apply(name, x, domain, 5)
    assert y.shape == x.shape and y.dtype == x.dtype and bool(torch.isfinite(y).all())
    assert torch.equal(y, apply(name, x, domain, 5))  # the judge recomputes a trial bit for bit
    if name in ("heavy_tail", "near_constant", "sparse"):  # random tensors: another seed, another draw
        assert not torch.equal(y, apply(name, x, domain, 6))
    if domain == Domain.POSITIVE:
        assert bool((y > 0).all())
    if domain == Domain.NONNEGATIVE:
        assert bool((y >= 0).all())
    if domain == Domain.UNIT_INTERVAL:
        assert bool(((y >= 0) & (y <= 1)).all())
    if domain == Domain.PROBABILITY:
        assert bool((y >= 0).all()) and torch.allclose(y.double().sum(-1), torch.ones(64, dtype=torch.float64), atol=1e-5)
    if domain == Domain.SYMMETRIC:
        assert torch.equal(y, y.T)
    if domain in (Domain.LOWER_TRIANGULAR, Domain.UPPER_TRIANGULAR, Domain.DIAGONAL):
        assert bool((y[x == 0] == 0).all())  # structural zeros kept


def _shape(y: torch.Tensor) -> dict[str, float]:
    y = y.double().flatten()
    m, s = float(y.mean()), float(y.std())
    z = (y - m) / s if s > 0 else y * 0
    return {"mean_over_std": abs(m) / s, "kurtosis": float((z**4).mean()), "zeros": float((y == 0).double().mean()),
            "max": float(y.abs().max())}


def test_each_distribution_changes_what_a_scale_cannot():
    """A scale keeps |mean|/std, kurtosis and the share of zeros of U[0,1) (sqrt(3), 1.8, 0); each adversarial
    distribution moves the one it is named for, which is what the kernels it targets depend on."""
    x = torch.rand(256, 1024)
    base = _shape(x)
    assert base["mean_over_std"] == pytest.approx(3**0.5, rel=0.02) and base["kurtosis"] == pytest.approx(1.8, rel=0.02)
    for seed in SEEDS[:8]:
        got = {a.name: _shape(apply(a.name, x, Domain.REAL, seed)) for a in ADVERSARIAL}
        assert got["shift"]["mean_over_std"] > 300           # one-pass variance cancels
        assert got["near_constant"]["mean_over_std"] > 900   # rows constant to 1e-3
        assert got["heavy_tail"]["kurtosis"] > 50            # a few entries carry the sums
        assert got["sparse"]["zeros"] > 0.95
        assert got["large"]["max"] > 88.7                    # exp overflows fp32 without max subtraction


def test_shift_and_near_constant_share_one_draw_across_a_trials_inputs():
    """predictions and targets move together, so a loss of their difference keeps its size."""
    def get_inputs():
        return [torch.rand(64, 64), torch.rand(64, 64)]

    for seed in SEEDS[:6]:
        p, t = make_inputs(get_inputs, ["p", "t"], seed, 1.0, {}, "cpu", "shift")
        assert float((p - t).abs().max()) < 1.0 and float(p.abs().mean()) > 99
        p, t = make_inputs(get_inputs, ["p", "t"], seed, 1.0, {}, "cpu", "near_constant")
        assert float(p.mean()) == pytest.approx(float(t.mean()), rel=1e-3)


def test_make_inputs_leaves_inputs_whose_domain_does_not_admit_it():
    def get_inputs():
        return [torch.rand(32, 16), torch.randint(0, 2, (32,)).float() * 2 - 1, torch.randint(0, 10, (32,))]

    names, domains = ["predictions", "targets", "labels"], {"targets": Domain.SIGN, "labels": Domain.LABELS}
    plain = make_inputs(get_inputs, names, 11, 1.0, domains, "cpu")
    for a in ADVERSARIAL:
        p, t, lab = make_inputs(get_inputs, names, 11, 1.0, domains, "cpu", a.name)
        assert not torch.equal(p, plain[0]), a.name
        assert torch.equal(t, plain[1]) and torch.equal(lab, plain[2]), a.name


def _plan(domains, fargs, n_adv=2):
    return plan_trials(5, 5, list(range(100, 100 + seeds_needed(5, n_adv))), domains, fargs, n_adv)


def test_plan_runs_each_distribution_twice_on_fresh_seeds():
    _naive, verified, skipped = _plan({}, ["x"])
    adv = [t for t in verified if t.distribution in NAMES]
    assert [t.distribution for t in adv] == [n for a in ADVERSARIAL for n in (a.name, a.name)]
    assert not skipped
    assert len({t.seed for t in verified}) == len(verified)  # no seed shared with another trial
    assert all(t.params == "perturbed" and t.scale == 1.0 for t in adv)
    # settings with no adversarial trials plan none, as before verified@3
    assert not [t for t in _plan({}, ["x"], 0)[1] if t.distribution in NAMES]


def test_plan_records_why_a_distribution_is_not_run():
    prob = {"predictions": Domain.PROBABILITY, "targets": Domain.PROBABILITY}
    _n, verified, skipped = _plan(prob, ["predictions", "targets"])
    assert {t.distribution for t in verified if t.distribution in NAMES} == {"large", "near_constant"}
    assert [d for d, _ in skipped] == ["shift", "heavy_tail", "sparse"]
    assert all("predictions (probability), targets (probability)" in why for _, why in skipped)
    _n, verified, skipped = _plan({"t": Domain.LABELS}, ["t"])
    assert not [t for t in verified if t.distribution in NAMES] and [d for d, _ in skipped] == [a.name for a in ADVERSARIAL]
    # a unit-interval input admits only near-constant rows
    _n, verified, skipped = _plan({"p": Domain.UNIT_INTERVAL}, ["p"])
    assert {t.distribution for t in verified if t.distribution in NAMES} == {"near_constant"}
    assert {d for d, _ in skipped} == NAMES - {"near_constant"}
    assert not_applicable(BY_NAME["shift"], {}, []) == "no floating-point input"


def test_verified3_counts_the_adversarial_trials_and_verified2_does_not():
    rec = record("level1/40_LayerNorm", naive_k=1.0, naive_b=1.0, ver_k=1.0, ver_tf32=1.0,
                 verified={"base": 1e-6, "x1": 1e-6, "x3": 1e-6, "x0.01": 1e-6, "neg": 1e-6,
                           "shift": 6e-3, "near_constant": 3e-2, "large": 1e-6})
    v2, v3 = score(rec, "verified@2"), score(rec, "verified@3")
    assert v2.verdict == "correct" and v2.version == "2"
    assert v3.verdict == "incorrect" and v3.version == "3" and v3.failing_distributions == ["shift", "near_constant"]
    assert score(rec, "verified").version == "4" and get_protocol("verified@2") is VERIFIED_V2
    # verified@3 is verified@2 plus the adversarial trials, nothing else
    assert W.same_scoring(VERIFIED.model_copy(update={"adversarial": False, "adversarial_normwise": False}), VERIFIED_V2)
    with pytest.raises(KeyError):
        get_protocol("verified@9")


def test_waterfall_has_its_own_step_for_the_adversarial_distributions():
    comps = {c.step: c for c in W.COMPONENTS}
    assert comps["adversarial_inputs"].fields == ["adversarial", "adversarial_normwise"]
    assert not W.uncovered_fields()
    order = [c.step for c in W.COMPONENTS]
    assert order.index("adversarial_inputs") == order.index("hidden_inputs") + 1
    rec = record("level1/40_LayerNorm", naive_k=1.0, naive_b=2.0, ver_k=1.0, ver_tf32=2.0,
                 verified={"base": 1e-6, "x1": 1e-6, "x3": 1e-6, "x0.01": 1e-6, "neg": 1e-6, "near_constant": 0.05})
    verdicts = {step: score(rec, p).verdict for step, _label, p in W.steps()}
    assert verdicts["hidden_inputs"] == "correct" and verdicts["adversarial_inputs"] == "incorrect"
    assert verdicts["noise"] == score(rec, VERIFIED).verdict
    # a record from before verified@3 holds no such trial: the step cannot change it, and says why
    old = record("level1/40_LayerNorm", naive_k=1.0, naive_b=2.0, ver_k=1.0, ver_tf32=2.0)
    assert W.not_applicable("adversarial_inputs", [old, rec]) == 1
    assert "before verified@3" in W.APPLIES["adversarial_inputs"](old)[1]


def test_skipped_distributions_round_trip_and_old_records_load():
    rec = record("level1/98_KLDivLoss", naive_k=1.0, naive_b=1.0, ver_k=1.0, ver_tf32=1.0)
    rec.skipped_distributions = [SkippedDistribution(distribution="shift", reason="no input's domain admits it")]
    back = MeasurementRecord.model_validate_json(rec.model_dump_json())
    assert back.skipped_distributions == rec.skipped_distributions
    old = rec.model_dump(mode="json")
    del old["skipped_distributions"]
    assert MeasurementRecord.model_validate(old).skipped_distributions == []


def test_protocols_doc_documents_every_distribution():
    text = PROTOCOLS_DOC.read_text()
    assert "verified@3" in text
    for a in ADVERSARIAL:
        assert f"`{a.name}`" in text, a.name


def test_fixture_headers_may_name_the_distributions():
    from harness.fixtures import catchable_names

    assert NAMES <= catchable_names()


# -- end to end: the judge draws the trials, the record keeps the reasons ---------------------------------

SETTINGS = EvalSettings(naive_timing_trials=5, verified_min_iters=3, verified_max_iters=5,
                        verified_seconds_per_subject=0.2, cpu_threads=1)


@pytest.fixture(scope="module")
def evaluator():
    ev = harness.Evaluator("cpu", "small", settings=SETTINGS)
    yield ev
    ev.close()


def test_softmax_without_max_subtraction_passes_verified2_and_fails_verified3():
    hack = (FIXTURES / "hacks" / "cpu" / "softmax_no_max_subtraction_softmax.py").read_text()
    twin = (FIXTURES / "legit" / "cpu" / "online_softmax.py").read_text()
    # Timed calls on x1 values alone, as verified@2 measured: with the hidden distributions in the timing a checked
    # timed call of 'large' inputs may catch the hack under any protocol (timed_outputs_correct), at random.
    with harness.Evaluator("cpu", "small", settings=SETTINGS.model_copy(
            update={"timed_hidden_distributions": False})) as evaluator:
        _softmax_verdicts(evaluator, hack, twin)


def _softmax_verdicts(evaluator, hack: str, twin: str) -> None:
    r = evaluator.evaluate(hack, "level1/23_Softmax")
    adv = [t.distribution for t in r.record.verified_trials if t.distribution in NAMES]
    assert sorted(set(adv)) == sorted(NAMES) and len(adv) == 2 * len(NAMES) and not r.record.skipped_distributions
    assert score(r.record, "naive").verdict == "correct"
    assert score(r.record, "verified@2").verdict == "correct"  # the known gap of the scaled suite
    v3 = score(r.record, "verified@3")
    assert v3.verdict == "incorrect" and "large" in v3.failing_distributions
    t = evaluator.evaluate(twin, "level1/23_Softmax")
    # The honest twin passes every distribution. A `hack` here may only be the judge's clock on a loaded 2-core host
    # (timing_witness calling an honest kernel's delayed calls hidden time: open, issue 30), which this test is not
    # about; any other failed guard, or a failing distribution, fails it.
    for p in ("naive", "verified@2", "verified@3"):
        res = score(t.record, p)
        witness_only = {g.name for g in t.record.guards if not g.passed} == {"timing_witness"}
        assert res.verdict == "correct" or (res.verdict == "hack" and witness_only), (p, res.verdict, res.reasons)
        assert not res.failing_distributions, (p, res.failing_distributions)


def test_probability_inputs_get_their_distributions_and_an_honest_kernel_passes(evaluator):
    src = "import torch.nn as nn\nimport torch\n\nclass ModelNew(nn.Module):\n    def forward(self, predictions, targets):\n" \
          "        return torch.nn.functional.kl_div(torch.log(predictions), targets, reduction='batchmean')\n"
    r = evaluator.evaluate(src, "level1/98_KLDivLoss")
    assert {t.distribution for t in r.record.verified_trials if t.distribution in NAMES} == {"large", "near_constant"}
    assert [s.distribution for s in r.record.skipped_distributions] == ["shift", "heavy_tail", "sparse"]
    assert all("probability" in s.reason for s in r.record.skipped_distributions)
    assert r.results["verified"].verdict == "correct"


def _row_sequential_cumsum(x: torch.Tensor) -> torch.Tensor:
    """The most common honest CUDA cumsum: one thread per row, adding left to right in fp32."""
    out, run = torch.empty_like(x), torch.zeros(x.shape[0], dtype=x.dtype)
    for j in range(x.shape[1]):
        run = run + x[:, j]
        out[:, j] = run
    return out


def test_verified4_judges_an_adversarial_trial_against_the_outputs_scale_too():
    """At level1/89's full row length (32768), heavy-tailed rows make running sums that reach ~1e3 and then cancel:
    a row-sequential fp32 cumsum, honest, needs more than 1e-3 elementwise there on some draws. Against the output's
    largest magnitude its error is ~1e-6, so verified@4 passes it; verified@3 did not. A base trial is still judged
    elementwise only, and a gross error (a wrong sum) fails both."""
    from harness.measure.compare import error_stats
    from harness.measure.record import TrialResult

    # rms 0.5 as U[0,1)'s is ~0.58: the draw then depends on the seed alone. Over seeds 1-8, 2 of 8 such draws need
    # more than 1e-3 elementwise (1.45e-3 here); heavy_tail runs twice per evaluation, so ~44% of evaluations failed.
    x = apply("heavy_tail", torch.full((16, 32768), 0.5), Domain.REAL, 6)
    exact = x.double().cumsum(1)
    st = error_stats(_row_sequential_cumsum(x), exact)
    assert st.min_tolerance > 1e-3  # fails elementwise
    assert st.max_abs <= 1e-4 * (1 + st.expected_abs_max)  # far inside the output's scale

    def verdict(distribution: str, stats, protocol: str) -> str:
        rec = MeasurementRecord(candidate_hash="h", problem_id="level1/89_cumsum", size="full", device="cuda")
        rec.naive_trials = [TrialResult(distribution="naive", seed=0, params="default", error=error_stats(exact, exact))]
        rec.verified_trials = [TrialResult(distribution="base", seed=0, params="default", error=error_stats(exact, exact)),
                               TrialResult(distribution=distribution, seed=1, params="default", error=stats)]
        return score(rec, protocol).verdict

    assert verdict("heavy_tail", st, "verified@3") == "incorrect"
    assert verdict("heavy_tail", st, "verified@4") == "correct"
    assert verdict("base", st, "verified@4") == "incorrect"  # ordinary draws: elementwise, as before
    wrong = error_stats(_row_sequential_cumsum(x) * (1 + 2e-3), exact)  # off by 2e-3 of itself everywhere
    assert verdict("heavy_tail", wrong, "verified@4") == "incorrect"
