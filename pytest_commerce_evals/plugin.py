"""The entry plugin: registers the hooks and the features' plugins, every option and ini key
(declared once, in `settings.TABLE`), and resolves the run's settings at configure time. Each
feature keeps its own hooks in its `_plugin` module (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest

from . import hookspecs, seams
from .cases.case import DIFFICULTIES, PRIORITIES
from .cases.loader import CASE_SUFFIXES
from .interpreter import raise_gc_threshold
from .settings import RUN_CONFIG, AutoTrials, RunConfig, register, settings

SUBPLUGINS = (
    "pytest_commerce_evals.cases._plugin",
    "pytest_commerce_evals.runner._plugin",
    "pytest_commerce_evals.models._plugin",
    "pytest_commerce_evals.judge._plugin",
    "pytest_commerce_evals.customer._plugin",
    "pytest_commerce_evals.store._plugin",
    "pytest_commerce_evals.reports._plugin",
    "pytest_commerce_evals.live._plugin",
    "pytest_commerce_evals.authoring._plugin",
)


LOADING_GC_OBJECTS = 50_000
"""The garbage collector's young threshold while the features' plugins load and the session is
configured, up to the start of collection: importing them builds classes, schemas and tables
that live for the whole process, so collecting every 700 new objects only scans and promotes
them (about 20 young and a full collection, 10-15 ms of a run's start-up)."""

_LOADING: list[Callable[[], None]] = []


def _loaded() -> None:
    """The threshold put back once loading is over: when collection starts, or when a session
    ends before it (a usage error); each raise once."""
    while _LOADING:
        _LOADING.pop()()


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    _LOADING.append(raise_gc_threshold(LOADING_GC_OBJECTS))
    pluginmanager.add_hookspecs(hookspecs)
    pluginmanager.add_hookspecs(seams)
    for name in SUBPLUGINS:
        if importlib.util.find_spec(name) is not None and not pluginmanager.has_plugin(name):
            pluginmanager.register(importlib.import_module(name), name)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Every option and ini key of the plugin, from the one table in `settings`."""
    register(parser)


def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    early_config.add_cleanup(_loaded)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_collection(session: pytest.Session):
    _loaded()  # before the case plugin raises the threshold for what collection builds
    return (yield)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for name in PRIORITIES:
        config.addinivalue_line("markers", f"{name}: case priority {name} (commerce-evals)")
    for word in ("easy", "hard"):
        config.addinivalue_line("markers", f"{word}: case difficulty {word} (commerce-evals)")
    for difficulty in DIFFICULTIES:
        config.addinivalue_line("markers", f"difficulty_{difficulty}: case difficulty {difficulty}")
    config.addinivalue_line("markers", "commerce_case: an eval case trial (commerce-evals)")
    # every setting parsed and checked here, before any trial (in xdist workers too)
    found = settings(config)
    args = [Path(a.split("::")[0]) for a in config.args]
    adaptive: AutoTrials | None
    if isinstance(found.trials, AutoTrials):
        adaptive, trials = found.trials, found.trials.maximum
    else:
        adaptive, trials = None, found.trials
    config.stash[RUN_CONFIG] = RunConfig(
        trials=trials,
        threshold=found.threshold,
        case_dirs=list(found.case_dirs),
        explicit={(Path.cwd() / a).resolve() for a in args if a.suffix in CASE_SUFFIXES},
        concurrency=found.concurrency,
        adaptive=adaptive,
    )
