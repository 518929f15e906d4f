"""Product search: how a product matches a search's filters and how it ranks for its query.

A query and a product are both reduced to words (lower-cased, with a plain English stem beside
each); a product ranks by how many of the query's words it holds, stop words left out. The words of
a product are computed once per product object and kept, since the catalog is shared by every
trial.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Collection
from decimal import Decimal
from typing import Any

from .catalog import Availability, Product
from .units import ToolError

__all__ = ["attribute_matches", "availability_matches", "rank", "resolve_niche"]

_STOPWORDS = frozenset(
    "a an and any are for from i in is it me my of on or please show some that the this to "
    "under over with want need looking find get something good best which what".split()
)


def _tokens(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def _stem(token: str) -> str:
    if len(token) > 3 and token.endswith("es") and token[:-2].endswith(("sh", "ch", "x")):
        return token[:-2]
    if len(token) > 3 and token.endswith("s") and not token.endswith("ss"):
        return token[:-1]
    return token


def resolve_niche(niche: str, names: list[str]) -> set[str]:
    """The niches among `names` that a requested niche means: the one it names, else those it
    nearly names; a `ToolError` listing the niches when it names none."""
    wanted = niche.strip().lower().replace(" ", "-").replace("_", "-")
    if wanted in names:
        return {wanted}
    close = {n for n in names if wanted in n or _stem(wanted) in n or n in wanted}
    if close:
        return close
    raise ToolError(f"unknown niche {niche!r}; niches: {', '.join(names)}")


def availability_matches(availability: Availability, wanted: str) -> bool:
    """Whether a product's availability is the one a search asked for."""
    wanted = wanted.strip().lower().replace(" ", "_").replace("-", "_")
    if wanted in ("available", "buyable", "in_stock_or_low"):
        return availability.status in ("in_stock", "low_stock")
    if wanted == "in_stock":
        return availability.status in ("in_stock", "low_stock")
    return availability.status == wanted


def attribute_matches(have: Any, want: Any) -> bool:
    """Whether a product's attribute value (`have`) is the one a search asked for (`want`)."""
    if have is None:
        return False
    if isinstance(have, list):
        return any(attribute_matches(h, want) for h in have)
    if isinstance(have, bool) or isinstance(want, bool):
        truthy = {"true", "yes", "1"}
        return (
            str(have).lower() in truthy
            if str(want).lower() in truthy
            else (str(have).lower() not in truthy)
        )
    if isinstance(have, int | float) and not isinstance(want, str):
        return Decimal(str(have)) == Decimal(str(want))
    return str(want).strip().lower() in str(have).lower()


def rank(products: list[Product], query: str) -> list[Product]:
    """`products` in the order a search lists them for `query`: those that hold every word of the
    query (or, when none does, the best partial matches), the most words first, then the best
    rated; every product, by rating, when the query has no words.

    Only the products that hold a query word are looked at: an index of `products` (each word
    and the positions of the products holding it) is built once per list of product objects and
    kept, so a search scores its matches rather than the whole catalog."""
    words = [t for t in _tokens(query) if t not in _STOPWORDS]
    if not words:
        ranked = [(0, p) for p in products]
    else:
        index = _index(products)
        scores: dict[int, int] = {}
        for w in words:
            stem = _stem(w)
            found: Collection[int] = index.get(w, ())
            if stem != w and stem in index:
                found = set(found).union(index[stem])
            for i in found:
                scores[i] = scores.get(i, 0) + 1
        ranked = [(s, products[i]) for i, s in scores.items() if s == len(words)]
        if not ranked:  # nothing matches every word: fall back to the best partial matches
            floor = max(1, (len(words) + 1) // 2)
            ranked = [(s, products[i]) for i, s in scores.items() if s >= floor]
    ranked.sort(key=lambda sp: (-sp[0], -sp[1].rating.average, sp[1].id))
    return [p for _, p in ranked]


_INDEXES: dict[tuple[int, ...], tuple[list[Product], dict[str, tuple[int, ...]]]] = {}
_INDEXES_MAX = 256
_index_lock = threading.Lock()


def _index(products: list[Product]) -> dict[str, tuple[int, ...]]:
    """Each word of `products` (and its stem) with the positions of the products holding it; made
    once per list of the same product objects (the cache keeps them, so an id it is keyed by
    names no other object while it is kept; an edit makes a new product object, so a new list).

    Made under a lock: the first searches of a run come from every trial in flight at once, and
    without it each would build the same index (16 trials in flight: 16 builds of the catalog's
    index, one after another under the interpreter's lock, before any of them searched)."""
    key = tuple(map(id, products))
    hit = _INDEXES.get(key)
    if hit is not None:
        return hit[1]
    with _index_lock:
        hit = _INDEXES.get(key)
        if hit is not None:
            return hit[1]
        return _build_index(key, products)


def _build_index(key: tuple[int, ...], products: list[Product]) -> dict[str, tuple[int, ...]]:
    postings: dict[str, list[int]] = {}
    for i, product in enumerate(products):
        for word in _haystack(product):
            postings.setdefault(word, []).append(i)
    index = {word: tuple(found) for word, found in postings.items()}
    if len(_INDEXES) >= _INDEXES_MAX:
        _INDEXES.clear()
    _INDEXES[key] = (list(products), index)
    return index


_FLAG_WORDS = {
    "anc": "anc noise cancelling canceling",
    "wireless": "wireless bluetooth",
    "waterproof": "waterproof water resistant",
    "vegan": "vegan",
    "grain_free": "grain free",
}


_HAYSTACKS: dict[int, tuple[Product, frozenset[str]]] = {}
_HAYSTACKS_MAX = 8192


def _haystack(product: Product) -> frozenset[str]:
    """The product's searchable words, computed once per product object (the catalog is shared
    by every trial; an edit makes a new object, so it is never served stale words)."""
    hit = _HAYSTACKS.get(id(product))
    if hit is not None and hit[0] is product:
        return hit[1]
    hay = _words(product)
    if len(_HAYSTACKS) >= _HAYSTACKS_MAX:
        _HAYSTACKS.clear()
    _HAYSTACKS[id(product)] = (product, hay)
    return hay


def _words(product: Product) -> frozenset[str]:
    parts = [
        product.title,
        product.brand,
        product.niche,
        product.description,
        product.seller.name,
        " ".join(product.tags),
    ]
    for key, value in product.attributes.items():
        if value is True:
            parts.append(_FLAG_WORDS.get(key, key.replace("_", " ")))
        elif isinstance(value, str | list):
            parts.append(f"{key} {' '.join(value) if isinstance(value, list) else value}")
    words = set(_tokens(" ".join(parts)))
    return frozenset(words | {_stem(w) for w in words})
