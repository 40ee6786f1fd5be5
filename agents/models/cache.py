"""On-disk response cache: re-running a sweep does not pay twice for the same request.

Key = sha256 of (provider, model, messages, effective params, sample index). The timeout is left
out (it does not change the answer); the sample index is in, so k samples stay k distinct answers.
One JSON file per entry, written atomically (tmp file + os.replace), so a crash never leaves a
half-written entry and concurrent writers of the same key are harmless.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

from .base import Completion, ModelClient, ModelRequest

DEFAULT_CACHE_DIR = Path("runs/.response_cache")
_CACHEABLE = ("stop", "length", "refused")  # errors are worth retrying next time


def cache_key(provider: str, model: str, request: ModelRequest, params: dict) -> str:
    material = {
        "v": 1,
        "provider": provider,
        "model": model,
        "messages": [m.model_dump() for m in request.messages],
        "params": {k: v for k, v in params.items() if k != "timeout_s"},
        "sample": request.context.sample,
    }
    return hashlib.sha256(json.dumps(material, sort_keys=True).encode()).hexdigest()


class CachedClient:
    """Wraps any ModelClient; a hit returns the stored Completion with cached=True and cost 0."""

    def __init__(self, inner: ModelClient, cache_dir: str | os.PathLike[str] = DEFAULT_CACHE_DIR):
        self.inner = inner
        self.cache_dir = Path(cache_dir)
        self.spec = inner.spec
        self.provider = inner.provider
        self.hits = 0
        self.misses = 0

    def key(self, request: ModelRequest) -> str:
        effective = getattr(self.inner, "effective_params", None)
        params = effective(request.params) if effective else request.params
        model = getattr(self.inner, "model", self.inner.spec)
        return cache_key(self.provider, model, request, params.model_dump())

    def _path(self, key: str) -> Path:
        return self.cache_dir / key[:2] / f"{key}.json"

    def get(self, key: str) -> Completion | None:
        try:
            return Completion.model_validate_json(self._path(key).read_text())
        except (OSError, ValueError):  # missing or corrupt: a miss
            return None

    def put(self, key: str, completion: Completion) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w") as f:
                f.write(completion.model_dump_json(indent=1))
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    async def complete(self, request: ModelRequest) -> Completion:
        start = time.monotonic()
        key = self.key(request)
        if (hit := self.get(key)) is not None:
            self.hits += 1
            # Usage stays as recorded (it describes the answer); nothing was paid for this call.
            return hit.model_copy(update={"cached": True, "cost_usd": 0.0, "latency_s": time.monotonic() - start})
        self.misses += 1
        completion = await self.inner.complete(request)
        if completion.finish in _CACHEABLE and not completion.cached:
            self.put(key, completion)
        return completion

    async def aclose(self) -> None:
        await self.inner.aclose()
