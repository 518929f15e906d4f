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
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import StoreError
from ..jsonsafe import short_repr
from ..runs import RunRecord
from .identity import public_base_url, utc_now
from .record_file import clean_header
from .run_store import RunStore

__all__ = [
    "ShardRow",
    "begin_shard",
    "case_seconds",
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


def _plan_from(raw: Any, shards: int, run_id: str, where: Any) -> dict[str, int]:
    try:
        plan = json.loads(raw)
    except (TypeError, ValueError):
        plan = None
    if not isinstance(plan, dict) or not all(
        isinstance(k, str) and type(v) is int and 1 <= v <= shards for k, v in plan.items()
    ):
        raise StoreError(
            f"{where}: run {run_id}: column shard_plans.plan is not a map of case ids to "
            f"shards 1 to {shards} (found {short_repr(raw)})"
        )
    return plan


def read_plan(store: RunStore, run_id: str) -> tuple[int, dict[str, int]] | None:
    """(shards, {case id: shard}) of a run recorded in shards; None for any other run."""

    def read() -> tuple[int, dict[str, int]] | None:
        with store._connect() as conn:
            row = conn.execute(
                "SELECT shards, plan FROM shard_plans WHERE run_id = ?", (run_id,)
            ).fetchone()
        if row is None:
            return None
        shards = int(row[0])
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
    cases' trials of an earlier attempt are removed, and its row is written new."""
    record = clean_header(record)

    def begin() -> None:
        with store._transaction() as conn:
            row = conn.execute(
                "SELECT kind, signature FROM runs WHERE run_id = ?", (record.run_id,)
            ).fetchone()
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
            elif (row[0], row[1]) != (record.kind, record.signature):
                raise StoreError(
                    f"{store.path}: run {record.run_id} is already recorded with another "
                    f"selection or kind ({row[0]}, {row[1]}; this shard: {record.kind}, "
                    f"{record.signature}); every shard of one run selects the same cases and "
                    "trials: give this run an id of its own (--commerce-run-id)"
                )
            conn.execute(
                "UPDATE runs SET complete = 0, ended_at = NULL, exit_status = NULL "
                "WHERE run_id = ?",
                (record.run_id,),
            )
            plan = conn.execute(
                "SELECT shards, plan FROM shard_plans WHERE run_id = ?", (record.run_id,)
            ).fetchone()
            mine = (
                [
                    c
                    for c, k in _plan_from(plan[1], int(plan[0]), record.run_id, store.path).items()
                    if k == shard
                ]
                if plan is not None
                else []
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


def _json_list(raw: Any, column: str, run_id: str, where: Any) -> list[Any]:
    try:
        found = json.loads(raw or "[]")
    except (TypeError, ValueError):
        found = None
    if not isinstance(found, list):
        raise StoreError(
            f"{where}: run {run_id}: column shards.{column} is not a list (found {short_repr(raw)})"
        )
    return found


def shard_rows(store: RunStore, run_id: str) -> list[ShardRow]:
    """The shards of a run that began, by number."""

    def read() -> list[ShardRow]:
        with store._connect() as conn:
            rows = conn.execute(
                "SELECT shard, shards, started_at, ended_at, complete, exit_status, trials, "
                "not_started, errors FROM shards WHERE run_id = ? ORDER BY shard",
                (run_id,),
            ).fetchall()
        return [
            ShardRow(
                shard=int(r[0]),
                shards=int(r[1]),
                started_at=str(r[2]),
                ended_at=None if r[3] is None else str(r[3]),
                complete=bool(r[4]),
                exit_status=None if r[5] is None else int(r[5]),
                trials=int(r[6] or 0),
                not_started=[
                    n
                    for n in _json_list(r[7], "not_started", run_id, store.path)
                    if isinstance(n, dict)
                ],
                errors=[str(e) for e in _json_list(r[8], "errors", run_id, store.path)],
            )
            for r in rows
        ]

    return store._retry(read)
