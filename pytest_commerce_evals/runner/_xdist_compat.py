"""The one place the plugin reads pytest-xdist's internals: a worker's queue of items.

Overlapping trials under xdist needs the items the controller has already sent to this worker,
which xdist keeps on its private `WorkerInteractor.torun` queue (no public API exposes it). The
supported range is pinned in `pyproject.toml` (`pytest-xdist>=3.5,<4`), and
`tests/test_xdist_compat.py` fails loudly when a release changes the internal. When it cannot be
read, trials simply run one at a time on each worker.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["SUPPORTED", "WORKER_GROUPED", "group_by_case", "worker_grouped", "xdist_queued"]

SUPPORTED = ">=3.5,<4"
"""The pytest-xdist versions whose worker queue this module reads."""


def xdist_queued(config: pytest.Config, session: pytest.Session) -> list[Any] | None:
    """Under an xdist worker, the items the controller has queued for this worker (next first);
    None when the worker's queue cannot be read (then items run one at a time)."""
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        if torun is None or type(plugin).__name__ != "WorkerInteractor":
            continue
        try:
            with torun.lock() as pending:
                indices = [i for i in pending if isinstance(i, int)]
        except Exception:
            return None
        current = getattr(plugin, "nextitem_index", None)
        if isinstance(current, int):
            indices.insert(0, current)
        items = session.items
        return [items[i] for i in indices if 0 <= i < len(items)]
    return None


def group_by_case(config: pytest.Config) -> bool:
    """Under `-n` with adaptive trials, every trial of a case must run on one worker (its
    decisions need all of its results): `--dist load` and `worksteal` become `loadgroup`, with
    the case id as each trial's `xdist_group`. (`loadscope` and `loadfile` keep a case file on
    one worker already.) Called on the controller at configure time, before the workers start
    and copy its options. True when the distribution was changed."""
    option = config.option
    if not getattr(option, "numprocesses", None) or getattr(option, "dist", "no") not in (
        "load",
        "worksteal",
    ):
        return False
    option.dist = "loadgroup"
    option.loadgroup = True
    # a worker parses the command line again (its `loadgroup` comes from `--dist`): tell it
    config.pluginmanager.register(_TellWorkers(), "commerce_evals.xdist_groups")
    return True


WORKER_GROUPED = "commerce_evals_loadgroup"
"""The key of a worker's `workerinput` that says its items are grouped by case."""


class _TellWorkers:
    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[WORKER_GROUPED] = True


def worker_grouped(config: pytest.Config) -> None:
    """In a worker the controller groups by case: mark its items with their `xdist_group` (xdist
    adds the group to each node id only when `loadgroup` is set in the worker)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput and workerinput.get(WORKER_GROUPED):
        config.option.loadgroup = True
