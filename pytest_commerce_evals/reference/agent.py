"""The reference commerce agent: a tool-calling loop on an OpenAI-compatible chat client.

It works with the plugin's `HTTPChatClient` or `openai.OpenAI` against any OpenAI-compatible
endpoint, and with the scripted `pytest_commerce_evals.testing.FakeClient`. One `run_turn` call
handles one user message and returns the turn's events; the conversation is kept in
`session.history` across turns.
"""

from __future__ import annotations

import itertools
import json
import re
from decimal import Decimal
from typing import Any

import tenacity

from ..agent import AgentSession, InfraError
from ..events import Text, ToolCall, ToolResult, TurnEnd
from .backend import ReferenceBackend, ToolError
from .guardrails import MEMORY_POLICY_REPLY, Guardrails
from .prompts import system_prompt
from .tools import TOOLS, ToolContext, tools_for_role

__all__ = ["ReferenceAgent", "extract_tool_calls"]

STEP_LIMIT_REPLY = "Sorry, I could not finish that request. Could you narrow it down?"
STUCK_REPLY = "Sorry, that did not work and I could not find another way. Could you rephrase it?"

ELIDED = '{"elided": "an earlier tool result, dropped to fit the context; call the tool again"}'

PROMPT_OVERHEAD_TOKENS = 2_500
"""The system prompt and tool schemas as the embedded chat format renders them, in tokens
(measured on SmolLM2's tokenizer: 2,430 for the customer role with its order and discount tools,
1,544 for the operator)."""

HISTORY_CHARS_PER_TOKEN = 2.2
"""Characters of history per token, on the safe side: JSON tool results with ids and prices
measured 2.8 characters a token, and each message adds a few tokens of framing."""


EMBEDDED_MAX_STEPS = 5
"""Model calls a turn for the reference agent on the embedded model (8 elsewhere): a 135M model
that has not answered in five steps repeats itself in the next three, at seconds a step."""

EMBEDDED_MAX_TOKENS = 192
"""Tokens of a reply for the reference agent on the embedded model (512 elsewhere): about 140
words, more than a shop assistant's answer needs; what a small model writes past it is a loop."""


EMBEDDED_ELIDE_IN = 6
"""Tool results elided at once when the embedded model's history outgrows its window: the
server keeps the prompt it evaluated last, and eliding one more result at every step changed
the middle of the prompt each time (4,400 tokens, 36 s, evaluated again a step)."""


def embedded_options(n_ctx: int) -> dict[str, Any]:
    """The reference agent's settings on the embedded model, whose window is `n_ctx` tokens: the
    step and reply caps above, a repeated step ending the turn, and the history cut to fit the
    window `EMBEDDED_ELIDE_IN` tool results at a time."""
    return {
        "max_steps": EMBEDDED_MAX_STEPS,
        "max_tokens": EMBEDDED_MAX_TOKENS,
        "context_chars": history_chars(n_ctx, EMBEDDED_MAX_TOKENS),
        "elide_in": EMBEDDED_ELIDE_IN,
        "repeat_ends_turn": True,
    }


def history_chars(n_ctx: int, max_tokens: int = 512) -> int:
    """A `context_chars` for a model with an `n_ctx`-token window: what is left after the
    instructions, the tools and the completion, in characters (1,000 at the least)."""
    return max(1_000, int((n_ctx - max_tokens - PROMPT_OVERHEAD_TOKENS) * HISTORY_CHARS_PER_TOKEN))


