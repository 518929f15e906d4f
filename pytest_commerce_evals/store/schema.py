"""Every older schema the run store and the JSON run record are read from, in one place: the SQL
that creates a store at `SCHEMA_VERSION`, the statements that bring an older one up to it,
`StoreSchema`, which checks (and creates or migrates) the tables on a connection the store
opened, every failure a `StoreError` naming the database, and `migrate_record`, the same for a
JSON run record. Teams keep their stores between runs (a CI cache, a PostgreSQL database), so
what an earlier version wrote is read, never dropped; a trial row of any schema is read through
`results.TrialRecord`, whose validators take the two shapes schema 2 wrote before the record was
typed (an event JSON could not hold, a verdict without its rubric).

Schema history:
  1  runs (no `kind`, no judge fingerprints, no exit status or options) and trials (no error,
     grader results, snapshot, turn messages, duration or location).
  2  adds `runs.kind` ('regression' | 'live'), `runs.judge_fingerprints`, `runs.exit_status`,
     `runs.options`, the missing trial columns, and the `set_results` table (backfilled from the
     trials of every stored run).
  3  admits runs of kind 'regrade'.
  4  adds `trials.stopping`: the rule that stopped an adaptive run's case.
  5  adds `trials.ended`: why a conversation with a simulated customer ended.
  6  adds `trials.calls` and `trials.turn_s`: a trial's model calls (tokens, latency, whose)
     and the agent's time per turn.
  7  adds `trials.cached`: which of a conversation's customer messages the reply cache answered.
  8  adds `shard_plans` (which shard runs each case of a run recorded in shards) and `shards`
     (each shard's start, end, outcome and own errors).
  9  adds `trials.attack`: the category of an attack case's `user.attack` (the attack success
     rate reads it, never a tag); a trial stored before it is no attack.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import StoreError
from ..jsonsafe import short_repr
from ..runs import SCHEMA_VERSION
from .aggregate import judge_identity, set_results
from .database import PostgresDatabase
from .rows import read_trials, write_sets

__all__ = ["MOVE_ASIDE", "StoreSchema", "migrate_record"]

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'regression' CHECK (kind IN ('regression', 'live', 'regrade')),
    started_at TEXT NOT NULL,
    ended_at TEXT,
    complete INTEGER NOT NULL DEFAULT 0,
    exit_status INTEGER,
    git_commit TEXT,
    git_dirty INTEGER,
    agent_model TEXT,
    agent_base_url TEXT,
    judge_model TEXT,
    judge_fingerprints TEXT NOT NULL DEFAULT '[]',
    selection TEXT NOT NULL,
    signature TEXT NOT NULL,
    options TEXT NOT NULL DEFAULT '{}',
    baseline TEXT
);
CREATE TABLE trials (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    case_id TEXT NOT NULL,
    trial INTEGER NOT NULL,
    set_name TEXT NOT NULL,
    threshold REAL NOT NULL,
    priority TEXT NOT NULL,
    difficulty TEXT NOT NULL,
    tags TEXT NOT NULL,
    outcome TEXT NOT NULL,
    failures TEXT NOT NULL,
    transcript TEXT NOT NULL,
    verdicts TEXT NOT NULL,
    trials INTEGER NOT NULL DEFAULT 1,
    error TEXT,
    grader_results TEXT NOT NULL DEFAULT '[]',
    messages TEXT NOT NULL DEFAULT '[]',
    snapshot TEXT,
    duration_s REAL NOT NULL DEFAULT 0,
    file TEXT,
    line INTEGER,
    stopping TEXT,
    ended TEXT,
    calls TEXT,
    turn_s TEXT,
    cached TEXT,
    attack TEXT,
    PRIMARY KEY (run_id, case_id, trial)
);
CREATE TABLE set_results (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    set_name TEXT NOT NULL,
    passed INTEGER NOT NULL,
    graded INTEGER NOT NULL,
    rate REAL,
    threshold REAL NOT NULL,
    met INTEGER NOT NULL,
    other TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, set_name)
);
CREATE INDEX runs_comparable ON runs (kind, signature, complete, started_at);
CREATE INDEX runs_by_model ON runs (agent_model, kind, complete, started_at);
CREATE TABLE shard_plans (
    run_id TEXT PRIMARY KEY,
    shards INTEGER NOT NULL,
    plan TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE shards (
    run_id TEXT NOT NULL,
    shard INTEGER NOT NULL,
    shards INTEGER NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    complete INTEGER NOT NULL DEFAULT 0,
    exit_status INTEGER,
    trials INTEGER NOT NULL DEFAULT 0,
    not_started TEXT NOT NULL DEFAULT '[]',
    errors TEXT NOT NULL DEFAULT '[]',
    PRIMARY KEY (run_id, shard)
);
"""

