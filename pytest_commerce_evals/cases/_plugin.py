"""Collection: case files become pytest items (one per trial), a bad entry an error item.

Which files are cases: a `.yaml`, `.yml` or `.json` file whose name does not start with `_` or
`.`, lying under one of the `commerce_case_dirs` (ini, default `cases`, relative to the rootdir),
or named explicitly on the command line. `_set.yaml` in a case folder configures that set.
The collector and the rule are `collection`'s; the hooks are here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..interpreter import raise_gc_threshold
from ..settings import run_config
from .collection import SEEN_IDS, CaseFile, is_case_file
from .markers import INI_MARKERS, TAG_MARKERS

COLLECTING_GC_OBJECTS = 50_000
"""The garbage collector's young threshold while a session with case folders collects: what
collection builds (cases, items, their markers) lives for the whole session, so collecting it
every 700 new objects only scans and promotes it (5,000 cases: 326 young and 4 full collections,
0.1 s, at the default; none but the session's own at 50,000)."""


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


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session):
    if not any(d.is_dir() for d in run_config(session.config).case_dirs):
        return (yield)
    restore = raise_gc_threshold(COLLECTING_GC_OBJECTS)
    try:
        return (yield)
    finally:
        restore()
