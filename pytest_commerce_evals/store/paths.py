"""Where the run store and the files a run writes live, from the run's settings.

Public: live sampling finds the store (for its trend) and writes its chart where these say.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .run_store import DEFAULT_STORE_PATH

__all__ = ["NO_STORE", "output_path", "store_folder"]

NO_STORE = ("none", "off", "")
"""Values of `--commerce-store` / ini `commerce_store` that record nothing."""


def store_folder(config: pytest.Config) -> Path | None:
    """The run store's folder (`--commerce-store`, ini `commerce_store`, or the default under
    the rootdir); None when the run records nothing."""
    value = config.getoption("commerce_store", None)
    if value is None:
        value = config.getini("commerce_store") or None
    if value is not None and str(value).strip().lower() in NO_STORE:
        return None
    path = Path(value) if value is not None else DEFAULT_STORE_PATH
    return path if path.is_absolute() else Path(config.rootpath) / path


def output_path(config: pytest.Config, value: str) -> Path:
    """A file the user named on the command line (`--commerce-json`, `--commerce-html`,
    `--commerce-trend-svg`), relative to the directory pytest was invoked from."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else Path(config.invocation_params.dir) / path
