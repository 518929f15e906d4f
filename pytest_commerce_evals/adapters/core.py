"""What every converter shares, so a tool failure, a blocked call or a presentation tool reads
the same whichever framework produced it.

    options = ConvertOptions(classify=my_gates)          # optional
    builder = EventBuilder(options)
    builder.call("c1", "search_products", '{"query": "trail shoes"}')
    builder.result("c1", '{"products": []}')              # ok, unless the classifier says blocked
    builder.result("c2", "boom", error="ValueError: boom") # a failed or retried tool: status error
    builder.text("Here are two options.")
    events = builder.finish()

Conventions:
- a tool call's arguments may be a JSON string or a mapping; they become a dict (a string that
  is not a JSON object is kept as `{"_raw": text}`, so nothing is lost and nothing is guessed);
- a tool output that is a JSON string is parsed, anything else is kept as it is;
- a tool's failure (an exception, a framework's retry, an error status) is
  `ToolResult(status="error", reason=...)`; the classifier may mark a successful output as
  `blocked` with its gate (`"approval: ..."`), so the gate graders work on framework agents;
- a call to a presentation tool (`ConvertOptions.ui_tools`, by default `present_suggestions`
  with its `component` argument) is also a `Ui` event, emitted once its result is ok (or at the
  end of the turn when the messages hold no result for it);
- a model response the messages hold with its usage (tokens, model) is reported to the trial
  running here as the agent's call (`report_usage`, `usage.record_call(source="agent")`), once
  per response however often the trial converts it, and only when the conversion succeeds; a
  response whose framework reports no usage is not recorded (never as 0 tokens). That
  reporting lives in `usage_report`; `report_usage` is answered here too.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from ..agent import AgentSession
from ..errors import ConversionError
from ..events import Event, Text, ToolCall, ToolResult, Ui
from .usage_report import _PENDING, _commit, _Report, report_usage

__all__ = [
    "python_literal",
    "Classifier",
    "ConversionError",
    "ConvertOptions",
    "EventBuilder",
    "FrameworkAgent",
    "PENDING_APPROVAL",
    "TurnMessages",
    "converter",
    "default_ui_tools",
    "framework_agent",
    "parse_arguments",
    "parse_output",
    "report_usage",
]

MAX_LOCATE_ITEMS = 2_000
"""Items a failed conversion is read again over, one prefix at a time, to name the first one
it cannot read; past this the error names no item."""


def converter(fn: Callable[..., list[Event]]) -> Callable[..., list[Event]]:
    """Make `fn(messages, ...)` raise `ConversionError` naming itself, the first item it cannot
    read and what went wrong, instead of whatever a malformed item made it raise."""

    @functools.wraps(fn)
    def convert(messages: Iterable[Any], *args: Any, **kwargs: Any) -> list[Event]:
        if not isinstance(messages, list | tuple):
            try:
                messages = list(messages)
            except TypeError:
                raise ConversionError(
                    f"{fn.__name__} takes a list of messages; found {_short(messages)}"
                ) from None
        outer = _PENDING.get()
        reports: list[_Report] = [] if outer is None else outer
        token = _PENDING.set(reports) if outer is None else None
        try:
            events = fn(messages, *args, **kwargs)
        except ConversionError:
            raise
        except (ValueError, TypeError) as exc:
            if str(exc).startswith(f"{fn.__name__}:"):  # its own refusal, naming the item
                raise ConversionError(str(exc)) from exc
            raise _unreadable(fn, messages, args, kwargs, exc) from exc
        except Exception as exc:
            raise _unreadable(fn, messages, args, kwargs, exc) from exc
        finally:
            if token is not None:
                _PENDING.reset(token)
        if outer is None:  # the usage is reported once the whole conversion has succeeded
            _commit(reports)
        return events

    return convert


def _unreadable(
    fn: Callable[..., Any], messages: Any, args: Any, kwargs: Any, exc: BaseException
) -> ConversionError:
    where = _first_unreadable(fn, messages, args, kwargs)
    return ConversionError(
        f"{fn.__name__} could not read {where}: {type(exc).__name__}: {str(exc)[:300]}; it "
        "takes the framework's messages as the framework returns them (docs/adapters.md)"
    )


def _short(value: Any, most: int = 120) -> str:
    try:
        text = repr(value)
    except Exception:  # a repr of its own that fails
        text = f"<{type(value).__name__}>"
    return text if len(text) <= most else text[: most - 3] + "..."


def _first_unreadable(fn: Callable[..., Any], messages: Any, args: Any, kwargs: Any) -> str:
    """`item N (repr)` for the first item whose prefix the converter fails on."""
    if len(messages) > MAX_LOCATE_ITEMS:
        return f"the turn's {len(messages)} items"
    for n in range(1, len(messages) + 1):
        try:
            fn(messages[:n], *args, **kwargs)
        except Exception:
            return f"item {n - 1} ({_short(messages[n - 1])})"
    return f"the turn's {len(messages)} items"


ToolStatus = Literal["ok", "error", "blocked"]  # ToolResult.status

Classifier = Callable[[str, Any], "tuple[str, str | None] | None"]
"""`classify(tool_name, output)`: None for an ordinary result, else `(status, reason)` with
status `"blocked"` (reason `"<gate>: why"`, e.g. `"approval: needs a person"`) or `"error"`."""

UiRule = Callable[[dict[str, Any]], "Ui | None"]


def _present_suggestions(arguments: dict[str, Any]) -> Ui | None:
    component = arguments.get("component")
    if not isinstance(component, str) or not component:
        return None
    payload = {k: v for k, v in arguments.items() if k != "component"}
    return Ui(component=component, payload=payload)


def default_ui_tools() -> dict[str, UiRule]:
    """The convention: `present_suggestions(component=..., ...)` shows `component`, with the
    other arguments as its payload."""
    return {"present_suggestions": _present_suggestions}


@dataclass(frozen=True)
class ConvertOptions:
    """How tool outputs and presentation tools read. `ui_tools` maps a tool name to a rule
    building the `Ui` event from the call's arguments, or to a component name (the arguments
    are the payload); `classify` marks outputs as blocked or failed."""

    ui_tools: Mapping[str, UiRule | str] = field(default_factory=default_ui_tools)
    classify: Classifier | None = None

    def ui_for(self, name: str, arguments: dict[str, Any]) -> Ui | None:
        rule = self.ui_tools.get(name)
        if rule is None:
            return None
        if isinstance(rule, str):
            return Ui(component=rule, payload=dict(arguments))
        return rule(arguments)


def parse_arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments as a dict: a mapping as it is, a JSON object string parsed,
    anything else kept under `_raw`."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
            return {"_raw": raw}
        return value if isinstance(value, dict) else {"_raw": raw}
    return {"_raw": raw}


def parse_output(raw: Any) -> Any:
    """A tool's output: a JSON string parsed, anything else as it is."""
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's limit
            return raw
    return raw


