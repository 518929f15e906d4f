"""The τ²-bench domains this bridge runs: each one's backend class and tools, by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["DOMAINS", "backend_class", "domain_tools"]

DOMAINS = ("retail", "airline")


def backend_class(domain: str) -> Any:
    """The backend class of `domain` (`load(db_path)` gives a fresh one); `ValueError` for a
    domain this bridge does not run."""
    if domain == "retail":
        from .retail import RetailBackend

        return RetailBackend
    if domain == "airline":
        from .airline import AirlineBackend

        return AirlineBackend
    raise ValueError(f"τ²-bench domain {domain!r}: not one this runs ({', '.join(DOMAINS)})")


def domain_tools(domain: str) -> dict[str, Callable[..., Any]]:
    """The tools of `domain`'s backend, by name."""
    if domain == "retail":
        from .retail import TOOLS

        return TOOLS
    if domain == "airline":
        from .airline import AIRLINE_TOOLS

        return AIRLINE_TOOLS
    raise ValueError(f"τ²-bench domain {domain!r}: not one this runs ({', '.join(DOMAINS)})")
