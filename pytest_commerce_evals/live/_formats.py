"""Live traffic other tools logged, read into the capture records of the native format.

Two formats besides the plugin's own capture lines (`capture.CapturedTurn`):

- `openai`: one conversation per line, a JSON object with a `messages` array in chat-completions
  shape (`system`/`developer`, `user`, `assistant` with `content` and `tool_calls`, `tool` with
  `tool_call_id`), optional `conversation_id` or `id`, `metadata`, `timestamp` or `created`.
  Each user message starts a turn; the assistant and tool messages after it are its events.
- `otel`: OpenTelemetry GenAI spans exported as OTLP JSON (`{"resourceSpans": [{"scopeSpans":
  [{"spans": [...]}]}]}`; one document per file, or one per line as the collector's file
  exporter writes them). Spans are grouped by `gen_ai.conversation.id` (a span without one takes
  its trace's), ordered by start time; a model call whose input ends with a user message starts
  a turn, its `gen_ai.output.messages` give the text and the tool calls, an `execute_tool` span
  gives a tool's result (`gen_ai.tool.call.id`, `gen_ai.tool.name`, `gen_ai.tool.call.result`;
  status ERROR: a failed call). The older per-message span events (`gen_ai.user.message`,
  `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`) are read too.

Both feed `conversations.CaptureBuilder`, so sampling, validation, redaction and the reports
are exactly the native reader's. An OpenAI log's messages become events through the public
chat-completions converter (`adapters.openai_chat.events_from_chat_messages`: a refusal is text
the judge reads, a custom tool's call is a call), so a log grades as a live agent's own messages
do; spans through `adapters.core.EventBuilder`, the converters' shared rules.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import IO, Any

from ..adapters.core import ConversionError, EventBuilder
from ..adapters.openai_chat import events_from_chat_messages, tool_failure, tool_output
from ..events import Event, TurnEnd
from ..jsonsafe import deep_json_path, first_json_problem
from .capture import CAPTURE_MAX_DEPTH, event_json
from .conversations import CaptureBuilder
from .lines import id_problem, parse_line

__all__ = ["detect_format", "finish", "read_file"]

DETECT_LINES = 50
"""How many non-blank lines `detect_format` looks at before it gives up on JSON lines."""
_CHAT_OPERATIONS = ("chat", "text_completion", "generate_content")
_NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)


class _Bad(ValueError):
    """What makes a conversation or a span unusable, said without quoting its content."""


# -- detection --------------------------------------------------------------------------------


def _kind(data: dict[str, Any]) -> str:
    if "resourceSpans" in data:
        return "otel"
    if isinstance(data.get("messages"), list):
        return "openai"
    return "native"


def detect_format(fh: IO[bytes]) -> str:
    """`native`, `openai` or `otel`, from a file's content: the first line that is a JSON object
    decides (`resourceSpans`: otel; a `messages` array: openai; anything else: native); a file
    none of whose first lines is one may be a whole, pretty-printed OTLP JSON document."""
    try:
        fh.seek(0)
        seen = 0
        for raw in fh:
            if not raw.strip():
                continue
            seen += 1
            if seen > DETECT_LINES:
                break
            try:
                data = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict):
                return _kind(data)
        fh.seek(0)
        whole = fh.read()
        if whole.lstrip().startswith(b"{"):
            try:
                data = json.loads(whole)
            except (ValueError, RecursionError):
                return "native"
            if isinstance(data, dict) and "resourceSpans" in data:
                return "otel"
        return "native"
    finally:
        fh.seek(0)


def read_file(fh: IO[bytes], shown: str, found: CaptureBuilder, format: str) -> bool:
    """Read one open file in `format` (`auto`: detected) into `found`; False when it is native
    capture lines, left for the native reader (the file is rewound)."""
    kind = detect_format(fh) if format == "auto" else format
    fh.seek(0)
    if kind == "openai":
        _read_openai(fh, shown, found)
    elif kind == "otel":
        _read_otlp(fh, shown, found)
    else:
        return False
    return True


def finish(found: CaptureBuilder) -> None:
    """After every file is read: the spans kept, grouped into conversations."""
    spans = [s for s in found.pending if isinstance(s, _Span)]
    found.pending = [s for s in found.pending if not isinstance(s, _Span)]
    _otel_conversations(spans, found)


# -- shared: messages ---------------------------------------------------------------------------


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


# -- openai: one chat-completions conversation per line -------------------------------------------


def _openai_time(data: dict[str, Any], metadata: dict[str, Any]) -> datetime:
    stamp = data.get("timestamp", metadata.get("timestamp"))
    if stamp is not None and not isinstance(stamp, str):
        raise _Bad(f"timestamp is {type(stamp).__name__}, not an ISO 8601 time (text)")
    if isinstance(stamp, str):
        try:
            found = datetime.fromisoformat(stamp)
        except ValueError:
            raise _Bad("timestamp is not an ISO 8601 time") from None
        return found if found.tzinfo is not None else found.replace(tzinfo=UTC)
    created = data.get("created", metadata.get("created"))
    if created is not None and (isinstance(created, bool) or not isinstance(created, int | float)):
        raise _Bad(f"created is {type(created).__name__}, not a Unix time (a number of seconds)")
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        try:
            return datetime.fromtimestamp(created, UTC)
        except (OverflowError, OSError, ValueError):
            raise _Bad("created is not a Unix time") from None
    return _NO_TIME


def _openai_turns(data: dict[str, Any], shown: str, n: int) -> tuple[str, list[_Turn]]:
    given = data.get("metadata")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    role = metadata.get("role", "customer")
    if role not in ("customer", "operator"):
        raise _Bad(
            f"metadata.role is {str(role)[:40]!r}; a conversation is a customer's or an operator's"
        )
    when = _openai_time(data, metadata)
    turns: list[_Turn] = []
    for i, m in enumerate(data["messages"]):
        msg = _message(m, f"messages.{i}")
        if msg.role == "user":
            turns.append(_Turn("\n".join(msg.texts), when, shown, n))
        elif msg.role in ("system", "developer") or not turns:
            continue  # instructions, or a greeting before the customer said anything
        elif msg.role in ("assistant", "tool"):
            # checked above (`_message`); read by the chat-completions converter, as it is
            turns[-1].messages.append(_chat_message(m, msg))
        else:
            raise _Bad(f"messages.{i}: unknown role {msg.role[:40]!r}")
    if not turns:
        raise _Bad("no user message")
    return role, turns


def _chat_message(m: dict[str, Any], msg: _Message) -> dict[str, Any]:
    """A logged message as the chat converter takes it: `tool_calls` logged as JSON text parsed,
    a tool message's id given as `id` moved to `tool_call_id`."""
    out = dict(m)
    if msg.role == "assistant" and isinstance(m.get("tool_calls"), str):
        out["tool_calls"] = _json_value(m["tool_calls"])
    if msg.role == "tool" and "tool_call_id" not in m:
        out["tool_call_id"] = m.get("id")
    return out


