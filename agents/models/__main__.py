"""python -m agents.models --list | --check [--models gpt,claude]"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys

from .base import GenerationParams, Message, ModelRequest, RequestContext
from .config import load_config
from .errors import ProviderError
from .registry import parse_spec, resolve

_CHECK_PROMPT = [Message(role="user", content="Reply with the single word: ok")]
_CHECK_CONTEXT = RequestContext(problem_id="level1/19_ReLU", level=1, number=19, backend="cpu")


def list_models(config_path: str | None) -> int:
    config = load_config(config_path)
    rows = [("alias", "provider", "model", "key env", "key set", "defaults")]
    for name, alias in config.aliases.items():
        r = parse_spec(name, config)
        env = r.key_env or "-"
        has_key = "yes" if r.key_env and os.environ.get(r.key_env) else ("n/a" if not r.key_env else "no")
        defaults = ", ".join(f"{k}={v}" for k, v in alias.param_defaults().items())
        rows.append((name, r.provider, r.model, env, has_key, defaults))
    rows.append(("demo", "demo", "demo", "-", "n/a", "offline"))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


async def _check_one(spec: str, config_path: str | None) -> str:
    client = resolve(spec, config_path=config_path)
    try:
        # Cheap: a few output tokens, no reasoning, short timeout.
        params = GenerationParams(max_tokens=16, reasoning_effort="none", timeout_s=60)
        c = await client.complete(ModelRequest(messages=_CHECK_PROMPT, params=params, context=_CHECK_CONTEXT))
    finally:
        await client.aclose()
    cost = "n/a" if c.cost_usd is None else f"${c.cost_usd:.6f}"
    return f"{spec}: ok  model={c.model} finish={c.finish} in={c.usage.input_tokens} out={c.usage.output_tokens} " \
        f"cost={cost} {c.latency_s:.2f}s"


def check_models(specs: list[str], config_path: str | None) -> int:
    worst = 0
    for spec in specs:
        try:
            print(asyncio.run(_check_one(spec, config_path)))
        except ProviderError as exc:
            # One line, no traceback: these are configuration problems the user fixes by hand.
            print(f"{spec}: {type(exc).__name__}: {exc}", file=sys.stderr)
            worst = 2
    return worst


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents.models", description=__doc__)
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--list", action="store_true", help="aliases, resolved ids, providers, key status")
    action.add_argument("--check", action="store_true", help="one cheap call per model")
    parser.add_argument("--models", default="gpt,claude", help="comma-separated specs for --check")
    parser.add_argument("--config", default=None, help="models.toml to use instead of the packaged one")
    args = parser.parse_args(argv)
    if args.list:
        return list_models(args.config)
    return check_models([s for s in args.models.split(",") if s.strip()], args.config)


if __name__ == "__main__":
    sys.exit(main())
