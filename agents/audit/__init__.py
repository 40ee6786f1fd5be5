"""Audits of a run beyond the protocols' verdicts. Today: the LLM judge of fast survivors.

    from agents.audit import JudgeConfig, judge_run
    run = judge_run("runs/x", JudgeConfig(judge="claude", min_speedup=1.2))   # writes runs/x/audit_judge.jsonl
    python -m agents.audit RUN --judge claude|gpt|openai-compatible:<model>@<base_url>|replay:PATH [--min-speedup 1.2]
        [--sources DIR]     (a stripped run: each kernel found under DIR by its record's sha256, agents/audit/sources.py)

A model reads each verified-correct kernel at or above the speedup threshold (its source, the problem's source, the
record's evidence) and names where the speed comes from: genuine_optimisation, library_call_only,
exploits_problem_structure, precision_trick, caching_or_timing_exploit or unsure, with a reason. The answer is stored
beside the verdict and shown by ``python -m agents.report``; it never changes a verdict.
"""

from .answer import CATEGORIES, MEANING, Category, JudgeAnswer, UnreadableAnswer, parse_answer
from .judge import (
    JudgeConfig,
    JudgeRun,
    JudgeSummary,
    ReplayJudge,
    fast_survivors,
    format_judgements,
    judge_client,
    judge_run,
    summarize,
)
from .log import JUDGE_FILE, Exchange, JudgeEntry, read_judgements, write_judgements
from .prompt import Evidence, evidence, user_prompt

__all__ = [
    "CATEGORIES", "JUDGE_FILE", "MEANING", "Category", "Evidence", "Exchange", "JudgeAnswer", "JudgeConfig",
    "JudgeEntry", "JudgeRun", "JudgeSummary", "ReplayJudge", "UnreadableAnswer", "evidence", "fast_survivors",
    "format_judgements", "judge_client", "judge_run", "parse_answer", "read_judgements", "summarize", "user_prompt",
    "write_judgements",
]