# schemas 4 to 7 and 9 each add trial columns; each column is added when it is missing, so a
# store a migration left half-way (one column and not the other) is completed, never marked done
# without it:
#   4: a trial of an adaptive run records the rule that stopped its case
#   5: a conversation with a simulated customer records why it ended
#   6: a trial records its model calls and the agent's time per turn
#   7: a conversation records which customer messages the reply cache answered
#   9: an attack case's trial records its attack's category
_ADDED_COLUMNS: dict[int, tuple[str, ...]] = {
    4: ("stopping",),
    5: ("ended",),
    6: ("calls", "turn_s"),
    7: ("cached",),
    9: ("attack",),
}

_SHARD_TABLES = ("shard_plans", "shards")
"""The tables schema 8 adds (a run recorded in shards)."""


# schema 1 -> 2, applied in one transaction when an older store is opened
_MIGRATE_1_TO_2 = """
ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'regression'
    CHECK (kind IN ('regression', 'live'));
ALTER TABLE runs ADD COLUMN exit_status INTEGER;
ALTER TABLE runs ADD COLUMN judge_fingerprints TEXT NOT NULL DEFAULT '[]';
ALTER TABLE runs ADD COLUMN options TEXT NOT NULL DEFAULT '{}';
ALTER TABLE runs ADD COLUMN baseline TEXT;
ALTER TABLE trials ADD COLUMN trials INTEGER NOT NULL DEFAULT 1;
ALTER TABLE trials ADD COLUMN error TEXT;
ALTER TABLE trials ADD COLUMN grader_results TEXT NOT NULL DEFAULT '[]';
ALTER TABLE trials ADD COLUMN messages TEXT NOT NULL DEFAULT '[]';
ALTER TABLE trials ADD COLUMN snapshot TEXT;
ALTER TABLE trials ADD COLUMN duration_s REAL NOT NULL DEFAULT 0;
ALTER TABLE trials ADD COLUMN file TEXT;
ALTER TABLE trials ADD COLUMN line INTEGER;
CREATE TABLE set_results (
    run_id TEXT NOT NULL REFERENCES runs (run_id),
    set_name TEXT NOT NULL,
    passed INTEGER NOT NULL,
    graded INTEGER NOT NULL,
    rate REAL,
    threshold REAL NOT NULL,
    met INTEGER NOT NULL,
    other TEXT NOT NULL DEFAULT '{}',
    PRIMARY KEY (run_id, set_name)
);
CREATE INDEX IF NOT EXISTS runs_comparable ON runs (kind, signature, complete, started_at);
CREATE INDEX IF NOT EXISTS runs_by_model ON runs (agent_model, kind, complete, started_at);
"""


def _adding(columns: list[str]) -> Callable[[Any], object]:
    """The migration that adds `columns` (text) to the trials table."""

    def add(conn: Any) -> None:
        for column in columns:
            conn.execute(f"ALTER TABLE trials ADD COLUMN {column} TEXT")

    return add


MOVE_ASIDE = (
    "move the file aside (keep it for inspection) and the next run starts a new store; see "
    "docs/run-history.md"
)
"""What a message about a damaged store tells the user to do."""


