"""The one module that touches pytest's and pytest-xdist's internals; nothing else imports them.

Each use is listed with the versions it was checked on, and `tests/test_compat.py` fails loudly
when an installed release moves one (the ranges below are the ones `pyproject.toml` allows and CI
runs, oldest and newest):

- `_pytest.main.wrap_session` runs a mode that replaces the test run (`--commerce-lint`,
  `--commerce-compare`, `--commerce-flaky`, `--commerce-trend`, `--commerce-judge-calibrate`, the
  store copies) inside pytest's session, so the terminal, `-p no:` and the exit status behave as in
  a test run. pytest has no public hook for "run this instead of the tests".
- `_pytest.junitxml.xml_key` and its `LogXML` (`node_reporter`, `nodes`, `stats`): a trial that
  could not be graded is written to `--junitxml` as an `<error>`, not a `<failure>`. When they
  are missing the element stays a `<failure>`.
- `CaptureManager._method` and `_global_capturing` (with its `_state`): a run whose trials run
  concurrently captures through `sys.stdout`/`sys.stderr` rather than file descriptors
  (`capture_by_sys`). When they are missing the capture is left as it is.
- `TerminalReporter._tw.width_of_current_line`: the progress line, written from a thread to the
  terminal itself, starts on a line of its own when pytest is mid-line (its dots). When it is
  missing the line is written after a line break.
- `xdist.remote.WorkerInteractor.torun` (and `nextitem_index`): the items the controller has
  queued for a worker, so a worker keeps several trials in flight; a `queue.Queue` in xdist 3.5,
  xdist's own `TestQueue` from 3.6 on. When it cannot be read, trials run one at a time.
- `xdist.scheduler.LoadScopeScheduling._split_scope`: under adaptive trials the controller sends
  every trial of a case to one worker, which decides the case. (xdist's own `loadgroup` relies on
  renaming items on the worker, which pytest 9.2's node ids no longer allow.)
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

__all__ = [
    "PYTEST_SUPPORTED",
    "XDIST_SUPPORTED",
    "capture_by_sys",
    "case_scheduler",
    "junit_error",
    "line_started",
    "line_writer",
    "run_session",
    "xdist_queued",
]

PYTEST_SUPPORTED = ">=8.0,<10"
"""The pytest versions whose internals this module reads (pyproject's range)."""
XDIST_SUPPORTED = ">=3.5,<4"
"""The pytest-xdist versions whose internals this module reads (pyproject's range)."""


# -- pytest ------------------------------------------------------------------------------------


def run_session(
    config: pytest.Config, main: Callable[[pytest.Config, pytest.Session], Any]
) -> int | pytest.ExitCode:
    """Run `main(config, session)` in place of the test run, inside pytest's session (start,
    finish, terminal summary); its return value is the exit status."""
    from _pytest.main import wrap_session

    return wrap_session(config, main)


def line_writer(config: pytest.Config) -> Callable[..., None]:
    """`write(line, **markup)` for a mode `run_session` runs: to the terminal reporter, or to
    stdout when there is none (`-p no:terminal`)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")

    def write(line: str = "", **markup: bool) -> None:
        if reporter is not None:
            reporter.write_line(line, **markup)
        else:
            print(line)

    return write


def line_started(reporter: Any) -> bool:
    """Whether pytest's terminal reporter has written part of a line (True when unknown)."""
    try:
        return bool(reporter._tw.width_of_current_line)
    except AttributeError:
        return True


def capture_by_sys(config: pytest.Config) -> bool:
    """Switch pytest's global capture from file descriptors (`--capture=fd`, the default) to
    `sys.stdout`/`sys.stderr` for the rest of the session; False when it captures another way
    (`-s`, `sys`, `tee-sys`) or its internals moved, leaving it as it was.

    fd capture swaps descriptors 1 and 2 and reads its files back in every phase of every item:
    about twenty system calls an item, each giving up the interpreter's lock, which at hundreds
    of trials in flight the main thread then waits to take back behind the trials."""
    capman = config.pluginmanager.getplugin("capturemanager")
    capturing = getattr(capman, "_global_capturing", None)
    state = getattr(capturing, "_state", None)
    if getattr(capman, "_method", None) != "fd" or state not in ("started", "suspended"):
        return False
    capman.stop_global_capturing()
    capman._method = "sys"
    capman.start_global_capturing()
    if state == "suspended":
        capman.suspend_global_capture()
    return True


def junit_error(config: pytest.Config, report: pytest.TestReport, outcome: str) -> bool:
    """Retag the `<failure>` that `--junitxml` just wrote for `report` as an `<error>` whose
    message starts with `outcome`; False when there is no junit file or nothing to retag."""
    try:
        from _pytest.junitxml import xml_key
    except ImportError:
        return False
    xml = config.stash.get(xml_key, None)
    if xml is None:
        return False
    reporter = xml.node_reporter(report)
    for node in reversed(reporter.nodes):
        if node.tag == "failure":
            node.tag = "error"
            node.set("message", f"{outcome}: {node.get('message', '')}")
            xml.stats["failure"] -= 1
            xml.stats["error"] += 1
            return True
    return False


# -- pytest-xdist ------------------------------------------------------------------------------


def xdist_queued(config: pytest.Config, session: pytest.Session) -> list[Any] | None:
    """Under an xdist worker, the items the controller has queued for this worker (next first);
    None when the worker's queue cannot be read (then items run one at a time)."""
    for plugin in config.pluginmanager.get_plugins():
        torun = getattr(plugin, "torun", None)
        if torun is None or type(plugin).__name__ != "WorkerInteractor":
            continue
        try:
            if hasattr(torun, "lock"):  # xdist 3.6 on: its own TestQueue
                with torun.lock() as pending:
                    indices = [i for i in pending if isinstance(i, int)]
            else:  # xdist 3.5: a `queue.Queue`, its deque guarded by its mutex
                with torun.mutex:
                    indices = [i for i in torun.queue if isinstance(i, int)]
        except Exception:
            return None
        current = getattr(plugin, "nextitem_index", None)
        if isinstance(current, int):
            indices.insert(0, current)
        items = session.items
        return [items[i] for i in indices if 0 <= i < len(items)]
    return None


TRIAL_SUFFIX = re.compile(r"\[trial-\d+\]$")
"""How a case trial's node id ends when a case runs several trials (`cases/_plugin.py`)."""


def case_scope(nodeid: str) -> str:
    """The unit of work a node id belongs to when each case's trials go to one worker: the case
    (its node id without the trial), or xdist's `xdist_group` where xdist added one."""
    at, bracket = nodeid.rfind("@"), nodeid.rfind("]")
    if at > bracket:  # `test_x.py::test_a@group`, as xdist's loadgroup names a grouped test
        return nodeid[at + 1 :]
    return TRIAL_SUFFIX.sub("", nodeid)


def case_scheduler(config: pytest.Config, log: Any) -> Any:
    """An xdist scheduler that sends every trial of a case to one worker and balances the
    cases (and every other test, one by one) over the workers."""
    from xdist.scheduler import LoadScopeScheduling

    class CaseScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return case_scope(nodeid)

    return CaseScheduling(config, log)
