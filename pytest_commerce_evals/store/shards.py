"""A run recorded in shards (`--commerce-shard=K/N`, docs/shards.md): every shard writes its
trials into one run of the shared store; this module holds what the store keeps about the split.

- The plan (`shard_plans`): which shard runs each case. The first shard to reach the store writes
  it; every later shard (and every xdist worker) reads that one back, so shards that read the
  history at different moments cannot split the cases differently.
- The shards (`shards`): each shard's start, end, whether it finished, its exit status, its
  trials, the trials its budget left unstarted and its own errors. A shard run again replaces its
  row and its cases' trials, nothing else.
- The run row: written by the first shard to begin (insert-if-absent) and left incomplete until
  the merge step (`--commerce-merge`) gates the whole run.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import StoreError
from ..jsonsafe import short_repr
from ..runs import RunRecord
from ..settings.values import MAX_SHARDS
from .identity import public_base_url, utc_now
from .record_file import clean_header
from .run_store import RunStore

__all__ = [
    "ShardRow",
    "begin_shard",
    "case_seconds",
    "check_against_plan",
    "finish_shard",
    "read_plan",
    "shard_rows",
    "write_plan",
]


@dataclass
class ShardRow:
    """One shard of a run as the store holds it."""

    shard: int
    shards: int
    started_at: str
    ended_at: str | None = None
    complete: bool = False
    exit_status: int | None = None
    trials: int = 0
    not_started: list[dict[str, Any]] = field(default_factory=list)
    """The trials its budget left unstarted: case_id, trial, set_name, threshold."""
    errors: list[str] = field(default_factory=list)
    """The shard's own errors (invalid case entries, other tests that failed), as it said them."""


PLAN_CASES_MOST = 1_000_000
"""The most cases a stored plan may hold (a damaged plan is refused before it is trusted)."""

TRIALS_MOST = 2**31 - 1
"""The most trials a stored shard row may count."""


def _whole(value: Any, low: int, high: int) -> bool:
    """`value` is a whole number (an int, never a bool or a float) from `low` to `high`."""
    return type(value) is int and low <= value <= high


def _shards_from(raw: Any, run_id: str, where: Any) -> int:
    if not _whole(raw, 1, MAX_SHARDS):
        raise StoreError(
            f"{where}: run {run_id}: column shard_plans.shards is not a whole number of shards "
            f"from 1 to {MAX_SHARDS} (found {short_repr(raw)}): the run's plan is damaged; "
            "run its shards again under a new run id"
        )
    return int(raw)


def _plan_from(raw: Any, shards: int, run_id: str, where: Any) -> dict[str, int]:
    try:
        plan = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        plan = None
    if (
        not isinstance(plan, dict)
        or not 1 <= len(plan) <= PLAN_CASES_MOST
        or not all(isinstance(k, str) and k and _whole(v, 1, shards) for k, v in plan.items())
    ):
        raise StoreError(
            f"{where}: run {run_id}: column shard_plans.plan is not a map of 1 to "
            f"{PLAN_CASES_MOST:,} case ids to shards 1 to {shards} (found {short_repr(raw)}): "
            "the run's plan is damaged; run its shards again under a new run id"
        )
    return plan


def read_plan(store: RunStore, run_id: str) -> tuple[int, dict[str, int]] | None:
    """(shards, {case id: shard}) of a run recorded in shards; None for any other run. A plan
    whose shards or map is not what a shard writes raises `StoreError` naming the column."""

    def read() -> tuple[int, dict[str, int]] | None:
        with store._connect() as conn:
            row = conn.execute(
                "SELECT shards, plan FROM shard_plans WHERE run_id = ?", (run_id,)
            ).fetchone()
        if row is None:
            return None
        shards = _shards_from(row[0], run_id, store.path)
        return shards, _plan_from(row[1], shards, run_id, store.path)

    return store._retry(read)


def write_plan(
    store: RunStore, run_id: str, shards: int, plan: dict[str, int]
) -> tuple[int, dict[str, int]]:
    """Write `plan` as the run's unless one is there already; the plan the run keeps (the first
    written) comes back."""

    def write() -> None:
        with store._transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO shard_plans (run_id, shards, plan, created_at) "
                "VALUES (?, ?, ?, ?)",
                (run_id, shards, json.dumps(plan, sort_keys=True), utc_now()),
            )

    store._retry(write)
    found = read_plan(store, run_id)
    assert found is not None  # written, or written before by another shard
    return found


def case_seconds(store: RunStore, runs: int) -> dict[str, float]:
    """Each case's mean seconds a trial over the last `runs` complete regression runs (any agent:
    it balances shards, it decides nothing)."""

    def read() -> dict[str, float]:
        with store._connect() as conn:
            rows = conn.execute(
                "SELECT case_id, AVG(duration_s) FROM trials WHERE run_id IN (SELECT run_id "
                "FROM runs WHERE complete = 1 AND kind = 'regression' ORDER BY started_at DESC "
                "LIMIT ?) GROUP BY case_id",
                (runs,),
            ).fetchall()
        out = {}
        for case_id, seconds in rows:
            if isinstance(seconds, int | float) and seconds >= 0:
                out[str(case_id)] = float(seconds)
        return out

    return store._retry(read)


