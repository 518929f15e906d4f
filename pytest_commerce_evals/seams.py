"""The seams between the plugin's own features that collection and the runner answer: hooks a
lower feature calls to ask a higher one for something without importing it
(docs/architecture.md, "A lower feature asks, it does not import"). They are not for a
`conftest.py` (its hooks are `hookspecs.py`); the seams the run store asks are declared beside it,
in `store/seams.py`, typed by what it knows."""

from __future__ import annotations

import pytest


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_item_class(config: pytest.Config, kind: str) -> type[pytest.Item] | None:
    """The item class collection makes for `kind`: ``"trial"`` (one trial of a case),
    ``"invalid"`` (an entry or file that cannot run) or ``"vacuity"`` (a case run against the
    degenerate agents, `--commerce-vacuity`). The runner answers the first two, authoring the
    third; the class is built with ``from_parent(file, name=..., **fields)``."""


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_case_trials(items: list[pytest.Item]) -> list[pytest.Item] | None:
    """Of `items`, the trials of cases (not vacuity checks, not invalid entries, not other
    tests). The runner answers; features below it (models, store, customer) ask it."""
