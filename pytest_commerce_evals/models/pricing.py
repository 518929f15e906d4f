"""The run's prices (`commerce_prices`, then genai-prices; the embedded model costs 0), made
once per session from its settings."""

from __future__ import annotations

import pytest

from ..prices import PriceBook

__all__ = ["PRICES", "price_book"]

PRICES = pytest.StashKey[PriceBook]()


def price_book(config: pytest.Config) -> PriceBook:
    """The run's prices: `commerce_prices`, then genai-prices; the embedded model costs 0."""
    book = config.stash.get(PRICES, None)
    if book is None:
        from ..settings import settings
        from . import embedded

        try:
            free = {embedded.model_id(config), "local"}
        except Exception:  # a model choice that does not resolve: nothing is free
            free = set()
        book = config.stash[PRICES] = PriceBook(settings(config).prices, free=free)
    return book
