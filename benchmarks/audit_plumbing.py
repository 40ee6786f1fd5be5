"""The LLM judge's plumbing, end to end, on the committed corpus run: PLUMBING ONLY, NO JUDGEMENT.

    python benchmarks/audit_plumbing.py --sources .corpus/replay      (from the repo root, after
        python benchmarks/corpora.py cudal1 /work/.mirror/deepreinforce-ai+CUDA-L1/repo .corpus)

No API key exists here, so no model reads a kernel. What runs is everything around the model:

1. record: a copy of benchmarks/results/corpus_run is judged through the real OpenAI SDK (openai-compatible spec)
   against the test suite's local fake server (tests/fake_llm_server.py), whose every answer is the same canned,
   labelled FAKE text (category ``unsure``). The stripped run's kernels come from ``--sources`` by sha256; the
   answers land in benchmarks/results/corpus_run_audit_plumbing/audit_judge.jsonl (the recorded responses).
2. replay: the committed run itself is judged with ``--judge replay:benchmarks/results/corpus_run_audit_plumbing``,
   the answers found again by the hash of each prompt (kernel, problem, evidence), and written to
   benchmarks/results/corpus_run/audit_judge.jsonl, which ``python -m agents.report`` shows.

The same replay from the command line:
    python -m agents.audit benchmarks/results/corpus_run --judge replay:benchmarks/results/corpus_run_audit_plumbing
        --sources .corpus/replay
Writes benchmarks/results/corpus_run_audit_plumbing.md (what both steps printed, and the report's judge table).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FAKE_MODEL = "FAKE-canned-answer"
FAKE_REASON = "FAKE canned answer (tests/fake_llm_server.py), the same for every kernel: plumbing, not a judgement"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", type=Path, required=True, help="the corpus laid out by benchmarks/corpora.py")
    ap.add_argument("--run", type=Path, default=Path("benchmarks/results/corpus_run"))
    ap.add_argument("--recorded", type=Path, default=Path("benchmarks/results/corpus_run_audit_plumbing"))
    ap.add_argument("--min-speedup", type=float, default=1.2)
    args = ap.parse_args(argv)
    os.chdir(ROOT)  # the run's problems_dir (.corpus/problems) is relative to the repo root

    import io
    import json

    from rich.console import Console

    from agents.audit import JudgeConfig, fast_survivors, format_judgements, judge_run
    from agents.report import build_report
    from agents.report.scoring import load_threads
    from agents.report.text import judge_tables
    from tests.fake_llm_server import FakeLLMServer, Step, chat_body

    fake_answer = json.dumps({"category": "unsure", "reason": FAKE_REASON})
    n = len(fast_survivors(load_threads(args.run), args.min_speedup))
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        copy = Path(tmp) / args.run.name
        copy.mkdir()
        for f in ("attempts.jsonl", "config.json"):
            shutil.copy(args.run / f, copy / f)
        server.script("/v1/chat/completions", *[Step.json(chat_body(fake_answer, model=FAKE_MODEL)) for _ in range(n)])
        os.environ.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
        spec = f"openai-compatible:{FAKE_MODEL}@{server.url}/v1"
        recorded = judge_run(copy, JudgeConfig(judge=spec, min_speedup=args.min_speedup, cache=False,
                                               sources=args.sources))
        asked = len(server.requests_to("/v1/chat/completions"))
        args.recorded.mkdir(parents=True, exist_ok=True)
        shutil.copy(copy / "audit_judge.jsonl", args.recorded / "audit_judge.jsonl")
    record_text = format_judgements(recorded.entries, recorded.judge, recorded.notes)

    replay_spec = f"replay:{args.recorded}"
    replayed = judge_run(args.run, JudgeConfig(judge=replay_spec, min_speedup=args.min_speedup, sources=args.sources))
    replay_text = format_judgements(replayed.entries, replayed.judge, replayed.notes)
    console = Console(file=io.StringIO(), width=200)
    for table in judge_tables(build_report(args.run)):
        console.print(table)
    report_text = console.file.getvalue()

    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    statuses = sorted({e.status for e in replayed.entries})
    same = [(e.problem_id, e.category, e.reason) for e in recorded.entries] == \
        [(e.problem_id, e.category, e.reason) for e in replayed.entries]
    md = f"""# The LLM judge on the committed corpus run: PLUMBING ONLY, NOT A JUDGEMENT

Every answer below is the **canned text of a local fake server** (tests/fake_llm_server.py), the same for every
kernel (category `unsure`). No model read any kernel (no API key on this host). What it shows: the stripped run's
fast survivors get their kernel sources back from the corpus by sha256 (`--sources`), the prompts go through the real
OpenAI SDK (openai-compatible spec) to a server and back through the schema, the answers are recorded, and
`--judge replay:` finds each again by the hash of its prompt and writes what `python -m agents.report` shows.

Host: {platform.node()} ({os.cpu_count()} cores, shared with other agents; load average {load}), \
{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Nothing here is timed: the figures are counts.
Command (repo root, with the corpus laid out by `python benchmarks/corpora.py cudal1 <CUDA-L1 mirror> .corpus`):

    python benchmarks/audit_plumbing.py --sources {args.sources}

Fast survivors (verified correct, speedup >= {args.min_speedup}x): {n}; requests the fake server answered: {asked};
replay statuses: {", ".join(statuses)}; replayed answers equal the recorded ones: {same}.

## 1. record (fake server, through the OpenAI SDK)

```
{record_text.rstrip()}
```

## 2. replay (`python -m agents.audit {args.run} --judge {replay_spec} --sources {args.sources}`)

```
{replay_text.rstrip()}
```

## 3. `python -m agents.report {args.run}`: its judge table

```
{report_text.rstrip()}
```
"""
    out = args.recorded.with_suffix(".md")
    out.write_text(md)
    print(md)
    ok = asked == n and statuses == ["judged"] and same
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
