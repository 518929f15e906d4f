"""This module holds the graders of the tool calls the agent made in the graded turn (or the
conversation): which tools it called and with what arguments, which it called first, how many
calls it made, and which calls a gate blocked.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from ..cases.case import CallSpec
from ..events import ToolCall, ToolResult
from ..results import GraderResult
from .formatting import _call, _calls, _dumps, _fail, _marked, _ok, _short
from .observation import Observation

__all__ = [
    "calls_one_of",
    "calls_tool",
    "calls_with",
    "first_tool",
    "first_tool_not",
    "gate_blocked",
    "gate_not_blocked",
    "max_tool_calls",
    "never_calls",
    "never_calls_with",
]


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


def _counted(calls: list[ToolCall], free: Collection[str]) -> list[ToolCall]:
    """The calls that count toward the cap: all but the turn's last call of a presentation tool
    (`free`, by default `present_suggestions`), wherever it stands (a model may issue another
    call beside it in the same reply)."""
    for i in range(len(calls) - 1, -1, -1):
        if calls[i].name in free:
            return calls[:i] + calls[i + 1 :]
    return calls


def max_tool_calls(cap: int, obs: Observation) -> GraderResult:
    """Caps the graded turn's calls, or, in a conversation-scoped case, the conversation's (each
    turn's closing presentation call free: `Observation.ui_tools`, by default
    `present_suggestions`)."""
    whole = obs.scope == "conversation"
    if whole:
        n = sum(len(_counted(obs.tool_calls(i), obs.ui_tools)) for i in range(len(obs.turns)))
    else:
        n = len(_counted(obs.tool_calls(), obs.ui_tools))
    if n > cap:
        made = "the conversation made" if whole else "the turn made"
        free = " or ".join(obs.ui_tools)
        note = f" ({free} ending {'a' if whole else 'the'} turn not counted)" if free else ""
        return _fail(
            "max_tool_calls",
            cap,
            n,
            f"max_tool_calls: expected at most {cap} tool calls{note}; {made} {n}: {_calls(obs)}",
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
