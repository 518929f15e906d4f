"""Collection: case files become pytest items (one per trial), a bad entry an error item.

Which files are cases: a `.yaml`, `.yml` or `.json` file whose name does not start with `_` or
`.`, lying under one of the `commerce_case_dirs` (ini, default `cases`, relative to the rootdir),
or named explicitly on the command line. A folder named on the command line outside them whose
case-like files were not collected, nothing else under it either, is named after collection
with what to pass (`pytest attacks/` would otherwise collect nothing without a word).
`_set.yaml` in a case folder configures that set. The collector and the rule are
`collection`'s; the hooks are here.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..interpreter import raise_gc_threshold
from ..settings import run_config
from .collection import SEEN_IDS, CaseFile, is_case_file
from .loader import CASE_SUFFIXES
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


def pytest_report_collectionfinish(
    config: pytest.Config, start_path: Path, items: list[pytest.Item]
) -> list[str]:
    """A line for each folder named on the command line outside the `commerce_case_dirs` that
    holds case files (`.yaml`, `.yml`, `.json`) of which nothing was collected: a folder a
    case was promoted into is not a case folder until the settings say so."""
    roots = run_config(config).case_dirs
    lines = []
    for arg in config.args:
        path = (Path(config.invocation_params.dir) / arg.split("::")[0]).resolve()
        if not path.is_dir() or any(
            path.is_relative_to(d) or d.is_relative_to(path) for d in roots
        ):
            continue
        if any(Path(item.path).resolve().is_relative_to(path) for item in items):
            continue  # its conftest or another plugin collects it: not ours to say
        files = [
            f
            for f in path.rglob("*")
            if f.suffix in CASE_SUFFIXES and not f.name.startswith(("_", "."))
        ]
        if not files:
            continue
        shown = _shown(path, config.rootpath)
        dirs = ", ".join(_shown(d, config.rootpath) for d in roots) or "none"
        lines.append(
            f"commerce-evals: {shown} is not one of the commerce_case_dirs ({dirs}), so its "
            f"{len(files)} .yaml/.yml/.json file(s) were not collected as cases: run them with "
            f"-o commerce_case_dirs={shown}, add the folder to commerce_case_dirs in the ini, "
            "or name the files"
        )
    return lines


def _shown(path: Path, root: Path) -> str:
    return (path.relative_to(root) if path.is_relative_to(root) else path).as_posix()
