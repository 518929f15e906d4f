"""What the readers of the foreign live-traffic formats share: a logged message read in either
shape (chat-completions, or the GenAI semantic conventions' `parts`), a turn's events, and the
native capture records a conversation's turns become, offered to `CaptureBuilder`.

An OpenAI log's messages become events through the public chat-completions converter
(`adapters.openai_chat.events_from_chat_messages`: a refusal is text the judge reads, a custom
tool's call is a call), so a log grades as a live agent's own messages do; spans through
`adapters.core.EventBuilder`, the converters' shared rules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..adapters.core import ConversionError, EventBuilder
from ..adapters.openai_chat import events_from_chat_messages
from ..events import Event, TurnEnd
from ..jsonsafe import deep_json_path, first_json_problem
from .capture import CAPTURE_MAX_DEPTH, event_json
from .conversations import CaptureBuilder


class _Bad(ValueError):
    """What makes a conversation or a span unusable, said without quoting its content."""


@dataclass
class _Message:
    """A message in either shape (chat-completions, or the GenAI semconv's `parts`)."""

    role: str
    texts: list[str] = field(default_factory=list)
    calls: list[tuple[str | None, str, Any]] = field(default_factory=list)  # (id, name, args)
    responses: list[tuple[str | None, Any]] = field(default_factory=list)  # (call id, output)


def _text_of(content: Any, where: str) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return [content] if content else []
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])  # {"type": "text", "text": ...}; images are left out
        return out
    raise _Bad(f"{where}: content is {type(content).__name__}, not text or a list of parts")


def _json_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
        except RecursionError:
            raise _Bad(
                f"a JSON value nested deeper than {CAPTURE_MAX_DEPTH} levels (past what Python "
                "reads)"
            ) from None
    return value


def _too_deep(turns: list[_Turn]) -> None:
    """The capture's nesting limit holds whatever the format: a turn whose events (a tool's
    arguments or output, parsed from their JSON text) nest deeper makes the conversation bad."""
    for t, turn in enumerate(turns, 1):
        for k, event in enumerate(turn.events()):
            data = event.model_dump()
            problem = first_json_problem(data, CAPTURE_MAX_DEPTH - 2, surrogates=False)
            raw = (data.get("arguments") or {}).get("_raw")
            if problem is None and isinstance(raw, str) and raw[:1] in "[{":
                # arguments too deep for Python's own JSON reader are kept as their text
                where = deep_json_path(raw, CAPTURE_MAX_DEPTH - 4)
                if where != "(unknown)":
                    problem = f"arguments: {where}"
            if problem is not None:
                key = problem.split(": ", 1)[0]
                raise _Bad(
                    f"turn {t} event {k} ({key}): nested deeper than the capture's "
                    f"{CAPTURE_MAX_DEPTH} levels"
                )


def _call(tc: Any, where: str) -> tuple[str | None, str, Any]:
    if not isinstance(tc, dict):
        raise _Bad(f"{where}: a tool call that is not an object")
    function = tc.get("function")
    fn: dict[str, Any] = function if isinstance(function, dict) else tc
    if isinstance(tc.get("custom"), dict):  # a custom tool's call: free-text input
        fn = {"name": tc["custom"].get("name"), "arguments": {"_raw": tc["custom"].get("input")}}
    name, call_id = fn.get("name"), tc.get("id")
    if not isinstance(name, str) or not name:
        raise _Bad(f"{where}: a tool call without a name")
    return _call_id(call_id, f"{where}: tool call {name[:40]!r}"), name, fn.get("arguments")