PENDING_APPROVAL = "approval: {name} waits for a person to approve it"
"""The reason of a call that is waiting for a person's approval when the turn ends, in every
converter: such a call is `blocked` with the gate `approval`."""


class EventBuilder:
    """Collects one turn's events in order; every converter writes through one, so call ids
    read one way whatever the framework:

    - a call without an id (None or "") is kept, with the id `#<n>` (its place among the turn's
      calls, from 1): it is never dropped and never merged with another call;
    - a call whose id an earlier call of the turn already has is a call of its own, with the id
      `<id>#<k>` (the k-th call with that id), as servers that number calls per response give;
    - a result answers the earliest call with its id that has no result yet; a result for an
      id no call of the turn has is the result of an earlier turn's call when it names its tool
      (a call run after an approval given in a later turn), and is refused when it does not; a
      result without an id, or a second result for one call, is refused: `ValueError`, which
      the converter reports naming itself and the item;
    - a call with no result when the turn ends stays a call without a result (it was made; no
      tool output came back), unless the converter knows it waits for an approval: then it is
      `blocked` with the reason `PENDING_APPROVAL`.
    """

    def __init__(self, options: ConvertOptions | None = None) -> None:
        self.options = options or ConvertOptions()
        self.events: list[Event] = []
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}  # by the id the event carries
        self._open: dict[str, list[str]] = {}  # given id -> ids of its calls without a result
        self._uses: dict[str, int] = {}  # given id -> calls made with it
        self._answered: set[str] = set()
        self._waiting: dict[str, int] = {}  # call id -> index of its pending-approval result

    @staticmethod
    def _given(call_id: Any) -> str | None:
        if call_id is None or isinstance(call_id, bool):
            return None
        text = str(call_id)
        return text if text.strip() else None

    def call(self, call_id: Any, name: Any, arguments: Any = None) -> ToolCall:
        """A tool call; the event's id follows the rules above (`ToolCall.call_id`)."""
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"a tool call without a tool name (found {_short(name, 40)})")
        given = self._given(call_id)
        if given is None:
            given = f"#{len(self._calls) + 1}"
        uses = self._uses.get(given, 0) + 1
        self._uses[given] = uses
        own = given if uses == 1 else f"{given}#{uses}"
        while own in self._calls:  # a given id that looks like one made here
            uses += 1
            own = f"{given}#{uses}"
        event = ToolCall(call_id=own, name=name, arguments=parse_arguments(arguments))
        self._calls[own] = (name, event.arguments)
        self._open.setdefault(given, []).append(own)
        self.events.append(event)
        return event

    def _take(self, given: str) -> str | None:
        """The id of the call a result with id `given` answers, no longer open; None if none."""
        waiting = self._open.get(given)
        if waiting:
            return waiting.pop(0)
        for owns in self._open.values():  # an id given here (`#2`, `c1#2`)
            if given in owns:
                owns.remove(given)
                return given
        return None

    def next_open(self, call_id: Any) -> tuple[str, str] | None:
        """(id, tool name) of the call a result with this id would answer; None if none."""
        given = self._given(call_id)
        if given is None:
            return None
        waiting = self._open.get(given)
        if waiting:
            return waiting[0], self._calls[waiting[0]][0]
        for owns in self._open.values():
            if given in owns:
                return given, self._calls[given][0]
        return None

    def open_named(self, name: str) -> str | None:
        """The id of the earliest call of tool `name` without a result; None if none."""
        for own, (called, _) in self._calls.items():
            if (
                called == name
                and own not in self._answered
                and any(own in owns for owns in self._open.values())
            ):
                return own
        return None

    def is_open(self, call_id: Any) -> bool:
        """Whether a call with this id is waiting for its result."""
        return self.next_open(call_id) is not None

    def was_called(self, call_id: Any) -> bool:
        """Whether any call of the turn was given this id."""
        given = self._given(call_id)
        return given is not None and given in self._uses

    def result(
        self,
        call_id: Any,
        output: Any = None,
        *,
        name: str | None = None,
        error: str | None = None,
        blocked: str | None = None,
    ) -> ToolResult:
        """The result of call `call_id`; `error` (the failure's text) makes it a failed call,
        `blocked` (the gate and why, `"approval: ..."`) a call a gate stopped."""
        given = self._given(call_id)
        if given is None:
            raise ValueError(
                f"a tool result without a call id (found {_short(call_id, 40)}): it answers no call"
            )
        own = self._take(given)
        known: tuple[str, dict[str, Any]]  # the call's tool name and arguments
        if own is None:
            if given in self._uses:
                raise ValueError(
                    f"a second result for call {given!r}, which already has one: it answers no call"
                )
            if not isinstance(name, str) or not name.strip():
                raise ValueError(
                    f"a tool result for call {given!r}, which no call of the turn has, naming no "
                    "tool: it answers no call (pass the turn's messages from the call on)"
                )
            # the result of a call made in an earlier turn (run after an approval), named
            self._uses[given] = 1
            own, known = given, (name, {})
        else:
            known = self._calls[own]
        name = name or known[0]
        value = parse_output(output)
        status: ToolStatus
        reason: str | None
        status, reason = ("error", error) if error is not None else ("ok", None)
        if error is None and blocked is not None:
            status, reason = "blocked", blocked
        if status == "ok" and self.options.classify is not None and name is not None:
            verdict = self.options.classify(name, value)
            if verdict is not None:
                given_status, reason = verdict
                # a classifier's status is checked against ToolResult's choices when it is built
                status = cast(ToolStatus, given_status)
        event = ToolResult(call_id=own, name=name, status=status, reason=reason, result=value)
        self.events.append(event)
        self._answered.add(own)
        if status == "ok" and own in self._calls:
            self._ui(*known)
        return event

    def wait(self, call_id: Any) -> ToolResult | None:
        """The earliest unanswered call with this id waits for a person's approval: a `blocked`
        result with the reason `PENDING_APPROVAL`, replaced if its real result comes later in
        the turn (approved and run, or refused). None when no call with this id is open, or it
        already waits."""
        found = self.next_open(call_id)
        if found is None or found[0] in self._waiting:
            return None
        return self._wait(found[0])

    def wait_all(self) -> list[ToolResult]:
        """Every call still without a result waits for an approval (a run stopped for one)."""
        open_calls = [own for owns in self._open.values() for own in owns]
        return [self._wait(own) for own in open_calls if own not in self._waiting]

    def _wait(self, own: str) -> ToolResult:
        name = self._calls[own][0]
        event = ToolResult(
            call_id=own, name=name, status="blocked", reason=PENDING_APPROVAL.format(name=name)
        )
        self._waiting[own] = len(self.events)
        self.events.append(event)
        return event

    def text(self, text: str | None) -> None:
        if text:
            self.events.append(Text(text=text))

    def add(self, event: Event) -> None:
        self.events.append(event)

    def _ui(self, name: str, arguments: dict[str, Any]) -> None:
        ui = self.options.ui_for(name, arguments)
        if ui is not None:
            self.events.append(ui)

    def finish(self) -> list[Event]:
        """The events; a presentation call the messages hold no result for shows its `Ui`; a
        call waiting for approval whose decision came later shows only its final result."""
        decided = {index for own, index in self._waiting.items() if own in self._answered}
        if decided:
            self.events = [e for i, e in enumerate(self.events) if i not in decided]
            self._waiting = {o: i for o, i in self._waiting.items() if o not in self._answered}
            self._reindex()
        for own, (name, arguments) in self._calls.items():
            if own not in self._answered and own not in self._waiting:
                self._ui(name, arguments)
                self._answered.add(own)
        return list(self.events)

    def _reindex(self) -> None:
        positions = {
            e.call_id: i
            for i, e in enumerate(self.events)
            if isinstance(e, ToolResult) and e.status == "blocked"
        }
        self._waiting = {o: positions[o] for o in self._waiting if o in positions}


