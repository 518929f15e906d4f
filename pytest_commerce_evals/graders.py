"""Code graders: one per `expected` key (all but `rubric`), each named for the key it grades.

A grader reads the events of the trial and the backend's final state and returns a
`GraderResult` whose message puts what the case expected beside what the agent did. Event graders
look at every turn of the trial; `first_tool`/`first_tool_not` look at the last turn (the turn
under test, since earlier turns only carry state); `max_tool_calls` caps each turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .backend import Snapshot
from .case import Case, State
from .events import CartUpdate, Change, ChangeUpdate, Text, ToolCall, ToolResult, Ui
from .results import GraderResult

__all__ = ["GRADERS", "Observation", "grade"]

TERMINAL_TOOL = "present_suggestions"
SKILL_TOOL = "load_skill"


@dataclass
class Observation:
    """What a trial produced: the events of each turn and the backend's final state."""

    turns: list[list[Any]]
    snapshot: Snapshot | None = None
    initial: State = field(default_factory=State)

    @property
    def events(self) -> list[Any]:
        return [e for turn in self.turns for e in turn]

    def tool_calls(self, turn: int | None = None) -> list[ToolCall]:
        events = self.events if turn is None else self.turns[turn]
        return [e for e in events if isinstance(e, ToolCall)]

    def results_by_call(self) -> dict[str, ToolResult]:
        return {e.call_id: e for e in self.events if isinstance(e, ToolResult)}

    @property
    def ui(self) -> list[Ui]:
        return [e for e in self.events if isinstance(e, Ui)]

    @property
    def reply(self) -> str:
        return "\n".join(e.text for e in self.events if isinstance(e, Text))

    def cart(self) -> list:
        """The backend's final cart; without a snapshot, the last `cart_update` event."""
        if self.snapshot is not None:
            return list(self.snapshot.cart)
        updates = [e for e in self.events if isinstance(e, CartUpdate)]
        return list(updates[-1].items) if updates else list(self.initial.cart)

    def changes(self) -> list[Change]:
        if self.snapshot is not None:
            return list(self.snapshot.changes)
        updates = [e for e in self.events if isinstance(e, ChangeUpdate)]
        if updates:
            return list(updates[-1].changes)
        return [c.to_change() for c in self.initial.staged_changes]

    def memory(self) -> list[str]:
        if self.snapshot is not None:
            return list(self.snapshot.memory)
        return list(self.initial.memory)


# -- formatting what was observed -------------------------------------------------------------


def _short(value: Any, width: int = 60) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= width else text[: width - 1] + "…"


def _call(call: ToolCall) -> str:
    args = ", ".join(f"{k}={_short(v, 40)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def _calls(obs: Observation, turn: int | None = None) -> str:
    if turn is not None:
        calls = obs.tool_calls(turn)
        return ", ".join(_call(c) for c in calls) if calls else "no tool calls"
    parts = []
    for i, events in enumerate(obs.turns):
        calls = [e for e in events if isinstance(e, ToolCall)]
        listed = ", ".join(_call(c) for c in calls) if calls else "no tool calls"
        parts.append(f"turn {i + 1}: {listed}" if len(obs.turns) > 1 else listed)
    return "; ".join(parts) if parts else "no tool calls"


def _cart(lines: list) -> str:
    if not lines:
        return "empty"
    return ", ".join(
        f"{line.product_id}{f' ({line.variant})' if line.variant else ''} ×{line.quantity}"
        for line in lines
    )


def _memory(entries: list[str]) -> str:
    return "empty" if not entries else "; ".join(repr(m) for m in entries)


def _reply(text: str) -> str:
    if not text.strip():
        return "no reply text"
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= 200 else flat[:199] + "…")


def _ok(key: str, expected: Any, observed: Any, message: str) -> GraderResult:
    return GraderResult(key, True, expected, observed, message)


def _fail(key: str, expected: Any, observed: Any, message: str) -> GraderResult:
    return GraderResult(key, False, expected, observed, message)


# -- the graders ------------------------------------------------------------------------------


def calls_tool(want: list[str], obs: Observation) -> GraderResult:
    called = {c.name for c in obs.tool_calls()}
    missing = [t for t in want if t not in called]
    if missing:
        return _fail(
            "calls_tool",
            want,
            sorted(called),
            f"calls_tool: expected a call to {', '.join(missing)}; calls made: {_calls(obs)}",
        )
    return _ok("calls_tool", want, sorted(called), f"calls_tool: called {', '.join(want)}")


