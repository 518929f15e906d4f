"""Collection: case files become pytest items (one per trial), a bad entry an error item.

Which files are cases: a `.yaml`, `.yml` or `.json` file whose name does not start with `_` or
`.`, lying under one of the `commerce_case_dirs` (ini, default `cases`, relative to the rootdir),
or named explicitly on the command line. `_set.yaml` in a case folder configures that set.
The collector and the rule are `collection`'s; the hooks are here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .collection import SEEN_IDS, CaseFile, is_case_file
from .markers import INI_MARKERS, TAG_MARKERS


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Keep the project's own `markers` lines before the conftests and plugins add theirs: a
    tag may take the name of a marker the project declares, never of one a plugin gives meaning."""
    early_config.stash[INI_MARKERS] = list(early_config.getini("markers"))


def pytest_configure(config: pytest.Config) -> None:
    config.stash[SEEN_IDS] = {}
    config.stash[TAG_MARKERS] = set()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_case_file(parent.config, file_path):
        return CaseFile.from_parent(parent, path=file_path)
    return None
