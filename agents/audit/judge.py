"""The LLM judge for fast survivors: every verified-correct kernel at or above a speedup threshold is read by a model,
which names where the speed comes from in a fixed schema (answer.py). Its answers are stored in
RUN/audit_judge.jsonl (log.py) and shown by the report; a verdict is never changed.

    judge_run("runs/x", JudgeConfig(judge="claude", min_speedup=1.2)) -> JudgeRun

Model calls go through agents.models (the sweep's clients, retry layer, prices and response cache); ``replay:PATH``
serves the answers recorded in an earlier audit_judge.jsonl instead.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

import problems as P
from harness.scoring.protocols import NAIVE, VERIFIED, ProtocolResult

from ..models import (
    Completion,
    GenerationParams,
    Message,
    ModelClient,
    ModelRequest,
    ProviderError,
    RequestContext,
    resolve,
)
from ..report.scoring import Scored, Thread, load_threads
from ..store import ATTEMPTS, RunStore
from .answer import UnreadableAnswer, parse_answer
from .log import JUDGE_FILE, Exchange, JudgeEntry, read_judgements, write_judgements
from .prompt import SYSTEM, evidence, prompt_hash, retry_prompt, user_prompt
from .sources import SourceIndex

CACHE_DIR = ".judge_cache"  # under the run directory: the cache travels with the run it judged
STRIPPED_NOTE = "kernel source not in the stored attempt (a stripped run keeps only its hash): not judged"


class JudgeConfig(BaseModel):
    judge: str = Field(description="claude, gpt, any agents.models spec (openai-compatible:<model>@<base_url>), "
                                   "or replay:PATH (an earlier audit_judge.jsonl, or the run directory holding one)")
    min_speedup: float = Field(1.2, gt=0, description="judge verified-correct kernels at or above this speedup")
    cache: bool = Field(True, description="cache API answers (keyed by a hash of provider, model, prompt, params)")
    cache_dir: Path | None = Field(None, description=f"default RUN/{CACHE_DIR}")
    models_config: Path | None = Field(None, description="models.toml (aliases, retry settings); default the packaged one")
    problems_dir: Path | None = Field(None, description="where the problem files are; default the run's, else the "
                                                        "built-in catalog")
    sources: Path | None = Field(None, description="a folder holding the kernels of a stripped run (e.g. the corpus "
                                                   "laid out again by benchmarks/corpora.py), found by sha256")


class JudgeRun(BaseModel):
    """What one judging did (the entries are also written to RUN/audit_judge.jsonl)."""

    run: str
    judge: str
    min_speedup: float
    evaluated: int = Field(0, description="attempts with a measurement record")
    entries: list[JudgeEntry]
    path: str = ""
    notes: list[str] = Field(default_factory=list)

    @property
    def summary(self) -> JudgeSummary:
        return summarize(self.entries, self.judge)


class JudgeSummary(BaseModel):
    judge: str
    judge_models: list[str] = Field(default_factory=list)
    min_speedup: float | None = None
    kernels: int = 0
    by_status: dict[str, int] = Field(default_factory=dict)
    by_category: dict[str, int] = Field(default_factory=dict)
    calls: int = 0
    cached_calls: int = 0
    cost_usd: float = Field(0.0, description="sum over calls with a price (cache hits and replay cost 0)")
    unpriced_calls: int = Field(0, description="calls whose model has no entry in agents/prices.toml")


def summarize(entries: list[JudgeEntry], judge: str) -> JudgeSummary:
    mine = [e for e in entries if e.judge == judge]
    calls = [x for e in mine for x in e.exchanges]
    return JudgeSummary(
        judge=judge, judge_models=sorted({e.judge_model for e in mine if e.judge_model}),
        min_speedup=next((e.min_speedup for e in mine), None), kernels=len(mine),
        by_status=dict(Counter(e.status for e in mine)), by_category=dict(Counter(e.category for e in mine if e.category)),
        calls=len(calls), cached_calls=sum(x.cached for x in calls),
        cost_usd=sum(x.cost_usd for x in calls if x.cost_usd is not None),
        unpriced_calls=sum(x.cost_usd is None for x in calls))


# ---- which kernels ----------------------------------------------------------------------------------


@dataclass
class Candidate:
    thread: Thread
    scored: Scored
    naive: ProtocolResult
    verified: ProtocolResult
    source: str | None = None  # the kernel: the stored attempt's, else the --sources file with its hash
    source_file: str = ""
    missing: str = STRIPPED_NOTE  # why there is no source, when there is none

    def __post_init__(self) -> None:
        if self.source is None:
            self.source = self.scored.attempt.kernel_source

    def find_source(self, index: SourceIndex) -> None:
        """A stripped attempt's kernel from ``index``, by the record's sha256; else why not (``missing``)."""
        if self.source:
            return
        a = self.scored.attempt
        digest = a.kernel_hash or (self.scored.record.candidate_hash if self.scored.record else "")
        found = index.find(digest) if digest else None
        if found is None:
            self.missing = index.missing_note(digest, (a.level, a.number, a.sample, a.turn))
            return
        self.source, self.source_file = found.source, str(found.path)


def fast_survivors(threads: list[Thread], min_speedup: float) -> list[Candidate]:
    """Every evaluated turn that the verified protocol calls correct at a point speedup >= ``min_speedup``."""
    out = []
    for t in threads:
        for s in t.turns:
            ver = s.result(VERIFIED)
            if ver is None or not ver.correct or ver.speedup is None or ver.speedup < min_speedup:
                continue
            naive = s.result(NAIVE)
            assert naive is not None  # a record scores under every protocol
            out.append(Candidate(t, s, naive, ver))
    return out


# ---- the replay judge -------------------------------------------------------------------------------


class ReplayJudge:
    """Serves the answers recorded in an audit_judge.jsonl, found by the hash of the request's messages."""

    provider = "replay"

    def __init__(self, path: Path, spec: str):
        path = Path(path)
        if path.is_dir():
            path = path / JUDGE_FILE
        if not path.is_file():
            raise ProviderError(f"replay judge: {path} not found (give an audit_judge.jsonl, or the run directory "
                                "holding one)")
        self.spec, self.model, self.path = spec, f"replay:{path.parent.name}", path
        self.answers: dict[str, str] = {}
        for e in read_judgements(path.parent) if path.name == JUDGE_FILE else _read_file(path):
            for x in e.exchanges:
                self.answers.setdefault(x.prompt_hash, x.response)

    async def complete(self, request: ModelRequest) -> Completion:
        h = prompt_hash([m.model_dump() for m in request.messages])
        text = self.answers.get(h)
        if text is None:
            return Completion(text="", finish="error", cost_usd=0.0, model=self.model, provider=self.provider,
                              error=f"replay judge: no answer recorded in {self.path} for this prompt "
                                    f"({request.context.problem_id}; the kernel, evidence or prompt changed?)")
        return Completion(text=text, finish="stop", cost_usd=0.0, model=self.model, provider=self.provider)

    async def aclose(self) -> None:
        return None


