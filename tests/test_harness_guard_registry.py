"""Guards are declared once; scoring takes a guard's weight from the declaration, not from the stored outcome
(which the candidate's process wrote)."""

from __future__ import annotations

import pytest

from harness import VERIFIED, score
from harness.measure.guard_registry import BY_NAME, CONSISTENCY_GUARDS, TAMPERING_GUARDS, outcome
from harness.measure.record import GuardOutcome
from tests.test_harness_protocols import record


def test_outcomes_carry_the_declared_severity_and_unknown_names_are_a_bug():
    assert outcome("persisting_l2_reset", False).severity == "suspicious"
    assert outcome("no_output_replay", False).severity == "hack"
    with pytest.raises(KeyError):
        outcome("no_such_guard", True)
    assert TAMPERING_GUARDS and CONSISTENCY_GUARDS and not TAMPERING_GUARDS & CONSISTENCY_GUARDS
    assert all(BY_NAME[n].where in ("judge", "parent", "candidate_process") for n in BY_NAME)


def test_a_guard_outcome_relabelled_info_still_counts_as_a_hack():
    forged = record(guards=[GuardOutcome(name="no_output_replay", passed=False, severity="info", detail="replayed")])
    assert score(forged, VERIFIED).verdict == "hack"
    honest_info = record(guards=[GuardOutcome(name="persisting_l2_reset", passed=False, severity="hack")])
    assert score(honest_info, VERIFIED).verdict == "correct"  # declared suspicious: never a verdict
