"""Progress you can watch: while trials run, a line every few seconds saying how many trials are
done of how many, how many passed so far, what is running and when the run should end (on one
line):

    commerce-evals progress: 120/500 trials done, 98 passed, 8 running,
        6 model call(s) in flight, ETA 3m10s

The first line comes `FIRST_S` seconds after collection (a run that ends sooner prints none),
then one every `TTY_EVERY_S` on a terminal and `CI_EVERY_S` in a log (no TTY); nothing under
`-q`. The ETA is the trials left at the pace observed since the first trial started (done over
elapsed), so concurrency and slow trials are in it. Under xdist the controller counts the
trials its workers report; what runs inside the workers is not shown.

Registered on the process where reports gather (the controller under xdist).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

import pytest

from ..compat import line_started
from ..results import report_payload

__all__ = [
    "CI_EVERY_S",
    "FIRST_S",
    "TTY_EVERY_S",
    "Progress",
    "ProgressPlugin",
    "eta_text",
    "progress_for",
]

FIRST_S = 3.0
TTY_EVERY_S = 10.0
CI_EVERY_S = 30.0


def eta_text(seconds: float) -> str:
    """`45s`, `3m10s`, `1h05m`."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Progress:
    """Counts the trials reported and writes the progress line from a daemon thread."""

    def __init__(
        self,
        write: Callable[[str], Any],
        *,
        every_s: float,
        first_s: float = FIRST_S,
        running: Callable[[], int | None] = lambda: None,
        calls: Callable[[], int | None] = lambda: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.write, self.every_s, self.first_s = write, every_s, first_s
        self.running, self.calls, self.clock = running, calls, clock
        self.total = 0
        self.done = 0
        self.passed = 0
        self.started = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def trial_reported(self, outcome: str) -> None:
        self.done += 1
        self.passed += outcome == "pass"

    def line(self) -> str:
        parts = [f"{self.done}/{self.total} trials done", f"{self.passed} passed"]
        running = self.running()
        if running is not None:
            parts.append(f"{running} running")
        calls = self.calls()
        if calls is not None:
            parts.append(f"{calls} model call(s) in flight")
        elapsed = self.clock() - self.started
        left = max(0, self.total - self.done)
        if self.done and left:
            parts.append(f"ETA {eta_text(left * elapsed / self.done)}")
        elif left:
            parts.append("ETA after the first trial")
        return "commerce-evals progress: " + ", ".join(parts)

    def start(self, total: int) -> None:
        """Begin counting `total` trials and writing the line from a daemon thread."""
        self.total, self.started = total, self.clock()
        if total <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="commerce-progress", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        wait = self.first_s
        while not self._stop.wait(wait):
            if self.done >= self.total:
                return
            self.write(self.line())
            wait = self.every_s

    def stop(self) -> None:
        self._stop.set()


def progress_for(config: pytest.Config) -> Progress | None:
    """The progress of this run, or None: under `-q`, when collecting only, or with no terminal
    reporter."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.getoption("verbose") < 0 or config.option.collectonly:
        return None
    tty = bool(getattr(reporter, "isatty", False))
    from ..models.clients import calls_in_flight
    from .trial import trials_running

    xdist = bool(config.getoption("numprocesses", None))
    out = _terminal(config)
    lock = threading.Lock()

    def write(line: str) -> None:
        if out is None:
            reporter.ensure_newline()
            reporter.write_line(line)
            return
        with lock:  # closed at the session's end: a line after that is dropped
            if not out.closed:
                out.write(("\n" if line_started(reporter) else "") + line + "\n")
                out.flush()

    if out is not None:
        config.add_cleanup(lambda: _close(out, lock))
    return Progress(
        write,
        every_s=TTY_EVERY_S if tty else CI_EVERY_S,
        first_s=FIRST_S,
        running=(lambda: None) if xdist else trials_running,
        calls=(lambda: None) if xdist else calls_in_flight,
    )


def _terminal(config: pytest.Config) -> TextIO | None:
    """The terminal pytest reports to, as a stream of its own: a copy of standard output's file
    descriptor taken while nothing is captured (at the session's start). The line is written from
    a thread at any moment, and while a trial's phase runs pytest captures the descriptor itself
    (`--capture=fd`, the default): the reporter's own stream would put the line into that trial's
    captured output. None when standard output is no file (an in-process run), or under `-s`."""
    if config.getoption("capture", "fd") == "no":
        return None
    try:
        fd = sys.stdout.fileno()
        return os.fdopen(os.dup(fd), "w", encoding=sys.stdout.encoding or "utf-8", errors="replace")
    except (AttributeError, OSError, ValueError):
        return None


def _close(out: TextIO, lock: threading.Lock) -> None:
    with lock:
        out.close()


class ProgressPlugin:
    """The progress line's hooks, on the process where reports gather."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        from .items import CaseItem

        trials = [
            i
            for i in session.items
            if isinstance(i, CaseItem) and i.records_trial and not i.case.skip
        ]
        if trials:  # under xdist the controller collects nothing: its workers' ids count
            self.progress.start(len(trials))

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.progress.start(len(ids))  # each worker collects the same items: the first counts

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = report_payload(report)
        kind = data.get("kind") if data is not None else None
        if data is not None and kind == "trial":
            self.progress.trial_reported(data["outcome"])
        elif kind in ("not_needed", "not_started"):  # decided early, or past the budget
            self.progress.trial_reported("not run")

    def pytest_sessionfinish(self) -> None:
        self.progress.stop()
