"""Model clients behind one contract (base.py). Importing this package imports no SDK.

    client = resolve("claude")                  # or gpt, openai:<id>, replay:<dir>, demo, ...
    completion = await client.complete(ModelRequest(messages=..., context=...))
"""

from .base import (
    Completion,
    Finish,
    GenerationParams,
    Message,
    ModelClient,
    ModelRequest,
    RequestContext,
    Usage,
)
from .cache import DEFAULT_CACHE_DIR, CachedClient
from .config import ModelsConfig, ProviderSettings, load_config
from .errors import (
    BadResponse,
    MissingCredentials,
    ProviderError,
    ProviderUnavailable,
    RequestRejected,
    UnknownModelSpec,
)
from .pricing import cost_usd
from .registry import ResolvedSpec, parse_spec, resolve
from .replay import replay_inventory

__all__ = [
    "DEFAULT_CACHE_DIR",
    "BadResponse",
    "CachedClient",
    "Completion",
    "Finish",
    "GenerationParams",
    "Message",
    "MissingCredentials",
    "ModelClient",
    "ModelRequest",
    "ModelsConfig",
    "ProviderError",
    "ProviderSettings",
    "ProviderUnavailable",
    "RequestContext",
    "RequestRejected",
    "ResolvedSpec",
    "UnknownModelSpec",
    "Usage",
    "cost_usd",
    "load_config",
    "parse_spec",
    "replay_inventory",
    "resolve",
]