def begin_shard(store: RunStore, record: RunRecord, shard: int, shards: int) -> None:
    """Shard `shard` of `shards` begins: the run row is written if no shard wrote it yet (a
    merged run becomes incomplete again: its verdict waits for the merge once more), the shard's
    cases' trials of an earlier attempt are removed, and its row is written new.

    Everything that refuses the shard (another selection or kind, another N, a damaged plan) is
    checked before anything is written: a refused shard changes nothing in the store."""
    record = clean_header(record)
    if not 1 <= shard <= shards <= MAX_SHARDS:
        raise StoreError(f"shard {shard}/{shards}: K must be from 1 to N, N from 1 to {MAX_SHARDS}")

    def begin() -> None:
        with store._transaction() as conn:
            row = conn.execute(
                "SELECT kind, signature FROM runs WHERE run_id = ?", (record.run_id,)
            ).fetchone()
            if row is not None and (row[0], row[1]) != (record.kind, record.signature):
                raise StoreError(
                    f"{store.path}: run {record.run_id} is already recorded with another "
                    f"selection or kind ({row[0]}, {row[1]}; this shard: {record.kind}, "
                    f"{record.signature}); every shard of one run selects the same cases and "
                    "trials: give this run an id of its own (--commerce-run-id)"
                )
            plan = conn.execute(
                "SELECT shards, plan FROM shard_plans WHERE run_id = ?", (record.run_id,)
            ).fetchone()
            mine: list[str] = []
            if plan is not None:
                total = _shards_from(plan[0], record.run_id, store.path)
                if total != shards:
                    raise StoreError(
                        f"{store.path}: run {record.run_id} is split into {total} shards, not "
                        f"{shards}; every shard of one run gives the same N"
                    )
                cases = _plan_from(plan[1], total, record.run_id, store.path)
                mine = [c for c, k in cases.items() if k == shard]
            # refused or not is decided: from here on the shard writes
            if row is None:
                conn.execute(
                    "INSERT OR IGNORE INTO runs (run_id, kind, started_at, complete, git_commit, "
                    "git_dirty, agent_model, agent_base_url, judge_fingerprints, selection, "
                    "signature, options) VALUES (?, ?, ?, 0, ?, ?, ?, ?, '[]', ?, ?, ?)",
                    (
                        record.run_id,
                        record.kind,
                        record.started_at,
                        record.git_commit,
                        None if record.git_dirty is None else int(record.git_dirty),
                        record.agent_model,
                        public_base_url(record.agent_base_url),
                        record.selection.model_dump_json(),
                        record.signature,
                        json.dumps(record.options),
                    ),
                )
            conn.execute(
                "UPDATE runs SET complete = 0, ended_at = NULL, exit_status = NULL "
                "WHERE run_id = ?",
                (record.run_id,),
            )
            for at in range(0, len(mine), 500):
                part = mine[at : at + 500]
                conn.execute(
                    f"DELETE FROM trials WHERE run_id = ? AND case_id IN "
                    f"({', '.join('?' * len(part))})",
                    (record.run_id, *part),
                )
            conn.execute(
                "INSERT OR REPLACE INTO shards (run_id, shard, shards, started_at, ended_at, "
                "complete, exit_status, trials, not_started, errors) "
                "VALUES (?, ?, ?, ?, NULL, 0, NULL, 0, '[]', '[]')",
                (record.run_id, shard, shards, utc_now()),
            )

    store._retry(begin)


def finish_shard(
    store: RunStore,
    run_id: str,
    shard: int,
    *,
    complete: bool,
    exit_status: int | None,
    trials: int,
    not_started: Iterable[dict[str, Any]] = (),
    errors: Iterable[str] = (),
) -> None:
    """Shard `shard` ended: when, whether it finished, its exit status and what it left."""

    def finish() -> None:
        with store._transaction() as conn:
            conn.execute(
                "UPDATE shards SET ended_at = ?, complete = ?, exit_status = ?, trials = ?, "
                "not_started = ?, errors = ? WHERE run_id = ? AND shard = ?",
                (
                    utc_now(),
                    int(complete),
                    exit_status,
                    trials,
                    json.dumps(list(not_started)),
                    json.dumps(list(errors)),
                    run_id,
                    shard,
                ),
            )

    store._retry(finish)


def _json_list(raw: Any, column: str, run_id: str, where: Any, row: str) -> list[Any]:
    try:
        found = json.loads(raw) if isinstance(raw, str) else None
    except (ValueError, RecursionError):
        found = None
    if not isinstance(found, list):
        raise StoreError(
            f"{where}: run {run_id}: column shards.{column} is not a list (found "
            f"{short_repr(raw)}; {row})"
        )
    return found