def _read_openai(fh: IO[bytes], shown: str, found: CaptureBuilder) -> None:
    for n, raw in enumerate(fh, 1):
        found.capture.lines += 1
        if not raw.strip():
            continue
        data, error = parse_line(raw)
        if error is None and not isinstance(data, dict):
            error = "not a JSON object; line skipped"
        elif error is None and not isinstance(data.get("messages"), list):
            error = "no messages array (an OpenAI-format line holds one conversation); line skipped"
        if error is not None:
            found.problem(shown, n, error)
            continue
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        given = (data.get("conversation_id"), data.get("id"), metadata.get("conversation_id"))
        cid = _conversation_id(next((v for v in given if v is not None), None))
        if cid is None:
            found.problem(
                shown,
                n,
                "no conversation id (conversation_id, id or metadata.conversation_id); "
                "line skipped",
            )
            continue
        id_error = id_problem({"conversation_id": cid})
        if id_error is not None:
            found.problem(shown, n, f"{id_error}; line skipped")
            continue
        if not found.wanted(cid):
            continue
        try:
            role, turns = _openai_turns(data, shown, n)
            _too_deep(turns)
        except _Bad as exc:
            found.spoil(cid, shown, n, f"{exc}; the conversation is left out of the sample")
            continue
        except RecursionError:  # content nested past what Python can walk
            found.spoil(
                cid,
                shown,
                n,
                f"nested deeper than {CAPTURE_MAX_DEPTH} levels; the conversation is left out "
                "of the sample",
            )
            continue
        _offer(found, _records(cid, role, turns))


