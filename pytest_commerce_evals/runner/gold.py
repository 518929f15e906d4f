"""Replaying a case's gold actions (`same_state_as`) on a backend made fresh for the replay, the
case's `state` loaded: each action goes to the backend's `call_tool(name, arguments)`, and the
final state it leaves is what the grader compares with the trial's."""

from __future__ import annotations

import traceback
from typing import Any

from ..cases.case import GoldAction
from ..graders.code import GoldState

__all__ = ["CALL_TOOL", "replay"]

CALL_TOOL = (
    "same_state_as replays the gold actions through the backend's call_tool(name, arguments) "
    "(see docs/plugging-in.md)"
)


def replay(backend: Any, actions: list[GoldAction], snapshot: Any) -> GoldState:
    """Send each action to `backend.call_tool`; an action it refuses (it raised) is listed in
    `failed` and the replay goes on. `snapshot()` reads the final state after the last one."""
    call = getattr(backend, "call_tool", None)
    if not callable(call):
        return GoldState(None, error=f"{type(backend).__name__} has no call_tool(); {CALL_TOOL}")
    failed = []
    for n, action in enumerate(actions, 1):
        try:
            call(action.tool, dict(action.arguments))
        except Exception as exc:  # the backend refused the action: reported, never dropped
            why = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            failed.append(f"action {n} ({action.tool}): {why}")
    return GoldState(snapshot(), failed=failed)
