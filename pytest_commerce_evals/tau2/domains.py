"""The τ²-bench domains this bridge runs: each one's backend class and tools, by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["DOMAINS", "backend_class", "check_domain", "domain_tools"]

DOMAINS = ("retail", "airline")


def check_domain(
    domain: str, where: object, *, runs: tuple[str, ...] = DOMAINS, doing: str = "grades"
) -> None:
    """A `ValueError` naming `where` (a file), the τ²-bench domain found in it and the ones this
    `doing` (`runs`), unless `domain` is one of them: checked before anything of it is run."""
    if domain not in runs:
        raise ValueError(
            f"{where}: a τ²-bench {domain[:40]!r} results file; this {doing} "
            f"{' and '.join(runs)} only"
        )


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