def _read_file(path: Path) -> list[JudgeEntry]:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(JudgeEntry.model_validate_json(line))
        except ValueError:
            continue
    return out


def judge_client(config: JudgeConfig, run_dir: Path) -> ModelClient:
    """The client for ``config.judge`` (raises MissingCredentials / UnknownModelSpec / ProviderError)."""
    spec = config.judge.strip()
    if spec.startswith("replay:"):
        return ReplayJudge(Path(spec.removeprefix("replay:")).expanduser(), spec)
    cache = (config.cache_dir or run_dir / CACHE_DIR) if config.cache else None
    return resolve(spec, config_path=config.models_config, cache_dir=cache)


# ---- asking -----------------------------------------------------------------------------------------


class _Problems:
    """Problem sources by id: the run's problems_dir when it is here, else the built-in catalog (noted)."""

    def __init__(self, run_dir: Path, override: Path | None):
        saved = RunStore(run_dir).read_config() or {}
        wanted = override or saved.get("problems_dir")
        self.root: Path | None = None
        self.notes: list[str] = []
        self._fallback: str | None = None
        if wanted:
            root = Path(wanted).expanduser()
            if not root.is_absolute() and not root.is_dir():
                root = run_dir / root
            if root.is_dir():
                self.root = root
            else:
                self._fallback = (f"the run's problems_dir {wanted} is not here: problem sources from the built-in "
                                  "catalog (same KernelBench ids)")

    def source(self, problem_id: str, size: str) -> tuple[str | None, str | None]:
        if self._fallback and self._fallback not in self.notes:  # said once, and only when a source was needed
            self.notes.append(self._fallback)
        try:
            p = P.load(problem_id, self.root)
            return p.source("small" if size == "small" else "full"), None
        except (P.ProblemNotFound, OSError, P.SizePresetError) as exc:
            return None, f"problem source not found: {exc}"