# -- otel: GenAI spans as OTLP JSON -----------------------------------------------------------


def _any_value(value: Any) -> Any:
    """An OTLP JSON `AnyValue` as a plain value."""
    if not isinstance(value, dict):
        return value
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError):
            return value["intValue"]
    if "doubleValue" in value:
        return value["doubleValue"]
    if "arrayValue" in value:
        array = value["arrayValue"] or {}
        values = array.get("values", []) if isinstance(array, dict) else None
        if not isinstance(values, list):
            raise _Bad("an arrayValue without a values list")
        return [_any_value(v) for v in values]
    if "kvlistValue" in value:
        kvlist = value["kvlistValue"] or {}
        if not isinstance(kvlist, dict):
            raise _Bad("a kvlistValue that is not an object")
        return _attributes(kvlist.get("values", []))
    if "bytesValue" in value:
        return value["bytesValue"]
    return None


def _attributes(items: Any) -> dict[str, Any]:
    if items is None:
        return {}
    if not isinstance(items, list):
        raise _Bad("attributes is not a list")
    out = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise _Bad("an attribute without a key")
        out[item["key"]] = _any_value(item.get("value"))
    return out


def _nanos(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise _Bad(f"{what} is not a time")
    try:
        nanos = int(value)
    except (TypeError, ValueError):
        raise _Bad(f"{what} is missing or not a time in nanoseconds") from None
    if not 0 <= nanos < _LATEST_NANOS:
        raise _Bad(f"{what} is not a time in nanoseconds since 1970 (found {nanos})")
    return nanos


_LATEST_NANOS = 253402300799 * 10**9  # the end of year 9999, the latest time Python can show


@dataclass
class _Span:
    shown: str
    line: int
    index: int
    name: str
    trace_id: str
    start: int
    attrs: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]]
    error: str | None

    @property
    def label(self) -> str:
        return f"span {self.index} {self.name[:80]!r}"

    @property
    def operation(self) -> str | None:
        op = self.attrs.get("gen_ai.operation.name")
        if op == "execute_tool" or (op is None and "gen_ai.tool.call.id" in self.attrs):
            return "execute_tool"
        if op is None and self.has_messages:
            return "chat"
        return op if isinstance(op, str) else None

    @property
    def has_messages(self) -> bool:
        return (
            "gen_ai.input.messages" in self.attrs
            or "gen_ai.output.messages" in self.attrs
            or any(name in _EVENT_ROLES or name == "gen_ai.choice" for name, _ in self.events)
        )

    def messages(self, key: str) -> list[_Message]:
        """`gen_ai.input.messages` or `gen_ai.output.messages`, else the older span events."""
        value = self.attrs.get(key)
        if value is not None:
            value = _json_value(value)
            if not isinstance(value, list):
                raise _Bad(f"{key} is not a JSON array of messages")
            return [_message(m, f"{key}.{i}") for i, m in enumerate(value)]
        out = []
        for i, (name, attrs) in enumerate(self.events):
            where = f"event {i} {name!r}"
            if key == "gen_ai.output.messages" and name == "gen_ai.choice":
                body = _json_value(attrs.get("message", attrs))
                out.append(_message({"role": "assistant", **_dict(body, where)}, where))
            elif key == "gen_ai.input.messages" and name in _EVENT_ROLES:
                body = {k: _json_value(v) for k, v in attrs.items()}
                out.append(_message({**body, "role": _EVENT_ROLES[name]}, where))
        return out


_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}