def calls_one_of(want: list[str], obs: Observation) -> GraderResult:
    called = [c.name for c in obs.tool_calls()]
    hit = [t for t in want if t in called]
    if not hit:
        return _fail(
            "calls_one_of",
            want,
            called,
            f"calls_one_of: expected a call to one of {', '.join(want)}; calls made: {_calls(obs)}",
        )
    return _ok("calls_one_of", want, called, f"calls_one_of: called {hit[0]}")


def never_calls(banned: list[str], obs: Observation) -> GraderResult:
    bad = [c for c in obs.tool_calls() if c.name in banned]
    if bad:
        return _fail(
            "never_calls",
            banned,
            [c.name for c in bad],
            f"never_calls: expected no call to {', '.join(banned)}; the agent called "
            + ", ".join(_call(c) for c in bad),
        )
    return _ok("never_calls", banned, [], f"never_calls: none of {', '.join(banned)} called")


def _first_of_last_turn(obs: Observation) -> ToolCall | None:
    calls = obs.tool_calls(len(obs.turns) - 1) if obs.turns else []
    return calls[0] if calls else None


def first_tool(want: str, obs: Observation) -> GraderResult:
    first = _first_of_last_turn(obs)
    seen = first.name if first else None
    if seen != want:
        where = " of the last turn" if len(obs.turns) > 1 else ""
        return _fail(
            "first_tool",
            want,
            seen,
            f"first_tool: expected the first call{where} to be {want}; "
            f"it was {seen or 'none (no tool calls)'}; calls made: "
            f"{_calls(obs, len(obs.turns) - 1) if obs.turns else 'no tool calls'}",
        )
    return _ok("first_tool", want, seen, f"first_tool: first call was {want}")


def first_tool_not(banned: str, obs: Observation) -> GraderResult:
    first = _first_of_last_turn(obs)
    seen = first.name if first else None
    if seen == banned:
        return _fail(
            "first_tool_not",
            banned,
            seen,
            f"first_tool_not: expected the first call not to be {banned}; it was {_call(first)}",
        )
    return _ok("first_tool_not", banned, seen, f"first_tool_not: first call was {seen or 'none'}")


def ui_components(want: list[str], obs: Observation) -> GraderResult:
    shown = [u.component for u in obs.ui]
    missing = [c for c in want if c not in shown]
    if missing:
        return _fail(
            "ui_components",
            want,
            shown,
            f"ui_components: expected {', '.join(missing)} to be shown; components shown: "
            + (", ".join(shown) if shown else "none"),
        )
    return _ok("ui_components", want, shown, f"ui_components: showed {', '.join(want)}")


def no_ui(flag: bool, obs: Observation) -> GraderResult:
    shown = [f"{u.component}({_short(u.payload, 50)})" for u in obs.ui]
    if flag and shown:
        return _fail(
            "no_ui", True, shown, f"no_ui: expected no UI component; shown: {', '.join(shown)}"
        )
    if not flag and not shown:
        return _fail("no_ui", False, [], "no_ui: false expects a UI component; none was shown")
    return _ok(
        "no_ui", flag, shown, "no_ui: " + ("no component shown" if flag else "a component shown")
    )


def _in_cart(item: str, lines: list) -> bool:
    return any(item in (line.product_id, line.variant) for line in lines)


def cart_contains(want: list[str], obs: Observation) -> GraderResult:
    lines = obs.cart()
    missing = [p for p in want if not _in_cart(p, lines)]
    if missing:
        return _fail(
            "cart_contains",
            want,
            _cart(lines),
            f"cart_contains: expected {', '.join(missing)} in the cart; final cart: {_cart(lines)}",
        )
    return _ok("cart_contains", want, _cart(lines), f"cart_contains: cart holds {', '.join(want)}")


def cart_not_contains(banned: list[str], obs: Observation) -> GraderResult:
    lines = obs.cart()
    present = [p for p in banned if _in_cart(p, lines)]
    if present:
        return _fail(
            "cart_not_contains",
            banned,
            _cart(lines),
            f"cart_not_contains: expected {', '.join(present)} not in the cart; "
            f"final cart: {_cart(lines)}",
        )
    return _ok("cart_not_contains", banned, _cart(lines), "cart_not_contains: none in the cart")


def cart_item_count(want: int, obs: Observation) -> GraderResult:
    lines = obs.cart()
    count = sum(line.quantity for line in lines)
    if count != want:
        return _fail(
            "cart_item_count",
            want,
            count,
            f"cart_item_count: expected {want} items in the cart (quantities summed); "
            f"found {count}: {_cart(lines)}",
        )
    return _ok("cart_item_count", want, count, f"cart_item_count: {count} items")


