"""An agent for τ² retail cases: a tool-calling loop on an OpenAI-compatible chat client (the
plugin's `HTTPChatClient`, `openai.OpenAI`, or a scripted `FakeClient`) over `RetailBackend`'s
tools, with the domain's policy (τ²'s `policy.md`, read from the checkout) as its instructions.
It is the reference agent for `cases/tau2-retail`; a team wires its own agent the same way.

    agent = Tau2Agent(client, "gpt-4.1", policy=Path(".../retail/policy.md").read_text())
    events = agent.run_turn(session, "I want to cancel my order")
"""

from __future__ import annotations

import inspect
import itertools
import json
import typing
from typing import Any

from ..agent import AgentSession
from ..events import Text, ToolCall, ToolResult, TurnEnd
from .domains import backend_class, domain_tools
from .retail import RetailError

__all__ = ["Tau2Agent", "tool_schemas"]

STEP_LIMIT_REPLY = "Sorry, I could not finish that. Could you tell me more?"

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _schema(hint: Any) -> dict[str, Any]:
    if typing.get_origin(hint) is list:
        (item,) = typing.get_args(hint) or (str,)
        return {"type": "array", "items": _schema(item)}
    return {"type": _JSON_TYPES.get(hint, "string")}


def tool_schemas(domain: str = "retail") -> list[dict[str, Any]]:
    """The `tools=` entries of `domain`'s backend tools, from their signatures and docstrings
    (what an imported folder's agent gets when the checkout's own could not be read)."""
    out = []
    for name, fn in domain_tools(domain).items():
        hints = typing.get_type_hints(fn)
        params = list(inspect.signature(fn).parameters.values())[1:]  # the backend
        out.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": (inspect.getdoc(fn) or name.replace("_", " ")).strip(),
                    "parameters": {
                        "type": "object",
                        "properties": {p.name: _schema(hints[p.name]) for p in params},
                        "required": [p.name for p in params],
                    },
                },
            }
        )
    return out


MAX_STEPS = 200
"""τ²'s bound on a whole simulation's steps as its command line runs it (`DEFAULT_MAX_STEPS` in
its config): no turn takes more."""


class Tau2Agent:
    """`Tau2Agent(client, model, policy=...).run_turn(session, message) -> list[Event]`.

    `session.backend` must be a `RetailBackend`; the conversation is kept in `session.history`.
    What the model is shown: `tools` (default: schemas from this backend's signatures), the
    system prompt (`system_prompt`, default the policy alone) and, before the customer's first
    message, the agent's `greeting` when given: an imported folder passes what τ²'s own agent is
    shown (`tau2.imported.Checkout.agent`). `max_steps` bounds the model calls of one turn."""

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        policy: str = "",
        domain: str = "retail",
        tools: list[dict[str, Any]] | None = None,
        system_prompt: str | None = None,
        greeting: str | None = None,
        max_steps: int = MAX_STEPS,
        temperature: float | None = 0.0,
    ) -> None:
        self.client = client
        self.model = model
        self.policy = policy
        self.system_prompt = policy if system_prompt is None else system_prompt
        self.greeting = greeting
        self.max_steps = max_steps
        self.temperature = temperature
        self._tools = tool_schemas(domain) if tools is None else tools
        self._backend = backend_class(domain)

    def run_turn(self, session: AgentSession, message: str) -> list[Any]:
        backend = session.backend
        if not isinstance(backend, self._backend):
            raise TypeError(
                f"Tau2Agent needs a {self._backend.__name__}; got {type(backend).__name__}"
            )
        ids = session.scratch.setdefault("call_ids", itertools.count(1))
        if not session.history:
            session.history.append({"role": "system", "content": self.system_prompt})
            if self.greeting is not None:  # τ²'s conversations open with the agent's greeting
                session.history.append({"role": "assistant", "content": self.greeting})
        session.history.append({"role": "user", "content": message})
        events: list[Any] = []
        for _step in range(self.max_steps):
            request: dict[str, Any] = {
                "model": self.model,
                "messages": list(session.history),
                "tools": self._tools,
            }
            if self.temperature is not None:
                request["temperature"] = self.temperature
            reply = self.client.chat.completions.create(**request).choices[0].message
            calls = list(reply.tool_calls or [])
            content = (reply.content or "").strip()
            session.history.append(
                {
                    "role": "assistant",
                    "content": content or None,
                    **(
                        {
                            "tool_calls": [
                                {
                                    "id": c.id or f"call_{next(ids)}",
                                    "type": "function",
                                    "function": {
                                        "name": c.function.name,
                                        "arguments": c.function.arguments,
                                    },
                                }
                                for c in calls
                            ]
                        }
                        if calls
                        else {}
                    ),
                }
            )
            if content:
                events.append(Text(text=content))
            if not calls:
                break
            for call, entry in zip(calls, session.history[-1]["tool_calls"], strict=True):
                call_id = entry["id"]
                try:
                    arguments = json.loads(call.function.arguments or "{}")
                except ValueError:
                    arguments = None
                events.append(
                    ToolCall(
                        call_id=call_id,
                        name=call.function.name,
                        arguments=arguments if isinstance(arguments, dict) else {},
                    )
                )
                try:
                    if not isinstance(arguments, dict):
                        raise RetailError("arguments are not a JSON object")
                    found = backend.call_tool(call.function.name, arguments)
                    # a copy: the backend's rows change with later calls, the record must not
                    seen = found if isinstance(found, str) else json.dumps(found)
                    result = found if isinstance(found, str) else json.loads(seen)
                    events.append(
                        ToolResult(call_id=call_id, name=call.function.name, result=result)
                    )
                except RetailError as exc:
                    seen = f"Error: {exc}"
                    events.append(
                        ToolResult(
                            call_id=call_id,
                            name=call.function.name,
                            status="error",
                            reason=str(exc),
                            result=seen,
                        )
                    )
                session.history.append({"role": "tool", "tool_call_id": call_id, "content": seen})
        else:
            events.append(Text(text=STEP_LIMIT_REPLY))
            session.history.append({"role": "assistant", "content": STEP_LIMIT_REPLY})
        events.append(TurnEnd(turn=session.turn))
        return events
