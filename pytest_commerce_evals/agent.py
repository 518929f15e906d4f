"""What the plugin hands an agent for each turn, and the shape of an agent."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from .backend import Backend
from .cases.case import Approval, Case
from .errors import InfraError

__all__ = ["Agent", "AgentSession", "InfraError"]


@dataclass
class AgentSession:
    """One conversation: the same object is passed to every turn of a trial.

    `history` and `scratch` belong to the agent; the plugin never reads them. `seen_products`
    starts as the case's injected state.
    """

    case: Case
    backend: Backend
    trial: int = 1
    turn: int = 0
    role: Literal["customer", "operator"] = "customer"
    seen_products: list[str] = field(default_factory=list)
    history: list[dict[str, Any]] = field(default_factory=list)
    scratch: dict[str, Any] = field(default_factory=dict)
    approve_all: bool = False
    """Every call is approved, whatever the case's `approvals` say (a gold replay's session)."""

    def approval(self, tool: str) -> Approval:
        """What the person decides about a call of `tool` that needs approval: the case's
        `approvals` (`Case.approval_for`), `approve` for everything under `approve_all`."""
        if self.approve_all:
            return Approval(decision="approve")
        return self.case.approval_for(tool)

    def record_call(
        self,
        *,
        model: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cached_tokens: int | None = None,
        latency_s: float | None = None,
        usage: Any = None,
        server: str | None = None,
    ) -> None:
        """Report one model call the agent made in this turn, for an agent whose model client
        is not the plugin's: its tokens, or `usage` as the framework or SDK gave it (OpenAI's
        chat or Responses `usage`, pydantic-ai's, LangChain's `usage_metadata`). What the agent
        reports replaces what the plugin's clients measured for it in the trial. `server` is
        the base URL the call went to; without it the call is taken to go where the agent
        endpoint's settings point (`--commerce-base-url`, hosted OpenAI for a model alone), and
        with neither it has no public price."""
        from .usage import record_call

        record_call(
            model=model,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cached_tokens=cached_tokens,
            latency_s=latency_s,
            usage=usage,
            purpose="agent",
            source="agent",
            server=server,
        )


class Agent(Protocol):
    """Runs one turn and returns or yields events (sync or async, list or generator)."""

    def run_turn(self, session: AgentSession, message: str) -> Any: ...
