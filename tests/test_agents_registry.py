"""Registry, lazy imports, config, pricing, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents.models import (
    MissingCredentials,
    UnknownModelSpec,
    Usage,
    cost_usd,
    load_config,
    parse_spec,
    resolve,
)

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("openai", "anthropic", "torch", "httpx2", "tenacity")


def _py(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=60)


def test_importing_agents_imports_no_sdk_and_no_torch():
    code = (
        "import sys, json, agents, agents.models, agents.extract, agents.demo\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(HEAVY)!r}))))"
    )
    out = _py(code)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_sdk_imported_only_for_its_provider():
    code = (
        "import sys, json\nfrom agents.models import resolve\n"
        "resolve('demo'); resolve('openai:gpt-5.5')\n"
        "print(json.dumps(['openai' in sys.modules, 'anthropic' in sys.modules, 'torch' in sys.modules]))"
    )
    out = _py(code, {"OPENAI_API_KEY": "x"})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == [True, False, False]


def test_missing_key_is_raised_before_the_sdk_import(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingCredentials) as err:
        resolve("claude")
    assert "ANTHROPIC_API_KEY" in str(err.value) and "--models demo" in str(err.value)
    assert "\n" not in str(err.value)


def test_parse_specs():
    config = load_config()
    gpt = parse_spec("gpt", config)
    assert (gpt.provider, gpt.model, gpt.key_env) == ("openai", "gpt-5.5", "OPENAI_API_KEY")
    assert gpt.defaults["reasoning_effort"] == "high"
    assert parse_spec("claude", config).provider == "anthropic"
    oc = parse_spec("openai-compatible:Qwen/Qwen3-Coder@http://localhost:8000/v1", config)
    assert (oc.provider, oc.model, oc.base_url) == ("openai-compatible", "Qwen/Qwen3-Coder", "http://localhost:8000/v1")
    assert parse_spec("replay:/tmp/x", config).model == "/tmp/x"
    assert parse_spec("demo", config).provider == "demo"
    for bad in ("gemini", "mistral:large", "openai-compatible:no-url", "openai:"):
        with pytest.raises(UnknownModelSpec):
            parse_spec(bad, config)


def test_alias_edit_needs_no_code_change(tmp_path):
    cfg = tmp_path / "models.toml"
    cfg.write_text('[aliases.gpt]\nmodel = "openai:gpt-5.4-mini"\nmax_tokens = 100\n')
    r = parse_spec("gpt", load_config(cfg))
    assert (r.model, r.defaults) == ("gpt-5.4-mini", {"max_tokens": 100})


def test_openai_compatible_key_defaults_to_empty(monkeypatch):
    monkeypatch.delenv("OPENAI_COMPATIBLE_API_KEY", raising=False)
    client = resolve("openai-compatible:m@http://127.0.0.1:1/v1")
    assert client._sdk.api_key == "EMPTY" and client._sdk.max_retries == 0


def test_sdk_retries_disabled(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "x")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "x")
    assert resolve("gpt")._sdk.max_retries == 0
    assert resolve("claude")._sdk.max_retries == 0


def test_cost_from_price_table():
    usage = Usage(input_tokens=2_000_000, cached_input_tokens=1_000_000, output_tokens=1_000_000)
    assert cost_usd(usage, "gpt-5.5") == pytest.approx(5.0 + 0.5 + 30.0)
    assert cost_usd(usage, "gpt-5.5-2026-04-23") == pytest.approx(35.5)  # dated snapshot -> base entry
    assert cost_usd(usage, "no-such-model") is None
    assert cost_usd(usage, "x", path=Path("/nonexistent/prices.toml")) is None  # never raises


# ---- CLI ---------------------------------------------------------------------------------------------

def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
    return subprocess.run([sys.executable, "-m", "agents.models", *args], cwd=ROOT, capture_output=True,
                          text=True, env={**clean, **(env or {})}, timeout=60)


def test_cli_list():
    out = _cli("--list", env={"OPENAI_API_KEY": "x"})
    assert out.returncode == 0, out.stderr
    lines = {line.split()[0]: line.split() for line in out.stdout.splitlines()[1:]}
    assert lines["gpt"][:5] == ["gpt", "openai", "gpt-5.5", "OPENAI_API_KEY", "yes"]
    assert lines["claude"][:5] == ["claude", "anthropic", "claude-opus-5-5", "ANTHROPIC_API_KEY", "no"]


def test_cli_check_without_key_is_one_line_exit_2():
    out = _cli("--check", "--models", "claude")
    assert out.returncode == 2
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0] and "Traceback" not in out.stderr


def test_cli_check_against_fake_server():
    from tests.fake_llm_server import FakeLLMServer, Step, anthropic_events, responses_body

    with FakeLLMServer() as server:
        server.script("/v1/responses", Step.json(responses_body("ok")))
        server.script("/v1/messages", Step.sse(anthropic_events("ok")))
        out = _cli("--check", "--models", "gpt,claude", env={
            "OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "x", "OPENAI_BASE_URL": f"{server.url}/v1",
            "ANTHROPIC_BASE_URL": server.url, "NO_PROXY": "127.0.0.1"})
        assert out.returncode == 0, out.stderr
        assert out.stdout.count(": ok") == 2
        assert server.requests_to("/v1/responses")[0].body["max_output_tokens"] == 16