Converter = Callable[..., list[Event]]


@dataclass(frozen=True)
class TurnMessages:
    """What a framework agent's `run` may return instead of the bare messages: the messages and
    what else its converter reads, e.g. `TurnMessages(result.new_messages(),
    output=result.output)` for pydantic-ai or `TurnMessages(new, interrupts=out.get(
    "__interrupt__"))` for LangGraph (so a call waiting for an approval reads `blocked`)."""

    messages: Any
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __init__(self, messages: Any, **extra: Any) -> None:
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "extra", dict(extra))


class FrameworkAgent:
    """An agent for the `make_agent` hook made of `run(session, message)`, which runs the team's
    own agent for one turn and returns the framework's new messages (sync or async), and the
    converter for that framework's messages."""

    def __init__(
        self,
        run: Callable[[AgentSession, str], Any],
        convert: Converter,
        options: ConvertOptions | None = None,
    ) -> None:
        self._run = run
        self._convert = convert
        self.options = options or ConvertOptions()

    def _events(self, out: Any) -> list[Event]:
        if isinstance(out, TurnMessages):
            return self._convert(list(out.messages), options=self.options, **out.extra)
        return self._convert(list(out), options=self.options)

    def run_turn(self, session: AgentSession, message: str) -> Any:
        out = self._run(session, message)
        if inspect.isawaitable(out):

            async def converted() -> list[Event]:
                return self._events(await out)

            return converted()
        return self._events(out)


def framework_agent(
    run: Callable[[AgentSession, str], Any],
    convert: Converter,
    *,
    options: ConvertOptions | None = None,
) -> FrameworkAgent:
    """`framework_agent(run, events_from_pydantic_ai)`: the agent the `make_agent` hook returns.
    `run(session, message)` returns (or, async, resolves to) the messages the framework added in
    this turn, or a `TurnMessages` holding them and what else the converter reads;
    `session.scratch` is the place to keep the framework's history between turns."""
    return FrameworkAgent(run, convert, options)


def python_literal(text: Any) -> Any:
    """`str(output)` of a tool that returned a dict or a list (how the SDK writes it into the
    model's input), read back as that value; any other text as it is. JSON is left to
    `parse_output`."""
    if not isinstance(text, str) or not text or text[0] not in "{[":
        return text
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return text
    return value if isinstance(value, (dict, list)) else text
