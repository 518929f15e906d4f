"""This module holds the graders of the backend's final state, each judging only what changed
during the trial: the cart, the staged changes, the memory, the domain data (`state_at`) and
the whole state against the gold actions' (`same_state_as`).
"""

from __future__ import annotations

import json
from typing import Any

from ..backend import Snapshot
from ..cases.case import GoldAction, StagedChange
from ..events import Change, ChangeUpdate
from ..results import GraderResult
from .formatting import _cart, _dumps, _fail, _memory, _ok, _short, calls_made
from .observation import Observation

__all__ = [
    "SAME_STATE_PARTS",
    "cart_contains",
    "cart_item_count",
    "cart_not_contains",
    "memory_contains",
    "memory_not_contains",
    "no_applied_changes",
    "same_state_as",
    "staged_change_kinds",
    "state_at",
    "state_diff",
]


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