class ReferenceAgent:
    """`ReferenceAgent(client, model).run_turn(session, message) -> list[Event]`.

    `session.backend` must be a `ReferenceBackend`. `max_steps` bounds the model calls in one
    turn and `max_tokens` the length of each; `context_chars` bounds the history sent (older tool
    results are elided first, `elide_in` at a time), for models with a small context window;
    `repeat_ends_turn` ends a turn whose step repeats the last step's calls exactly (a model that
    repeats what just failed always ends it); transient endpoint
    failures (connection, timeout, rate limit, 5xx) are retried `retries` times, then raised as
    `InfraError` so the trial never counts against the agent.
    """

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        max_steps: int = 8,
        temperature: float | None = 0.0,
        max_tokens: int | None = 512,
        context_chars: int | None = None,
        elide_in: int = 1,
        repeat_ends_turn: bool = False,
        retries: int = 3,
        retry_wait_s: float = 1.0,
        extra_body: dict[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.max_steps = max_steps
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.context_chars = context_chars
        self.elide_in = max(1, elide_in)
        self.repeat_ends_turn = repeat_ends_turn
        self.retries = retries
        self.retry_wait_s = retry_wait_s
        self.extra_body = extra_body

    # --- the model call -------------------------------------------------------------------------

    def _complete(self, request: dict[str, Any]) -> Any:
        create = self.client.chat.completions.create
        try:  # the first attempt, without the retry machinery: most calls need no more
            return create(**request)
        except Exception as exc:
            if not _is_transient(exc):
                raise
            failed: BaseException | None = exc
        retrying = tenacity.Retrying(
            stop=tenacity.stop_after_attempt(max(1, self.retries)),
            wait=tenacity.wait_exponential(multiplier=self.retry_wait_s, max=30),
            retry=tenacity.retry_if_exception(_is_transient),
            reraise=False,
        )
        try:
            for attempt in retrying:
                with attempt:
                    if failed is not None:  # counted and waited for as attempt 1
                        met, failed = failed, None
                        raise met
                    return create(**request)
        except tenacity.RetryError as exc:
            cause = exc.last_attempt.exception()
            raise InfraError(
                f"the agent's model endpoint failed {self.retries} times: {cause!r}"
            ) from cause

    def _request(self, session: AgentSession, backend: ReferenceBackend) -> dict[str, Any]:
        tools = tools_for_role(session.role)
        request: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": system_prompt(session, backend)},
                *self._fit(session.history),
            ],
            "tools": [t.schema for t in tools.values()],
            "tool_choice": "auto",
        }
        if self.temperature is not None:
            request["temperature"] = self.temperature
        if self.max_tokens is not None:
            # bounds the time a rambling model can spend on one step
            request["max_tokens"] = self.max_tokens
        if self.extra_body:
            request["extra_body"] = self.extra_body
        return request

    def _fit(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The history within `context_chars`: the oldest tool results are elided first (the
        model keeps the conversation and its own calls, and can call a tool again)."""
        if self.context_chars is None:
            return list(history)
        fitted = [dict(m) for m in history]
        size = sum(len(str(m.get("content") or "")) for m in fitted)
        results = [m for m in fitted if m.get("role") == "tool" and m.get("content") != ELIDED]
        needed = 0
        for message in results:
            if size <= self.context_chars:
                break
            size -= len(str(message["content"])) - len(ELIDED)
            needed += 1
        # `elide_in` at a time: the prompt's start then stays the same for several steps (a
        # server that keeps its last prompt evaluates only what was added), but never the
        # newest result unless the window needs it
        rounded = -(-needed // self.elide_in) * self.elide_in
        for message in results[: max(needed, min(rounded, len(results) - 1))]:
            message["content"] = ELIDED
        return fitted

    # --- one turn -------------------------------------------------------------------------------

    def run_turn(self, session: AgentSession, message: str) -> list[Any]:
        backend = session.backend
        if not isinstance(backend, ReferenceBackend):
            raise TypeError(
                f"ReferenceAgent needs a ReferenceBackend; got {type(backend).__name__}"
            )
        for pid in backend.seen_products:
            if pid not in session.seen_products:
                session.seen_products.append(pid)
        guard = Guardrails(backend)
        ids = session.scratch.setdefault("call_ids", itertools.count(1))
        session.history.append({"role": "user", "content": message})
        events: list[Any] = []
        calls_this_turn = 0
        last_signature: list[tuple[str, str]] | None = None
        last_all_failed = False
        for _step in range(self.max_steps):
            completion = self._complete(self._request(session, backend))
            reply = completion.choices[0].message
            content = (reply.content or "").strip()
            raw_calls = [
                (tc.id or f"call_{next(ids)}", tc.function.name, tc.function.arguments)
                for tc in reply.tool_calls or []
            ]
            if not raw_calls and content:
                parsed, content = extract_tool_calls(content, set(TOOLS))
                raw_calls = [(f"call_{next(ids)}", n, a) for n, a in parsed]
            entry: dict[str, Any] = {"role": "assistant", "content": content or None}
            if raw_calls:
                entry["tool_calls"] = [
                    {
                        "id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": _as_text(args)},
                    }
                    for cid, name, args in raw_calls
                ]
            session.history.append(entry)
            if content:
                events.append(Text(text=content))
            if not raw_calls:
                break
            # a model that repeats calls which just failed will not get further: stop the turn
            signature = sorted((_tool_name(n), _as_text(a)) for _, n, a in raw_calls)
            if signature == last_signature and (last_all_failed or self.repeat_ends_turn):
                events.append(Text(text=STUCK_REPLY))
                session.history.append({"role": "assistant", "content": STUCK_REPLY})
                break
            last_signature = signature
            first_event = len(events)
            ends_turn = False
            for call_id, name, arguments in raw_calls:
                ctx = ToolContext(backend=backend, session=session, role=session.role)
                model_sees, counted, text = self._call(
                    ctx, guard, call_id, name, arguments, calls_this_turn, events
                )
                calls_this_turn += counted
                ends_turn = ends_turn or ctx.ends_turn
                session.history.append(
                    {
                        "role": "tool",
                        "tool_call_id": call_id,
                        "content": text
                        if text is not None
                        else json.dumps(model_sees, ensure_ascii=False, default=str),
                    }
                )
            results = [e for e in events[first_event:] if isinstance(e, ToolResult)]
            last_all_failed = bool(results) and all(r.status != "ok" for r in results)
            if ends_turn:
                break
        else:
            events.append(Text(text=STEP_LIMIT_REPLY))
            session.history.append({"role": "assistant", "content": STEP_LIMIT_REPLY})
        events.append(TurnEnd(turn=session.turn))
        return events

    def _call(
        self,
        ctx: ToolContext,
        guard: Guardrails,
        call_id: str,
        name: str,
        arguments: Any,
        calls_this_turn: int,
        events: list[Any],
    ) -> tuple[Any, int, str | None]:
        """Run one tool call, appending its events; returns what the model sees, whether the
        call counts toward the per-turn cap, and what the model sees as JSON text when it was
        already written (None: not yet)."""
        name = _tool_name(name)
        parsed, problem = _parse_arguments(arguments)
        events.append(
            ToolCall(
                call_id=call_id,
                name=name,
                arguments=_plain(parsed)
                if parsed is not None
                else {"_unparsed": _as_text(arguments)},
            )
        )
        counted = 0 if name == "present_suggestions" else 1

        def error(reason: str) -> tuple[Any, int, str | None]:
            events.append(
                ToolResult(
                    call_id=call_id,
                    name=name,
                    status="error",
                    reason=reason,
                    result={"error": reason},
                )
            )
            return {"error": reason}, counted, None

        if problem is not None:
            return error(problem)
        assert parsed is not None  # _parse_arguments gives the arguments or a problem
        allowed = tools_for_role(ctx.role)
        if name not in allowed:
            return error(f"unknown tool {name!r}; the tools are: {', '.join(allowed)}")
        tool = allowed[name]
        try:
            args = tool.coerce(parsed)
        except ValueError as exc:
            return error(str(exc))
        assert ctx.session is not None  # the agent's tools run in its session
        blocked = guard.check(name, args, ctx.session, calls_this_turn)
        if blocked is not None:
            if blocked.gate == "memory_policy":
                # silent towards the model and the user; the event stream keeps the truth
                ctx.backend.save_memory(str(args.get("fact", "")))
                seen = dict(MEMORY_POLICY_REPLY)
            else:
                seen = {"blocked": blocked.reason}
            events.append(
                ToolResult(
                    call_id=call_id, name=name, status="blocked", reason=blocked.reason, result=seen
                )
            )
            return seen, counted, None
        try:
            result = tool(ctx, args)
        except ToolError as exc:
            return error(str(exc))
        # one serialisation: the history's text, and the event's plain JSON read back from it
        text = json.dumps(result, ensure_ascii=False, default=str)
        plain = json.loads(text)
        events.append(ToolResult(call_id=call_id, name=name, status="ok", result=plain))
        said = {e.text for e in events if isinstance(e, Text)}
        events.extend(e for e in ctx.events if not (isinstance(e, Text) and e.text in said))
        _note_products(ctx, plain)
        return result, counted, text


# --- tolerance for messy model output -------------------------------------------------------------


def _is_transient(exc: BaseException) -> bool:
    from ..models.retry import is_retryable

    return is_retryable(exc)


def _tool_name(name: Any) -> str:
    name = str(name or "").strip()
    return name.removeprefix("functions.").removeprefix("functions:")


def _as_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, default=str)


def _parse_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Arguments as a mapping (floats as Decimal, so money never goes through float)."""
    if arguments is None or arguments == "":
        return {}, None
    if isinstance(arguments, dict):
        return json.loads(json.dumps(arguments, default=str), parse_float=Decimal), None
    text = str(arguments).strip()
    try:
        value = json.loads(text, parse_float=Decimal)
        if isinstance(value, str):  # double-encoded, as some servers send
            value = json.loads(value, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        return None, f"arguments are not valid JSON ({exc.msg} at position {exc.pos}): {text[:200]}"
    if not isinstance(value, dict):
        return None, f"arguments must be a JSON object; found {type(value).__name__}: {text[:200]}"
    return value, None


_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _call_from(obj: Any, names: set[str]) -> tuple[str, Any] | None:
    if not isinstance(obj, dict):
        return None
    fn = obj.get("function")
    if isinstance(fn, dict):
        obj = {**obj, **fn}
    name = (
        obj.get("name")
        or obj.get("tool")
        or obj.get("tool_name")
        or (fn if isinstance(fn, str) else None)
    )
    name = _tool_name(name)
    if name not in names:
        return None
    for key in ("arguments", "parameters", "args", "input"):
        if key in obj:
            return name, obj[key]
    return name, {}


def extract_tool_calls(content: str, names: set[str]) -> tuple[list[tuple[str, Any]], str]:
    """Tool calls written into the message text, as small models do: `<tool_call>{...}</tool_call>`,
    a fenced JSON block, or a bare JSON object or list naming a known tool. Returns the calls
    and the text left over."""
    calls: list[tuple[str, Any]] = []
    spans: list[tuple[int, int]] = []
    decoder = json.JSONDecoder()
    for pattern in (_TAGGED, _FENCE):
        for match in pattern.finditer(content):
            try:
                value = json.loads(match.group(1))
            except json.JSONDecodeError:
                continue
            found = [c for c in map(lambda o: _call_from(o, names), _as_items(value)) if c]
            if found:
                calls.extend(found)
                spans.append(match.span())
        if calls:
            break
    if not calls:
        i = 0
        while i < len(content):
            if content[i] not in "{[":
                i += 1
                continue
            try:
                value, end = decoder.raw_decode(content, i)
            except json.JSONDecodeError:
                i += 1
                continue
            found = [c for c in map(lambda o: _call_from(o, names), _as_items(value)) if c]
            if found:
                calls.extend(found)
                spans.append((i, end))
            i = end
    rest = content
    for start, end in sorted(spans, reverse=True):
        rest = rest[:start] + rest[end:]
    return calls, rest.strip()


def _as_items(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _plain(value: Any) -> Any:
    """The arguments as the model sent them, for the event stream (numbers as JSON numbers)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


def _note_products(ctx: ToolContext, result: Any) -> None:
    """Remember every product id a tool result showed the model: provenance reads this list."""
    found: list[str] = []
    _shown_ids(result, None, ctx.backend.has_product, found)
    session = ctx.session
    assert session is not None  # the agent's tools run in its session
    for pid in found:
        if pid not in session.seen_products:
            session.seen_products.append(pid)


_ID_KEYS = frozenset(("id", "product_id", "product_ids", "ids"))


def _shown_ids(node: Any, key: str | None, known: Any, found: list[str]) -> None:
    """Append to `found` every string in `node` (JSON: dicts, lists, scalars) held under an id
    key (directly, or in a list under it) that `known` accepts. Strings are checked where they
    are met, so a leaf costs no call."""
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, str):
                if k in _ID_KEYS and known(v):
                    found.append(v)
            elif isinstance(v, dict | list):
                _shown_ids(v, k, known, found)
    elif isinstance(node, list):
        for v in node:
            if isinstance(v, str):
                if key in _ID_KEYS and known(v):
                    found.append(v)
            elif isinstance(v, dict | list):
                _shown_ids(v, key, known, found)
    elif isinstance(node, str) and key in _ID_KEYS and known(node):
        found.append(node)
