"""What every HTTP-API client shares: param defaults, concurrency, retries, timing, cost."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from .base import Completion, Finish, GenerationParams, Message, ModelRequest, Usage
from .config import ProviderSettings
from .pricing import cost_usd
from .retry import Verdict, call_with_retries, provider_semaphore, retry_after_s


@dataclass
class RawAnswer:
    """What an adapter extracts from one SDK response."""

    text: str
    finish: Finish
    usage: Usage
    model: str
    request_id: str | None = None


class ApiClient(ABC):
    """Base for SDK-backed clients. Subclasses implement ``_call`` and ``_classify``."""

    provider: str

    def __init__(self, spec: str, model: str, settings: ProviderSettings, defaults: dict[str, Any]):
        self.spec = spec
        self.model = model
        self.settings = settings
        self.defaults = defaults

    def effective_params(self, params: GenerationParams) -> GenerationParams:
        return params.with_defaults(self.defaults)

    async def complete(self, request: ModelRequest) -> Completion:
        params = self.effective_params(request.params)
        label = f"{self.provider}:{self.model}"
        start = time.monotonic()
        async with provider_semaphore(self.provider, self.settings.concurrency):
            raw = await call_with_retries(
                lambda: self._call(request.messages, params),
                self._classify,
                self.settings,
                label,
                self._retry_after,
            )
        return Completion(
            text=raw.text,
            finish=raw.finish,
            usage=raw.usage,
            cost_usd=cost_usd(raw.usage, raw.model, self.model),
            model=raw.model or self.model,
            provider=self.provider,
            latency_s=time.monotonic() - start,
            request_id=raw.request_id,
        )

    @abstractmethod
    async def _call(self, messages: list[Message], params: GenerationParams) -> RawAnswer: ...

    @abstractmethod
    def _classify(self, exc: BaseException) -> Verdict | None: ...

    def _retry_after(self, exc: BaseException) -> float | None:
        response = getattr(exc, "response", None)
        return retry_after_s(getattr(response, "headers", None))

    @abstractmethod
    async def aclose(self) -> None: ...


def split_system(messages: list[Message]) -> tuple[str | None, list[dict[str, str]]]:
    """Both APIs take the system prompt apart from the conversation."""
    system = [m.content for m in messages if m.role == "system"]
    rest = [{"role": m.role, "content": m.content} for m in messages if m.role != "system"]
    return ("\n\n".join(system) if system else None), rest
