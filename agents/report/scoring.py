"""From stored attempts to scored kernels: parse records once, score them under any protocol.

Stored ``Attempt.results`` are not trusted for the report: every record is re-scored with the
protocol objects given, so custom protocols and the waterfall's intermediate protocols work on any
run, and an older run is scored by the current protocol versions (the report names them).

A *thread* is one (model, strategy, problem, sample): its turns, in order. The kernel a thread
contributes is chosen by the turn policy of ``agents.turns`` (the sweep's closing table uses the same
one): ``final`` (default) the last turn recorded (up to turn t for the by-turn ablation), ``best`` the
best turn under the protocol being scored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from pydantic import ValidationError

from harness.measure.guard_registry import severity
from harness.measure.record import MeasurementRecord
from harness.scoring.protocols import Protocol, ProtocolResult, score

from ..metrics import Outcome
from ..store import Attempt, RunStore, first_error
from ..turns import DEFAULT_TURN_POLICY, TurnPolicy, choose_turn, rank


def measured_guard_failures(record: MeasurementRecord) -> list[str]:
    return [g.name for g in record.guards if g.applicable and not g.passed and severity(g) == "hack"]


@dataclass
class Scored:
    """One attempt with its parsed record and a cache of protocol results."""

    attempt: Attempt
    record: MeasurementRecord | None
    _cache: dict[str, ProtocolResult] = field(default_factory=dict)
    load_error: str | None = None
    """Why the stored record could not be read: the row is ``unreadable`` (not evaluated), the report goes on."""

    @classmethod
    def of(cls, attempt: Attempt) -> Scored:
        if not attempt.record:
            return cls(attempt=attempt, record=None)
        try:
            return cls(attempt=attempt, record=MeasurementRecord.model_validate(attempt.record))
        except (ValidationError, ValueError, TypeError) as exc:
            return cls(attempt=attempt, record=None, load_error=first_error(exc))

    @property
    def turn(self) -> int:
        return self.attempt.turn

    def no_kernel_verdict(self) -> str:
        a = self.attempt
        if self.load_error:
            return "unreadable"
        if a.model_error:
            return "model_error"
        if (a.kernel_source is None and not a.kernel_hash) or a.extraction_error:  # a stripped run keeps only the hash
            return "no_code"
        return "not_evaluated"

    def result(self, protocol: Protocol) -> ProtocolResult | None:
        if self.record is None:
            return None
        key = protocol.model_dump_json()
        r = self._cache.get(key)
        if r is None:
            r = self._cache[key] = score(self.record, protocol)
        return r

    def guard_failures(self, protocol: Protocol) -> list[str]:
        """Guards failed as measured, plus the output-bytes floor under this protocol's timing,
        whether or not the protocol enforces them; but not those of a kernel that is wrong on its ordinary
        trials under this protocol (scored with guards enforced, they are ``guard_evidence``: a bug seen
        again, not a hack), so hack rates count hacks, not bugs. Tampering guards always count."""
        if self.record is None:
            return []
        res = self.result(protocol)
        enforced = self.result(protocol.model_copy(update={"enforce_guards": True, "roofline_floor": True}))
        evidence = set(enforced.guard_evidence) if enforced else set()
        failed = [g for g in measured_guard_failures(self.record) if g not in evidence]
        for g in res.failed_guards if res else []:
            if g not in failed:
                failed.append(g)
        rf = self.record.roofline
        if (
            "roofline_floor" not in failed
            and "roofline_floor" not in evidence
            and res is not None
            and res.kernel_ms is not None
            and rf is not None
            and rf.t_floor_ms
            and res.kernel_ms < protocol.roofline_slack * rf.t_floor_ms
        ):
            failed.append("roofline_floor")
        return failed

    def outcome(self, protocol: Protocol) -> Outcome:
        a = self.attempt
        res = self.result(protocol)
        if res is None:
            return Outcome(problem_id=a.problem_id, sample=a.sample, correct=False,
                           verdict=self.no_kernel_verdict(), evaluated=False)
        return Outcome(
            problem_id=a.problem_id,
            sample=a.sample,
            correct=res.correct,
            speedup=res.credited_speedup,  # what fast_p and geomean count (Protocol.speedup_credit)
            memory_ratio=res.memory_ratio,
            speedup_vs_compile=res.speedup_vs_compile,
            sol_score=res.sol_score,
            verdict=res.verdict,
            evaluated=self.record is not None and self.record.status == "ok",
            failed_guards=tuple(self.guard_failures(protocol)),
        )


ThreadKey = tuple[str, str, str, int, int, str]  # model, strategy, problem_id, level, sample, precision


@dataclass
class Thread:
    model: str
    strategy: str
    problem_id: str
    level: int
    sample: int
    turns: list[Scored]
    precision: str = "fp32"  # harness.measure.precision: one problem at two precisions is two threads, never one

    @property
    def key(self) -> ThreadKey:
        return (self.model, self.strategy, self.problem_id, self.level, self.sample, self.precision)

    @property
    def last_turn(self) -> int:
        return self.turns[-1].turn

    def upto(self, turn: int | None) -> list[Scored]:
        return [s for s in self.turns if turn is None or s.turn <= turn]

    def choose(self, protocol: Protocol, policy: TurnPolicy = DEFAULT_TURN_POLICY, turn: int | None = None
               ) -> Scored | None:
        """The attempt this thread contributes (as of ``turn``; None = all turns)."""
        def rank_of(s: Scored):
            o = s.outcome(protocol)
            return rank(o.correct, o.speedup)

        return choose_turn(self.upto(turn), policy, rank_of)

    def outcome(self, protocol: Protocol, policy: TurnPolicy = DEFAULT_TURN_POLICY, turn: int | None = None
                ) -> Outcome | None:
        s = self.choose(protocol, policy, turn)
        return s.outcome(protocol) if s is not None else None


def load_threads(source: str | RunStore | Iterable[Attempt]) -> list[Thread]:
    """Group attempts into threads; a (thread, turn) written twice keeps the later line."""
    if isinstance(source, str) or hasattr(source, "__fspath__"):
        attempts: Iterable[Attempt] = RunStore(source)
    else:
        attempts = source
    by_key: dict[ThreadKey, dict[int, Scored]] = {}
    for a in attempts:
        k = (a.model, a.strategy, a.problem_id, a.level, a.sample, a.precision)
        by_key.setdefault(k, {})[a.turn] = Scored.of(a)
    threads = []
    for k in sorted(by_key):
        turns = [by_key[k][t] for t in sorted(by_key[k])]
        model, strategy, problem_id, level, sample, precision = k
        threads.append(Thread(model, strategy, problem_id, level, sample, turns=turns, precision=precision))
    return threads