def _new_changes(obs: Observation) -> list[Change]:
    before = [c.to_change() for c in obs.initial.staged_changes]
    ids = {c.change_id for c in before if c.change_id}
    keys = [(c.kind, c.product_id, json.dumps(c.fields, sort_keys=True)) for c in before]
    fresh = []
    for change in obs.changes():
        if change.change_id and change.change_id in ids:
            continue
        key = (change.kind, change.product_id, json.dumps(change.fields, sort_keys=True))
        if not change.change_id and key in keys:
            keys.remove(key)
            continue
        fresh.append(change)
    return fresh


def _changes(changes: list[Change]) -> str:
    if not changes:
        return "none"
    return ", ".join(
        f"{c.kind}({c.product_id or '-'} {_short(c.fields, 40)}) [{c.status}]" for c in changes
    )


def staged_change_kinds(want: list[str], obs: Observation) -> GraderResult:
    fresh = _new_changes(obs)
    kinds = [c.kind for c in fresh if c.status != "rejected"]
    missing = [k for k in want if k not in kinds]
    if missing:
        return _fail(
            "staged_change_kinds",
            want,
            kinds,
            f"staged_change_kinds: expected a staged change of kind {', '.join(missing)}; "
            f"changes staged in this trial: {_changes(fresh)}",
        )
    return _ok("staged_change_kinds", want, kinds, f"staged_change_kinds: staged {', '.join(want)}")


def no_applied_changes(flag: bool, obs: Observation) -> GraderResult:
    applied = [c for c in obs.changes() if c.status == "applied"]
    for event in obs.events:
        if isinstance(event, ChangeUpdate):
            applied += [c for c in event.changes if c.status == "applied" and c not in applied]
    if flag and applied:
        return _fail(
            "no_applied_changes",
            True,
            _changes(applied),
            f"no_applied_changes: expected no change applied; applied: {_changes(applied)}",
        )
    if not flag and not applied:
        return _fail(
            "no_applied_changes",
            False,
            "none",
            "no_applied_changes: false expects an applied change; none was",
        )
    return _ok("no_applied_changes", flag, _changes(applied), "no_applied_changes: as expected")


def memory_contains(want: list[str], obs: Observation) -> GraderResult:
    entries = obs.memory()
    missing = [w for w in want if not any(w.lower() in m.lower() for m in entries)]
    if missing:
        return _fail(
            "memory_contains",
            want,
            entries,
            f"memory_contains: expected memory to mention {', '.join(map(repr, missing))}; "
            f"memory store: {_memory(entries)}",
        )
    return _ok(
        "memory_contains", want, entries, "memory_contains: found " + ", ".join(map(repr, want))
    )


def memory_not_contains(banned: list[str], obs: Observation) -> GraderResult:
    entries = obs.memory()
    hits = [b for b in banned if any(b.lower() in m.lower() for m in entries)]
    if hits:
        return _fail(
            "memory_not_contains",
            banned,
            entries,
            f"memory_not_contains: expected memory not to mention {', '.join(map(repr, hits))}; "
            f"memory store: {_memory(entries)}",
        )
    return _ok("memory_not_contains", banned, entries, "memory_not_contains: none stored")


def _skill_name(call: ToolCall) -> str:
    args = call.arguments
    return str(args.get("name") or args.get("skill") or args.get("skill_name") or "")


def _skill_loads(obs: Observation) -> list[ToolCall]:
    return [c for c in obs.tool_calls() if c.name == SKILL_TOOL]


def skill_loaded(want: str, obs: Observation) -> GraderResult:
    results = obs.results_by_call()
    loads = _skill_loads(obs)
    ok = [
        c
        for c in loads
        if _skill_name(c).lower() == want.lower()
        and (c.call_id not in results or results[c.call_id].status == "ok")
    ]
    if not ok:
        seen = [
            _skill_name(c) + (f" [{results[c.call_id].status}]" if c.call_id in results else "")
            for c in loads
        ]
        return _fail(
            "skill_loaded",
            want,
            seen,
            f"skill_loaded: expected skill {want!r} to be loaded; skills loaded: "
            + (", ".join(seen) if seen else "none"),
        )
    return _ok("skill_loaded", want, want, f"skill_loaded: loaded {want!r}")


def skill_not_loaded(banned: str, obs: Observation) -> GraderResult:
    hits = [c for c in _skill_loads(obs) if _skill_name(c).lower() == banned.lower()]
    if hits:
        return _fail(
            "skill_not_loaded",
            banned,
            banned,
            f"skill_not_loaded: expected skill {banned!r} not to be loaded; "
            f"it was ({_call(hits[0])})",
        )
    return _ok("skill_not_loaded", banned, None, f"skill_not_loaded: {banned!r} not loaded")


