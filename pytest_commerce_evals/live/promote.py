"""A production conversation promoted to a regression case: the conversation's last turn becomes
the turn under test, what the earlier turns left behind becomes the case's injected state, and
what the agent did in production becomes proposed expectations, written beside the evidence, for
a person to review.

- `precondition`: the state the earlier turns left (products shown, the cart, memory written,
  the change queue), by the default mapping of the reference tools' events; a team maps its own
  with the hook `pytest_commerce_evals_promote_state`.
- `evidence`: what the graded turn did: its writes, its reads.
- `promoted_yaml`: the case file, with `skip: "promoted: review the expectations"` (the lint
  reports it until a person removes the skip), the failed live verdicts as its rubric, the IDs
  that are not fixture IDs listed for the author, and the conversation id kept only as a note.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ..cases.case import PROMOTED_SKIP, StagedChange, State
from ..events import CartUpdate, ChangeUpdate, ToolCall, ToolResult, Ui
from ..results import RubricVerdict
from .conversations import Conversation

__all__ = [
    "PROMOTED_SKIP",
    "Evidence",
    "evidence",
    "flagged_html_section",
    "is_read",
    "next_case_id",
    "precondition",
    "promote_command",
    "promoted_yaml",
    "write_promoted",
]


READS = {"search_products", "get_product_details", "get_order", "list_orders",
         "list_staged_changes", "load_skill", "present_suggestions"}  # fmt: skip
_READ_PREFIXES = ("get_", "list_", "search_", "find_", "lookup_", "read_", "check_", "show_")
_ID_KEYS = ("product_id", "order_id")


def is_read(tool: str) -> bool:
    """Whether a tool only reads (the reference tools' reads, or a read by its name's verb)."""
    return tool in READS or tool.startswith(_READ_PREFIXES)


# -- the precondition ----------------------------------------------------------------------------


def _product_ids(node: Any, out: list[str]) -> None:
    """Product IDs in a tool result: values under `product_id`/`product_ids`, and the `id` of a
    record that has a `title` or a `price` (a product as tools show one)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "product_id" and isinstance(value, str):
                out.append(value)
            elif key == "product_ids" and isinstance(value, list):
                out += [v for v in value if isinstance(v, str)]
            elif key == "id" and isinstance(value, str) and ("title" in node or "price" in node):
                out.append(value)
            else:
                _product_ids(value, out)
    elif isinstance(node, list):
        for item in node:
            _product_ids(item, out)


def precondition(conversation: Conversation, upto: int | None = None) -> State:
    """The state the turns before turn `upto` (default: the last) left, read from their events:
    the products tools showed (`seen_products`), the cart of the last cart update, the facts
    saved to memory (and not forgotten since) and the change queue of the last change update."""
    turns = conversation.events[: len(conversation.events) - 1 if upto is None else upto]
    seen: list[str] = []
    cart = None
    memory: list[str] = []
    changes = None
    for events in turns:
        calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
        for event in events:
            if isinstance(event, ToolResult) and event.status == "ok":
                _product_ids(event.result, seen)
                call = calls.get(event.call_id)
                fact = call.arguments.get("fact") if call is not None else None
                if call is not None and isinstance(fact, str):
                    fact = fact.strip()  # stored and matched as the reference backend does
                    if call.name == "save_memory" and fact not in memory:
                        memory.append(fact)
                    elif call.name == "forget_memory":
                        needle = fact.lower()
                        memory = [
                            m for m in memory if not (needle in m.lower() or m.lower() in needle)
                        ]
            elif isinstance(event, Ui):
                _product_ids(event.payload, seen)
            elif isinstance(event, CartUpdate):
                cart = [line.model_copy() for line in event.items]
            elif isinstance(event, ChangeUpdate):
                changes = [c for c in event.changes if c.status in ("staged", "approved")]
    return State(
        seen_products=list(dict.fromkeys(seen)),
        cart=cart or [],
        memory=memory,
        staged_changes=[StagedChange(**c.model_dump()) for c in changes or []],
    )


# -- the evidence ----------------------------------------------------------------------------


@dataclass
class Evidence:
    """What the graded turn did: each call with its outcome, split into writes and reads."""

    writes: list[tuple[ToolCall, str]] = field(default_factory=list)
    reads: list[tuple[ToolCall, str]] = field(default_factory=list)
    replied: str = ""


