"""The plugin's settings: one table declares every option, ini key and environment variable, and
one immutable `Settings` object, resolved and checked once at configure time, is what every
feature reads.

    Settings                    # every setting, declared once: its type and its row (table.py)
    TABLE                       # the rows, read off Settings: name, default, allowed values, help
    register(parser)            # the command-line options and ini keys, from TABLE
    settings(config)            # the run's `Settings` (frozen), e.g. settings(config).trials

Each setting is looked up in its own order (most: command line, then ini, then environment), the
first value given wins, else its default. A bad value is a `pytest.UsageError` naming where it
came from (`--commerce-trials`, `ini commerce_trials` or `env COMMERCE_CONCURRENCY`), the value
found and what is allowed, before any trial runs. docs/options.md is generated from TABLE
(`options_markdown()`) and a test compares the two.

API keys are declared here too but never held by `Settings`: they are read from the environment
where a client is made, so no object of the run can print one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..exports import lazy
from ._resolve import SETTINGS, Settings, agent_label, register, resolve_settings, settings
from .table import AUTO_TRIALS_CAP, BY_NAME, GROUP, NO_STORE, TABLE, AutoTrials, Setting

if TYPE_CHECKING:  # the docs of the table are imported by what writes or checks them
    from ._docs import declared_names, documented_names, options_markdown

__getattr__, __dir__ = lazy(
    __name__,
    {"declared_names": "_docs", "documented_names": "_docs", "options_markdown": "_docs"},
)

__all__ = [
    "AUTO_TRIALS_CAP",
    "BY_NAME",
    "GROUP",
    "NO_STORE",
    "RUN_CONFIG",
    "SETTINGS",
    "TABLE",
    "AutoTrials",
    "RunConfig",
    "Setting",
    "Settings",
    "agent_label",
    "declared_names",
    "documented_names",
    "options_markdown",
    "register",
    "resolve_settings",
    "run_config",
    "settings",
]

# -- the run's selection settings ------------------------------------------------------------


@dataclass(frozen=True)
class RunConfig:
    """The settings of collecting and running cases, derived once from `Settings` (for a
    regrade, with the source run's trials per case). Frozen: whatever changes what runs stores
    a new one, and `Settings` keeps what was asked."""

    trials: int  # under adaptive trials: the most a case may run (MAX)
    threshold: float
    case_dirs: list[Path]
    explicit: set[Path]
    concurrency: int | None = None  # None: auto
    adaptive: AutoTrials | None = None  # `--commerce-trials=auto:MIN:MAX`


RUN_CONFIG = pytest.StashKey[RunConfig]()


def run_config(config: pytest.Config) -> RunConfig:
    return config.stash[RUN_CONFIG]
