"""Interpreter settings raised for a stretch of a run and put back after: the switch interval
(`sys.setswitchinterval`) and the garbage collector's young threshold (`gc.set_threshold`).

Each `raise_*` sets the value only when it is higher than the current one (never lowers what a
user chose, and leaves automatic collection off when it is off) and returns a function that puts
the earlier value back, unless something else changed it since; a no-op when nothing was set.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable

__all__ = ["raise_gc_threshold", "raise_switch_interval"]


def raise_switch_interval(seconds: float) -> Callable[[], None]:
    before = sys.getswitchinterval()
    if seconds <= before:
        return _nothing
    sys.setswitchinterval(seconds)
    made = sys.getswitchinterval()

    def restore() -> None:
        if sys.getswitchinterval() == made:  # not changed since by anything else
            sys.setswitchinterval(before)

    return restore


def raise_gc_threshold(objects: int) -> Callable[[], None]:
    """The young generation's threshold at least `objects` (the older generations' kept)."""
    before = gc.get_threshold()
    if not 0 < before[0] < objects:  # 0: automatic collection is off
        return _nothing
    gc.set_threshold(objects, *before[1:])
    made = gc.get_threshold()

    def restore() -> None:
        if gc.get_threshold() == made:
            gc.set_threshold(*before)

    return restore


def _nothing() -> None:
    return None