def evidence(conversation: Conversation) -> Evidence:
    """The calls and reply of the conversation's last turn."""
    events = conversation.events[-1] if conversation.events else []
    outcome = {e.call_id: e.status for e in events if isinstance(e, ToolResult)}
    found = Evidence()
    for event in events:
        if isinstance(event, ToolCall):
            pair = (event, outcome.get(event.call_id, "no result"))
            (found.reads if is_read(event.name) else found.writes).append(pair)
    found.replied = " ".join(
        getattr(e, "text", "").strip() for e in events if getattr(e, "type", "") == "text"
    ).strip()
    return found


# -- the case file -------------------------------------------------------------------------------


def next_case_id(folder: Path, behavior: str) -> str:
    """`<flow>-<nnn>-<behavior>`: the flow is the folder's name (lower-case, `promoted` when it
    cannot be one), the number the next one free among the folder's case files."""
    flow = re.sub(r"[^a-z0-9_]", "_", folder.name.lower()).strip("_")
    if not flow or not flow[0].isalpha():
        flow = "promoted"
    taken = {0}
    if folder.is_dir():
        for path in folder.glob("*.y*ml"):
            text = path.read_text(encoding="utf-8", errors="replace")
            taken |= {int(n) for n in re.findall(rf"\bid:\s*{re.escape(flow)}-(\d{{3}})-", text)}
    slug = re.sub(r"[^a-z0-9]+", "-", behavior.lower()).strip("-") or "conversation"
    return f"{flow}-{max(taken) + 1:03d}-{slug}"


def _flow(value: Any) -> str:
    """A value as one line of YAML flow style (a lone string as a JSON string: valid YAML)."""
    if not isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    text = yaml.safe_dump(
        value, default_flow_style=True, width=10_000, allow_unicode=True, sort_keys=False
    )
    return text.strip()


def _block(value: Any, indent: str) -> list[str]:
    text = yaml.safe_dump(
        value, default_flow_style=False, width=96, allow_unicode=True, sort_keys=False
    )
    return [indent + line for line in text.rstrip("\n").splitlines()]


def _comment(text: str, indent: str, width: int = 96) -> list[str]:
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(indent) + 2 + len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        lines.append(line)
    return [f"{indent}# {item}" for item in lines]


def _ids_in(state: State, proposed: Iterable[ToolCall]) -> list[str]:
    ids = list(state.seen_products) + [line.product_id for line in state.cart]
    ids += [c.product_id for c in state.staged_changes if c.product_id]
    for call in proposed:
        ids += [v for k, v in call.arguments.items() if k in _ID_KEYS and isinstance(v, str)]
    return list(dict.fromkeys(ids))


