"""Builds captured traffic the way production does: the reference agent, driven by a scripted
FakeClient over the reference backend, its turns written through `CaptureWriter`.

Shared by tests/test_live.py and benchmarks/bench_live.py.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_commerce_evals.agent import AgentSession
from pytest_commerce_evals.cases.case import Case
from pytest_commerce_evals.live.capture import CaptureWriter
from pytest_commerce_evals.live.redaction import Redactor
from pytest_commerce_evals.reference import ReferenceAgent, ReferenceBackend
from pytest_commerce_evals.testing.fake import FakeClient, text_reply, tool_reply

EMAIL = "jane.doe@example.com"
PHONE = "+1 415-555-0134"
CARD = "4111 1111 1111 1111"

# (user message, search query, component) per turn; the first conversation carries identifiers
SCRIPTS: list[list[tuple[str, str, str]]] = [
    [
        (
            f"Trail running shoes under $150 please, and email me at {EMAIL}",
            "trail running shoes",
            "product_carousel",
        ),
        (
            f"Which is lighter? Call me on {PHONE}; my card is {CARD}",
            "trail running shoes",
            "comparison_table",
        ),
    ],
    [("I need an espresso machine", "espresso machine", "product_carousel")],
    [("A laptop backpack, vegan leather", "vegan leather laptop backpack", "product_card")],
    [
        ("chef knife", "chef knife", "product_carousel"),
        ("show me the first one", "chef knife", "product_card"),
    ],
]

START = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)


def _model(request: dict[str, Any]) -> Any:
    """A scripted model: search for the user's need, then present what the search returned."""
    messages = request["messages"]
    last = messages[-1]
    if last["role"] == "user":
        query, component = _PLAN[last["content"]]
        return tool_reply("search_products", query=query)
    if last["role"] == "tool":
        found = json.loads(last["content"])
        items = found.get("results") or found.get("products") or found.get("items") or []
        ids = [i.get("product_id") or i.get("id") for i in items if isinstance(i, dict)]
        ids = [i for i in ids if i]
        user = next(m["content"] for m in reversed(messages) if m["role"] == "user")
        _, component = _PLAN[user]
        if not ids:
            return text_reply("I found nothing that fits; could you say more?")
        if component == "product_card":
            ids = ids[:1]
        elif component == "comparison_table":
            ids = ids[:2] if len(ids) >= 2 else ids
        else:
            ids = ids[:3]
        if component == "comparison_table" and len(ids) < 2:
            component = "product_card"
        return tool_reply(
            "present_suggestions",
            component=component,
            product_ids=ids,
            message="Here is what fits.",
        )
    return text_reply("Anything else?")


_PLAN = {msg: (query, component) for script in SCRIPTS for msg, query, component in script}


def run_conversation(script: list[tuple[str, str, str]]) -> list[tuple[str, list[Any]]]:
    """Each turn's (user message, events) from the reference agent on a scripted model."""
    backend = ReferenceBackend.fresh()
    case = Case(id="live-001-capture", priority="low", difficulty="easy", turns=["-"])
    session = AgentSession(case=case, backend=backend, role="customer")
    agent = ReferenceAgent(FakeClient(_model), "scripted", retry_wait_s=0)
    out = []
    for i, (message, _, _) in enumerate(script):
        session.turn = i
        out.append((message, agent.run_turn(session, message)))
    return out


_TRANSCRIPTS: list[list[tuple[str, list[Any]]]] | None = None


def transcripts() -> list[list[tuple[str, list[Any]]]]:
    """The reference agent's transcripts of SCRIPTS (computed once per process)."""
    global _TRANSCRIPTS
    if _TRANSCRIPTS is None:
        _TRANSCRIPTS = [run_conversation(s) for s in SCRIPTS]
    return _TRANSCRIPTS


def write_traffic(
    path: Path,
    ids: list[str],
    *,
    redactor: Redactor | None = None,
    start: datetime = START,
) -> Path:
    """Capture one conversation per id, cycling through the reference transcripts."""
    convs = transcripts()
    with CaptureWriter(path, redactor=redactor) as writer:
        for n, cid in enumerate(ids):
            for t, (message, events) in enumerate(convs[n % len(convs)], 1):
                writer.append_turn(
                    cid,
                    "customer",
                    message,
                    events,
                    timestamp=start + timedelta(seconds=10 * n + t),
                )
    return path
