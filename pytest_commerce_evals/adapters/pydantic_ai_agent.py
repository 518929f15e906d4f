"""pydantic-ai: a team's `Agent` as the plugin's agent, in one line.

    return PydanticAIAgent(build_agent(backend))            # tools closing over the backend
    return PydanticAIAgent(shop_agent, deps=backend)         # tools reading RunContext.deps

Each turn is `agent.run(message, message_history=...)`, the history kept between turns; a tool
with `requires_approval=True` is decided as the case's `approvals` say (`DeferredToolResults`:
approved, or `ToolDenied` with the person's words; a call left waiting reads blocked, and the
next turn tells the model it was not run) and the run resumed. `DeferredToolRequests` is added
to the run's output types when the agent's own do not name it. A tool that raises is a failed
call, as in `OpenAIChatAgent`: the run's capability `ToolFailures` gives the model
`ToolFailed("<type>: <message>")` instead of letting the exception end the run. The turn reads as
`events_from_pydantic_ai` reads it, usage and model name included; `scripted(client)` runs the
same agent on `pydantic_ai_model(client)`.
"""

from __future__ import annotations

import functools
from typing import Any

from ..agent import AgentSession
from .core import ConvertOptions, TurnMessages
from .integration import HISTORY, NOT_RUN, WAITING, Integration, decisions_for
from .pydantic_ai import events_from_pydantic_ai, pydantic_ai_model

__all__ = ["PydanticAIAgent", "tool_failures"]


def tool_failures() -> Any:
    """A pydantic-ai capability, for `agent.run(..., capabilities=[tool_failures()])`, that turns
    an exception a tool raises into `ToolFailed("<type>: <message>")`: the model is told the call
    failed and the run goes on (a failed call, `outcome="failed"`), where pydantic-ai would
    otherwise raise it out of `agent.run`. A tool's own `ModelRetry` or `ToolFailed` is
    pydantic-ai's to handle, and kept."""
    return _tool_failures_type()()


@functools.cache
def _tool_failures_type() -> type:
    from pydantic_ai import ToolFailed
    from pydantic_ai.capabilities import AbstractCapability

    class ToolFailures(AbstractCapability[Any]):
        async def on_tool_execute_error(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any, error: Exception
        ) -> Any:
            detail = str(error)
            kind = type(error).__name__
            raise ToolFailed(f"{kind}: {detail}" if detail else kind) from error

    return ToolFailures


class PydanticAIAgent(Integration):
    """`PydanticAIAgent(agent, deps=None, model=None)`: `agent` is the team's
    `pydantic_ai.Agent`; `deps` what its tools get as `ctx.deps` (often the backend); `model`
    replaces the agent's own model (a name or a pydantic-ai `Model`). Pass `options`
    (`ConvertOptions`) to mark gates' outputs or presentation tools."""

    def __init__(
        self,
        agent: Any,
        *,
        deps: Any = None,
        model: Any = None,
        options: ConvertOptions | None = None,
    ) -> None:
        if not callable(getattr(agent, "run", None)):
            raise TypeError(
                f"PydanticAIAgent takes a pydantic_ai.Agent; got {type(agent).__name__}"
            )
        super().__init__(events_from_pydantic_ai, options)
        self.agent = agent
        self.deps = deps
        self.model = model

    def scripted_model(self, client: Any) -> Any:
        return pydantic_ai_model(client)

    def _output_type(self) -> Any:
        from pydantic_ai import DeferredToolRequests

        own = getattr(self.agent, "output_type", str)
        types = list(own) if isinstance(own, list | tuple) else [own]
        return None if DeferredToolRequests in types else [*types, DeferredToolRequests]

    async def turn(self, session: AgentSession, message: str) -> TurnMessages:
        from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied

        history = list(session.scratch.get(HISTORY) or [])
        left = session.scratch.pop(WAITING, None)
        if left:  # calls the last turn ended on: the model is told they were not run
            from pydantic_ai.messages import ModelRequest, ToolReturnPart

            parts = [ToolReturnPart(tool_name=n, content=NOT_RUN, tool_call_id=i) for n, i in left]
            history.append(ModelRequest(parts=parts))
        options: dict[str, Any] = {
            "output_type": self._output_type(),
            "capabilities": [tool_failures()],
        }
        if self.deps is not None:
            options["deps"] = self.deps
        if self.model is not None:
            options["model"] = self.model
        result = await self.agent.run(message, message_history=history, **options)
        while isinstance(result.output, DeferredToolRequests) and result.output.approvals:
            waiting = result.output.approvals
            decided = decisions_for(session, [c.tool_name for c in waiting])
            if decided is None:  # a person has not decided: the calls read blocked, waiting
                session.scratch[WAITING] = [(c.tool_name, c.tool_call_id) for c in waiting]
                break
            approvals: dict[str, Any] = {
                c.tool_call_id: True if d.decision == "approve" else ToolDenied(d.message or "")
                for c, d in zip(waiting, decided, strict=True)
            }
            result = await self.agent.run(
                message_history=result.all_messages(),
                deferred_tool_results=DeferredToolResults(approvals=approvals),
                **options,
            )
        messages = result.all_messages()
        session.scratch[HISTORY] = messages
        return TurnMessages(messages[len(history) :], output=result.output)
