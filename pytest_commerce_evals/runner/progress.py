"""Progress you can watch: while trials run, a line every few seconds saying how many trials are
done of how many, how many passed so far, what is running and when the run should end (on one
line):

    commerce-evals progress: 120/500 trials done, 98 passed, 8 running,
        6 model call(s) in flight, ETA 3m10s

and, when a trial has run for over a minute, which one (`; running attacks-005-... for 1m20s`).

The first line comes `FIRST_S` seconds after collection (a run that ends sooner prints none),
then one every `TTY_EVERY_S` on a terminal and `CI_EVERY_S` in a log (no TTY); nothing under
`-q`.

The ETA weighs the trials: a trial counts `1 + its turns` (a conversation's `max_turns`), so a
run that starts with long conversations does not take every later single-turn case for one.
The pace is the finished trials' own time per unit of weight; the work left is the pace times
the weight not started, plus, for each running trial, what its weight would take less the time
it has already run (never below nothing: a trial past its estimate adds no more, so the ETA
does not climb while one long trial runs); and that work is divided by the trials run at once
(the finished and running trials' time over the time since the first started). Under xdist the
controller counts the trials its workers report, with their times; what runs inside the workers
is not shown. Reports without a trial's time fall back to the plain pace (done over elapsed).

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


LONG_S = 60.0
"""A trial running longer than this is named on the progress line."""


def trial_weight(case: Any) -> float:
    """How much of a run's time a trial of `case` is expected to take, in units: one for the
    trial, one for each turn (a simulated customer's `max_turns`, else the scripted turns)."""
    user = getattr(case, "user", None)
    turns = user.max_turns if user is not None else len(getattr(case, "turns", None) or [])
    return 1.0 + max(1, turns)


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
        running_trials: Callable[[], list[tuple[str, str, float]]] = list,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.write, self.every_s, self.first_s = write, every_s, first_s
        self.running, self.calls, self.clock = running, calls, clock
        self.running_trials = running_trials  # (key, case id, start on `clock`)
        self.total = 0
        self.done = 0
        self.passed = 0
        self.started = clock()
        self.weights: dict[str, float] = {}
        self.total_weight = 0.0
        self.done_weight = 0.0  # of every trial reported
        self.timed_weight = 0.0  # of the trials reported with their time
        self.busy = 0.0  # the reported trials' own time, summed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def weight(self, key: str | None) -> float:
        return self.weights.get(key, 1.0) if key is not None else 1.0

    def trial_reported(
        self, outcome: str, key: str | None = None, duration: float | None = None
    ) -> None:
        """One trial reported: its outcome and, when known, its item's key (for its weight) and
        the seconds it ran."""
        self.done += 1
        self.passed += outcome == "pass"
        weight = self.weight(key)
        self.done_weight += weight
        if duration is not None and duration >= 0:
            self.busy += duration
            self.timed_weight += weight

    def eta(self) -> float | None:
        """Seconds until the last trial ends; None before the first trial is reported."""
        now = self.clock()
        elapsed = now - self.started
        if not self.done:
            return None
        if not self.timed_weight or not self.busy:  # no trial's own time: the plain pace
            return max(0, self.total - self.done) * elapsed / self.done
        pace = self.busy / self.timed_weight
        running = self.running_trials()
        ran = [max(0.0, now - since) for _, _, since in running]
        running_weight = sum(self.weight(key) for key, _, _ in running)
        pending = max(0.0, self.total_weight - self.done_weight - running_weight)
        work = pending * pace + sum(
            max(0.0, self.weight(key) * pace - spent)
            for (key, _, _), spent in zip(running, ran, strict=True)
        )
        at_once = max(1.0, (self.busy + sum(ran)) / elapsed) if elapsed > 0 else 1.0
        return work / at_once

    def line(self) -> str:
        parts = [f"{self.done}/{self.total} trials done", f"{self.passed} passed"]
        running = self.running()
        if running is not None:
            parts.append(f"{running} running")
        calls = self.calls()
        if calls is not None:
            parts.append(f"{calls} model call(s) in flight")
        left = max(0, self.total - self.done)
        eta = self.eta()
        if eta is not None and left:
            parts.append(f"ETA {eta_text(eta)}")
        elif left:
            parts.append("ETA after the first trial")
        text = "commerce-evals progress: " + ", ".join(parts)
        now = self.clock()
        longest = max(self.running_trials(), key=lambda r: now - r[2], default=None)
        if longest is not None and now - longest[2] > LONG_S:
            text += f"; running {longest[1]} for {eta_text(now - longest[2])}"
        return text

    def start(self, total: int, weights: dict[str, float] | None = None) -> None:
        """Begin counting `total` trials (with each item's weight, by key, when known) and
        writing the line from a daemon thread."""
        if self._thread is not None:
            return  # a second start (another xdist worker's collection) changes nothing
        self.total, self.started = total, self.clock()
        self.weights = dict(weights or {})
        self.total_weight = sum(self.weights.values()) + max(0, total - len(self.weights))
        if total <= 0:
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
    from .running import running_trials, trials_running

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
        running_trials=list if xdist else running_trials,
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
            self.progress.start(len(trials), {i.nodeid: trial_weight(i.case) for i in trials})

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.progress.start(len(ids))  # each worker collects the same items: the first counts

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = report_payload(report)
        kind = data.get("kind") if data is not None else None
        if data is not None and kind == "trial":
            record = data.get("record")
            duration = (
                record.get("duration_s")
                if isinstance(record, dict)
                else getattr(record, "duration_s", None)
            )
            self.progress.trial_reported(
                data["outcome"],
                getattr(report, "nodeid", None),
                duration if getattr(report, "when", None) == "call" else None,
            )
        elif kind in ("not_needed", "not_started"):  # decided early, or past the budget
            self.progress.trial_reported("not run")

    def pytest_sessionfinish(self) -> None:
        self.progress.stop()