def _context(c: Candidate) -> RequestContext:
    a = c.scored.attempt
    backend = a.backend if a.backend in ("cuda", "triton", "cpu") else "cuda"
    return RequestContext(problem_id=a.problem_id, level=a.level, number=a.number, backend=backend)


async def _ask(client: ModelClient, messages: list[Message], ctx: RequestContext) -> tuple[Completion | None, str]:
    try:
        return await client.complete(ModelRequest(messages=messages, params=GenerationParams(), context=ctx)), ""
    except ProviderError as exc:
        return None, f"{type(exc).__name__}: {exc}"


async def judge_one(client: ModelClient | None, c: Candidate, problems: _Problems, spec: str, min_speedup: float
                    ) -> JudgeEntry:
    """Ask once; an answer outside the schema gets one retry (the error quoted back), then 'unsure'."""
    a = c.scored.attempt
    record = c.scored.record
    assert record is not None
    base = JudgeEntry(judge=spec, model=a.model, strategy=a.strategy, problem_id=a.problem_id, sample=a.sample,
                      turn=a.turn, precision=a.precision, candidate_hash=record.candidate_hash,
                      verified_speedup=c.verified.speedup, min_speedup=min_speedup, status="skipped",
                      evidence=evidence(record, c.naive, c.verified), source_file=c.source_file)
    if not c.source:
        return base.model_copy(update={"note": c.missing})
    assert client is not None and base.evidence is not None
    problem_source, problem_note = problems.source(a.problem_id, a.size)
    messages = [Message(role="system", content=SYSTEM),
                Message(role="user", content=user_prompt(a.problem_id, problem_source, c.source, base.evidence,
                                                         problem_note))]
    exchanges: list[Exchange] = []
    model_id = ""
    error = ""
    for _ in range(2):
        completion, failure = await _ask(client, messages, _context(c))
        if completion is None:
            return base.model_copy(update={"status": "error", "note": failure, "exchanges": exchanges,
                                           "judge_model": model_id})
        model_id = completion.model
        exchanges.append(Exchange(prompt_hash=prompt_hash([m.model_dump() for m in messages]), response=completion.text,
                                  finish=completion.finish, cached=completion.cached, cost_usd=completion.cost_usd,
                                  usage=completion.usage.model_dump()))
        if completion.finish == "error":
            return base.model_copy(update={"status": "error", "note": completion.error or "the client gave no answer",
                                           "exchanges": exchanges, "judge_model": model_id})
        try:
            answer = parse_answer(completion.text)
        except UnreadableAnswer as exc:
            error = str(exc) + (" (the answer was cut at max_tokens)" if completion.finish == "length" else "")
            messages = [*messages, Message(role="assistant", content=completion.text),
                        Message(role="user", content=retry_prompt(error))]
            continue
        return base.model_copy(update={"status": "judged", "category": answer.category, "reason": answer.reason,
                                       "exchanges": exchanges, "judge_model": model_id,
                                       "note": problem_note})
    return base.model_copy(update={
        "status": "schema_error", "category": "unsure", "exchanges": exchanges, "judge_model": model_id,
        "reason": f"the judge answered outside the schema twice: {error}", "note": error})


