"""The one retry layer (tenacity) and the per-provider concurrency limit.

SDK clients are built with max_retries=0, so every HTTP attempt is visible here: one place
decides what is retried, how long to wait, and when to give up.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Literal, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    RetryError,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    wait_random_exponential,
)

from .config import ProviderSettings
from .errors import BadResponse, ProviderUnavailable, RequestRejected

T = TypeVar("T")
Verdict = Literal["retry", "reject", "bad"]
log = logging.getLogger(__name__)


class Transient(Exception):
    """Raised by an adapter to mark a failure as retryable; carries the original error and its hint."""

    def __init__(self, cause: BaseException, retry_after_s: float | None = None):
        self.cause = cause
        self.retry_after_s = retry_after_s
        super().__init__(f"{type(cause).__name__}: {cause}")


def retry_after_s(headers) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms, then retry-after (seconds or HTTP date)."""
    if headers is None:
        return None
    if ms := headers.get("retry-after-ms"):
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(when.timestamp() - time.time(), 0.0)


def _wait_policy(settings: ProviderSettings) -> Callable[[RetryCallState], float]:
    backoff = wait_random_exponential(multiplier=settings.backoff_initial_s, max=settings.backoff_max_s)

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        hint = exc.retry_after_s if isinstance(exc, Transient) else None
        delay = hint if hint is not None else backoff(state)
        return min(delay, settings.max_wait_s)

    return wait


def _log_retry(label: str) -> Callable[[RetryCallState], None]:
    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        wait = state.next_action.sleep if state.next_action else 0
        log.warning("API retry %s attempt %d failed (%s); waiting %.2fs", label, state.attempt_number, exc, wait)

    return before_sleep


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    classify: Callable[[BaseException], Verdict | None],
    settings: ProviderSettings,
    label: str,
    retry_after: Callable[[BaseException], float | None] = lambda exc: None,
) -> T:
    """Run ``attempt`` until it succeeds, a non-retryable error occurs, or the budget is spent.

    ``classify`` maps an SDK exception to retry / reject / bad (None: not ours, re-raised as is).
    Raises ProviderUnavailable, RequestRejected or BadResponse.
    """

    async def one_attempt() -> T:
        try:
            return await attempt()
        except Exception as exc:
            verdict = classify(exc)
            if verdict == "retry":
                raise Transient(exc, retry_after(exc)) from exc
            if verdict == "reject":
                raise RequestRejected(f"{label}: {exc}", getattr(exc, "status_code", None)) from exc
            if verdict == "bad":
                raise BadResponse(f"{label}: unparseable response: {exc}") from exc
            raise

    retrying = AsyncRetrying(
        retry=retry_if_exception(lambda e: isinstance(e, Transient)),
        wait=_wait_policy(settings),
        stop=stop_after_attempt(settings.max_attempts) | stop_after_delay(settings.budget_s),
        before_sleep=_log_retry(label),
    )
    try:
        return await retrying(one_attempt)
    except RetryError as err:
        last = err.last_attempt
        cause = last.exception()
        raise ProviderUnavailable(
            f"{label}: gave up after {last.attempt_number} attempt(s): {cause}", last.attempt_number
        ) from cause


# One semaphore per (event loop, provider): a semaphore must not outlive its loop (tests and the
# CLI each run their own loop), and all clients of one provider share its limit.
_SEMAPHORES: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Semaphore]] = (
    weakref.WeakKeyDictionary()
)


def provider_semaphore(provider: str, limit: int) -> asyncio.Semaphore:
    per_loop = _SEMAPHORES.setdefault(asyncio.get_running_loop(), {})
    if provider not in per_loop:
        per_loop[provider] = asyncio.Semaphore(limit)
    return per_loop[provider]
