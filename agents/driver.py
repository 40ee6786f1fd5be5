"""The multi-turn loop for one conversation: (model, strategy, problem, sample), up to T turns.

Each turn: send the conversation, take the code out of the answer, have the executor build and measure
it, turn the result into feedback (agents.feedback) and append one ``Attempt`` to the run store. The
next turn's conversation is the previous turn's prompt + its answer + that feedback, so a resumed
conversation is rebuilt exactly from the recorded turns.

A conversation ends when the stop protocol says correct (``stop_on``), after ``turns`` turns (the last
attempt is marked ``final``), when the spend budget is reached, or when the model could not be reached.
Only model answers are recorded as attempts: provider failures and harness failures go to
``errors.jsonl`` and leave the conversation open, so ``--resume`` retries it.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import prompts
from problems import Problem

from . import feedback as fbk
from .config import SweepConfig
from .executor import Executor
from .store import Attempt, RunStore, kernel_hash

Outcome = Literal["success", "max_turns", "budget", "model_error", "eval_error", "no_more_turns", "skipped"]
ERRORS = "errors.jsonl"


@dataclass(frozen=True)
class SampleTask:
    model: str
    strategy: str
    problem: Problem
    sample: int

    @property
    def prefix(self) -> tuple[str, str, str, int]:
        return (self.model, self.strategy, self.problem.id, self.sample)


@dataclass
class Spend:
    """Recorded spend of the run (resumed attempts included), shared by all conversations."""

    budget_usd: float | None = None
    total_usd: float = 0.0
    unknown_cost_calls: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, cost: float | None) -> None:
        with self._lock:
            if cost is None:
                self.unknown_cost_calls += 1
            else:
                self.total_usd += cost

    @property
    def exhausted(self) -> bool:
        return self.budget_usd is not None and self.total_usd >= self.budget_usd


def stop_reached(attempt: Attempt, stop_on: str) -> bool:
    return stop_on != "none" and attempt.verdict(stop_on) == "correct"


def conversation_of(attempts: list[Attempt]) -> list[dict[str, str]]:
    """The messages for the turn after ``attempts[-1]``."""
    last = attempts[-1]
    return [*last.messages, {"role": "assistant", "content": last.response},
            {"role": "user", "content": last.feedback or ""}]


class Driver:
    def __init__(self, config: SweepConfig, store: RunStore, executor: Executor, clients: dict[str, Any], *,
                 semaphores: dict[str, asyncio.Semaphore] | None = None,
                 on_attempt: Callable[[Attempt], None] | None = None,
                 on_sample: Callable[[SampleTask, Outcome], None] | None = None,
                 resolved_models: dict[str, str] | None = None) -> None:
        self.config = config
        self.store = store
        self.executor = executor
        self.clients = clients
        self.semaphores = semaphores or {}
        self.on_attempt = on_attempt
        self.on_sample = on_sample
        self.resolved_models = resolved_models or {}
        self._existing: dict[tuple[str, str, str, int], list[Attempt]] = {}
        self._seen_kernels: set[tuple[str, str]] = set()
        self._errors_lock = threading.Lock()
        for a in store:
            self._existing.setdefault((a.model, a.strategy, a.problem_id, a.sample), []).append(a)
            if a.kernel_hash:
                self._seen_kernels.add((a.kernel_hash, a.problem_id))
        for turns in self._existing.values():
            turns.sort(key=lambda a: a.turn)
        self.spend = Spend(config.budget_usd, total_usd=self.recorded_cost())

    # -- bookkeeping ------------------------------------------------------------------------------
    def recorded_cost(self) -> float:
        return sum(a.cost_usd or 0.0 for turns in self._existing.values() for a in turns)

    def is_done(self, task: SampleTask) -> bool:
        prior = self._existing.get(task.prefix, [])
        if not prior:
            return False
        last = prior[-1]
        return last.final or last.turn >= self.config.turns or stop_reached(last, self.config.stop_on)

    def log_error(self, task: SampleTask, turn: int, kind: str, message: str) -> None:
        entry = {"time": datetime.now(UTC).isoformat(), "model": task.model, "strategy": task.strategy,
                 "problem_id": task.problem.id, "sample": task.sample, "turn": turn, "kind": kind,
                 "message": message[-4000:]}
        with self._errors_lock, open(self.store.dir / ERRORS, "a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _finish(self, task: SampleTask, outcome: Outcome) -> Outcome:
        if self.on_sample:
            self.on_sample(task, outcome)
        return outcome

    # -- one conversation -------------------------------------------------------------------------
    async def run_sample(self, task: SampleTask) -> Outcome:
        from .extract import ExtractionError, extract_code
        from .models import GenerationParams, Message, ModelRequest, ProviderError, RequestContext

        cfg = self.config
        backend = cfg.backend or "cpu"
        prior = list(self._existing.get(task.prefix, []))
        if self.is_done(task):
            return self._finish(task, "skipped")
        if prior:
            messages = conversation_of(prior)
            turn = prior[-1].turn + 1
        else:
            messages = await asyncio.to_thread(
                prompts.render, task.strategy, task.problem, cfg.size, backend, hardware=cfg.hardware,
                problems_dir=cfg.problems_dir, precision=cfg.precision)
            turn = 1
        client = self.clients[task.model]
        provider = getattr(client, "provider", "unknown")
        params = GenerationParams(**{k: v for k, v in dict(max_tokens=cfg.max_tokens, temperature=cfg.temperature,
                                                          reasoning_effort=cfg.reasoning_effort).items() if v is not None})
        target = cfg.stop_on if cfg.stop_on != "none" else ("verified" if "verified" in cfg.protocols else cfg.protocols[0])

        while turn <= cfg.turns:
            if self.spend.exhausted:
                return self._finish(task, "budget")
            request = ModelRequest(
                messages=[Message(**m) for m in messages], params=params,
                context=RequestContext(problem_id=task.problem.id, level=task.problem.level,
                                       number=task.problem.number, backend=backend, sample=task.sample, turn=turn))
            sem = self.semaphores.get(provider)
            try:
                if sem is not None:
                    async with sem:
                        completion = await client.complete(request)
                else:
                    completion = await client.complete(request)
            except ProviderError as e:
                self.log_error(task, turn, "model", f"{type(e).__name__}: {e}")
                return self._finish(task, "model_error")
            except Exception as e:  # noqa: BLE001 - one broken client call must not stop the sweep
                self.log_error(task, turn, "model", f"{type(e).__name__}: {e}")
                return self._finish(task, "model_error")
            self.spend.add(completion.cost_usd)
            if completion.finish == "error":
                if provider == "replay" and turn > 1:
                    return self._finish(task, "no_more_turns")  # a recording without later turns
                self.log_error(task, turn, "model", completion.error or "finish=error")
                return self._finish(task, "model_error")

            attempt = Attempt(
                model=task.model, model_id=completion.model or self.resolved_models.get(task.model, ""),
                strategy=task.strategy, backend=backend, problem_id=task.problem.id, level=task.problem.level,
                number=task.problem.number, sample=task.sample, turn=turn, messages=messages,
                response=completion.text, finish=completion.finish, usage=completion.usage.model_dump(),
                cost_usd=completion.cost_usd, latency_s=completion.latency_s, cached_response=completion.cached,
                model_error=completion.error, size=cfg.size or "small", device=cfg.device or "cpu",
                precision=cfg.precision,
            )
            fb = fbk.from_completion(completion.finish, completion.error)
            if fb is None:
                try:
                    code = extract_code(completion.text, backend).code
                except ExtractionError as e:
                    attempt.extraction_error = str(e)
                    fb = fbk.from_extraction_error(str(e))
                else:
                    attempt.kernel_source, attempt.kernel_hash = code, kernel_hash(code)
                    key = (attempt.kernel_hash, task.problem.id)
                    attempt.eval_reused = key in self._seen_kernels
                    self._seen_kernels.add(key)
                    try:
                        evaluation = await asyncio.wrap_future(self.executor.submit(code, task.problem.id))
                    except Exception as e:  # noqa: BLE001 - the harness failed, not the candidate
                        self.log_error(task, turn, "evaluation", f"{type(e).__name__}: {e}")
                        return self._finish(task, "eval_error")
                    attempt.record = evaluation.record.model_dump(mode="json")
                    attempt.results = {k: v.model_dump(mode="json") for k, v in evaluation.results.items()}
                    fb = fbk.from_evaluation(evaluation, policy=cfg.feedback, protocols=cfg.protocols, target=target)
            if completion.finish == "length" and fb.kind not in ("correct",):
                fb = fb.model_copy(update={"text": fbk.TRUNCATED_NOTE + "\n" + fb.text})
            attempt.feedback_kind = fb.kind
            attempt.feedback = prompts.render_feedback(task.strategy, fb, backend)["content"]
            success = stop_reached(attempt, cfg.stop_on)
            attempt.final = success or turn >= cfg.turns
            await asyncio.to_thread(self.store.append, attempt)
            self._existing.setdefault(task.prefix, []).append(attempt)
            if self.on_attempt:
                self.on_attempt(attempt)
            if success:
                return self._finish(task, "success")
            messages = conversation_of([attempt])
            turn += 1
        return self._finish(task, "max_turns")


def read_errors(run_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(run_dir) / ERRORS
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out
