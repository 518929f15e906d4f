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
  end of the turn when the messages hold no result for it).
"""

from __future__ import annotations

import functools
import inspect
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..agent import AgentSession
from ..errors import ConfigurationError
from ..events import Event, Text, ToolCall, ToolResult, Ui

__all__ = [
    "Classifier",
    "ConversionError",
    "ConvertOptions",
    "EventBuilder",
    "FrameworkAgent",
    "converter",
    "default_ui_tools",
    "framework_agent",
    "parse_arguments",
    "parse_output",
]

MAX_LOCATE_ITEMS = 2_000
"""Items a failed conversion is read again over, one prefix at a time, to name the first one
it cannot read; past this the error names no item."""


class ConversionError(ConfigurationError, ValueError):
    """A converter could not read the messages it was given: the glue's problem (they are not
    the framework's messages as the framework returns them), never the agent's failure; the
    trial ends as a glue error naming the converter and the item."""


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
        try:
            return fn(messages, *args, **kwargs)
        except ConversionError:
            raise
        except (ValueError, TypeError) as exc:
            if str(exc).startswith(f"{fn.__name__}:"):  # its own refusal, naming the item
                raise ConversionError(str(exc)) from exc
            raise _unreadable(fn, messages, args, kwargs, exc) from exc
        except Exception as exc:
            raise _unreadable(fn, messages, args, kwargs, exc) from exc

    return convert


def _unreadable(
    fn: Callable[..., Any], messages: Any, args: Any, kwargs: Any, exc: BaseException
) -> ConversionError:
    where = _first_unreadable(fn, messages, args, kwargs)
    return ConversionError(
        f"{fn.__name__} could not read {where}: {type(exc).__name__}: {str(exc)[:300]}; it "
        "takes the framework's messages as the framework returns them (docs/plugging-in.md)"
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


class EventBuilder:
    """Collects one turn's events in order; every converter writes through one."""

    def __init__(self, options: ConvertOptions | None = None) -> None:
        self.options = options or ConvertOptions()
        self.events: list[Event] = []
        self._calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self._answered: set[str] = set()

    def call(self, call_id: str, name: str, arguments: Any = None) -> ToolCall:
        event = ToolCall(call_id=str(call_id), name=name, arguments=parse_arguments(arguments))
        self._calls[event.call_id] = (name, event.arguments)
        self.events.append(event)
        return event

    def result(
        self,
        call_id: str,
        output: Any = None,
        *,
        name: str | None = None,
        error: str | None = None,
        blocked: str | None = None,
    ) -> ToolResult:
        """The result of call `call_id`; `error` (the failure's text) makes it a failed call,
        `blocked` (the gate and why, `"approval: ..."`) a call a gate stopped."""
        call_id = str(call_id)
        known = self._calls.get(call_id)
        name = name or (known[0] if known else None)
        value = parse_output(output)
        status, reason = ("error", error) if error is not None else ("ok", None)
        if error is None and blocked is not None:
            status, reason = "blocked", blocked
        if status == "ok" and self.options.classify is not None and name is not None:
            verdict = self.options.classify(name, value)
            if verdict is not None:
                status, reason = verdict
        event = ToolResult(call_id=call_id, name=name, status=status, reason=reason, result=value)
        self.events.append(event)
        self._answered.add(call_id)
        if status == "ok" and known is not None:
            self._ui(*known)
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
        """The events; a presentation call the messages hold no result for shows its `Ui`."""
        for call_id, (name, arguments) in self._calls.items():
            if call_id not in self._answered:
                self._ui(name, arguments)
        self._answered.update(self._calls)
        return self.events


Converter = Callable[..., list[Event]]


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

    def _events(self, messages: Iterable[Any]) -> list[Event]:
        return self._convert(list(messages), options=self.options)

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
    this turn; `session.scratch` is the place to keep the framework's history between turns."""
    return FrameworkAgent(run, convert, options)
