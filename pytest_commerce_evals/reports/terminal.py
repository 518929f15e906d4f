"""Small helpers the sub-plugins share."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def line_writer(config: pytest.Config) -> Callable[..., None]:
    """`write(line, **markup)` to the terminal reporter, or to stdout when there is none (the
    report-only modes: calibration, comparison, trend)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def write(line: str = "", **markup: bool) -> None:
        if reporter is not None:
            reporter.write_line(line, **markup)
        else:
            print(line)

    return write
