"""What trials cost, added up per case, set and run, for the agent, the judge and the simulated
customer apart: model calls, tokens, latency and money (`prices.PriceBook`), as the terminal
summary, the JSON record, the HTML report and `--commerce-compare` show them.

A trial whose agent reported no model call counts as "not reported" for the agent, never as 0:
its tokens are left out of the per-trial means, which are over the trials that reported. The
judge's and the simulated customer's calls are the plugin's own and always recorded: a trial
without one made none, and their means are over the trials that made some.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from .prices import PriceBook, money
from .usage import PURPOSES, ModelCall, Purpose

__all__ = ["CostSummary", "Tally", "per_trial_values"]


@dataclass
class Tally:
    """One purpose's calls over some trials. `trials` is how many trials were counted,
    `reported` how many of them had at least one call of this purpose; the tokens are None when
    a call left them unreported; `cost` sums the priced calls, `unpriced` counts the others (the
    cost is then a lower bound, and None when no call was priced)."""

    purpose: Purpose
    trials: int = 0
    reported: int = 0
    calls: int = 0
    input_tokens: int | None = 0
    output_tokens: int | None = 0
    cached_tokens: int | None = 0
    latency_s: float | None = 0.0
    """The calls' latency; None when a call did not report it (never 0)."""
    agent_s: float = 0.0
    cost: Decimal | None = None
    unpriced: int = 0
    models: list[str] = field(default_factory=list)
    servers: dict[str, str | None] = field(default_factory=dict)
    """Where each model's first call went, for the price source the reports name."""

    def add_trial(
        self, mine: list[ModelCall], seconds: float, priced: dict[int, Decimal | None]
    ) -> None:
        """Count one trial: its calls of this purpose (`mine`), the agent's time in it, and
        each call's price by `id` (priced once for the case, set and run tallies)."""
        self.trials += 1
        self.agent_s += seconds
        if not mine:
            return
        self.reported += 1
        for call in mine:
            self.calls += 1
            self.input_tokens = _plus(self.input_tokens, call.input_tokens)
            self.output_tokens = _plus(self.output_tokens, call.output_tokens)
            # a call that says nothing of its cache had none the price could discount
            self.cached_tokens = (self.cached_tokens or 0) + (call.cached_tokens or 0)
            self.latency_s = (
                None
                if self.latency_s is None or call.latency_s is None
                else (self.latency_s + call.latency_s)
            )
            if call.model and call.model not in self.models:
                self.models.append(call.model)
                self.servers[call.model] = call.server
            price = priced[id(call)]
            if price is None:
                self.unpriced += 1
            else:
                self.cost = price if self.cost is None else self.cost + price

    @property
    def tokens(self) -> int | None:
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens

    def per_trial(self) -> dict[str, Any]:
        """Means over the trials that reported this purpose's calls (None: none did)."""
        n = self.reported
        if not n:
            return {"calls": None, "tokens": None, "cost_usd": None, "latency_s": None}
        cost = None if self.cost is None or self.unpriced else self.cost / n
        return {
            "calls": self.calls / n,
            "tokens": None if self.tokens is None else self.tokens / n,
            "cost_usd": None if cost is None else str(_round(cost)),
            "latency_s": None if self.latency_s is None else self.latency_s / n,
        }

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "trials": self.trials,
            "reported_trials": self.reported,
            "calls": self.calls if self.reported else None,
            "input_tokens": self.input_tokens if self.reported else None,
            "output_tokens": self.output_tokens if self.reported else None,
            "cached_tokens": self.cached_tokens if self.reported else None,
            "latency_s": (
                round(self.latency_s, 6) if self.reported and self.latency_s is not None else None
            ),
            "cost_usd": None if self.cost is None else str(_round(self.cost)),
            "unpriced_calls": self.unpriced,
            "models": list(self.models),
            "per_trial": self.per_trial(),
        }
        if self.purpose == "agent":
            data["agent_s"] = round(self.agent_s, 6)
        return data

    def text(self) -> str:
        """One line: `12 calls, 18,400 in / 2,100 out tokens (300 cached), 4.2 s, $0.0123`."""
        if not self.reported:
            return "not reported"
        parts = [f"{self.calls} call(s)"]
        parts.append(_tokens_text(self.input_tokens, self.output_tokens, self.cached_tokens))
        parts.append(
            "latency not reported" if self.latency_s is None else f"{self.latency_s:.1f} s in calls"
        )
        parts.append(money(self.cost, self.unpriced) if self.cost is not None else "cost unknown")
        if self.reported < self.trials and self.purpose == "agent":
            parts.append(f"not reported on {self.trials - self.reported} of {self.trials} trials")
        elif self.reported < self.trials:
            # the judge's and the customer's calls are the plugin's own, each recorded: a trial
            # without one made none (no rubric, a cached verdict), it did not leave it unreported
            parts.append(f"in {self.reported} of {self.trials} trials (none in the others)")
        return ", ".join(parts)


