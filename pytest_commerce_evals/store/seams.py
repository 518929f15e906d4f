"""The seams the run store asks of the features above it, declared here, beside what they carry
(xdist's habit: a feature's own hook spec for its internal seams): the identity of the run it
records (a regrade's, from the runner), each feature's store to copy (the judge's verdict
store), and the reports of a stored run (the HTML report). `_plugin.pytest_addhooks` registers
them; a `conftest.py` needs none of them (its hooks are the contract's `hookspecs.py`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from ..runs import RunRecord
    from .diff import FailingSetDiff
    from .history import History


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_run_identity(config: pytest.Config) -> dict[str, Any] | None:
    """The run record's identity when it is not this checkout's and this agent's, asked when the
    run is begun: `kind`, `git_commit`, `git_dirty`, `agent_model`, `agent_base_url` and
    `options` (merged into the record's). A regrade (the runner) answers with its source run's:
    the agent and the commit that made the transcripts."""


@pytest.hookspec
def pytest_commerce_evals_copy_stores(config: pytest.Config, write: Callable[..., None]) -> None:
    """Copy what `--commerce-store-copy` / `--commerce-judge-store-copy` name, each feature its
    own store, saying what was copied with `write(line, **markup)`. Raise `StoreError`,
    `ValueError` or `pytest.UsageError` to end the copy with a usage error."""


@pytest.hookspec
def pytest_commerce_evals_write_reports(
    config: pytest.Config,
    run: RunRecord,
    diff: FailingSetDiff | None,
    how_chosen: str,
    history: History | None,
    written: list[tuple[str, Path]],
    errors: list[str],
) -> None:
    """Write the reports of a finished `run`, with its failing-set `diff` against the baseline
    (None without one), chosen as `how_chosen` says, and the cases' `history` (None without a
    store): append ``(label, path)`` to `written` for each report written and a sentence to
    `errors` for each that could not be. The run is stored already; a report never fails the
    run."""
