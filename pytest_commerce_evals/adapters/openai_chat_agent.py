"""Plain OpenAI calls: a chat-completions tool loop over a team's own tool functions, as the
plugin's agent, in one line.

    return OpenAIChatAgent(openai.OpenAI(), "gpt-4.1-mini", tools=shop_tools(backend),
                           instructions=PROMPT, needs_approval=["apply_changes"])

Each tool is a Python function (sync or async; a sync one, like a sync client's call, runs on a
thread, so it never holds up the other trials on the shared event loop): its name is the tool's
name, its docstring the description, its annotated parameters the JSON schema (pydantic), and
the model's arguments are validated against them before it runs. A tool that raises answers the
model with `{"error": "<type>: <message>"}` and reads as a failed call; arguments that do not
validate answer the same way without running it. A tool in `needs_approval` is decided as the
case's `approvals` say: approved it runs, refused the model is told the person's words (the call
reads `blocked`, gate `approval`), left waiting the turn ends there (the call reads blocked,
waiting; the next turn tells the model it was not run). The loop keeps the messages between
turns, stops after `max_steps` model calls in a turn, and each completion's usage and model are
recorded. `scripted(client)` runs the same loop against a `FakeClient`.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterable
from typing import Any

from ..agent import AgentSession
from ._openai import field
from .core import ConvertOptions, TurnMessages
from .integration import HISTORY, NOT_RUN, WAITING, Integration, decisions_for
from .openai_chat import events_from_chat_messages

__all__ = ["OpenAIChatAgent", "Tool"]


class Tool:
    """A tool function with the JSON schema the model sees and a validating call."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        from pydantic import create_model

        if not callable(fn) or not getattr(fn, "__name__", None):
            raise TypeError(f"a tool is a named function; got {type(fn).__name__}")
        self.fn = fn
        self.name: str = fn.__name__
        self.description = inspect.getdoc(fn) or ""
        hints = _hints(fn)
        fields: dict[str, Any] = {}
        for name, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            default = ... if param.default is param.empty else param.default
            fields[name] = (hints.get(name, Any), default)
        self.arguments = create_model(f"{self.name}_arguments", **fields)

    def schema(self) -> dict[str, Any]:
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    async def call(self, raw: Any) -> Any:
        """Run the tool on the model's arguments (a JSON string or a mapping); what it raises,
        or arguments that do not validate, is the answer `{"error": ...}`."""
        try:
            arguments = json.loads(raw or "{}") if isinstance(raw, str) else dict(raw or {})
            if not isinstance(arguments, dict):
                raise ValueError(f"the arguments are not a JSON object: {raw!r:.80}")
            checked = self.arguments.model_validate(arguments)
            values = {k: getattr(checked, k) for k in type(checked).model_fields}
            if inspect.iscoroutinefunction(self.fn):
                out = await self.fn(**values)
            else:  # on a thread: a tool that blocks never holds up the other trials' turns
                import asyncio  # only an async agent needs it: not imported by every run

                out = await asyncio.to_thread(self.fn, **values)
                if inspect.isawaitable(out):
                    out = await out
        except Exception as exc:  # the tool's own failure: the model is told, the call is failed
            return {"error": f"{type(exc).__name__}: {str(exc)[:500]}"}
        return out


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    import typing

    try:
        return typing.get_type_hints(fn)
    except Exception:  # an annotation that does not resolve: that parameter takes anything
        return {}


def _content(output: Any) -> str:
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, default=str)
    except (TypeError, ValueError):
        return str(output)