def _dict(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Bad(f"{where}: not an object")
    return value


def _span(raw: Any, shown: str, line: int, index: int) -> _Span:
    name = raw.get("name") if isinstance(raw, dict) else None
    name = name if isinstance(name, str) else ""
    if not isinstance(raw, dict):
        raise _Bad("not an object")
    status = raw.get("status")
    if isinstance(status, str):  # a status given as its code's name alone
        status = {"code": status}
    status = status if isinstance(status, dict) else {}
    failed = status.get("code") in (2, "2", "STATUS_CODE_ERROR", "ERROR")
    attrs = _attributes(raw.get("attributes"))
    error = None
    if failed:
        message = status.get("message")
        error_type = attrs.get("error.type")
        error = message or (str(error_type) if error_type else "") or "the span's status is ERROR"
    events = []
    listed = raw.get("events")
    if listed is not None and not isinstance(listed, list):
        raise _Bad(f"events is {type(listed).__name__}, not a list")
    for i, event in enumerate(listed or []):
        if not isinstance(event, dict):
            raise _Bad(f"event {i} is not an object")
        events.append((str(event.get("name", "")), _attributes(event.get("attributes"))))
    return _Span(
        shown,
        line,
        index,
        name,
        str(raw.get("traceId", "")),
        _nanos(raw.get("startTimeUnixNano"), "startTimeUnixNano"),
        attrs,
        events,
        error,
    )


def _documents(fh: IO[bytes], shown: str, found: CaptureBuilder) -> list[tuple[int, Any]]:
    """(line, document): a whole-file document, or one per line."""
    text = fh.read()
    found.capture.lines += text.count(b"\n") + (0 if text.endswith(b"\n") or not text else 1)
    whole, error = parse_line(text)
    if error is None:
        return [(1, whole)]
    lines = text.splitlines()
    first, first_error = next(
        ((n, parse_line(raw)[1]) for n, raw in enumerate(lines, 1) if raw.strip()), (1, error)
    )
    if (
        first_error is not None
        and len(lines) > 1
        and text.lstrip().startswith(b"{")
        and not any(isinstance(parse_line(raw)[0], dict) for raw in lines[first:])
    ):
        # neither one document nor JSON lines (no line of it is a JSON object): report the
        # document once; otherwise each bad line is reported below and the good ones are read
        found.problem(shown, first, f"{error}; file skipped")
        return []
    out = []
    for n, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        data, error = parse_line(raw)
        if error is not None:
            found.problem(shown, n, error)
            continue
        out.append((n, data))
    return out


def _read_otlp(fh: IO[bytes], shown: str, found: CaptureBuilder) -> None:
    for line, doc in _documents(fh, shown, found):
        resources = doc.get("resourceSpans") if isinstance(doc, dict) else None
        if not isinstance(resources, list):
            found.problem(
                shown, line, "not an OTLP JSON trace export (no resourceSpans array); skipped"
            )
            continue
        index = 0
        for r, resource in enumerate(resources):
            scopes = resource.get("scopeSpans") if isinstance(resource, dict) else None
            if not isinstance(scopes, list):
                found.problem(
                    shown, line, f"resourceSpans[{r}]: {_shape(scopes, 'scopeSpans')}; skipped"
                )
                continue
            for c, scope in enumerate(scopes):
                spans = scope.get("spans") if isinstance(scope, dict) else None
                if not isinstance(spans, list):
                    found.problem(
                        shown,
                        line,
                        f"resourceSpans[{r}].scopeSpans[{c}]: {_shape(spans, 'spans')}; skipped",
                    )
                    continue
                for raw in spans:
                    try:
                        found.pending.append(_span(raw, shown, line, index))
                    except _Bad as exc:
                        name = raw.get("name") if isinstance(raw, dict) else None
                        named = f" {name[:80]!r}" if isinstance(name, str) else ""
                        label = f"span {index}{named}"
                        found.problem(shown, line, f"{label}: {exc}; span skipped")
                    index += 1


def _shape(value: Any, key: str) -> str:
    """What stands where an OTLP array should, in words."""
    if value is None:
        return f"no {key} array"
    found = "an object" if isinstance(value, dict) else type(value).__name__
    return f"{key} is {found}, not an array"


def _otel_conversations(spans: list[_Span], found: CaptureBuilder) -> None:
    by_trace: dict[str, set[str]] = defaultdict(set)
    for s in spans:
        cid = _conversation_id(s.attrs.get("gen_ai.conversation.id"))
        if cid is not None and s.trace_id:
            by_trace[s.trace_id].add(cid)
    groups: dict[str, list[_Span]] = defaultdict(list)
    for s in spans:
        cid = _conversation_id(s.attrs.get("gen_ai.conversation.id"))
        if cid is None and s.trace_id and len(by_trace[s.trace_id]) == 1:
            cid = next(iter(by_trace[s.trace_id]))
        relevant = s.operation in ("execute_tool", *_CHAT_OPERATIONS)
        if cid is None:
            if relevant:
                many = len(by_trace[s.trace_id]) if s.trace_id else 0
                why = (
                    f"no gen_ai.conversation.id on the span, and its trace holds {many} "
                    "conversations (which one it belongs to is not said)"
                    if many > 1
                    else "no gen_ai.conversation.id on the span or in its trace"
                )
                found.problem(s.shown, s.line, f"{s.label}: {why}; span skipped")
            continue
        id_error = id_problem({"conversation_id": cid})
        if id_error is not None:
            found.problem(s.shown, s.line, f"{s.label}: {id_error}; span skipped")
            continue
        groups[cid].append(s)
    for cid, group in groups.items():
        if not found.wanted(cid):
            continue
        try:
            turns = _span_turns(sorted(group, key=lambda s: (s.start, s.shown, s.line, s.index)))
        except _SpanBad as exc:
            found.spoil(
                cid,
                exc.span.shown,
                exc.span.line,
                f"{exc.span.label}: {exc}; the conversation is left out of the sample",
            )
            continue
        if turns:
            _offer(found, _records(cid, "customer", turns))


class _SpanBad(_Bad):
    def __init__(self, span: _Span, message: str) -> None:
        super().__init__(message)
        self.span = span


def _tool_span(turn: _Turn, s: _Span) -> None:
    """An `execute_tool` span: the result of the call with its `gen_ai.tool.call.id`; a span
    without an id answers the turn's earliest call of the same tool still without a result; a
    span whose call no model output holds is the call and its result (an agent that records
    its tools' spans only); a span for a call already answered (the same span exported twice)
    is read once."""
    given = _call_id(s.attrs.get("gen_ai.tool.call.id"), "gen_ai.tool.call.id")
    name = s.attrs.get("gen_ai.tool.name")
    name = name if isinstance(name, str) and name else None
    builder = turn.builder
    if given is None and name is not None:
        given = builder.open_named(name)
    if given is not None and builder.was_called(given) and not builder.is_open(given):
        return  # the span of a call already answered, exported again
    if given is None or not builder.is_open(given):
        if name is None:
            raise _Bad(
                "an execute_tool span with neither gen_ai.tool.name nor the id of an open call"
            )
        given = builder.call(given, name, s.attrs.get("gen_ai.tool.call.arguments")).call_id
    builder.result(given, s.attrs.get("gen_ai.tool.call.result"), name=name, error=s.error)


def _span_turns(spans: list[_Span]) -> list[_Turn]:
    calls = [s for s in spans if s.operation in _CHAT_OPERATIONS and s.has_messages]
    if not calls:  # an agent framework that records messages on its agent spans only
        calls = [s for s in spans if s.operation == "invoke_agent" and s.has_messages]
    tools = [s for s in spans if s.operation == "execute_tool"]
    turns: list[_Turn] = []
    for s in sorted(calls + tools, key=lambda s: (s.start, s.shown, s.line, s.index)):
        when = datetime.fromtimestamp(s.start / 1e9, UTC)
        try:
            if s.operation == "execute_tool":
                if not turns:
                    raise _Bad("a tool ran before the conversation's first user message")
                _tool_span(turns[-1], s)
                continue
            inputs = s.messages("gen_ai.input.messages")
            outputs = s.messages("gen_ai.output.messages")
        except _Bad as exc:
            raise _SpanBad(s, str(exc)) from None
        if inputs and inputs[-1].role == "user":
            turns.append(_Turn("\n".join(inputs[-1].texts), when, s.shown, s.line))
        elif not turns:
            raise _SpanBad(s, "the first model call's input does not end with a user message")
        else:
            # tool results the model was sent, for calls no execute_tool span answered
            last = max((i for i, m in enumerate(inputs) if m.role == "assistant"), default=-1)
            # (a result a tool span already gave is the same result, read once)
            for m in inputs[last + 1 :]:
                for call_id, output in m.responses:
                    builder = turns[-1].builder
                    if builder.is_open(call_id):
                        output = tool_output(output)
                        error = tool_failure({}, output)  # the {"error": ...} convention
                        builder.result(call_id, output, error=error)
                    elif not builder.was_called(call_id):
                        raise _SpanBad(
                            s,
                            f"gen_ai.input.messages: a tool result for call {call_id!r}, which "
                            "no call of the turn has (it answers no call)",
                        )
        for m in outputs:
            turns[-1].reply(m)
    return turns
