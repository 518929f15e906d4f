"""The trials under way in this process: how many, and which since when (the progress line reads
both; `CaseItem.compute` registers each trial it runs)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

__all__ = ["RUNNING", "running_trials", "trials_running"]


class _Running:
    """The trials under way in this process, across threads (`with RUNNING.trial(key, case):`
    around each): how many, and which since when (the progress line reads both)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._trials: dict[int, tuple[str, str, float]] = {}
        self._next = 0
        self._lock = threading.Lock()

    @property
    def n(self) -> int:
        return len(self._trials)

    @contextmanager
    def trial(self, key: str, case_id: str) -> Iterator[None]:
        with self._lock:
            token, self._next = self._next, self._next + 1
            self._trials[token] = (key, case_id, self.clock())
        try:
            yield
        finally:
            with self._lock:
                del self._trials[token]

    def snapshot(self) -> list[tuple[str, str, float]]:
        """(item key, case id, start on `clock`) of each trial running now."""
        with self._lock:
            return list(self._trials.values())


RUNNING = _Running()
"""Trials running in this process (the progress line reads it)."""


def trials_running() -> int:
    return RUNNING.n


def running_trials() -> list[tuple[str, str, float]]:
    return RUNNING.snapshot()
