"""Where the run store and the files a run writes live, from the run's settings.

Public: live sampling finds the store (for its trend) and writes its chart where these say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..settings import settings

__all__ = ["output_path", "store_folder"]


def store_folder(config: pytest.Config) -> Path | str | None:
    """The run store's folder (`--commerce-store`, ini `commerce_store`, env `COMMERCE_STORE`,
    or the default under the rootdir, resolved by the settings), or its PostgreSQL URL (a str);
    None when the run records nothing."""
    return settings(config).store


def output_path(config: pytest.Config, value: str) -> Path:
    """A file the user named on the command line (`--commerce-json`, `--commerce-html`,
    `--commerce-trend-svg`), relative to the directory pytest was invoked from."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else Path(config.invocation_params.dir) / path
