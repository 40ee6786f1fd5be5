"""Turn a --models entry into a ModelClient. SDK modules are imported only here, per provider, on use.

Specs:
    gpt, claude, ...                        aliases from models.toml (with default params)
    openai:<model>                          Responses API; OPENAI_API_KEY, OPENAI_BASE_URL
    anthropic:<model>                       Messages API; ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
    openai-compatible:<model>@<base_url>    Chat Completions on vLLM/Ollama/SGLang; OPENAI_COMPATIBLE_API_KEY or "EMPTY"
    replay:<path>                           recorded answers / KernelBench generations
    demo                                    offline hand-written kernels
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from .base import ModelClient
from .config import ModelsConfig, load_config
from .errors import MissingCredentials, UnknownModelSpec

KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
COMPATIBLE_KEY_ENV = "OPENAI_COMPATIBLE_API_KEY"
SPEC_FORMS = "gpt, claude (or another alias in models.toml), openai:<model>, anthropic:<model>, " \
    "openai-compatible:<model>@<base_url>, replay:<path>, demo"


class ResolvedSpec(BaseModel):
    """A spec with aliases expanded: what --list prints and what resolve() builds."""

    spec: str
    provider: str
    model: str
    base_url: str | None = None
    defaults: dict[str, Any] = {}

    @property
    def key_env(self) -> str | None:
        return KEY_ENV.get(self.provider)


def parse_spec(spec: str, config: ModelsConfig | None = None) -> ResolvedSpec:
    """Expand aliases and split ``provider:model``; no SDK import, no credentials needed."""
    config = config or load_config()
    name = spec.strip()
    defaults: dict[str, Any] = {}
    if name in config.aliases:
        alias = config.aliases[name]
        defaults = alias.param_defaults()
        name = alias.model
    if name == "demo":
        return ResolvedSpec(spec=spec, provider="demo", model="demo")
    provider, sep, rest = name.partition(":")
    if not sep or not rest:
        raise UnknownModelSpec(f"unknown model spec '{spec}'; expected one of: {SPEC_FORMS}")
    if provider in ("openai", "anthropic", "replay"):
        return ResolvedSpec(spec=spec, provider=provider, model=rest, defaults=defaults)
    if provider == "openai-compatible":
        model, at, base_url = rest.rpartition("@")
        if not at or not model or not base_url:
            raise UnknownModelSpec(
                f"'{spec}': write openai-compatible:<model>@<base_url>, e.g. "
                "openai-compatible:Qwen/Qwen3-Coder@http://localhost:8000/v1"
            )
        return ResolvedSpec(spec=spec, provider=provider, model=model, base_url=base_url, defaults=defaults)
    raise UnknownModelSpec(f"unknown provider '{provider}' in '{spec}'; expected one of: {SPEC_FORMS}")


def _api_key(resolved: ResolvedSpec) -> str:
    env = resolved.key_env
    assert env is not None
    key = os.environ.get(env, "").strip()
    if not key:
        raise MissingCredentials(env, resolved.spec)
    return key


def resolve(
    spec: str, *, config_path: str | os.PathLike[str] | None = None, cache_dir: str | os.PathLike[str] | None = None
) -> ModelClient:
    """Build the client for ``spec``. With ``cache_dir``, API clients are wrapped in the response cache.

    Raises UnknownModelSpec, or MissingCredentials when the provider's key env var is unset.
    """
    config = load_config(config_path)
    r = parse_spec(spec, config)
    client: ModelClient
    if r.provider == "demo":
        from ..demo import DemoClient

        return DemoClient()
    if r.provider == "replay":
        from .replay import ReplayClient

        return ReplayClient(Path(r.model), spec=spec)
    settings = config.provider(r.provider)
    if r.provider == "openai":
        key = _api_key(r)  # before the import: a missing key should not cost an SDK import
        from .openai_api import OpenAIResponsesClient

        client = OpenAIResponsesClient(spec, r.model, settings, r.defaults, api_key=key)
    elif r.provider == "anthropic":
        key = _api_key(r)
        from .anthropic_api import AnthropicClient

        client = AnthropicClient(spec, r.model, settings, r.defaults, api_key=key)
    else:
        from .openai_api import OpenAIChatClient

        key = os.environ.get(COMPATIBLE_KEY_ENV) or "EMPTY"  # vLLM accepts any key unless started with --api-key
        client = OpenAIChatClient(spec, r.model, settings, r.defaults, api_key=key, base_url=r.base_url)
    if cache_dir is not None:
        from .cache import CachedClient

        client = CachedClient(client, cache_dir)
    return client
