"""OpenAI Agents SDK: a team's `Agent` as the plugin's agent, in one line.

    return AgentsSDKAgent(shop_agent, context=backend)      # tools reading the run's context
    return AgentsSDKAgent(build_agent(backend))              # tools closing over the backend

Each turn is `Runner.run(agent, history + message)` with tracing off, the history kept between
turns (`result.to_input_list()`); a tool with `needs_approval` is decided as the case's
`approvals` say (`state.approve` / `state.reject` with the person's words; a call left waiting
reads blocked) and the run resumed from its state. Every run's responses are read for the
trial's usage, under the model the agent runs on (a name, or a model object's `model`), and the
run's context tells a refusal apart whatever its words. `scripted(client)` runs the same agent
(and every agent it hands off to) on `agents_model(client)`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..agent import AgentSession
from .core import ConvertOptions, TurnMessages
from .integration import HISTORY, Integration, decisions_for
from .openai_agents import events_from_agents_items
from .openai_agents_model import agents_model

__all__ = ["AgentsSDKAgent"]


def _model_name(model: Any) -> str | None:
    if isinstance(model, str) and model:
        return model
    for name in ("model", "model_name", "name"):
        value = getattr(model, name, None)
        if isinstance(value, str) and value:
            return value
    return None


class AgentsSDKAgent(Integration):
    """`AgentsSDKAgent(agent, context=None, model=None, run_config=None, max_turns=10)`:
    `agent` is the team's `agents.Agent`; `context` the run's context (what tools get as
    `ctx.context`, often the backend); `model` replaces the model of every agent in the run (a
    name or an `agents.Model`); `run_config` the team's own `RunConfig` (tracing is turned off
    in it)."""

    def __init__(
        self,
        agent: Any,
        *,
        context: Any = None,
        model: Any = None,
        run_config: Any = None,
        max_turns: int = 10,
        options: ConvertOptions | None = None,
    ) -> None:
        if not hasattr(agent, "tools") or not hasattr(agent, "name"):
            raise TypeError(f"AgentsSDKAgent takes an agents.Agent; got {type(agent).__name__}")
        super().__init__(events_from_agents_items, options)
        self.agent = agent
        self.context = context
        self.model = model
        self.run_config = run_config
        self.max_turns = max_turns

    def scripted_model(self, client: Any) -> Any:
        return agents_model(client)

    def _config(self) -> Any:
        from agents import RunConfig

        config = self.run_config or RunConfig()
        changes: dict[str, Any] = {"tracing_disabled": True}
        if self.model is not None:
            changes["model"] = self.model
        return dataclasses.replace(config, **changes)

    def model_name(self) -> str | None:
        """The model the trial's responses are recorded under."""
        config = self.run_config
        for model in (self.model, getattr(config, "model", None), self.agent.model):
            name = _model_name(model) if model is not None else None
            if name:
                return name
        return None

    async def turn(self, session: AgentSession, message: str) -> TurnMessages:
        from agents import Runner

        history = list(session.scratch.get(HISTORY) or [])
        config = self._config()

        async def run(what: Any) -> Any:
            return await Runner.run(
                self.agent,
                what,
                context=self.context,
                max_turns=self.max_turns,
                run_config=config,
            )

        result = await run([*history, {"role": "user", "content": message}])
        items = list(result.new_items)
        responses = list(result.raw_responses)
        while getattr(result, "interruptions", None):
            waiting = list(result.interruptions)
            decided = decisions_for(session, [item.name or "" for item in waiting])
            if decided is None:
                break  # a person has not decided: the calls read blocked, waiting
            state = result.to_state()
            for item, decision in zip(waiting, decided, strict=True):
                if decision.decision == "approve":
                    state.approve(item)
                else:
                    state.reject(item, rejection_message=decision.message)
            result = await run(state)
            items += [i for i in result.new_items if not any(i is j for j in items)]
            responses += [r for r in result.raw_responses if not any(r is s for s in responses)]
        session.scratch[HISTORY] = result.to_input_list()
        return TurnMessages(
            items, context=result.context_wrapper, responses=responses, model=self.model_name()
        )