def _tokens_text(inp: int | None, out: int | None, cached: int | None) -> str:
    if inp is None or out is None:
        return "tokens not reported"
    text = f"{inp:,} in / {out:,} out tokens"
    return text + (f" ({cached:,} cached)" if cached else "")


def _round(value: Decimal) -> Decimal:
    return value.quantize(Decimal("0.000001")) if value.as_tuple().exponent < -6 else value  # type: ignore[operator]


def _plus(total: int | None, value: int | None) -> int | None:
    return None if total is None or value is None else total + value


def per_trial_values(trial: Any, what: str, purpose: Purpose = "agent") -> float | None:
    """One trial's `what` (`tokens`: the purpose's input plus output tokens, or `agent_s`: the
    agent's time over its turns) for the regression test; None when the trial did not report
    it."""
    if what == "agent_s":
        return float(sum(trial.turn_s)) if trial.turn_s else None
    mine = [c for c in trial.calls if c.purpose == purpose]
    if not mine:
        return None
    if what == "tokens":
        tokens = [c.tokens for c in mine]
        return None if any(v is None for v in tokens) else float(sum(v or 0 for v in tokens))
    raise ValueError(f"unknown measure {what!r}")


class CostSummary:
    """What a run's trials cost, by case, by set and in all."""

    def __init__(self, book: PriceBook) -> None:
        self.book = book
        self.cases: dict[str, dict[Purpose, Tally]] = {}
        self.sets: dict[str, dict[Purpose, Tally]] = {}
        self.run: dict[Purpose, Tally] = {p: Tally(p) for p in PURPOSES}
        self.cached_messages = 0
        """The simulated customers' messages the reply cache answered: replayed, not generated
        in this run."""

    def add(self, trial: Any) -> None:
        self.cached_messages += len(getattr(trial, "cached", ()))
        # the trial's calls split by purpose and priced once, for all three groups
        book = self.book
        split: dict[str, list[ModelCall]] = {}
        priced: dict[int, Decimal | None] = {}
        for call in trial.calls:
            split.setdefault(call.purpose, []).append(call)
            priced[id(call)] = book.cost(call)
        seconds = sum(trial.turn_s)
        empty: list[ModelCall] = []
        for group in (
            self.cases.get(trial.case_id)
            or self.cases.setdefault(trial.case_id, {p: Tally(p) for p in PURPOSES}),
            self.sets.get(trial.set_name)
            or self.sets.setdefault(trial.set_name, {p: Tally(p) for p in PURPOSES}),
            self.run,
        ):
            for purpose, t in group.items():
                t.add_trial(
                    split.get(purpose, empty), seconds if purpose == "agent" else 0.0, priced
                )

    @classmethod
    def of(cls, trials: Iterable[Any], book: PriceBook) -> CostSummary:
        summary = cls(book)
        for trial in trials:
            summary.add(trial)
        return summary

    @property
    def empty(self) -> bool:
        return not any(t.trials for t in self.run.values())

    def total(self) -> tuple[Decimal | None, int]:
        """The run's money over every purpose, and the calls left unpriced."""
        costs = [t.cost for t in self.run.values() if t.cost is not None]
        unpriced = sum(t.unpriced for t in self.run.values())
        return (sum(costs, Decimal(0)) if costs else None), unpriced

    def sources(self) -> dict[str, str | None]:
        """Each model the run's calls name, and where its price came from (None: none)."""
        servers: dict[str, str | None] = {}
        for t in self.run.values():
            for m in t.models:
                servers.setdefault(m, t.servers.get(m))
        return {m: self.book.source(m, servers[m]) for m in sorted(servers)}

    def to_json(self) -> dict[str, Any]:
        """The run's cost as the JSON record carries it (money as decimal strings, in USD)."""
        total, unpriced = self.total()
        return {
            "currency": "USD",
            "prices": self.sources(),
            "total_usd": None if total is None else str(_round(total)),
            "unpriced_calls": unpriced,
            "run": {p: t.to_json() for p, t in self.run.items()},
            "sets": {
                name: {p: t.to_json() for p, t in group.items()}
                for name, group in sorted(self.sets.items())
            },
        }

    def case_json(self, case_id: str) -> dict[str, Any] | None:
        group = self.cases.get(case_id)
        return None if group is None else {p: t.to_json() for p, t in group.items()}

    def lines(self, verbose: bool = False, top: int = 5) -> list[str]:
        """The terminal summary's cost section."""
        if self.empty:
            return []
        total, unpriced = self.total()
        out = ["cost (model calls per trial; USD):"]
        for purpose, label in (("agent", "agent"), ("judge", "judge"), ("user", "customer")):
            t = self.run[purpose]  # type: ignore[index]
            if purpose != "agent" and not t.reported:
                continue
            out.append(f"  {label:<8} {t.text()}")
            if purpose == "agent" and t.models:
                # what the agent ran on, as its calls name it: an integration's own model, which
                # the run's header cannot know before the first trial
                out.append(f"  agent model {', '.join(t.models)} (as the agent's calls name it)")
        if self.cached_messages:
            out.append(
                f"  customer {self.cached_messages} message(s) from the reply cache "
                "(--commerce-judge-store), not generated in this run"
            )
        agent = self.run["agent"]
        if agent.trials:
            out.append(f"  agent time {agent.agent_s:.1f} s over {agent.trials} trial(s)")
        if total is not None or unpriced:
            out.append(f"  total    {money(total, unpriced)}")
        unknown = [m for m, source in self.sources().items() if source is None]
        if unknown:
            out.append(
                f"  no price for {', '.join(unknown)}: cost unknown (add it to commerce_prices: "
                "MODEL = INPUT OUTPUT [CACHED], USD per million tokens)"
            )
        out.append(f"  {'per trial':<24} {'calls':>6} {'tokens':>9} {'latency':>8} {'cost':>10}")
        for name, group in sorted(self.sets.items()):
            out.append("  " + _row(f"set {name}", group["agent"]))
        cases = sorted(
            self.cases.items(),
            key=lambda kv: -(kv[1]["agent"].per_trial()["tokens"] or 0),
        )
        shown = cases if verbose else cases[:top]
        for case_id, group in shown:
            out.append("  " + _row(case_id, group["agent"]))
        if len(shown) < len(cases):
            out.append(f"  ({len(cases) - len(shown)} more cases; -v lists them)")
        return out


def _row(name: str, t: Tally) -> str:
    per = t.per_trial()
    if per["calls"] is None:
        return f"{name[:24]:<24} {'not reported':>36}"
    tokens = "-" if per["tokens"] is None else f"{per['tokens']:,.0f}"
    cost = "unknown" if per["cost_usd"] is None else money(Decimal(per["cost_usd"]))
    latency = "-" if per["latency_s"] is None else f"{per['latency_s']:.2f}s"
    return f"{name[:24]:<24} {per['calls']:>6.1f} {tokens:>9} {latency:>8} {cost:>10}"
