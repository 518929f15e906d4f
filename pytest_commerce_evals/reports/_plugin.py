"""The reports' hooks: the HTML report of a finished run (`pytest_commerce_evals_write_reports`,
asked by the run store's recorder once the run is stored) and `--commerce-compare`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..compat import run_session
from ..models.pricing import price_book
from ..runs import RunRecord
from ..settings import settings
from ..store.history import History
from ..store.paths import output_path
from ..store.recorder import problem

if TYPE_CHECKING:  # a run's diff is made, and its module imported, only against a baseline
    from ..store.diff import FailingSetDiff


def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    found = settings(config)
    if found.store_import or found.store_copy or found.judge_store_copy:
        return None  # the store's commands come first (store/_plugin)
    if found.compare:
        from .compare import compare_main

        return run_session(config, compare_main)
    return None


def pytest_commerce_evals_write_reports(
    config: pytest.Config,
    run: RunRecord,
    diff: FailingSetDiff | None,
    how_chosen: str,
    history: History | None,
    written: list[tuple[str, Path]],
    errors: list[str],
) -> None:
    target = settings(config).html
    if not target:
        return
    from .html import render_run_html  # the HTML report, when asked for
    from .html_page import write_html

    path = output_path(config, target)
    try:
        found = config.hook.pytest_commerce_evals_report_sections(config=config, run=run)
        sections = [section for sections in found for section in sections or []]
        written.append(
            (
                "HTML report",
                write_html(
                    render_run_html(
                        run, diff, how_chosen, sections, history, prices=price_book(config)
                    ),
                    path,
                ),
            )
        )
    except Exception as exc:  # a report is never worth the run: say why and go on
        errors.append(f"could not write the HTML report to {path}: {problem(exc)}")
