"""OpenAI: Responses API for api.openai.com, Chat Completions for OpenAI-compatible servers."""

from __future__ import annotations

import json
from typing import Any

import openai

from .api_client import ApiClient, RawAnswer, split_system
from .base import Finish, GenerationParams, Message, Usage
from .config import ProviderSettings
from .errors import BadResponse
from .retry import Verdict


def _classify(exc: BaseException) -> Verdict | None:
    # APITimeoutError is an APIConnectionError; InternalServerError covers every status >= 500.
    if isinstance(exc, openai.APIConnectionError | openai.RateLimitError | openai.InternalServerError):
        return "retry"
    if isinstance(exc, openai.APIStatusError):
        return "retry" if exc.status_code in (408, 409) else "reject"
    if isinstance(exc, openai.APIResponseValidationError | json.JSONDecodeError | BadResponse):
        return "bad"
    return None


def _sdk(base_url: str | None, api_key: str) -> openai.AsyncOpenAI:
    # base_url=None lets the SDK read OPENAI_BASE_URL; max_retries=0: retry.py is the only retry layer.
    return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, max_retries=0)


def _n(value: Any) -> int:
    return int(value or 0)


class OpenAIResponsesClient(ApiClient):
    provider = "openai"

    def __init__(
        self, spec: str, model: str, settings: ProviderSettings, defaults: dict[str, Any], api_key: str,
        base_url: str | None = None,
    ):
        super().__init__(spec, model, settings, defaults)
        self._sdk = _sdk(base_url, api_key)

    _classify = staticmethod(_classify)

    async def _call(self, messages: list[Message], params: GenerationParams) -> RawAnswer:
        system, conversation = split_system(messages)
        kwargs: dict[str, Any] = {
            "model": self.model,
            "input": conversation,
            "max_output_tokens": params.max_tokens,
            "store": False,  # stateless: the driver keeps the history and resends it
            "timeout": params.timeout_s,
        }
        if system:
            kwargs["instructions"] = system
        if params.reasoning_effort:
            kwargs["reasoning"] = {"effort": params.reasoning_effort}
        if params.temperature is not None:
            kwargs["temperature"] = params.temperature
        resp = await self._sdk.responses.create(**kwargs)
        return _parse_response(resp)

    async def aclose(self) -> None:
        await self._sdk.close()


def _parse_response(resp: Any) -> RawAnswer:
    if not hasattr(resp, "output"):
        raise BadResponse(f"expected a Responses object, got {type(resp).__name__}")
    if resp.status == "failed":
        raise BadResponse(f"response failed: {getattr(resp.error, 'message', resp.error)}")
    refused = any(
        getattr(part, "type", None) == "refusal"
        for item in resp.output or []
        for part in (getattr(item, "content", None) or [])
    )
    text = resp.output_text or ""
    finish: Finish = "stop"
    if resp.status == "incomplete":
        reason = getattr(resp.incomplete_details, "reason", None)
        finish = "refused" if reason == "content_filter" else "length"
    elif refused and not text:
        finish = "refused"
    u = resp.usage
    usage = Usage()
    if u is not None:
        usage = Usage(
            input_tokens=_n(u.input_tokens),
            output_tokens=_n(u.output_tokens),
            reasoning_tokens=_n(getattr(u.output_tokens_details, "reasoning_tokens", 0)),
            cached_input_tokens=_n(getattr(u.input_tokens_details, "cached_tokens", 0)),
            cache_write_tokens=_n(getattr(u.input_tokens_details, "cache_write_tokens", 0)),
        )
    return RawAnswer(text, finish, usage, resp.model or "", getattr(resp, "_request_id", None))


class OpenAIChatClient(ApiClient):
    """Chat Completions: the endpoint every OpenAI-compatible server (vLLM, Ollama, SGLang) serves."""

    provider = "openai-compatible"

    def __init__(
        self, spec: str, model: str, settings: ProviderSettings, defaults: dict[str, Any], api_key: str,
        base_url: str | None,
    ):
        super().__init__(spec, model, settings, defaults)
        self.base_url = base_url
        self._sdk = _sdk(base_url, api_key)

    _classify = staticmethod(_classify)

    async def _call(self, messages: list[Message], params: GenerationParams) -> RawAnswer:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "max_tokens": params.max_tokens,  # local servers know max_tokens; not all know max_completion_tokens
            "timeout": params.timeout_s,
        }
        if params.temperature is not None:
            kwargs["temperature"] = params.temperature
        if params.reasoning_effort:
            kwargs["reasoning_effort"] = params.reasoning_effort
        resp = await self._sdk.chat.completions.create(**kwargs)
        if not getattr(resp, "choices", None):
            raise BadResponse("chat completion without choices")
        choice = resp.choices[0]
        finish: Finish = {"length": "length", "content_filter": "refused"}.get(choice.finish_reason, "stop")
        text = choice.message.content or ""
        if not text and getattr(choice.message, "refusal", None):
            finish = "refused"
        u = resp.usage
        usage = Usage()
        if u is not None:  # local servers often omit the details
            usage = Usage(
                input_tokens=_n(u.prompt_tokens),
                output_tokens=_n(u.completion_tokens),
                reasoning_tokens=_n(getattr(u.completion_tokens_details, "reasoning_tokens", 0)),
                cached_input_tokens=_n(getattr(u.prompt_tokens_details, "cached_tokens", 0)),
            )
        return RawAnswer(text, finish, usage, resp.model or self.model, getattr(resp, "_request_id", None))

    async def aclose(self) -> None:
        await self._sdk.close()
