"""The entry plugin: registers the hooks and the features' plugins, the core options and the
run's settings. Each feature keeps its own hooks in its `_plugin` module (docs/architecture.md).
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

import pytest

from . import hookspecs
from .cases.case import DIFFICULTIES, PRIORITIES
from .cases.loader import CASE_SUFFIXES
from .runner._scheduler import concurrency
from .settings import RUN_CONFIG, RunConfig

SUBPLUGINS = (
    "pytest_commerce_evals.cases._plugin",
    "pytest_commerce_evals.runner._plugin",
    "pytest_commerce_evals.models._plugin",
    "pytest_commerce_evals.judge._plugin",
    "pytest_commerce_evals.store._plugin",
    "pytest_commerce_evals.live._plugin",
    "pytest_commerce_evals.authoring._plugin",
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    for name in SUBPLUGINS:
        if importlib.util.find_spec(name) is not None and not pluginmanager.has_plugin(name):
            pluginmanager.register(importlib.import_module(name), name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("commerce-evals", "commerce agent evals")
    group.addoption(
        "--commerce-trials",
        type=int,
        default=None,
        metavar="N",
        help="run each case N times as separate items (ini: commerce_trials; default 1)",
    )
    group.addoption(
        "--commerce-threshold",
        type=float,
        default=None,
        metavar="RATE",
        help="default pass threshold (0..1) of a set without its own _set.yaml threshold "
        "(ini: commerce_threshold; default 0.8)",
    )
    group.addoption(
        "--commerce-concurrency",
        default=None,
        metavar="C",
        help="trials in flight at once in this process (ini commerce_concurrency, env "
        "COMMERCE_CONCURRENCY; default auto: 8 against a remote endpoint, 1 on the embedded "
        "model); with -n, per xdist worker",
    )
    parser.addini(
        "commerce_case_dirs", "folders holding eval cases", type="args", default=["cases"]
    )
    parser.addini("commerce_concurrency", "trials in flight at once (a number or auto)", default="")
    parser.addini("commerce_trials", "trials per case", default="1")
    parser.addini("commerce_threshold", "default pass threshold of a set", default="0.8")


def _number(config: pytest.Config, option: str, ini: str, kind: type, low: float, high: float):
    value = config.getoption(option)
    source = f"--{option.replace('_', '-')}"
    if value is None:
        raw, source = config.getini(ini), f"ini {ini}"
        try:
            value = kind(raw)
        except ValueError:
            raise pytest.UsageError(
                f"{source}: expected a {kind.__name__}; found {raw!r}"
            ) from None
    if not low <= value <= high:
        raise pytest.UsageError(f"{source}: expected {low:g}..{high:g}; found {value}")
    return value


def pytest_configure(config: pytest.Config) -> None:
    for name in PRIORITIES:
        config.addinivalue_line("markers", f"{name}: case priority {name} (commerce-evals)")
    for name in ("easy", "hard"):
        config.addinivalue_line("markers", f"{name}: case difficulty {name} (commerce-evals)")
    for name in DIFFICULTIES:
        config.addinivalue_line("markers", f"difficulty_{name}: case difficulty {name}")
    config.addinivalue_line("markers", "commerce_case: an eval case trial (commerce-evals)")
    root = config.rootpath
    args = [Path(a.split("::")[0]) for a in config.args]
    config.stash[RUN_CONFIG] = RunConfig(
        trials=_number(config, "commerce_trials", "commerce_trials", int, 1, 10_000),
        threshold=_number(config, "commerce_threshold", "commerce_threshold", float, 0, 1),
        case_dirs=[(root / d).resolve() for d in config.getini("commerce_case_dirs")],
        explicit={(Path.cwd() / a).resolve() for a in args if a.suffix in CASE_SUFFIXES},
        concurrency=concurrency(config),
    )