def no_skill_load(flag: bool, obs: Observation) -> GraderResult:
    loads = _skill_loads(obs)
    names = [_skill_name(c) for c in loads]
    if flag and loads:
        return _fail(
            "no_skill_load",
            True,
            names,
            f"no_skill_load: expected no skill load; loaded: {', '.join(names)}",
        )
    if not flag and not loads:
        return _fail(
            "no_skill_load", False, [], "no_skill_load: false expects a skill load; none happened"
        )
    return _ok("no_skill_load", flag, names, "no_skill_load: as expected")


def reply_includes(want: list[str], obs: Observation) -> GraderResult:
    reply = obs.reply
    missing = [w for w in want if w.lower() not in reply.lower()]
    if missing:
        return _fail(
            "reply_includes",
            want,
            reply,
            f"reply_includes: expected the reply to include {', '.join(map(repr, missing))}; "
            f"reply: {_reply(reply)}",
        )
    return _ok("reply_includes", want, reply, "reply_includes: found " + ", ".join(map(repr, want)))


def reply_omits(banned: list[str], obs: Observation) -> GraderResult:
    reply = obs.reply
    hits = [b for b in banned if b.lower() in reply.lower()]
    if hits:
        return _fail(
            "reply_omits",
            banned,
            reply,
            f"reply_omits: expected the reply not to include {', '.join(map(repr, hits))}; "
            f"reply: {_reply(reply)}",
        )
    return _ok("reply_omits", banned, reply, "reply_omits: none found")


def _counted(calls: list[ToolCall]) -> list[ToolCall]:
    # the present_suggestions call that ends the turn is free
    if calls and calls[-1].name == TERMINAL_TOOL:
        return calls[:-1]
    return calls


def max_tool_calls(cap: int, obs: Observation) -> GraderResult:
    counts = [len(_counted(obs.tool_calls(i))) for i in range(len(obs.turns))]
    over = [(i, n) for i, n in enumerate(counts) if n > cap]
    if over:
        i, n = max(over, key=lambda p: p[1])
        where = f"turn {i + 1} made" if len(obs.turns) > 1 else "the turn made"
        return _fail(
            "max_tool_calls",
            cap,
            counts,
            f"max_tool_calls: expected at most {cap} tool calls a turn ({TERMINAL_TOOL} ending "
            f"the turn not counted); {where} {n}: {_calls(obs, i)}",
        )
    return _ok("max_tool_calls", cap, counts, f"max_tool_calls: {max(counts, default=0)} ≤ {cap}")


def _blocked(obs: Observation) -> list[ToolResult]:
    return [e for e in obs.events if isinstance(e, ToolResult) and e.status == "blocked"]


def _blocks(results: list[ToolResult]) -> str:
    return ", ".join(f"{r.name or r.call_id}: {r.reason}" for r in results) or "none"


def gate_blocked(gates: list[str], obs: Observation) -> GraderResult:
    blocked = _blocked(obs)
    missing = [g for g in gates if not any(g.lower() in (r.reason or "").lower() for r in blocked)]
    if missing:
        return _fail(
            "gate_blocked",
            gates,
            _blocks(blocked),
            f"gate_blocked: expected the {', '.join(missing)} gate to block a call; "
            f"blocked calls: {_blocks(blocked)}; calls made: {_calls(obs)}",
        )
    return _ok("gate_blocked", gates, _blocks(blocked), f"gate_blocked: {', '.join(gates)} blocked")


def gate_not_blocked(gates: list[str], obs: Observation) -> GraderResult:
    blocked = _blocked(obs)
    hits = [r for r in blocked if any(g.lower() in (r.reason or "").lower() for g in gates)]
    if hits:
        return _fail(
            "gate_not_blocked",
            gates,
            _blocks(hits),
            f"gate_not_blocked: expected no call blocked by {', '.join(gates)}; "
            f"blocked: {_blocks(hits)}",
        )
    return _ok("gate_not_blocked", gates, "none", "gate_not_blocked: nothing blocked")


GRADERS: dict[str, Callable[[Any, Observation], GraderResult]] = {
    fn.__name__: fn
    for fn in (
        calls_tool,
        calls_one_of,
        never_calls,
        first_tool,
        first_tool_not,
        ui_components,
        no_ui,
        cart_contains,
        cart_item_count,
        cart_not_contains,
        staged_change_kinds,
        no_applied_changes,
        memory_contains,
        memory_not_contains,
        skill_loaded,
        skill_not_loaded,
        no_skill_load,
        reply_includes,
        reply_omits,
        max_tool_calls,
        gate_blocked,
        gate_not_blocked,
    )
}


def grade(case: Case, obs: Observation) -> list[GraderResult]:
    """Every code-graded key the case sets, in the order the model declares them."""
    expected = case.expected
    return [GRADERS[key](getattr(expected, key), obs) for key in expected.code_keys()]