class OpenAIChatAgent(Integration):
    """`OpenAIChatAgent(client, model, tools, instructions=None, needs_approval=(),
    max_steps=20, **create_options)`: `client` an `openai.OpenAI` or `AsyncOpenAI` (or the
    plugin's clients); `tools` the team's tool functions; `create_options` go to each
    `chat.completions.create` (temperature, ...)."""

    def __init__(
        self,
        client: Any,
        model: str,
        tools: Iterable[Callable[..., Any]] = (),
        *,
        instructions: str | None = None,
        needs_approval: Iterable[str] = (),
        max_steps: int = 20,
        options: ConvertOptions | None = None,
        **create_options: Any,
    ) -> None:
        super().__init__(events_from_chat_messages, options)
        self.client = client
        self.model = model
        self.tools = {t.name: t for t in map(Tool, tools)}
        self.instructions = instructions
        self.needs_approval = set(needs_approval)
        unknown = self.needs_approval - set(self.tools)
        if unknown:
            raise ValueError(
                f"needs_approval names {', '.join(sorted(unknown))}, not among the tools "
                f"({', '.join(sorted(self.tools)) or 'none'})"
            )
        self.max_steps = max_steps
        self.create_options = create_options

    def scripted_model(self, client: Any) -> Any:
        return client

    def with_model(self, model: Any) -> OpenAIChatAgent:
        twin = super().with_model(self.model)
        assert isinstance(twin, OpenAIChatAgent)
        twin.client = model  # the scripted client stands in for the team's
        return twin

    async def _complete(self, messages: list[Any]) -> Any:
        request: dict[str, Any] = {"model": self.model, "messages": messages, **self.create_options}
        if self.tools:
            request["tools"] = [tool.schema() for tool in self.tools.values()]
        create = self.client.chat.completions.create
        if inspect.iscoroutinefunction(create):
            return await create(**request)
        # a sync client (openai.OpenAI) waits on a thread, not on the loop every trial shares
        import asyncio

        completion = await asyncio.to_thread(create, **request)
        if inspect.isawaitable(completion):
            completion = await completion
        return completion

    async def turn(self, session: AgentSession, message: str) -> TurnMessages:
        messages: list[Any] = session.scratch.setdefault(HISTORY, [])
        if not messages and self.instructions:
            messages.append({"role": "system", "content": self.instructions})
        for call_id in session.scratch.pop(WAITING, []):
            messages.append({"role": "tool", "tool_call_id": call_id, "content": NOT_RUN})
        messages.append({"role": "user", "content": message})
        read: list[Any] = []  # what the converter reads: completions (with usage) and tool answers
        refused: list[str] = []
        waiting: list[str] = []
        for _ in range(self.max_steps):
            completion = await self._complete(messages)
            reply = field(field(completion, "choices")[0], "message")
            calls = list(field(reply, "tool_calls") or [])
            messages.append(_assistant(reply, calls))
            read.append(completion)
            if not calls:
                break
            gated = [c for c in calls if _name(c) in self.needs_approval]
            decided = decisions_for(session, [_name(c) for c in gated]) if gated else []
            if decided is None:
                waiting = [str(field(c, "id")) for c in gated]
            decisions = dict(zip((str(field(c, "id")) for c in gated), decided or [], strict=False))
            for call in calls:
                call_id = str(field(call, "id"))
                if call_id in waiting:
                    continue
                decision = decisions.get(call_id)
                if decision is not None and decision.decision == "refuse":
                    content = decision.message or ""
                    refused.append(call_id)
                else:
                    content = _content(await self._call_tool(call))
                answer = {"role": "tool", "tool_call_id": call_id, "content": content}
                messages.append(answer)
                read.append(answer)
            if waiting:
                session.scratch[WAITING] = waiting
                break
        return TurnMessages(read, waiting=waiting, refused=refused)

    async def _call_tool(self, call: Any) -> Any:
        function = field(call, "function")
        tool = self.tools.get(field(function, "name"))
        if tool is None:
            return {"error": f"no tool named {field(function, 'name')!r}"}
        return await tool.call(field(function, "arguments"))


def _name(call: Any) -> str:
    return str(field(field(call, "function"), "name"))


def _assistant(reply: Any, calls: list[Any]) -> dict[str, Any]:
    """The assistant message as the API takes it back."""
    message: dict[str, Any] = {"role": "assistant", "content": field(reply, "content")}
    if calls:
        message["tool_calls"] = [
            {
                "id": field(c, "id"),
                "type": "function",
                "function": {
                    "name": _name(c),
                    "arguments": field(field(c, "function"), "arguments") or "{}",
                },
            }
            for c in calls
        ]
    return message
