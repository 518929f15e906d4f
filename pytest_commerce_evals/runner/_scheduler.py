"""Concurrent trials: up to C trials in flight in one pytest process, reported in item order.

An eval run's time is almost all model latency, so trials are run ahead of pytest's loop on C
worker threads (`--commerce-concurrency`); each item's `runtest` then only waits for its own
trial and reports it. pytest's protocol, reports, `-x`, xdist and the summary are unchanged. The
threads are daemons: Ctrl-C or `-x` abandons the trials still queued, and a call still in flight
never holds up the exit.

Async agents run on one event loop shared by the whole session (`shared_loop()`), so an async
client made once can serve every trial; a worker thread only waits for its trial's coroutine.

Under xdist each worker runs its own scheduler over the items the controller has queued for it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextvars import ContextVar
from typing import Any

import pytest

from ..interpreter import raise_gc_threshold, raise_switch_interval

__all__ = [
    "Waits",
    "TrialScheduler",
    "resolve_auto",
    "run_coroutine",
    "gc_threshold",
    "shared_loop",
    "switch_interval",
    "waited",
]

AUTO_REMOTE = 8
"""Trials in flight by default against a remote endpoint; the embedded model answers one request
at a time, so it gets 1."""

SCHEDULER = pytest.StashKey["TrialScheduler | None"]()


def resolve_auto(config: pytest.Config) -> int:
    """`auto`, decided once a trial has run: 1 when the embedded model was started (it answers
    one request at a time), else 8 trials in flight (a remote endpoint, or an agent that brings
    its own model client)."""
    from ..models import embedded as _local_model

    return 1 if _local_model.started(config) else AUTO_REMOTE


SWITCH_S_PER_TRIAL = 0.005 / 64
"""The interpreter's switch interval a trial in flight asks for: its default (5 ms) up to 64 in
flight, more past that, at most `SWITCH_S_MAX`."""
SWITCH_S_MAX = 0.02


def switch_interval(size: int) -> float:
    """The switch interval for `size` trials in flight (`TrialScheduler`)."""
    return min(SWITCH_S_MAX, size * SWITCH_S_PER_TRIAL)


GC_OBJECTS_PER_TRIAL = 200
"""New objects the garbage collector lets pile up before a young collection, per trial in
flight (its default is 700 in all), at most `GC_OBJECTS_MAX`."""
GC_OBJECTS_MAX = 100_000


def gc_threshold(size: int) -> int:
    """The young generation's collection threshold for `size` trials in flight."""
    return min(GC_OBJECTS_MAX, size * GC_OBJECTS_PER_TRIAL)