@dataclass(frozen=True)
class StoreSchema:
    """The tables of the run store at `path` (its SQLite file, or its URL without the password
    when `pg` is its PostgreSQL database): `check` creates them in a new store, migrates an
    older one and refuses what is not a run store, on a connection (a write transaction unless
    `read_only`) the store opened."""

    path: Path | str
    read_only: bool = False
    pg: PostgresDatabase | None = None

    @property
    def _errors(self) -> tuple[type[BaseException], ...]:
        """The database errors a statement can raise."""
        return (sqlite3.Error,) + (self.pg.errors if self.pg is not None else ())

    @property
    def _lost(self) -> tuple[type[BaseException], ...]:
        """The errors of a lost connection (PostgreSQL), which the store tries again."""
        return self.pg.transient if self.pg is not None else ()

    def tables(self, conn: Any) -> set[str]:
        """The names of the database's tables (in the store's PostgreSQL schema)."""
        if self.pg is not None:
            return self.pg.tables(conn)
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def columns(self, conn: Any, table: str) -> set[str]:
        """The names of `table`'s columns."""
        if self.pg is not None:
            return set(self.pg.columns(conn, table))
        return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}

    def _damage(self, what: str) -> StoreError:
        return StoreError(f"{self.path}: run store damaged: {what}; {MOVE_ASIDE}")

    def _stored_version(self, conn: sqlite3.Connection) -> int:
        """meta.schema_version, or 1 for a schema 1 store that predates it."""
        try:
            rows = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        except self._errors as exc:
            raise self._damage(f"the meta table cannot be read ({exc})") from None
        if not rows:
            if "kind" in self.columns(conn, "runs"):
                # the runs table is schema 2: the version row was lost
                raise self._damage("the meta table has no schema_version row")
            return 1
        value = rows[0][0]
        try:
            version = int(str(value).strip())
        except ValueError:
            version = 0
        if version < 1:
            raise self._damage(
                f"meta.schema_version is {short_repr(value)}, not a schema version (1 to "
                f"{SCHEMA_VERSION})"
            )
        return version

    def _step(self, conn: Any, migrate: Callable[[Any], object], failure: str) -> None:
        """One migration: a lost connection is raised for the retry, any other failure is the
        store's damage, named by `failure` and the database's error."""
        try:
            migrate(conn)
        except self._lost:
            raise
        except self._errors as exc:
            raise self._damage(f"{failure} ({exc})") from None
        if self.pg is not None:
            self.pg.forget_tables()

    def check(self, conn: sqlite3.Connection) -> None:
        """Create the tables of a new store, migrate an older one to `SCHEMA_VERSION`, or raise
        a `StoreError` saying why the database is not a run store this plugin can use."""
        tables = self.tables(conn)
        if not tables and not self.read_only:
            # a new store; the write lock is held, so no other process races us
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            return
        if "verdicts" in tables and "runs" not in tables:
            raise StoreError(
                f"{self.path}: this schema holds a verdict store; give the run store a schema of "
                "its own (?schema=NAME, or none for commerce_runs)"
            )
        if "meta" not in tables or "runs" not in tables:
            raise StoreError(
                f"{self.path}: not a commerce-evals run store (tables: "
                f"{', '.join(sorted(tables)) or 'none'})"
            )
        version = self._stored_version(conn)
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: run store schema_version {version} is newer than this plugin's "
                f"{SCHEMA_VERSION}; upgrade pytest-commerce-evals or use another --commerce-store"
            )
        if version < SCHEMA_VERSION and self.read_only:
            raise StoreError(
                f"{self.path}: run store schema_version {version} must be migrated to "
                f"{SCHEMA_VERSION} before it can be read; run pytest once with write access "
                "to it"
            )
        if version < 2:
            self._step(
                conn,
                self._migrate_1_to_2,
                "meta.schema_version is 1 but the tables do not migrate to 2",
            )
        if version < 3:
            self._step(
                conn,
                self._migrate_2_to_3,
                f"meta.schema_version is {version} but the runs table does not migrate to 3",
            )
        for target, added in _ADDED_COLUMNS.items():
            if version >= target:
                continue
            present = self.columns(conn, "trials")
            wanted = [column for column in added if column not in present]
            if wanted:
                self._step(
                    conn,
                    _adding(wanted),
                    f"meta.schema_version is {version} but the trials table does not migrate "
                    f"to {target}",
                )
        if version < 8:
            self._step(
                conn,
                self._add_shard_tables,
                f"meta.schema_version is {version} but the shard tables cannot be added",
            )
        missing = {"trials", "set_results", *_SHARD_TABLES} - self.tables(conn)
        if missing:
            raise self._damage(f"table(s) {', '.join(sorted(missing))} missing")
        if version != SCHEMA_VERSION:
            conn.execute(
                "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
            )

    def _migrate_1_to_2(self, conn: sqlite3.Connection) -> None:
        for statement in _MIGRATE_1_TO_2.split(";"):
            if statement.strip():
                conn.execute(statement)
        for (run_id,) in conn.execute("SELECT run_id FROM runs").fetchall():
            trials = read_trials(conn, run_id, self.path)
            _, prints = judge_identity(trials)
            conn.execute(
                "UPDATE runs SET judge_fingerprints = ? WHERE run_id = ?",
                (json.dumps(prints), run_id),
            )
            write_sets(conn, run_id, set_results(trials))

    def _add_shard_tables(self, conn: Any) -> None:
        """Schema 8: the tables of a run recorded in shards (a table half-made is completed)."""
        present = self.tables(conn)
        for statement in _SCHEMA.split(";"):
            for table in _SHARD_TABLES:
                if statement.strip().startswith(f"CREATE TABLE {table} (") and table not in present:
                    conn.execute(statement)

    def _migrate_2_to_3(self, conn: sqlite3.Connection) -> None:
        """Schema 3 admits runs of kind `regrade`. PostgreSQL swaps the column's check; SQLite
        cannot alter a check, so its runs table is rebuilt with the same rows."""
        if self.pg is not None:
            conn.execute("ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_kind_check")
            conn.execute(
                "ALTER TABLE runs ADD CONSTRAINT runs_kind_check "
                "CHECK (kind IN ('regression', 'live', 'regrade'))"
            )
            return
        table = _SCHEMA.split("CREATE TABLE runs (", 1)[1].split(");", 1)[0]
        columns = ", ".join(self.columns(conn, "runs"))
        conn.execute(f"CREATE TABLE runs_v3 ({table})")
        conn.execute(f"INSERT INTO runs_v3 ({columns}) SELECT {columns} FROM runs")
        conn.execute("DROP TABLE runs")
        conn.execute("ALTER TABLE runs_v3 RENAME TO runs")
        for statement in _SCHEMA.split(";"):
            if statement.strip().startswith("CREATE INDEX"):
                conn.execute(statement)


# -- the JSON run record ---------------------------------------------------------------------


def _record_version(data: dict[str, Any], where: str) -> int:
    version = data.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise StoreError(
            f"{where}: key schema_version: expected an integer from 1 to {SCHEMA_VERSION}; "
            f"found {short_repr(version)}"
        )
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"{where}: schema_version {short_repr(version)} is newer than this plugin's "
            f"{SCHEMA_VERSION}; upgrade pytest-commerce-evals to read it"
        )
    return version


def migrate_record(data: dict[str, Any], where: str) -> dict[str, Any]:
    """A JSON run record's data (`--commerce-json`, read at `where`) brought up to
    `SCHEMA_VERSION`: schema 1 had no `kind` (every run a regression) and no judge fingerprints,
    and its `sets` are recomputed from the trials; a version this plugin cannot read is a
    `StoreError`."""
    if _record_version(data, where) < 2:
        data.setdefault("kind", "regression")
        data.setdefault("judge_fingerprints", [])
        data.pop("sets", None)  # recomputed from the trials once they are read
    data["schema_version"] = SCHEMA_VERSION
    return data