def _call_id(value: Any, where: str) -> str | None:
    """A call id as text; None when there is none (the builder numbers such a call)."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Bad(f"{where}: its id is {type(value).__name__}, not text")
    return str(value)


def _message(m: Any, where: str) -> _Message:
    if not isinstance(m, dict):
        raise _Bad(f"{where}: not an object")
    role = m.get("role")
    if not isinstance(role, str):
        raise _Bad(f"{where}: no role")
    msg = _Message(role)
    if isinstance(m.get("parts"), list):  # the GenAI semantic conventions' shape
        for i, part in enumerate(m["parts"]):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("content"), str):
                msg.texts.append(part["content"])
            elif kind == "tool_call":
                msg.calls.append(_call(part, f"{where}.parts.{i}"))
            elif kind == "tool_call_response":
                call_id = _call_id(part.get("id"), f"{where}.parts.{i}: a tool call response")
                msg.responses.append((call_id, part.get("response")))
        return msg
    msg.texts = _text_of(m.get("content"), where)
    calls = _json_value(m.get("tool_calls")) or []
    if not isinstance(calls, list):
        raise _Bad(f"{where}: tool_calls is not a list")
    msg.calls = [_call(tc, f"{where}.tool_calls.{i}") for i, tc in enumerate(calls)]
    if role == "tool":
        call_id = _call_id(m.get("tool_call_id", m.get("id")), f"{where}: a tool message")
        if call_id is None:
            raise _Bad(f"{where}: a tool message without a tool_call_id (it answers no call)")
        content = m.get("content")
        msg.responses = [(call_id, content)]
        msg.texts = []
    return msg


_CALL_ID_RULES = ("a tool result", "a second result", "a tool call without")


def _conversion_problem(exc: ConversionError) -> str:
    """Why the converter refused a turn, said without quoting the conversation: the call-id
    rule it broke (which names only the call id), else where it went wrong."""
    cause = exc.__cause__
    text = str(cause) if isinstance(cause, ValueError) else ""
    if text.startswith(_CALL_ID_RULES):
        return text[:240]
    return "the turn's assistant and tool messages could not be read as chat messages"


class _Turn:
    """One turn's events, read through `EventBuilder` and its call-id rules: a call without an
    id is numbered, a second call with the same id is a call of its own, and a result that
    answers no call makes the conversation bad."""

    def __init__(self, user: str, timestamp: datetime, shown: str, line: int) -> None:
        self.user, self.timestamp, self.shown, self.line = user, timestamp, shown, line
        self.builder = EventBuilder()
        self.messages: list[dict[str, Any]] = []  # an OpenAI log's, for the chat converter
        self._events: list[Event] | None = None

    def events(self) -> list[Event]:
        """The turn's events: an OpenAI log's messages read by the chat-completions converter
        (`adapters.openai_chat`, so a log grades as a live agent's own messages do), spans'
        through the builder."""
        if self._events is None:
            if self.messages:
                try:
                    self._events = events_from_chat_messages(self.messages)
                except ConversionError as exc:
                    raise _Bad(_conversion_problem(exc)) from None
            else:
                return self.builder.finish()
        return self._events

    def reply(self, msg: _Message) -> None:
        self.builder.text("\n".join(msg.texts))
        for call_id, name, arguments in msg.calls:
            self.builder.call(call_id, name, arguments)


def _records(cid: str, role: str, turns: list[_Turn]) -> list[tuple[_Turn, dict[str, Any]]]:
    """The native capture record of each turn."""
    out = []
    for k, turn in enumerate(turns):
        events = [*turn.events(), TurnEnd(turn=k)]
        record = {
            "schema_version": 1,
            "conversation_id": cid,
            "timestamp": turn.timestamp.isoformat(),
            "role": role,
            "turn": k + 1,
            "user": turn.user,
            "events": [event_json(e) for e in events],  # deep values kept as JSON text
        }
        out.append((turn, record))
    return out


def _offer(found: CaptureBuilder, records: list[tuple[_Turn, dict[str, Any]]]) -> None:
    for turn, record in records:
        raw = json.dumps(record).encode()  # escaped: lone surrogates show as \\udXXX
        found.offer(turn.shown, turn.line, raw, record)


def _conversation_id(value: Any) -> str | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return value if isinstance(value, str) and value else None
