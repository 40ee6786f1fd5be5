"""Anthropic Messages API, always streamed.

Streaming because the SDK refuses non-streaming calls whose max_tokens could take over
10 minutes (about 21k tokens), and our aliases ask for 32k; one code path for every size.
"""

from __future__ import annotations

import json
from typing import Any

import anthropic

from .api_client import ApiClient, RawAnswer, split_system
from .base import Finish, GenerationParams, Message, Usage
from .config import ProviderSettings
from .errors import BadResponse
from .retry import Verdict

_FINISH: dict[str | None, Finish] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "refused",
}


def _classify(exc: BaseException) -> Verdict | None:
    # In 2.x OverloadedError (529), ServiceUnavailable and GatewayTimeout are InternalServerErrors.
    if isinstance(exc, anthropic.APIConnectionError | anthropic.RateLimitError | anthropic.InternalServerError):
        return "retry"
    if isinstance(exc, anthropic.APIStatusError):
        return "retry" if exc.status_code in (408, 409) else "reject"
    if isinstance(exc, anthropic.APIResponseValidationError | json.JSONDecodeError | BadResponse):
        return "bad"
    return None


class AnthropicClient(ApiClient):
    provider = "anthropic"

    def __init__(
        self, spec: str, model: str, settings: ProviderSettings, defaults: dict[str, Any], api_key: str,
        base_url: str | None = None,
    ):
        super().__init__(spec, model, settings, defaults)
        # base_url=None lets the SDK read ANTHROPIC_BASE_URL; max_retries=0: retry.py is the only layer.
        self._sdk = anthropic.AsyncAnthropic(api_key=api_key, base_url=base_url, max_retries=0)

    _classify = staticmethod(_classify)

    def _kwargs(self, messages: list[Message], params: GenerationParams) -> dict[str, Any]:
        system, conversation = split_system(messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": params.max_tokens,
            "messages": conversation,
            "timeout": params.timeout_s,
        }
        if system:
            kwargs["system"] = system
        if params.thinking_budget:
            kwargs["thinking"] = {"type": "enabled", "budget_tokens": params.thinking_budget}
        elif params.reasoning_effort and params.reasoning_effort != "none":
            # 4.6+ models think adaptively; effort is how the caller steers depth.
            kwargs["thinking"] = {"type": "adaptive"}
            kwargs["output_config"] = {"effort": params.reasoning_effort}
        if params.temperature is not None:
            kwargs["temperature"] = params.temperature
        return kwargs

    async def _call(self, messages: list[Message], params: GenerationParams) -> RawAnswer:
        async with self._sdk.messages.stream(**self._kwargs(messages, params)) as stream:
            msg = await stream.get_final_message()
            request_id = getattr(stream, "request_id", None)
        if not hasattr(msg, "content"):
            raise BadResponse(f"expected a Message, got {type(msg).__name__}")
        # Thinking blocks are the model's scratchpad, not its answer.
        text = "".join(block.text for block in msg.content if getattr(block, "type", None) == "text")
        u = msg.usage
        cache_read = u.cache_read_input_tokens or 0
        cache_write = u.cache_creation_input_tokens or 0
        usage = Usage(
            # Anthropic's input_tokens excludes cache reads and writes; add them back (Usage convention).
            input_tokens=(u.input_tokens or 0) + cache_read + cache_write,
            output_tokens=u.output_tokens or 0,
            reasoning_tokens=getattr(u.output_tokens_details, "thinking_tokens", 0) or 0,
            cached_input_tokens=cache_read,
            cache_write_tokens=cache_write,
        )
        finish = _FINISH.get(msg.stop_reason, "stop")
        return RawAnswer(text, finish, usage, msg.model or self.model, request_id or getattr(msg, "_request_id", None))

    async def aclose(self) -> None:
        await self._sdk.close()
