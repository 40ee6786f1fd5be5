"""Errors raised by model clients.

    ProviderError                 anything a model client raises on purpose
    ├── MissingCredentials        the API key env var is not set (raised by resolve(), before any call)
    ├── UnknownModelSpec          a --models entry that no provider understands
    ├── RequestRejected           4xx other than 408/409/429: bad request, auth, unknown model (not retried)
    ├── ProviderUnavailable       429 / 5xx / 529 / timeouts / connection errors after the last retry
    └── BadResponse               the server answered, but not with something we can parse

A truncated answer is not an error: it is a Completion with finish="length". A refusal is
finish="refused". Replay and demo clients never raise for a missing answer; they return
finish="error" so one gap does not stop a sweep.
"""

from __future__ import annotations

__all__ = [
    "BadResponse",
    "MissingCredentials",
    "ProviderError",
    "ProviderUnavailable",
    "RequestRejected",
    "UnknownModelSpec",
]


class ProviderError(Exception):
    """Base class: catch this to handle every deliberate failure of a model client."""


class MissingCredentials(ProviderError):
    def __init__(self, env_var: str, spec: str):
        self.env_var = env_var
        self.spec = spec
        super().__init__(
            f"{env_var} is not set (needed for model '{spec}'); export it, or run offline with "
            f"--models demo or --models replay:PATH"
        )


class UnknownModelSpec(ProviderError):
    pass


class RequestRejected(ProviderError):
    """The provider refused the request itself (400/401/403/404/422): a configuration bug, so no retry."""

    def __init__(self, message: str, status: int | None = None):
        self.status = status
        super().__init__(message)


class ProviderUnavailable(ProviderError):
    """Retries exhausted on a transient failure (rate limit, overload, 5xx, timeout, connection)."""

    def __init__(self, message: str, attempts: int):
        self.attempts = attempts
        super().__init__(message)


class BadResponse(ProviderError):
    pass
