"""The run's budget (`--commerce-budget`): what the run has spent, made once per session."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest

from ..models.pricing import price_book
from ..prices import PriceBook, money
from ..settings.values import RunBudget
from ..usage import ModelCall

__all__ = ["RUN_SPEND", "RunSpend", "run_spend"]

RUN_SPEND = pytest.StashKey["RunSpend | None"]()


def run_spend(config: pytest.Config) -> RunSpend | None:
    """What the run spent against `--commerce-budget` (None: no budget). Under pytest-xdist
    each worker holds an even share of it."""
    if RUN_SPEND in config.stash:
        return config.stash[RUN_SPEND]
    from ..settings import settings

    budget = settings(config).budget
    spend = None
    if budget is not None:
        workers = int(getattr(config, "workerinput", {}).get("workercount", 1) or 1)
        spend = RunSpend(budget.split(workers), price_book(config))
    config.stash[RUN_SPEND] = spend
    return spend


class RunSpend:
    """What the run has spent so far against its budget (threads record at once). Once spent,
    `exhausted` says what ran out; trials already running finish and are recorded."""

    def __init__(self, budget: RunBudget, book: PriceBook) -> None:
        self.budget = budget
        self.book = book
        self.calls = 0
        self.tokens = 0
        self.cost = Decimal(0)
        self.unpriced = 0
        self.stopped: list[str] = []  # "case_id trial N" of each trial not started
        self._lock = threading.Lock()

    def add(self, calls: list[ModelCall]) -> None:
        with self._lock:
            for call in calls:
                self.calls += 1
                self.tokens += call.tokens or 0
                price = self.book.cost(call)
                if price is None:
                    self.unpriced += 1
                else:
                    self.cost += price

    def exhausted(self) -> str | None:
        """What ran out (`tokens: 20,412 of 20,000 spent`), or None while there is budget."""
        b = self.budget
        with self._lock:
            if b.calls is not None and self.calls >= b.calls:
                return f"calls: {self.calls:,} of {b.calls:,} spent"
            if b.tokens is not None and self.tokens >= b.tokens:
                return f"tokens: {self.tokens:,} of {b.tokens:,} spent"
            if b.cost is not None and self.cost >= b.cost:
                return f"cost: {money(self.cost)} of {money(b.cost)} spent"
        return None

    def text(self) -> str:
        priced = self.calls - self.unpriced
        cost = money(self.cost, self.unpriced) if priced else "cost unknown"
        spent = f"{self.calls:,} calls, {self.tokens:,} tokens, {cost}"
        return f"spent {spent} of the budget {self.budget.text()}"
