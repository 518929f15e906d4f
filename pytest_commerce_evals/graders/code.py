"""Code graders: one per `expected` key (all but `rubric`), each named for the key it grades.

A grader reads the events of the graded turn or the backend's final state and returns a
`GraderResult` whose message puts what the case expected beside what the agent did.

Event graders (`calls_*`, `never_calls*`, `first_tool*`, `ui_components`, `no_ui`, `skill_*`,
`no_skill_load`, `reply_*`, `max_tool_calls`, `gate_*`) read the last turn, the turn under test
(earlier turns only carry state into it), or every turn of a case with `scope: conversation`.
State graders (`cart_*`, `memory_*`, `staged_change_kinds`, `no_applied_changes`, `state_at`,
`same_state_as`) read the final state, and judge only what changed during the trial: a change
injected through `state` is the precondition, not the agent's doing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ..backend import Snapshot
from ..cases.case import CallSpec, Case, GoldAction, StagedChange, State
from ..events import CartUpdate, Change, ChangeUpdate, Text, ToolCall, ToolResult, Ui
from ..results import GraderResult
from .budget import budget

__all__ = [
    "GRADERS",
    "GoldState",
    "Observation",
    "calls_made",
    "grade",
    "reply_excerpt",
    "skill_key",
    "state_diff",
]

TERMINAL_TOOL = "present_suggestions"
SKILL_TOOL = "load_skill"


@dataclass
class GoldState:
    """The final state the case's gold actions (`same_state_as`) produce on a fresh backend
    loaded with the case's `state`, and the actions that failed on replay (`action n (tool):
    error`, in order): a failed action changed nothing and is reported, never dropped."""

    snapshot: Snapshot | None
    failed: list[str] = field(default_factory=list)
    error: str | None = None
    """Why no replay could be made (the backend has no `call_tool`, say); None when it ran."""


@dataclass
class Observation:
    """What a trial produced: the events of each turn and the backend's final state."""

    turns: list[list[Any]]
    snapshot: Snapshot | None = None
    initial: State = field(default_factory=State)
    scope: str = "turn"
    """What the event graders read: the last turn (`turn`) or every turn (`conversation`)."""
    gold: GoldState | None = None
    """The gold actions' final state, for `same_state_as` (the runner replays them)."""
    calls: list[Any] = field(default_factory=list)
    """The trial's model calls (`usage.ModelCall`), for `budget`."""
    turn_s: list[float] = field(default_factory=list)
    """The agent's time in each turn, for `budget`."""
    prices: Any = None
    """The run's `prices.PriceBook`, for a budget's cost (None: every cost unknown)."""

    @property
    def events(self) -> list[Any]:
        """Every event of every turn (the state fallbacks and the transcript read these)."""
        return [e for turn in self.turns for e in turn]

    @property
    def graded(self) -> list[Any]:
        """The events the event graders read: the last turn's (earlier turns only carry state
        into it), or every turn's in a conversation-scoped case."""
        if self.scope == "conversation":
            return self.events
        return self.turns[-1] if self.turns else []

    @property
    def graded_turn(self) -> int | None:
        """The graded turn's index, or None when the trial has no turn."""
        return len(self.turns) - 1 if self.turns else None

    def tool_calls(self, turn: int | None = None) -> list[ToolCall]:
        """The calls of one turn; by default of the graded turn."""
        events = self.graded if turn is None else self.turns[turn]
        return [e for e in events if isinstance(e, ToolCall)]

    def results_by_call(self, turn: int | None = None) -> dict[str, ToolResult]:
        """One turn's tool results by call id; by default the graded turn's."""
        events = self.graded if turn is None else self.turns[turn]
        return {e.call_id: e for e in events if isinstance(e, ToolResult)}

    @property
    def ui(self) -> list[Ui]:
        return [e for e in self.graded if isinstance(e, Ui)]

    @property
    def reply(self) -> str:
        """The graded turn's reply text."""
        return "\n".join(e.text for e in self.graded if isinstance(e, Text))

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

    def data(self) -> dict[str, Any]:
        """The domain's other state the backend reported (`Snapshot.data`); {} without one."""
        return dict(self.snapshot.data) if self.snapshot is not None else {}

    def memory(self) -> list[str]:
        if self.snapshot is not None:
            return list(self.snapshot.memory)
        return list(self.initial.memory)


# -- formatting what was observed -------------------------------------------------------------


def _dumps(value: Any) -> str:
    """Stable JSON text of a value an agent or backend produced; keys of mixed types (which
    `sort_keys` cannot order) keep their order rather than crash the grader."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        try:
            return json.dumps(value, ensure_ascii=False, default=str)
        except (TypeError, ValueError, RecursionError):  # circular or too deep: Python's view
            return repr(value)


def _short(value: Any, width: int = 60) -> str:
    text = _dumps(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _call(call: ToolCall) -> str:
    args = ", ".join(f"{k}={_short(v, 40)}" for k, v in call.arguments.items())
    return f"{call.name}({args})"


def _marked(call: ToolCall, results: dict[str, ToolResult]) -> str:
    """A call as "calls made" lists it: a call whose result was an error or blocked says so."""
    found = results.get(call.call_id)
    status = found.status if found is not None else "ok"
    return _call(call) if status == "ok" else f"{_call(call)} → {status}"


def _calls(obs: Observation, turn: int | None = None) -> str:
    """The calls of the graded turn (or of `turn`), in call order; a call whose result was
    `error` or `blocked` is marked so."""
    if turn is None and obs.scope == "conversation" and len(obs.turns) > 1:
        return calls_made(obs)
    calls = obs.tool_calls(turn)
    results = obs.results_by_call(turn)
    listed = ", ".join(_marked(c, results) for c in calls) if calls else "no tool calls"
    if len(obs.turns) > 1:
        index = obs.graded_turn if turn is None else turn
        assert index is not None  # the trial has turns
        return f"turn {index + 1} of {len(obs.turns)}: {listed}"
    return listed


def calls_made(obs: Observation) -> str:
    """Every turn's calls, numbered as the report numbers turns (for a failure's context)."""
    if len(obs.turns) <= 1:
        return _calls(obs, 0 if obs.turns else None)
    return "; ".join(_calls(obs, i) for i in range(len(obs.turns)))


def _cart(lines: list) -> str:
    if not lines:
        return "empty"
    return ", ".join(
        f"{line.product_id}{f' ({line.variant})' if line.variant else ''} ×{line.quantity}"
        for line in lines
    )


def _memory(entries: list[str]) -> str:
    return "empty" if not entries else "; ".join(repr(m) for m in entries)


def reply_excerpt(text: str) -> str:
    """A reply as failure messages quote it: whitespace folded, at most 200 characters."""
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
    called = [c.name for c in obs.tool_calls()]  # in call order, as the agent made them
    missing = [t for t in want if t not in called]
    if missing:
        return _fail(
            "calls_tool",
            want,
            called,
            f"calls_tool: expected a call to {', '.join(missing)}; calls made: {_calls(obs)}",
        )
    return _ok("calls_tool", want, called, f"calls_tool: called {', '.join(want)}")


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


def _same(want: Any, got: Any, any_order: bool) -> bool:
    """Equal as JSON values; lists compared as multisets when `any_order`."""
    if any_order and isinstance(want, list) and isinstance(got, list):
        return sorted(map(_dumps, want)) == sorted(map(_dumps, got))
    return _dumps(want) == _dumps(got)


def _differences(spec: CallSpec, call: ToolCall) -> list[str]:
    """How `call`'s arguments differ from those `spec` asks for (empty when they match)."""
    out = []
    for name, want in spec.arguments.items():
        if name not in call.arguments:
            out.append(f"{name}: expected {_short(want, 40)}, not given")
        elif not _same(want, call.arguments[name], name in spec.any_order):
            got = call.arguments[name]
            out.append(f"{name}: expected {_short(want, 40)}, got {_short(got, 40)}")
    return out


def _spec(spec: CallSpec) -> str:
    args = ", ".join(f"{k}={_short(v, 40)}" for k, v in spec.arguments.items())
    order = f" (in any order: {', '.join(spec.any_order)})" if spec.any_order else ""
    return f"{spec.tool}({args}){order}"


def _succeeded(call: ToolCall, results: dict[str, ToolResult]) -> bool:
    found = results.get(call.call_id)
    return found is None or found.status == "ok"


def calls_with(want: list[CallSpec], obs: Observation) -> GraderResult:
    """Each spec is met by a call of the tool whose arguments include the spec's (the call may
    pass more). A call whose result was `error` or `blocked` did not happen: it does not count.
    The failure names the closest call of that tool and the arguments that differ."""
    calls = obs.tool_calls()
    results = obs.results_by_call()
    missing = []
    for spec in want:
        same_tool = [c for c in calls if c.name == spec.tool]
        if any(not _differences(spec, c) and _succeeded(c, results) for c in same_tool):
            continue
        if not same_tool:
            missing.append(f"{_spec(spec)}: no call to {spec.tool}")
            continue
        closest = min(same_tool, key=lambda c: (len(_differences(spec, c)), c.call_id))
        diffs = _differences(spec, closest)
        why = "; ".join(diffs) if diffs else f"its result was {results[closest.call_id].status}"
        missing.append(f"{_spec(spec)}: the closest call, {_marked(closest, results)}, {why}")
    expected = [s.model_dump() for s in want]
    observed = [{"tool": c.name, "arguments": c.arguments} for c in calls]
    if missing:
        return _fail(
            "calls_with",
            expected,
            observed,
            "calls_with: expected " + " | ".join(missing) + f"; calls made: {_calls(obs)}",
        )
    return _ok("calls_with", expected, observed, f"calls_with: {', '.join(map(_spec, want))}")


def never_calls_with(banned: list[CallSpec], obs: Observation) -> GraderResult:
    """No call of a spec's tool whose arguments include the spec's. Every attempt counts, one
    whose result was `error` or `blocked` too: the agent tried it."""
    calls = obs.tool_calls()
    results = obs.results_by_call()
    bad = [
        (spec, c)
        for spec in banned
        for c in calls
        if c.name == spec.tool and not _differences(spec, c)
    ]
    expected = [s.model_dump() for s in banned]
    if bad:
        return _fail(
            "never_calls_with",
            expected,
            [{"tool": c.name, "arguments": c.arguments} for _, c in bad],
            "never_calls_with: expected no call "
            + ", ".join(_spec(s) for s in banned)
            + "; the agent called "
            + ", ".join(_marked(c, results) for _, c in bad),
        )
    return _ok(
        "never_calls_with",
        expected,
        [],
        f"never_calls_with: no call {', '.join(map(_spec, banned))}",
    )


def _first_of_last_turn(obs: Observation) -> ToolCall | None:
    calls = obs.tool_calls()
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
            f"it was {seen or 'none (no tool calls)'}; calls made: {_calls(obs)}",
        )
    return _ok("first_tool", want, seen, f"first_tool: first call was {want}")


def first_tool_not(banned: str, obs: Observation) -> GraderResult:
    first = _first_of_last_turn(obs)
    seen = first.name if first else None
    if first is not None and seen == banned:
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


def _change_key(change: Any) -> tuple[str, str | None, str]:
    return (change.kind, change.product_id, _dumps(change.fields))


def _split_injected(
    obs: Observation, changes: list[Change]
) -> tuple[list[Change], list[tuple[Change, StagedChange]]]:
    """`changes` split into (made during the trial, injected through `state`), each injected
    change matched once: by its id when the case gave one, else by kind, product and fields (the
    backend may have given it an id of its own). Injected changes come paired with the change as
    injected (its status then), so a grader can tell a precondition from what the trial did to
    it."""
    by_id = {c.change_id: c for c in obs.initial.staged_changes if c.change_id}
    by_key: dict[tuple, list[StagedChange]] = {}
    for c in obs.initial.staged_changes:
        if not c.change_id:
            by_key.setdefault(_change_key(c), []).append(c)
    fresh: list[Change] = []
    injected: list[tuple[Change, StagedChange]] = []
    for change in changes:
        match = by_id.pop(change.change_id, None) if change.change_id else None
        if match is None:
            pool = by_key.get(_change_key(change))
            match = pool.pop(0) if pool else None
        if match is None:
            fresh.append(change)
        else:
            injected.append((change, match))
    return fresh, injected


def _new_changes(obs: Observation) -> list[Change]:
    return _split_injected(obs, obs.changes())[0]


def _applied_in_trial(obs: Observation) -> list[Change]:
    """Changes that reached `applied` during the trial: in the final state or in any
    `change_update` event, leaving out those injected already applied."""
    applied: list[Change] = []
    seen: set = set()
    lists = [obs.changes()] + [e.changes for e in obs.events if isinstance(e, ChangeUpdate)]
    for changes in lists:
        fresh, injected = _split_injected(obs, list(changes))
        candidates = fresh + [now for now, before in injected if before.status != "applied"]
        for change in candidates:
            key = change.change_id or _change_key(change)
            if change.status == "applied" and key not in seen:
                seen.add(key)
                applied.append(change)
    return applied


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
    applied = _applied_in_trial(obs)
    if flag and applied:
        return _fail(
            "no_applied_changes",
            True,
            _changes(applied),
            "no_applied_changes: expected no change applied during the trial; applied: "
            f"{_changes(applied)}",
        )
    if not flag and not applied:
        return _fail(
            "no_applied_changes",
            False,
            "none",
            "no_applied_changes: false expects a change applied during the trial; none was",
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


def skill_key(name: str) -> str:
    """A skill name as backends resolve it: `Gift_Finding`, `gift finding` and `gift-finding.md`
    are all `gift-finding`."""
    return name.strip().lower().removesuffix(".md").strip().replace(" ", "-").replace("_", "-")


def _skill_arg(call: ToolCall) -> str:
    args = call.arguments
    return str(args.get("name") or args.get("skill") or args.get("skill_name") or "")


@dataclass
class SkillLoad:
    """One `load_skill` call of the graded turn: the skill the backend resolved it to (its
    result's `name`, else the argument as backends resolve it) and its result's status."""

    call: ToolCall
    skill: str
    status: str | None  # None: the agent emitted no result for the call

    @property
    def loaded(self) -> bool:
        # only an `ok` result is a load: one that failed or was blocked is not, and neither is a
        # call whose result the agent never reported (nothing shows the skill was loaded)
        return self.status == "ok"

    def describe(self) -> str:
        shown = self.skill
        raw = _skill_arg(self.call)
        if raw and skill_key(raw) != self.skill:
            shown += f" (asked as {raw!r})"
        return shown + (f" [{self.status or 'no result'}]" if self.status != "ok" else "")


def _skill_loads(obs: Observation) -> list[SkillLoad]:
    results = obs.results_by_call()
    loads = []
    for call in obs.tool_calls():
        if call.name != SKILL_TOOL:
            continue
        result = results.get(call.call_id)
        resolved = None
        if result is not None and result.status == "ok" and isinstance(result.result, dict):
            named = result.result.get("name") or result.result.get("skill")
            resolved = named if isinstance(named, str) and named.strip() else None
        skill = skill_key(resolved or _skill_arg(call))
        loads.append(SkillLoad(call, skill, result.status if result is not None else None))
    return loads


def skill_loaded(want: str, obs: Observation) -> GraderResult:
    loads = _skill_loads(obs)
    if not any(load.loaded and load.skill == skill_key(want) for load in loads):
        seen = [load.describe() for load in loads]
        return _fail(
            "skill_loaded",
            want,
            seen,
            f"skill_loaded: expected skill {want!r} to be loaded; skills loaded: "
            + (", ".join(seen) if seen else "none"),
        )
    return _ok("skill_loaded", want, want, f"skill_loaded: loaded {want!r}")


def skill_not_loaded(banned: str, obs: Observation) -> GraderResult:
    hits = [load for load in _skill_loads(obs) if load.loaded and load.skill == skill_key(banned)]
    if hits:
        return _fail(
            "skill_not_loaded",
            banned,
            banned,
            f"skill_not_loaded: expected skill {banned!r} not to be loaded; "
            f"it was ({_call(hits[0].call)})",
        )
    return _ok("skill_not_loaded", banned, None, f"skill_not_loaded: {banned!r} not loaded")


def no_skill_load(flag: bool, obs: Observation) -> GraderResult:
    loads = [load for load in _skill_loads(obs) if load.loaded]
    names = [load.describe() for load in loads]
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
            f"reply: {reply_excerpt(reply)}",
        )
    return _ok("reply_includes", want, reply, "reply_includes: found " + ", ".join(map(repr, want)))


def communicates(want: list[str], obs: Observation) -> GraderResult:
    """τ²-bench's rule for what the agent must tell the customer: each string, ignoring case,
    appears in one of the agent's messages with its commas removed (`1,234.56` says
    `1234.56`)."""
    said = [e.text for e in obs.graded if isinstance(e, Text) and e.text]
    flat = [t.lower().replace(",", "") for t in said]
    missing = [w for w in want if not any(w.lower() in t for t in flat)]
    if missing:
        return _fail(
            "communicates",
            want,
            said,
            f"communicates: no agent message says {', '.join(map(repr, missing))} (case and "
            f"commas ignored); replies: {reply_excerpt(chr(10).join(said))}",
        )
    return _ok("communicates", want, said, "communicates: said " + ", ".join(map(repr, want)))


def reply_omits(banned: list[str], obs: Observation) -> GraderResult:
    reply = obs.reply
    hits = [b for b in banned if b.lower() in reply.lower()]
    if hits:
        return _fail(
            "reply_omits",
            banned,
            reply,
            f"reply_omits: expected the reply not to include {', '.join(map(repr, hits))}; "
            f"reply: {reply_excerpt(reply)}",
        )
    return _ok("reply_omits", banned, reply, "reply_omits: none found")


def _contains(want: Any, got: Any) -> bool:
    """`got` holds `want`: every key of a mapping (recursively, a subset), anything else equal
    as JSON."""
    if isinstance(want, dict):
        return isinstance(got, dict) and all(
            k in got and _contains(v, got[k]) for k, v in want.items()
        )
    return _dumps(want) == _dumps(got)


def _at(data: Any, path: str) -> tuple[bool, Any]:
    """(True, the value at the dotted `path` of `data`), or (False, why there is none)."""
    node = data
    walked: list[str] = []
    for part in path.split("."):
        where = ".".join(walked) or "the state"
        if isinstance(node, dict):
            if part not in node:
                keys = ", ".join(map(str, list(node)[:8])) or "nothing"
                return False, f"no {part!r} in {where} (it holds {keys})"
            node = node[part]
        elif isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                return False, f"{where} is a list of {len(node)}: no item {part!r}"
            node = node[int(part)]
        else:
            return False, f"{where} is {_short(node, 40)}, not a mapping or a list"
        walked.append(part)
    return True, node


def state_at(want: dict[str, Any], obs: Observation) -> GraderResult:
    """Each path of the final state's domain data (`Snapshot.data`) holds the value given: a
    mapping as a subset, anything else exactly."""
    data = obs.data()
    wrong = []
    found: dict[str, Any] = {}
    for path, value in want.items():
        there, got = _at(data, path)
        if not there:
            wrong.append(f"{path}: {got}")
            continue
        found[path] = got
        if not _contains(value, got):
            wrong.append(f"{path}: expected {_short(value)}, found {_short(got)}")
    if wrong:
        hint = "" if data else " (the backend's snapshot reported no domain state: Snapshot.data)"
        return _fail("state_at", want, found, "state_at: " + "; ".join(wrong) + hint)
    return _ok("state_at", want, found, f"state_at: {', '.join(want)} as expected")


SAME_STATE_PARTS = ("cart", "changes", "data")
"""What `same_state_as` compares: the cart, the change queue and the domain's other state.
Memory is free text an agent words its own way; `memory_contains` grades it."""

_DIFF_LINES = 8


def _state_parts(snapshot: Snapshot) -> dict[str, Any]:
    """The parts `same_state_as` compares, as JSON data (the cart in a stable order)."""
    return {
        "cart": sorted((line.model_dump(mode="json") for line in snapshot.cart), key=_dumps),
        "changes": [c.model_dump(mode="json") for c in snapshot.changes],
        "data": json.loads(_dumps(snapshot.data)) if snapshot.data else {},
    }


def state_diff(gold: Any, found: Any, path: str = "") -> list[str]:
    """Where `found` differs from `gold`, one line per differing path (`data.orders.W1.status:
    gold 'cancelled', found 'pending'`), mappings key by key and lists item by item."""
    if isinstance(gold, dict) and isinstance(found, dict):
        out = []
        for key in sorted(set(gold) | set(found), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in found:
                out.append(f"{where}: gold {_short(gold[key])}, missing")
            elif key not in gold:
                out.append(f"{where}: not in gold, found {_short(found[key])}")
            else:
                out.extend(state_diff(gold[key], found[key], where))
        return out
    if isinstance(gold, list) and isinstance(found, list):
        out = []
        for i in range(max(len(gold), len(found))):
            where = f"{path}.{i}" if path else str(i)
            if i >= len(found):
                out.append(f"{where}: gold {_short(gold[i])}, missing")
            elif i >= len(gold):
                out.append(f"{where}: not in gold, found {_short(found[i])}")
            else:
                out.extend(state_diff(gold[i], found[i], where))
        return out
    if gold != found or type(gold) is not type(found):
        return [f"{path or 'state'}: gold {_short(gold)}, found {_short(found)}"]
    return []


def same_state_as(actions: list[GoldAction], obs: Observation) -> GraderResult:
    """The final cart, change queue and domain state equal what the gold actions produce on a
    fresh backend loaded with the case's `state` (`Observation.gold`, replayed by the runner);
    the failure text lists the paths that differ, and any gold action that failed on replay."""
    wanted = [
        f"{a.tool}({', '.join(f'{k}={_short(v, 40)}' for k, v in a.arguments.items())})"
        for a in actions
    ]
    gold = obs.gold
    if gold is None or gold.snapshot is None:
        why = (
            gold.error if gold is not None and gold.error else "the gold actions were not replayed"
        )
        return _fail(
            "same_state_as", wanted, None, f"same_state_as: no gold state to compare: {why}"
        )
    if obs.snapshot is None:
        return _fail("same_state_as", wanted, None, "same_state_as: the trial has no final state")
    diff = state_diff(_state_parts(gold.snapshot), _state_parts(obs.snapshot))
    replay = (
        f" (gold action(s) that failed on replay and changed nothing: {'; '.join(gold.failed)})"
        if gold.failed
        else ""
    )
    if diff:
        shown = "; ".join(diff[:_DIFF_LINES])
        more = f"; and {len(diff) - _DIFF_LINES} more" if len(diff) > _DIFF_LINES else ""
        return _fail(
            "same_state_as",
            wanted,
            diff,
            f"same_state_as: the final state differs from the gold actions' in {len(diff)} "
            f"place(s): {shown}{more}{replay}; calls made: {calls_made(obs)}",
        )
    return _ok(
        "same_state_as",
        wanted,
        [],
        f"same_state_as: the final state is the gold actions' ({len(actions)} replayed){replay}",
    )


def _counted(calls: list[ToolCall]) -> list[ToolCall]:
    """The calls that count toward the cap: all but the turn's last `present_suggestions`,
    wherever it stands (a model may issue another call beside it in the same reply)."""
    for i in range(len(calls) - 1, -1, -1):
        if calls[i].name == TERMINAL_TOOL:
            return calls[:i] + calls[i + 1 :]
    return calls


def max_tool_calls(cap: int, obs: Observation) -> GraderResult:
    """Caps the graded turn's calls, or, in a conversation-scoped case, the conversation's (each
    turn's closing `present_suggestions` free)."""
    whole = obs.scope == "conversation"
    if whole:
        n = sum(len(_counted(obs.tool_calls(i))) for i in range(len(obs.turns)))
    else:
        n = len(_counted(obs.tool_calls()))
    if n > cap:
        made = "the conversation made" if whole else "the turn made"
        return _fail(
            "max_tool_calls",
            cap,
            n,
            f"max_tool_calls: expected at most {cap} tool calls ({TERMINAL_TOOL} ending "
            f"{'a' if whole else 'the'} turn not counted); {made} {n}: {_calls(obs)}",
        )
    return _ok("max_tool_calls", cap, n, f"max_tool_calls: {n} ≤ {cap}")


def _blocked(obs: Observation) -> list[ToolResult]:
    return [e for e in obs.graded if isinstance(e, ToolResult) and e.status == "blocked"]


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
        calls_with,
        never_calls_with,
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
        communicates,
        reply_omits,
        max_tool_calls,
        gate_blocked,
        gate_not_blocked,
        state_at,
        same_state_as,
        budget,
    )
}


def grade(case: Case, obs: Observation) -> list[GraderResult]:
    """Every code-graded key the case sets, in the order the model declares them."""
    expected = case.expected
    if obs.scope != case.scope:
        obs = replace(obs, scope=case.scope)
    return [GRADERS[key](getattr(expected, key), obs) for key in expected.code_keys()]
