import io

import pytest
from pydantic import ValidationError

from pytest_commerce_evals.events import (
    CartLine,
    CartUpdate,
    Change,
    ChangeUpdate,
    Text,
    ToolCall,
    ToolResult,
    TurnEnd,
    Ui,
    coerce_event,
    dump_events,
    event_from_json,
    event_to_json,
    load_events,
)

EVENTS = [
    ToolCall(
        call_id="c1", name="search_products", arguments={"query": "trail", "max_price_minor": 12000}
    ),
    ToolResult(call_id="c1", name="search_products", status="ok", result=[{"id": "shoe-001"}]),
    ToolResult(
        call_id="c2", name="apply_changes", status="blocked", reason="approval: needs a human"
    ),
    ToolResult(call_id="c3", name="get_order", status="error", reason="no such order"),
    Ui(component="product_carousel", payload={"product_ids": ["shoe-001", "shoe-002"]}),
    CartUpdate(items=[CartLine(product_id="shoe-001", quantity=2, variant="42-wide")]),
    ChangeUpdate(
        changes=[
            Change(
                change_id="chg-1",
                kind="price_update",
                product_id="shoe-001",
                fields={"price_minor": 9900},
                status="staged",
            )
        ]
    ),
    Text(text="Two trail shoes: ünïcode\nand a newline"),
    TurnEnd(turn=0),
]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: e.type)
def test_each_event_round_trips_through_one_json_line(event):
    line = event_to_json(event)
    assert "\n" not in line
    assert event_from_json(line) == event


def test_jsonl_stream_round_trips():
    buf = io.StringIO()
    dump_events(EVENTS, buf)
    assert buf.getvalue().count("\n") == len(EVENTS)
    buf.seek(0)
    assert list(load_events(buf)) == EVENTS


def test_unknown_type_and_bad_status_are_rejected():
    with pytest.raises(ValidationError, match="does not match any of the expected tags"):
        event_from_json('{"type": "telepathy"}')
    with pytest.raises(ValidationError, match="'ok', 'error' or 'blocked'"):
        event_from_json('{"type": "tool_result", "call_id": "x", "status": "maybe"}')


def test_agents_may_emit_mappings():
    assert coerce_event({"type": "text", "text": "hi"}) == Text(text="hi")
    with pytest.raises(TypeError, match="an agent must yield events"):
        coerce_event("hi")
