"""Cost from token counts and prices.toml. Best effort: pricing never fails a run."""

from __future__ import annotations

import logging
import re
import tomllib
from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from .base import Usage

DEFAULT_PRICES = Path(__file__).resolve().parent.parent / "prices.toml"
_DATE_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8})$")
log = logging.getLogger(__name__)


class Price(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def cost(self, usage: Usage) -> float:
        cached = usage.cached_input_tokens
        written = usage.cache_write_tokens
        fresh = max(usage.input_tokens - cached - written, 0)
        total = (
            fresh * self.input
            + cached * (self.cached_input if self.cached_input is not None else self.input)
            + written * (self.cache_write if self.cache_write is not None else self.input)
            + usage.output_tokens * self.output
        )
        return total / 1e6


@lru_cache(maxsize=8)
def load_prices(path: Path = DEFAULT_PRICES) -> dict[str, Price]:
    with open(path, "rb") as f:
        return {model: Price.model_validate(entry) for model, entry in tomllib.load(f).items()}


def price_for(model: str, prices: dict[str, Price]) -> Price | None:
    return prices.get(model) or prices.get(_DATE_SUFFIX.sub("", model))


def cost_usd(usage: Usage, *models: str, path: Path = DEFAULT_PRICES) -> float | None:
    """Cost of one call, trying each model id in turn (resolved snapshot, then requested id)."""
    try:
        prices = load_prices(Path(path))
        for model in models:
            if model and (price := price_for(model, prices)) is not None:
                return price.cost(usage)
    except Exception as exc:  # a broken price file must not fail a sweep
        log.warning("pricing failed for %s: %s", models, exc)
    return None