def promoted_yaml(
    conversation: Conversation,
    case_id: str,
    *,
    state: State,
    failed: Sequence[RubricVerdict] = (),
    dimensions: Sequence[str] = (),
    customer: Literal["turns", "user"] = "turns",
    known_ids: set[str] | None = None,
) -> str:
    """The case file of a promoted conversation (one case, as a YAML list), comments and all."""
    found = evidence(conversation)
    messages = conversation.user_messages
    earlier = len(messages) - 1
    out = _comment(
        f"Promoted from a live conversation ({conversation.path}:{conversation.line}). Review "
        "the expectations — each proposed key sits beside what the agent did in production — "
        "then remove the skip.",
        "",
    )
    unknown = _ids_in(state, (c for c, _ in found.writes))
    if known_ids is None:
        out += _comment(
            "No fixture index (pytest_commerce_evals_fixture_index): check each ID below is a "
            "fixture ID: " + (", ".join(unknown) or "none named"),
            "",
        )
    else:
        missing = [i for i in unknown if i not in known_ids]
        if missing:
            out += _comment(
                "IDs that are not fixture IDs (map each to a fixture, or the case cannot run): "
                + ", ".join(missing),
                "",
            )
    out += [f"- id: {case_id}", "  priority: high", "  difficulty: medium"]
    role = ["operator"] if conversation.role == "operator" else []
    out.append(f"  tags: {_flow(['promoted', *role])}")
    out.append(f"  skip: {_flow(PROMOTED_SKIP)}")
    shown = state.model_dump(mode="json", exclude_defaults=True)
    if shown:
        out.append("  state:")
        out += _comment(f"what the {earlier} earlier turn(s) left behind", "    ")
        out += _block(shown, "    ")
    last = messages[-1] if messages else ""
    if customer == "user":
        said = "; ".join(json.dumps(m, ensure_ascii=False) for m in messages[:-1]) or "nothing"
        brief = (
            "You are a customer of the store, chatting with its assistant. Earlier in this "
            f"conversation you said: {said}. Ask what your opening asks, answer what the "
            "assistant asks from what you know, and end the conversation once it has answered."
        )
        out += ["  user:", f"    instructions: {_flow(brief)}", f"    opening: {_flow(last)}"]
        out.append("    max_turns: 3")
    else:
        out.append(f"  turns: {_flow([last])}")
    expected_at = len(out)
    out.append("  expected:")
    if found.writes:
        for call, status in found.writes:
            out += _comment(
                f"in production the agent called {call.name} {_flow(call.arguments)} "
                f"({status}) in this turn; keep it below if it should not have",
                "    ",
            )
        out.append("    never_calls_with:")
        out += [
            f"      - {_flow({'tool': c.name, 'arguments': c.arguments})}" for c, _ in found.writes
        ]
    reads = list(dict.fromkeys(c.name for c, _ in found.reads if c.name != "present_suggestions"))
    if reads:
        out += _comment(
            "the reads it made in production; keep the one the answer needs (or name the read "
            "it should have made)",
            "    ",
        )
        out.append(f"    calls_one_of: {_flow(reads)}")
    if found.replied:
        out += _comment(f"it replied: {found.replied[:300]}", "    ")
    judged = [v for v in failed if v.outcome == "fail"]
    if judged or dimensions:
        out.append("    rubric:")
    for verdict in judged:
        out += _comment(f"the live judge: FAIL — {verdict.reasoning or 'no reasoning'}", "      ")
        out.append(f"      {verdict.dimension}: standard")
    if not judged and dimensions:
        out += _comment(
            "no live verdict failed (or none was judged): the live dimensions", "      "
        )
        out += [f"      {d}: standard" for d in dimensions]
    if not any(line.startswith("    ") and not line.lstrip().startswith("#")
               for line in out[expected_at + 1 :]):  # fmt: skip
        del out[expected_at:]  # nothing to expect: the key is left out
    note = (
        f"Promoted from live conversation {conversation.conversation_id}; {earlier} earlier "
        "turn(s) folded into state."
    )
    out.append(f"  notes: {_flow(note)}")
    return "\n".join(out) + "\n"


# -- the command -------------------------------------------------------------------------------


def promote_command(live_paths: Sequence[str], conversation_id: str, to: str) -> str:
    """The command that promotes one conversation of this capture into folder `to`."""
    lives = " ".join(shlex.quote(f"--commerce-live={p}") for p in live_paths)
    promote = shlex.quote(f"--commerce-promote={conversation_id}")
    return f"pytest {lives} {promote} {shlex.quote(f'--commerce-promote-to={to}')}"


def write_promoted(
    conversations: Sequence[Conversation],
    verdicts: dict[str, list[RubricVerdict]],
    folder: Path,
    *,
    dimensions: Sequence[str],
    customer: Literal["turns", "user"],
    known_ids: set[str] | None,
    state_of: Any,
) -> list[tuple[str, Path]]:
    """Write one case file per conversation into `folder` (made if missing); `state_of(c)` is
    the precondition of conversation `c`. Returns each conversation id with its file."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for conversation in conversations:
        failed = [v for v in verdicts.get(conversation.conversation_id, []) if v.outcome == "fail"]
        behavior = failed[0].dimension if failed else "conversation"
        case_id = next_case_id(folder, behavior)
        text = promoted_yaml(
            conversation,
            case_id,
            state=state_of(conversation),
            failed=failed,
            dimensions=dimensions,
            customer=customer,
            known_ids=known_ids,
        )
        path = folder / f"{case_id}.yaml"
        path.write_text(text, encoding="utf-8")
        written.append((conversation.conversation_id, path))
    return written


def flagged_html_section(flagged: Sequence[str], live_paths: Sequence[str], to: str) -> str:
    """The live HTML report's list of flagged conversations, each linked to its trial, with the
    command that promotes it."""
    from ..reports.html_page import case_anchor, e

    rows = "".join(
        f'<tr><td><a href="#{case_anchor(c)}">{e(c)}</a></td>'
        f"<td><code>{e(promote_command(live_paths, c, to))}</code></td></tr>"
        for c in flagged
    )
    return (
        f"<h2>Flagged conversations ({len(flagged)})</h2>"
        '<p class="note">a verdict failed: promote one to a case for review '
        "(docs/live.md, section 6)</p>"
        f"<table><tr><th>conversation</th><th>promote it</th></tr>{rows}</table>"
    )
