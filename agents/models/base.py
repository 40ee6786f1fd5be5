"""The contract between the driver and every model client."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..backends import Backend

Role = Literal["system", "user", "assistant"]
Finish = Literal["stop", "length", "refused", "error"]


class Message(BaseModel):
    role: Role
    content: str


class GenerationParams(BaseModel):
    """Sampling settings. A field the caller leaves unset takes the model alias's default (models.toml)."""

    max_tokens: int = 16000
    """Cap on generated tokens, reasoning/thinking included (both providers count them as output)."""
    temperature: float | None = None
    """None: do not send it (many reasoning models reject sampling parameters)."""
    reasoning_effort: Literal["none", "low", "medium", "high"] | None = None
    """OpenAI `reasoning.effort`; Anthropic adaptive thinking with `output_config.effort`."""
    thinking_budget: int | None = None
    """Anthropic budget-style thinking (`budget_tokens`), for models that still accept it."""
    timeout_s: float = 600
    """Per HTTP attempt; retries get a fresh timeout."""

    def with_defaults(self, defaults: dict[str, Any]) -> GenerationParams:
        """Fields set explicitly by the caller win; the rest come from ``defaults``, then class defaults."""
        explicit = self.model_dump(include=self.model_fields_set)
        return GenerationParams(**{**defaults, **explicit})


class RequestContext(BaseModel):
    """Where a request comes from. Replay and demo clients answer from this; API clients ignore it."""

    problem_id: str = Field(description="e.g. 'level1/19_ReLU'")
    level: int
    number: int
    backend: Backend
    sample: int = 0
    turn: int = 1


class ModelRequest(BaseModel):
    messages: list[Message]
    params: GenerationParams = Field(default_factory=GenerationParams)
    context: RequestContext


class Usage(BaseModel):
    """Token counts, one convention for every provider (inclusive buckets, as OpenAI reports them).

    ``input_tokens`` includes cached and cache-write tokens (Anthropic reports them separately; we
    add them back). ``output_tokens`` includes ``reasoning_tokens``.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


class Completion(BaseModel):
    text: str
    finish: Finish
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    """None when the model has no entry in prices.toml; 0.0 for cache hits, replay and demo."""
    model: str
    """The resolved model id the server reports (e.g. a dated snapshot), not the alias."""
    provider: str
    latency_s: float = 0.0
    cached: bool = False
    """Served from the response cache: nothing was paid for this call."""
    error: str | None = None
    request_id: str | None = None


@runtime_checkable
class ModelClient(Protocol):
    """What the driver talks to.

    ``complete`` returns a Completion for every answer, truncated (finish="length") and refused
    ones included; it raises ProviderError subclasses (errors.py) when no answer could be had.
    """

    spec: str
    provider: str

    async def complete(self, request: ModelRequest) -> Completion: ...

    async def aclose(self) -> None: ...
