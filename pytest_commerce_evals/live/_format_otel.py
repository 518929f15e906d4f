"""Reading OpenTelemetry GenAI spans, exported as OTLP JSON, into capture records.

The spans come as `{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`: one document per
file, or one per line as the collector's file exporter writes them. Spans are grouped by
`gen_ai.conversation.id` (a span without one takes its trace's), ordered by start time; a model
call whose input ends with a user message starts a turn, its `gen_ai.output.messages` give the
text and the tool calls, an `execute_tool` span gives a tool's result (`gen_ai.tool.call.id`,
`gen_ai.tool.name`, `gen_ai.tool.call.result`; status ERROR: a failed call). The older
per-message span events (`gen_ai.user.message`, `gen_ai.assistant.message`,
`gen_ai.tool.message`, `gen_ai.choice`) are read too. The spans are kept while the files are
read and grouped into conversations once every file is read (`_otel_conversations`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, Any

from ..adapters.openai_chat import tool_failure, tool_output
from ._format_shared import (
    _Bad,
    _call_id,
    _conversation_id,
    _json_value,
    _Message,
    _message,
    _offer,
    _records,
    _Turn,
)
from .conversations import CaptureBuilder
from .lines import id_problem, parse_line

_CHAT_OPERATIONS = ("chat", "text_completion", "generate_content")


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
