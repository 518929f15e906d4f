"""The plugin's settings, resolved once at configure time and read by every feature."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class RunConfig:
    """The plugin's settings, resolved once from options and ini keys."""

    trials: int
    threshold: float
    case_dirs: list[Path]
    explicit: set[Path]
    concurrency: int | None = None  # None: auto


RUN_CONFIG = pytest.StashKey[RunConfig]()


def run_config(config: pytest.Config) -> RunConfig:
    return config.stash[RUN_CONFIG]
