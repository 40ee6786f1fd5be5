"""models.toml: aliases with default params, and per-provider concurrency/retry settings."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_CONFIG = Path(__file__).resolve().parent.parent / "models.toml"
CONFIG_ENV = "AGENTS_MODELS_TOML"


class AliasEntry(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(description="target spec, e.g. 'openai:gpt-5.5'")
    max_tokens: int | None = None
    temperature: float | None = None
    reasoning_effort: Literal["none", "low", "medium", "high"] | None = None
    thinking_budget: int | None = None
    timeout_s: float | None = None

    def param_defaults(self) -> dict[str, Any]:
        return self.model_dump(exclude={"model"}, exclude_none=True)


class ProviderSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(8, ge=1)
    """In-flight requests per provider, shared by all clients of that provider in one event loop."""
    max_attempts: int = Field(6, ge=1)
    """HTTP attempts per call, the first included."""
    backoff_initial_s: float = 1.0
    backoff_max_s: float = 60.0
    max_wait_s: float = 120.0
    """Longest single wait; a longer retry-after is clipped to this."""
    budget_s: float = 1800.0
    """Stop retrying once a call has taken this long in total."""


class ModelsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    aliases: dict[str, AliasEntry] = Field(default_factory=dict)
    providers: dict[str, ProviderSettings] = Field(default_factory=dict)

    def provider(self, name: str) -> ProviderSettings:
        return self.providers.get(name, ProviderSettings())


def load_config(path: str | os.PathLike[str] | None = None) -> ModelsConfig:
    """Read ``path``, else $AGENTS_MODELS_TOML, else the packaged agents/models.toml."""
    path = Path(path or os.environ.get(CONFIG_ENV) or DEFAULT_CONFIG)
    with open(path, "rb") as f:
        return ModelsConfig.model_validate(tomllib.load(f))
