"""What the framework integrations share: one object a team builds from its own agent, returned
by `pytest_commerce_evals_make_agent`, that runs a turn, keeps the conversation, applies the
case's `approvals`, and can be driven by a scripted client instead of the team's model.

    @pytest.hookimpl(optionalhook=True)
    def pytest_commerce_evals_make_agent(config, case, backend):
        return PydanticAIAgent(build_agent(backend))

Every integration is a `core.FrameworkAgent` over its framework's converter, so a turn reads as
the converters read it (tool failures, approvals, usage and the model's name). On top of that:

- **history**: the framework's own conversation is kept in `session.scratch` between the turns
  of a trial (a new trial starts a new conversation);
- **approvals**: a call of a tool that needs a person's approval is decided as the case says
  (`Case.approval_for`: `approve`, `refuse` with the person's words, or `wait`, which leaves the
  call blocked, waiting); the run is resumed as the framework resumes it;
- **scripted(client)**: the same agent, its tools and backend, with the model replaced by one
  answering from `client` (a `testing.FakeClient`). The vacuity check uses it when the conftest
  has no `pytest_commerce_evals_make_scripted_agent`, a gold replay (`same_state_as`) uses it to
  call the agent's own tools with the gold actions' arguments, and a team's own tests can use it.
"""

from __future__ import annotations

import copy
from typing import Any

from ..agent import AgentSession
from ..cases.case import Approval
from .core import Converter, ConvertOptions, FrameworkAgent

__all__ = ["HISTORY", "NOT_RUN", "WAITING", "Integration", "decisions_for"]

HISTORY = "commerce_evals_history"
"""The key of `session.scratch` an integration keeps its framework's conversation under."""
WAITING = "commerce_evals_waiting"
"""The key of `session.scratch` holding the calls a turn ended on, waiting for a person."""
NOT_RUN = "not run: it waited for a person's approval, which did not come"
"""What the model is told, at the next turn, of a call that was left waiting."""


class Integration(FrameworkAgent):
    """The base of the framework integrations: `turn(session, message)` runs one turn of the
    team's agent (sync or async) and returns what the converter reads; `with_model(model)` is
    the same integration on another framework model; `scripted_model(client)` is the
    framework's model answering from a scripted client."""

    model: Any = None

    def __init__(self, convert: Converter, options: ConvertOptions | None = None) -> None:
        super().__init__(self.turn, convert, options)

    def turn(self, session: AgentSession, message: str) -> Any:
        raise NotImplementedError

    def scripted_model(self, client: Any) -> Any:
        raise NotImplementedError

    def with_model(self, model: Any) -> Integration:
        """A copy of this integration whose agent runs on `model`."""
        twin = copy.copy(self)
        twin.model = model
        twin._run = twin.turn
        return twin

    def scripted(self, client: Any) -> Integration:
        """The same agent, tools and backend, each model call answered by `client` (a
        `testing.FakeClient`, or anything with `chat.completions.create` returning a chat
        completion)."""
        return self.with_model(self.scripted_model(client))


def decisions_for(session: AgentSession, tools: list[str]) -> list[Approval] | None:
    """What the person decides about each waiting call, by its tool; None when any of them is
    left waiting (`wait`): then the run stops there and every waiting call reads blocked."""
    decisions = [session.approval(name) for name in tools]
    if any(d.decision == "wait" for d in decisions):
        return None
    return decisions