class TrialScheduler:
    """Runs `item.compute()` for submitted items on `size` daemon threads, first submitted first
    run; `wait(item)` blocks until that item's result (or exception) is there.

    While it runs, the interpreter's switch interval is at least `switch_interval(size)`: every
    thread waiting for the interpreter's lock wakes once per interval to ask for it, so with
    hundreds of trials whose replies have arrived the wake-ups themselves cost more CPU than the
    trials (5,000 trials at 256 in flight: 2.7-4.8 s of system time at 5 ms, 1.7-2.0 s at 20
    ms). A thread that blocks (a socket, a lock) still hands the lock on at once.

    The garbage collector's young threshold is likewise at least `gc_threshold(size)`: at its
    default (700 new objects) the objects of the trials in flight are scanned by one young
    collection after another, survive them, and are promoted to the old generation, whose full
    collections then walk every finished trial's record too (5,000 trials at 256 in flight:
    1.6 s of collections at 700, 0.5-0.6 s at 51,200). Cyclic garbage is still collected, in
    larger batches. `restore` puts both back unless something else changed them meanwhile."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._queue: queue.SimpleQueue[tuple[Any, Future] | None] = queue.SimpleQueue()
        self._futures: dict[Any, Future] = {}
        self._threads: list[threading.Thread] = []
        self._closed = False
        self.fed = False  # the whole session's trials were submitted
        self._restore: list[Callable[[], None]] = [
            raise_switch_interval(switch_interval(size)),
            raise_gc_threshold(gc_threshold(size)),
        ]

    def submit(self, items: list[Any]) -> None:
        if self._closed:
            return
        for item in items:
            if item in self._futures:
                continue
            future: Future = Future()
            self._futures[item] = future
            self._queue.put((item, future))
        while len(self._threads) < min(self.size, len(self._futures)):
            thread = threading.Thread(
                target=self._work, name=f"commerce-trial-{len(self._threads) + 1}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def submitted(self, item: Any) -> bool:
        return item in self._futures

    def wait(self, item: Any, idle: Callable[[], object] | None = None) -> Any:
        """The item's result; raises what its trial raised. Ctrl-C while waiting propagates.
        `idle` is called first when the trial is still running: work the main thread can do
        while the trials in flight wait for the model (the run store's writes)."""
        future = self._futures.pop(item)
        if idle is not None and not future.done():
            idle()
        return future.result()

    def close(self) -> None:
        """Abandon the queued trials; the ones running finish on their daemon threads. The
        interpreter settings stay as the trials had them until `restore`: the end of the
        session builds the run's results from every trial (at 5,000 trials, 0.3 s of the
        collector's middle generation at its default threshold)."""
        self._closed = True
        for future in self._futures.values():
            future.cancel()
        self._futures.clear()
        for _ in self._threads:
            self._queue.put(None)

    def restore(self) -> None:
        """Put back the interpreter settings raised for the trials (at the end of the session,
        after its summary), each unless something else changed it since; once."""
        restore, self._restore = self._restore, []
        for undo in restore:
            undo()

    def _work(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                return
            item, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(item.compute())
            except BaseException as exc:  # handed to the main thread, which re-raises it
                future.set_exception(exc)


# --- the session's event loop for async agents --------------------------------------------------

_loop_lock = threading.Lock()
_loop: Any = None
_WAITS: ContextVar[Waits | None] = ContextVar("commerce_waits", default=None)


class Waits:
    """The time one turn's tasks stood ready on the shared loop while the loop ran other trials'
    work: each step of a task whose context carries this record is timed from when it was
    scheduled to when it ran, and the union of those intervals is `total` (overlapping waits of
    the turn's own parallel tasks count once). An agent's time is its turn's time less this."""

    __slots__ = ("_end", "total")

    def __init__(self) -> None:
        self.total = 0.0
        self._end = 0.0

    def add(self, start: float, end: float) -> None:
        start = max(start, self._end)
        if end > start:
            self.total += end - start
            self._end = end


def waited() -> Waits:
    """A fresh record of the waits of the tasks started in this context from now on."""
    waits = Waits()
    _WAITS.set(waits)
    return waits


def _new_loop() -> Any:
    import asyncio

    class TimedLoop(asyncio.SelectorEventLoop):
        """Times how long each step of a trial's task waits in the ready queue."""

        def call_soon(  # type: ignore[override]
            self, callback: Any, *args: Any, context: Any = None
        ) -> Any:
            waits = context.get(_WAITS) if context is not None else None
            if waits is None:
                return super().call_soon(callback, *args, context=context)
            return super().call_soon(
                _stepped, waits, time.perf_counter(), callback, *args, context=context
            )

    return TimedLoop()


def _stepped(waits: Waits, scheduled: float, callback: Any, *args: Any) -> None:
    waits.add(scheduled, time.perf_counter())
    callback(*args)


def shared_loop() -> Any:
    """One event loop on a daemon thread for the whole process, started on first use."""
    global _loop
    with _loop_lock:
        if _loop is None or _loop.is_closed():
            loop = _new_loop()
            threading.Thread(
                target=loop.run_forever, name="commerce-async-agents", daemon=True
            ).start()
            _loop = loop
        return _loop


def run_coroutine(coro: Any) -> Any:
    """Run `coro` on the shared loop and wait for it from this (non-loop) thread. The task runs
    in a copy of this thread's context (`run_coroutine_threadsafe` schedules it so), so the
    model calls it makes are recorded on this thread's trial (`usage.metered`)."""
    import asyncio

    return asyncio.run_coroutine_threadsafe(coro, shared_loop()).result()
