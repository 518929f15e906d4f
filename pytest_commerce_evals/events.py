"""The event stream an agent emits for each turn, one JSON object per event.

Code graders read these events, the judge quotes them, the run store keeps them and captured
production traffic uses the same format (JSONL), so every part of the plugin sees exactly what
the agent did.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import IO, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "CartLine",
    "CartUpdate",
    "Change",
    "ChangeUpdate",
    "Event",
    "Text",
    "ToolCall",
    "ToolResult",
    "TurnEnd",
    "Ui",
    "dump_events",
    "event_from_json",
    "event_to_json",
    "load_events",
]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CartLine(_Strict):
    """One line of a cart: a product (optionally one variant of it) and a quantity."""

    product_id: str
    quantity: int = Field(default=1, ge=1)
    variant: str | None = None


ChangeStatus = Literal["staged", "approved", "applied", "rejected"]


class Change(_Strict):
    """A catalog change proposed by the operator assistant; applying it needs a human approval."""

    change_id: str | None = None
    kind: str
    product_id: str | None = None
    fields: dict[str, Any] = Field(default_factory=dict)
    status: ChangeStatus = "staged"


class ToolCall(_Strict):
    type: Literal["tool_call"] = "tool_call"
    call_id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(_Strict):
    type: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str | None = None
    status: Literal["ok", "error", "blocked"] = "ok"
    reason: str | None = None
    result: Any = None


class Ui(_Strict):
    """A component shown to the user; the payload carries the product, order or change IDs shown."""

    type: Literal["ui"] = "ui"
    component: str
    payload: dict[str, Any] = Field(default_factory=dict)


class CartUpdate(_Strict):
    type: Literal["cart_update"] = "cart_update"
    items: list[CartLine] = Field(default_factory=list)


class ChangeUpdate(_Strict):
    type: Literal["change_update"] = "change_update"
    changes: list[Change] = Field(default_factory=list)


class Text(_Strict):
    type: Literal["text"] = "text"
    text: str


class TurnEnd(_Strict):
    type: Literal["turn_end"] = "turn_end"
    turn: int | None = None


Event = Annotated[
    ToolCall | ToolResult | Ui | CartUpdate | ChangeUpdate | Text | TurnEnd,
    Field(discriminator="type"),
]

_EVENT = TypeAdapter(Event)
EVENT_TYPES = ("tool_call", "tool_result", "ui", "cart_update", "change_update", "text", "turn_end")


def event_to_json(event: BaseModel) -> str:
    """One event as one line of JSON (no newline inside)."""
    return json.dumps(event.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)


def event_from_json(line: str | bytes | dict[str, Any]) -> Event:
    """Parse one event from a JSON line or an already-decoded mapping."""
    if isinstance(line, dict):
        return _EVENT.validate_python(line)
    return _EVENT.validate_json(line)


def coerce_event(obj: Any) -> Event:
    """Accept an event model or a plain mapping, as agents written by hand tend to emit both."""
    if isinstance(obj, ToolCall | ToolResult | Ui | CartUpdate | ChangeUpdate | Text | TurnEnd):
        return obj
    if isinstance(obj, dict):
        return _EVENT.validate_python(obj)
    raise TypeError(
        f"an agent must yield events (ToolCall, ToolResult, Ui, CartUpdate, ChangeUpdate, Text, "
        f"TurnEnd) or mappings with a 'type' key; got {type(obj).__name__}: {obj!r:.80}"
    )


def dump_events(events: Iterable[BaseModel], fp: IO[str]) -> None:
    for event in events:
        fp.write(event_to_json(event))
        fp.write("\n")


def load_events(fp: IO[str]) -> Iterator[Event]:
    for line in fp:
        if line.strip():
            yield event_from_json(line)