def _not_started(raw: Any, run_id: str, where: Any, row: str) -> list[dict[str, Any]]:
    out = []
    for n, left in enumerate(_json_list(raw, "not_started", run_id, where, row)):
        threshold: Any = left.get("threshold") if isinstance(left, dict) else None
        if not (
            isinstance(left, dict)
            and isinstance(left.get("case_id"), str)
            and left["case_id"]
            and _whole(left.get("trial"), 1, TRIALS_MOST)
            and isinstance(left.get("set_name"), str)
            and type(threshold) in (int, float)
            and math.isfinite(threshold)
            and 0 <= threshold <= 1
        ):
            raise StoreError(
                f"{where}: run {run_id}: column shards.not_started, item {n}, is not "
                "{case_id: text, trial: a whole number from 1, set_name: text, threshold: a "
                f"number from 0 to 1}} (found {short_repr(left, 80)}; {row})"
            )
        out.append(left)
    return out


def _shard_row(r: Any, run_id: str, where: Any) -> ShardRow:
    """One `shards` row, each column checked against what a shard writes: a damaged one raises
    `StoreError` naming the row, the column, what was found and what is allowed."""
    row = f"the row of shard {short_repr(r[0])}"

    def bad(column: str, allowed: str, found: Any) -> StoreError:
        return StoreError(
            f"{where}: run {run_id}: column shards.{column} is not {allowed} (found "
            f"{short_repr(found)}; {row})"
        )

    if not _whole(r[0], 1, MAX_SHARDS):
        raise bad("shard", f"a whole number from 1 to {MAX_SHARDS}", r[0])
    if not _whole(r[1], 1, MAX_SHARDS):
        raise bad("shards", f"a whole number from 1 to {MAX_SHARDS}", r[1])
    if not isinstance(r[2], str):
        raise bad("started_at", "a time (text)", r[2])
    if r[3] is not None and not isinstance(r[3], str):
        raise bad("ended_at", "a time (text) or NULL", r[3])
    if r[4] not in (0, 1) or type(r[4]) not in (int, bool):
        raise bad("complete", "0 or 1", r[4])
    if r[5] is not None and not _whole(r[5], -(2**31), 2**31 - 1):
        raise bad("exit_status", "a whole number or NULL", r[5])
    if not _whole(r[6], 0, TRIALS_MOST):
        raise bad("trials", f"a whole number from 0 to {TRIALS_MOST}", r[6])
    errors = _json_list(r[8], "errors", run_id, where, row)
    if not all(isinstance(e, str) for e in errors):
        raise bad("errors", "a list of text", r[8])
    return ShardRow(
        shard=r[0],
        shards=r[1],
        started_at=r[2],
        ended_at=r[3],
        complete=bool(r[4]),
        exit_status=r[5],
        trials=r[6],
        not_started=_not_started(r[7], run_id, where, row),
        errors=errors,
    )


def shard_rows(store: RunStore, run_id: str) -> list[ShardRow]:
    """The shards of a run that began, by number; a damaged row raises `StoreError`."""

    def read() -> list[ShardRow]:
        with store._connect() as conn:
            rows = conn.execute(
                "SELECT shard, shards, started_at, ended_at, complete, exit_status, trials, "
                "not_started, errors FROM shards WHERE run_id = ? ORDER BY shard",
                (run_id,),
            ).fetchall()
        return [_shard_row(r, run_id, store.path) for r in rows]

    return store._retry(read)


def check_against_plan(
    where: Any, run_id: str, total: int, plan: dict[str, int], rows: list[ShardRow], cases: set[str]
) -> None:
    """The shard rows and the stored trials' cases agree with the plan: every row is a shard of
    its N, every case a row leaves unstarted or a trial is stored for is in the plan. A store
    where they do not is damaged (`StoreError`): the merge trusts none of it."""
    for row in rows:
        if row.shard > total or row.shards != total:
            raise StoreError(
                f"{where}: run {run_id}: the row of shard {row.shard} says "
                f"{row.shard}/{row.shards}, and the run's plan (shard_plans.shards) splits it "
                f"into {total}: allowed are shards 1 to {total} of {total}"
            )
        unplanned = sorted({n["case_id"] for n in row.not_started} - set(plan))
        if unplanned:
            raise StoreError(
                f"{where}: run {run_id}: column shards.not_started of the row of shard "
                f"{row.shard} names {len(unplanned)} case(s) the run's plan (shard_plans.plan) "
                f"does not hold: {', '.join(short_repr(c) for c in unplanned[:5])}"
            )
    lost = sorted(cases - set(plan))
    if lost:
        raise StoreError(
            f"{where}: run {run_id}: {len(lost)} case(s) with stored trials are not in the "
            f"run's plan (shard_plans.plan holds {len(plan)}): "
            f"{', '.join(short_repr(c) for c in lost[:5])}; the plan is damaged: run the "
            "shards again under a new run id"
        )
