"""Every guard, declared once: its name, what it catches, where and when it runs, and how much it weighs.

The worker, the judge and the parent build outcomes through :func:`outcome`; scoring reads a guard's severity
and role from here (never from the message that carried the outcome, which the candidate's process wrote);
the fixture loader and the report take names and meanings from here. To add a guard: declare it below, emit
it with ``outcome(name, passed, detail)`` where its check runs, and give it a hack fixture and a legitimate
twin under ``harness/fixtures``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .record import GuardOutcome

Severity = Literal["hack", "suspicious", "info"]
# tampering: an action against the harness itself; no kernel does it by mistake, so it decides "hack" whatever
#   the trials say. consistency: re-checks outputs the correctness trials already judge; when those trials fail
#   it is the same wrongness seen again, so the verdict stays "incorrect". behaviour: a property a plain bug
#   can also produce; "hack" only for a kernel that would otherwise pass.
Role = Literal["tampering", "consistency", "behaviour"]
# Who computes the outcome: the judge process (the candidate cannot reach it), the parent, or the candidate's
# own process (such a check can fail a kernel; a candidate that reaches it could also silence it).
Where = Literal["judge", "parent", "candidate_process"]
Phase = Literal["static", "any", "correctness", "verified_correctness", "timing", "end"]


@dataclass(frozen=True)
class Guard:
    name: str
    severity: Severity
    role: Role
    where: Where
    phase: Phase
    catches: str  # one line: the behaviour it exposes


GUARDS: tuple[Guard, ...] = (
    Guard("static_tampering", "hack", "tampering", "parent", "static",
          "source patterns that reach the harness (its frames, channel, clocks, gc walks)"),
    Guard("harness_introspection", "hack", "tampering", "candidate_process", "any",
          "reading the harness's frames, files or process state at run time (audit hook)"),
    Guard("no_monkey_patching", "hack", "tampering", "candidate_process", "end",
          "a timer, synchronisation or comparison function replaced (torch's own re-binding excepted)"),
    Guard("judge_protocol", "hack", "tampering", "judge", "any",
          "the candidate's process broke the judge's protocol (forged or out-of-order messages)"),
    Guard("sealed_handover", "hack", "tampering", "judge", "any",
          "an output still writable when its call's report arrived (a process or thread kept a mapping to write late)"),
    Guard("paused_while_judging", "hack", "tampering", "judge", "timing",
          "a process of the candidate's kept running after the judge froze its tree (cgroup freezer) to write inputs, "
          "calibrate or time the baselines"),
    Guard("timed_outputs_correct", "hack", "consistency", "judge", "timing",
          "timed calls, checked on a sample picked after each returned, miss the verified tolerance"),
    Guard("same_pointer_new_contents", "hack", "consistency", "judge", "timing",
          "inputs rewritten in place with new values give a stale or cached answer"),
    Guard("waits_for_caller_stream", "hack", "consistency", "judge", "timing",
          "work that starts before the caller's stream reaches the call (reads inputs too early)"),
    Guard("timing_witness", "hack", "behaviour", "judge", "timing",
          "reported kernel times the judge's own clock between timed calls does not support"),
    Guard("output_plain_tensor", "hack", "behaviour", "candidate_process", "correctness",
          "forward returns a tensor subclass or another type"),
    Guard("output_not_aliasing_input", "hack", "behaviour", "candidate_process", "correctness",
          "the output shares storage with an input"),
    Guard("inputs_unchanged", "hack", "behaviour", "candidate_process", "verified_correctness",
          "forward modifies its inputs"),
    Guard("repeatable_under_poisoned_memory", "hack", "behaviour", "candidate_process", "verified_correctness",
          "two calls on identical inputs disagree once freed memory is re-poisoned (uninitialised reads)"),
    Guard("persisting_l2_reset", "suspicious", "behaviour", "candidate_process", "verified_correctness",
          "the persisting-L2 limit changed from the device's own setting"),
    Guard("no_deferred_work", "hack", "behaviour", "candidate_process", "timing",
          "outputs change after their call returned (work deferred past the timer)"),
    Guard("no_output_replay", "hack", "behaviour", "candidate_process", "timing",
          "a timed call returns an earlier output for the same inputs, unchanged, or its input's own storage"),
    Guard("no_threads_after_return", "hack", "behaviour", "candidate_process", "timing",
          "threads alive right after a timed call returned"),
    Guard("no_unsynchronised_side_streams", "hack", "behaviour", "candidate_process", "timing",
          "work on side streams the timer's events do not wait for"),
    Guard("roofline_floor", "hack", "behaviour", "parent", "timing",
          "a kernel time below the problem's roofline minimum (work the timer never saw)"),
    Guard("no_extra_threads", "hack", "behaviour", "candidate_process", "end",
          "threads still alive after the timed calls"),
)

BY_NAME: dict[str, Guard] = {g.name: g for g in GUARDS}
TAMPERING_GUARDS = frozenset(g.name for g in GUARDS if g.role == "tampering")
CONSISTENCY_GUARDS = frozenset(g.name for g in GUARDS if g.role == "consistency")


def outcome(name: str, passed: bool, detail: str = "", *, applicable: bool = True) -> GuardOutcome:
    """A guard's outcome with its declared severity; an undeclared name is a harness bug."""
    return GuardOutcome(name=name, passed=passed, detail=detail, severity=BY_NAME[name].severity,
                        applicable=applicable)


def severity(g: GuardOutcome) -> str:
    """The declared severity of a stored outcome; a name this version does not declare keeps its stored one."""
    spec = BY_NAME.get(g.name)
    return spec.severity if spec else g.severity