def judge_run(run_dir: str | Path, config: JudgeConfig, *, client: ModelClient | None = None) -> JudgeRun:
    """Judge every fast survivor of ``run_dir`` and write RUN/audit_judge.jsonl (this judge's lines replaced).

    Raises FileNotFoundError (not a run directory), MissingCredentials, UnknownModelSpec, ProviderError (replay file
    missing) before any call; a failed call is that kernel's 'error' entry, never the run's end."""
    run_dir = Path(run_dir)
    if not (run_dir / ATTEMPTS).is_file():
        raise FileNotFoundError(f"{run_dir} has no {ATTEMPTS}: not a run directory")
    threads = load_threads(run_dir)
    candidates = fast_survivors(threads, config.min_speedup)
    if config.sources is not None:
        index = SourceIndex(config.sources)  # FileNotFoundError before any call
        for c in candidates:
            c.find_source(index)
    problems = _Problems(run_dir, config.problems_dir)
    own = client is None
    if client is None and any(c.source for c in candidates):
        client = judge_client(config, run_dir)  # only when there is something to ask: a stripped run needs no key

    async def go() -> list[JudgeEntry]:
        try:
            return list(await asyncio.gather(
                *(judge_one(client, c, problems, config.judge, config.min_speedup) for c in candidates)))
        finally:
            if own and client is not None:
                await client.aclose()

    entries = asyncio.run(go())
    notes = list(problems.notes)
    stripped = sum(e.note == STRIPPED_NOTE for e in entries)
    if stripped:
        notes.append(f"{stripped} of {len(entries)} fast survivor(s) have no kernel source in the run (stripped "
                     "records): skipped, not judged" + ("" if config.sources else "; --sources DIR finds them by hash"))
    if config.sources is not None:
        notes += sources_notes(config.sources, candidates)
    path = write_judgements(run_dir, config.judge, entries)
    return JudgeRun(run=run_dir.name, judge=config.judge, min_speedup=config.min_speedup,
                    evaluated=sum(s.record is not None for t in threads for s in t.turns), entries=entries,
                    path=str(path), notes=notes)


def sources_notes(root: Path, candidates: list[Candidate]) -> list[str]:
    """How many stripped kernels --sources supplied, and each one it could not (counted and listed)."""
    stripped = [c for c in candidates if not c.scored.attempt.kernel_source]
    lost = [c for c in stripped if not c.source]
    out = [f"--sources {root}: {len(stripped) - len(lost)} of {len(stripped)} stripped fast survivor(s) found by "
           "sha256"]
    out += [f"{c.scored.attempt.problem_id} sample {c.scored.attempt.sample} turn {c.scored.attempt.turn}: "
            f"{c.missing}" for c in lost]
    return out


# ---- text -------------------------------------------------------------------------------------------


def cost_line(s: JudgeSummary) -> str:
    line = f"cost ${s.cost_usd:.4f} over {s.calls} call(s), {s.cached_calls} from the cache"
    if s.unpriced_calls:
        line += f"; {s.unpriced_calls} call(s) unpriced (model not in agents/prices.toml)"
    return line


def entry_line(e: JudgeEntry) -> str:
    sp = "-" if e.verified_speedup is None else f"{e.verified_speedup:.2f}x"
    head = f"{e.problem_id} · {e.model} ({e.strategy}) · sample {e.sample} · turn {e.turn} · verified {sp}"
    if e.status == "skipped" or e.status == "error":
        return f"{head}\n  {e.status}: {e.note}"
    return f"{head}\n  {e.category}" + (" (schema error)" if e.status == "schema_error" else "") + f": {e.reason}"


def format_judgements(entries: list[JudgeEntry], judge: str, notes: list[str] | None = None) -> str:
    s = summarize(entries, judge)
    models = f" ({', '.join(s.judge_models)})" if s.judge_models else ""
    out = [f"LLM judge {judge}{models}: {s.kernels} fast survivor(s) (verified correct, speedup >= "
           f"{s.min_speedup if s.min_speedup is not None else '-'}x); verdicts unchanged",
           "  status   " + (", ".join(f"{k} {v}" for k, v in sorted(s.by_status.items())) or "none"),
           "  category " + (", ".join(f"{k} {v}" for k, v in sorted(s.by_category.items())) or "none"),
           "  " + cost_line(s)]
    out += [f"  note: {n}" for n in notes or []]
    return "\n".join(out + [""] + [entry_line(e) for e in entries if e.judge == judge]) + "\n"


def dumps(run: JudgeRun) -> str:
    data = run.model_dump(mode="json")
    data["summary"] = run.summary.model_dump(mode="json")
    return json.dumps(data, indent=2)
