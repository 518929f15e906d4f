"""What a run's trials cost, as one side of a comparison: its graded pass rate and the agent's
calls, tokens, money and time per trial, with the judge's and the customer's money, as text the
terminal and the HTML both show."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from ..costs import CostSummary, Tally
from ..prices import PriceBook, money
from ..rates import tally_cases
from ..results import TrialRecord
from ..runs import RunRecord

__all__ = ["COST_COLUMNS", "RunCost", "cost_ratios"]


def _per_trial_money(t: Tally) -> str:
    cost = t.per_trial()["cost_usd"]
    return "unknown" if cost is None else money(Decimal(cost))


def _agent_time(trials: Sequence[TrialRecord]) -> tuple[float | None, int]:
    """The agent's wall time over its turns, averaged over the trials that timed their turns
    (None when none did), and how many did."""
    timed = [sum(t.turn_s) for t in trials if t.turn_s]
    return (sum(timed) / len(timed) if timed else None), len(timed)


def _seconds(value: float | None) -> str:
    """A latency, or "not reported" when a call did not report one (never 0)."""
    return "not reported" if value is None else f"{value:.2f} s"


@dataclass
class RunCost:
    """One side of a comparison: its graded pass rate and what its trials cost."""

    label: str
    passed: int
    graded: int
    summary: CostSummary
    agent_s: float | None

    @classmethod
    def of(cls, label: str, run: RunRecord, prices: PriceBook) -> RunCost:
        tallies = tally_cases(run.trials).values()
        return cls(
            label,
            sum(c.passed for c in tallies),
            sum(c.graded for c in tallies),
            CostSummary.of(run.trials, prices),
            _agent_time(run.trials)[0],
        )

    @property
    def agent(self) -> Tally:
        return self.summary.run["agent"]

    def rate(self) -> str:
        if not self.graded:
            return "n/a (nothing graded)"
        return f"{self.passed / self.graded:.1%} ({self.passed}/{self.graded})"

    def cells(self) -> dict[str, str]:
        """The side's figures as the terminal and the HTML show them."""
        per = self.agent.per_trial()
        total, unpriced = self.summary.total()
        reported = per["calls"] is not None

        def other(purpose: str) -> str:
            t = self.summary.run[purpose]  # type: ignore[index]
            return money(t.cost, t.unpriced) if t.reported else "no calls"

        return {
            "pass rate": self.rate(),
            "calls/trial": f"{per['calls']:.1f}" if reported else "not reported",
            "tokens/trial": (
                f"{per['tokens']:,.0f}"
                if reported and per["tokens"] is not None
                else "not reported"
            ),
            "cost/trial": _per_trial_money(self.agent) if reported else "not reported",
            "latency/trial": _seconds(per["latency_s"]) if reported else "not reported",
            "agent time/trial": (
                "not reported" if self.agent_s is None else f"{self.agent_s:.2f} s"
            ),
            "judge": other("judge"),
            "customer": other("user"),
            "total": money(total, unpriced) if total is not None or unpriced else "unknown",
        }


COST_COLUMNS = (
    "pass rate",
    "calls/trial",
    "tokens/trial",
    "cost/trial",
    "latency/trial",
    "agent time/trial",
    "judge",
    "customer",
    "total",
)
"""The comparison's pass-rate-and-cost columns: the agent's means per trial (over the trials that
reported its calls), then the run's judge, customer and total money."""


def cost_ratios(a: RunCost, b: RunCost) -> str:
    """How B's agent compares with A's per trial: `B uses 2.10× A's tokens per trial, …`."""
    pa, pb = a.agent.per_trial(), b.agent.per_trial()
    parts = []
    ta, tb = pa["tokens"], pb["tokens"]
    if ta is None or tb is None:
        missing = " and ".join(s for s, v in (("A", ta), ("B", tb)) if v is None)
        parts.append(f"tokens per trial not reported under {missing}: not compared")
    elif not ta:
        parts.append(f"A used no tokens per trial, B {tb:,.0f}")
    else:
        parts.append(f"B uses {tb / ta:.2f}× A's agent tokens per trial")
    ca, cb = pa["cost_usd"], pb["cost_usd"]
    if ca is not None and cb is not None and Decimal(ca):
        parts.append(f"{Decimal(cb) / Decimal(ca):.2f}× its agent cost per trial")
    elif pa["calls"] is not None and pb["calls"] is not None:
        parts.append("agent cost per trial not compared (a price is unknown)")
    la, lb = a.agent_s, b.agent_s
    # below a hundredth of a second both agents did no work worth a ratio (scripted agents)
    if la is not None and lb is not None and max(la, lb) >= 0.01 and la > 0:
        parts.append(f"{lb / la:.2f}× its agent time per trial")
    return "; ".join(parts)
