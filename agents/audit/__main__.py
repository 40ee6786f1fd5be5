"""python -m agents.audit RUN --judge SPEC [--min-speedup 1.2] [--sources DIR] [--json] [--no-cache]
[--cache-dir DIR]"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m agents.audit", description=__doc__)
    ap.add_argument("run", help="run directory (runs/<name>)")
    ap.add_argument("--judge", required=True, metavar="SPEC",
                    help="the judging model: claude, gpt (aliases in agents/models.toml), openai:<model>, "
                         "anthropic:<model>, openai-compatible:<model>@<base_url>, or replay:PATH (the answers "
                         "recorded in an earlier audit_judge.jsonl, or the run directory holding one)")
    ap.add_argument("--min-speedup", type=float, default=1.2,
                    help="judge verified-correct kernels at or above this verified speedup (default 1.2)")
    ap.add_argument("--json", action="store_true", help="print the entries and summary as JSON")
    ap.add_argument("--no-cache", dest="cache", action="store_false", help="do not use the response cache")
    ap.add_argument("--cache-dir", type=Path, help="response cache (default RUN/.judge_cache)")
    ap.add_argument("--problems-dir", type=Path, help="problem files (default: the run's, else the built-in catalog)")
    ap.add_argument("--sources", type=Path, metavar="DIR",
                    help="a stripped run's kernels: each is found under DIR by the record's sha256 (e.g. the corpus "
                         "laid out again by benchmarks/corpora.py); one not found is listed and skipped")
    args = ap.parse_args(argv)

    from ..models import MissingCredentials, ProviderError
    from .judge import JudgeConfig, dumps, format_judgements, judge_run

    if args.min_speedup <= 0:
        print("error: --min-speedup must be > 0", file=sys.stderr)
        return 2
    config = JudgeConfig(judge=args.judge, min_speedup=args.min_speedup, cache=args.cache, cache_dir=args.cache_dir,
                         problems_dir=args.problems_dir, sources=args.sources)
    try:
        run = judge_run(args.run, config)
    except MissingCredentials as e:
        print(f"error: {e.env_var} is not set (needed for judge '{e.spec}'); export it, or use --judge replay:PATH",
              file=sys.stderr)
        return 2
    except (FileNotFoundError, ProviderError) as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return 2
    if args.json:
        print(dumps(run))
    else:
        print(format_judgements(run.entries, run.judge, run.notes).rstrip("\n"))
        print(f"written: {run.path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
