"""`expected.budget`: what the agent spent in the trial (or in each turn) against the case's
budget, failure text naming what was spent."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..prices import PriceBook, money
from ..results import GraderResult
from ..usage import ModelCall

__all__ = ["budget", "spent"]

_HOW = (
    "the agent reported no model calls: a budget needs its usage (the plugin's clients record "
    "it; an agent on its own client calls session.record_call, see docs/cost.md)"
)


def spent(calls: list[ModelCall], seconds: float, book: PriceBook | None) -> dict[str, Any]:
    """The agent's calls, tokens (None: not reported), cost (None: unknown) and time."""
    mine = [c for c in calls if c.purpose == "agent"]
    tokens = [c.tokens for c in mine]
    costs = [book.cost(c) if book is not None else None for c in mine]
    priced = [c for c in costs if c is not None]
    return {
        "calls": len(mine),
        "tokens": None if any(t is None for t in tokens) else sum(t or 0 for t in tokens),
        "input_tokens": sum(c.input_tokens or 0 for c in mine),
        "output_tokens": sum(c.output_tokens or 0 for c in mine),
        "cost": None if any(c is None for c in costs) else sum(priced, Decimal(0)),
        "latency_s": seconds,
        "reported": bool(mine),
    }


def _over(limit: Any, spend: dict[str, Any]) -> list[str]:
    """What in `spend` is over `limit`, each said with what was spent."""
    out = []
    if limit.calls is not None and spend["calls"] > limit.calls:
        out.append(f"{spend['calls']} model calls (budget {limit.calls})")
    if limit.tokens is not None:
        if spend["tokens"] is None:
            out.append(f"tokens not reported by every call (budget {limit.tokens:,})")
        elif spend["tokens"] > limit.tokens:
            out.append(
                f"{spend['tokens']:,} tokens ({spend['input_tokens']:,} in, "
                f"{spend['output_tokens']:,} out over {spend['calls']} calls; budget "
                f"{limit.tokens:,})"
            )
    if limit.cost is not None:
        if spend["cost"] is None:
            out.append(f"cost unknown: a model has no price (budget {money(limit.cost)})")
        elif spend["cost"] > limit.cost:
            out.append(f"{money(spend['cost'])} (budget {money(limit.cost)})")
    if limit.latency_s is not None and spend["latency_s"] > limit.latency_s:
        out.append(f"{spend['latency_s']:.2f} s of agent time (budget {limit.latency_s:g} s)")
    return out


def budget(limit: Any, obs: Any) -> GraderResult:
    """The agent's spend in the trial (`per: trial`/`conversation`) or in each turn (`per:
    turn`) within every limit of the case's budget."""
    calls: list[ModelCall] = list(obs.calls)
    turn_s: list[float] = list(obs.turn_s)
    per = "turn" if limit.per == "turn" else "trial"
    expected = limit.model_dump(exclude_none=True, mode="json")
    counted = (limit.calls, limit.tokens, limit.cost)
    if not any(c.purpose == "agent" for c in calls) and any(v is not None for v in counted):
        return GraderResult("budget", False, expected, None, f"budget: {_HOW}")
    if per == "trial":
        spend = spent(calls, sum(turn_s), obs.prices)
        over = _over(limit, spend)
        observed: Any = _observed(spend)
        where = "in the trial"
    else:
        over, observed = [], []
        for i, seconds in enumerate(turn_s):
            spend = spent([c for c in calls if c.turn == i], seconds, obs.prices)
            observed.append(_observed(spend))
            over += [f"turn {i + 1}: {o}" for o in _over(limit, spend)]
        where = "per turn"
    if over:
        return GraderResult(
            "budget",
            False,
            expected,
            observed,
            f"budget: the agent spent {'; '.join(over)} {where}",
        )
    return GraderResult("budget", True, expected, observed, f"budget: within it {where}")


def _observed(spend: dict[str, Any]) -> dict[str, Any]:
    return {
        "calls": spend["calls"],
        "tokens": spend["tokens"],
        "cost_usd": None if spend["cost"] is None else str(spend["cost"]),
        "latency_s": round(spend["latency_s"], 3),
    }
