"""Replaying a case's gold actions (`same_state_as`) on a backend made fresh for the replay, the
case's `state` loaded, and reading the final state they leave, which the grader compares with the
trial's. Two ways:

- through the backend's `call_tool(name, arguments)`, when it has one (written by hand, for an
  agent outside the integrations);
- else through the agent's own tools, when the agent is an integration (`adapters.Integration`):
  the same agent is built on the fresh backend and driven by a scripted model that calls each
  gold action's tool with its arguments, one action a turn, every approval given; the tools run
  with their own checks, and an action whose call fails or is refused is listed.

A backend that can do neither is the glue's problem (`ConfigurationError`), never the agent's.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

from ..agent import AgentSession
from ..cases.case import Case, GoldAction
from ..errors import ConfigurationError
from ..events import ToolCall, ToolResult
from ..graders.observation import GoldState
from ..testing import FakeClient, FakeReply

__all__ = ["CALL_TOOL", "GOLD_DONE", "replay", "replay_through_agent"]

CALL_TOOL = (
    "same_state_as replays the gold actions through the backend's call_tool(name, arguments), or, "
    "without one, through the agent's own tools when the agent is one of the integrations "
    "(pytest_commerce_evals.adapters; see docs/plugging-in.md)"
)
GOLD_DONE = "Done."
"""What the scripted model says after a gold action's call has been answered."""


def _why(exc: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(exc), exc)).strip()


def replay(backend: Any, actions: list[GoldAction], snapshot: Any) -> GoldState:
    """Send each action to `backend.call_tool`; an action it refuses (it raised) is listed in
    `failed` and the replay goes on. `snapshot()` reads the final state after the last one.
    Raises `ConfigurationError` when the backend has no `call_tool`."""
    call = getattr(backend, "call_tool", None)
    if not callable(call):
        raise ConfigurationError(
            f"the backend {type(backend).__name__} has no call_tool() and the agent is not one "
            f"of the integrations, so the case's gold actions cannot be replayed; {CALL_TOOL}"
        )
    failed = []
    for n, action in enumerate(actions, 1):
        try:
            call(action.tool, dict(action.arguments))
        except Exception as exc:  # the backend refused the action: reported, never dropped
            failed.append(f"action {n} ({action.tool}): {_why(exc)}")
    return GoldState(snapshot(), failed=failed)


def gold_client(action: GoldAction) -> FakeClient:
    """A scripted model that calls the action's tool once, then says it is done."""
    replies = iter([FakeReply(tool_calls=[(action.tool, dict(action.arguments))])])
    return FakeClient(lambda request: next(replies, GOLD_DONE), model="gold-replay")


def replay_through_agent(
    agent: Any,
    case: Case,
    backend: Any,
    actions: list[GoldAction],
    run_turn: Callable[[Any, AgentSession, str], list[Any]],
    snapshot: Any,
) -> GoldState:
    """Replay each action as one turn of `agent.scripted(gold_client(action))` on `backend`
    (`run_turn(agent, session, message)` runs it and returns its events), every approval given.
    An action whose call fails, is blocked, or is never made (no such tool) is listed in
    `failed`, and the replay goes on."""
    session = AgentSession(
        case=case,
        backend=backend,
        role=case.role,
        seen_products=list(case.state.seen_products),
        approve_all=True,
    )
    failed = []
    for n, action in enumerate(actions, 1):
        session.turn = n - 1
        try:
            events = run_turn(agent.scripted(gold_client(action)), session, f"gold action {n}")
        except ConfigurationError:
            raise
        except Exception as exc:  # the tool raised out of the agent's run
            failed.append(f"action {n} ({action.tool}): {_why(exc)}")
            continue
        calls = [e for e in events if isinstance(e, ToolCall) and e.name == action.tool]
        if not calls:
            failed.append(f"action {n} ({action.tool}): the agent has no tool {action.tool!r}")
            continue
        results = [e for e in events if isinstance(e, ToolResult) and e.call_id == calls[0].call_id]
        if results and results[0].status != "ok":
            reason = results[0].reason or results[0].status
            failed.append(f"action {n} ({action.tool}): {results[0].status}: {reason}")
    return GoldState(snapshot(), failed=failed)
