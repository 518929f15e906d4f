"""This module says what a grader observed, for the messages of its results: calls, carts,
memory, replies and JSON values as short text, and the `GraderResult` of a pass or a failure.
"""

from __future__ import annotations

import json
from typing import Any

from ..events import ToolCall, ToolResult
from ..results import GraderResult
from .observation import Observation

__all__ = ["calls_made", "reply_excerpt"]


def _dumps(value: Any) -> str:
    """Stable JSON text of a value an agent or backend produced; keys of mixed types (which
    `sort_keys` cannot order) keep their order rather than crash the grader."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):  # circular or too deep: Python's view
            return repr(value)


def _short(value: Any, width: int = 60) -> str:
    text = _dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _call(call: ToolCall) -> str:
    args = ", ".join(f"{k}={_short(v, 40)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def _marked(call: ToolCall, results: dict[str, ToolResult]) -> str:
    """A call as "calls made" lists it: a call whose result was an error or blocked says so."""
    found = results.get(call.call_id)
    status = found.status if found is not None else "ok"
    return _call(call) if status == "ok" else f"{_call(call)} → {status}"


def _calls(obs: Observation, turn: int | None = None) -> str:
    """The calls of the graded turn (or of `turn`), in call order; a call whose result was
    `error` or `blocked` is marked so."""
    if turn is None and obs.scope == "conversation" and len(obs.turns) > 1:
        return calls_made(obs)
    calls = obs.tool_calls(turn)
    results = obs.results_by_call(turn)
    listed = ", ".join(_marked(c, results) for c in calls) if calls else "no tool calls"
    if len(obs.turns) > 1:
        index = obs.graded_turn if turn is None else turn
        assert index is not None  # the trial has turns
        return f"turn {index + 1} of {len(obs.turns)}: {listed}"
    return listed


def calls_made(obs: Observation) -> str:
    """Every turn's calls, numbered as the report numbers turns (for a failure's context)."""
    if len(obs.turns) <= 1:
        return _calls(obs, 0 if obs.turns else None)
    return "; ".join(_calls(obs, i) for i in range(len(obs.turns)))


def _cart(lines: list) -> str:
    if not lines:
        return "empty"
    return ", ".join(
        f"{line.product_id}{f' ({line.variant})' if line.variant else ''} ×{line.quantity}"
        for line in lines
    )


def _memory(entries: list[str]) -> str:
    return "empty" if not entries else "; ".join(repr(m) for m in entries)


def reply_excerpt(text: str) -> str:
    """A reply as failure messages quote it: whitespace folded, at most 200 characters."""
    if not text.strip():
        return "no reply text"
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 200 else flat[:199] + "…")


def _ok(key: str, expected: Any, observed: Any, message: str) -> GraderResult:
    return GraderResult(key, True, expected, observed, message)


def _fail(key: str, expected: Any, observed: Any, message: str) -> GraderResult:
    return GraderResult(key, False, expected, observed, message)
