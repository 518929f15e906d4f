"""The run store: every eval run recorded in a folder holding one SQLite file.

    <store>/runs.sqlite          runs, trials and per-set results (WAL mode, busy timeout)
    <store>/unsaved-<run>.json   a run's record, written here only when the database failed

A run row is written (with `complete = 0`) before its first trial result is stored; trials are
written as they arrive, in small batches; `complete = 1` is set at the end of the session only when
the session was not interrupted. Several processes may write runs to one store at once: each
operation opens its own short connection and writes in `BEGIN IMMEDIATE` transactions.

The database and the JSON record (`--commerce-json`) share one `SCHEMA_VERSION`; an older database
is migrated when it is opened, an older JSON record when it is read.

Schema history:
  1  runs (no `kind`, no judge fingerprints, no exit status or options) and trials (no error,
     grader results, snapshot, turn messages, duration or location).
  2  adds `runs.kind` ('regression' | 'live'), `runs.judge_fingerprints`, `runs.exit_status`,
     `runs.options`, the missing trial columns, and the `set_results` table (backfilled from the
     trials of every stored run).
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import subprocess
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "DEFAULT_STORE_PATH",
    "SCHEMA_VERSION",
    "RunRecord",
    "RunStore",
    "Selection",
    "SetResult",
    "StoreError",
    "StoredTrial",
    "git_state",
    "load_record",
    "new_run_id",
    "public_base_url",
    "set_results",
    "trial_from_record",
    "write_record",
]

SCHEMA_VERSION = 2
DEFAULT_STORE_PATH = Path(".commerce") / "runs"
"""Relative to the pytest rootdir unless an absolute path is configured."""
DB_NAME = "runs.sqlite"

_BUSY_TIMEOUT_S = 60.0
RunKind = Literal["regression", "live"]


class StoreError(Exception):
    """The run store cannot be opened, read or written; the message names the file."""


# -- records ----------------------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Selection(_Record):
    """What a run selected; runs with the same selection (and kind) are comparable."""

    args: list[str] = Field(default_factory=list)
    keyword: str | None = None
    markexpr: str | None = None
    trials: int = 1

    @property
    def signature(self) -> str:
        """Case paths, `-k`, `-m` and trials per case, as one stable string."""
        return json.dumps(
            {
                "args": sorted(self.args),
                "k": self.keyword or "",
                "m": self.markexpr or "",
                "trials": self.trials,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    def describe(self) -> str:
        parts = [" ".join(self.args) or "(default paths)"]
        if self.keyword:
            parts.append(f"-k {self.keyword!r}")
        if self.markexpr:
            parts.append(f"-m {self.markexpr!r}")
        parts.append(f"{self.trials} trial{'s' if self.trials != 1 else ''} per case")
        return ", ".join(parts)


class StoredTrial(_Record):
    """One finished trial as stored: outcome, why it failed, and the full event transcript."""

    case_id: str
    trial: int
    trials: int = 1
    set_name: str
    threshold: float
    priority: str
    difficulty: str
    tags: list[str] = Field(default_factory=list)
    outcome: str
    failures: list[str] = Field(default_factory=list)
    error: str | None = None
    grader_results: list[dict[str, Any]] = Field(default_factory=list)
    verdicts: list[dict[str, Any]] = Field(default_factory=list)
    turns: list[list[dict[str, Any]]] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    snapshot: dict[str, Any] | None = None
    duration_s: float = 0.0
    file: str | None = None
    line: int | None = None


class SetResult(_Record):
    """A set's pass rate over graded trials against its threshold."""

    name: str
    passed: int
    graded: int
    rate: float | None
    threshold: float
    met: bool
    other: dict[str, int] = Field(default_factory=dict)


class RunRecord(_Record):
    """A whole run: what the database holds for it and what `--commerce-json` writes."""

    schema_version: int = SCHEMA_VERSION
    run_id: str
    kind: RunKind = "regression"
    started_at: str
    ended_at: str | None = None
    complete: bool = False
    exit_status: int | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None
    agent_model: str | None = None
    agent_base_url: str | None = None
    judge_model: str | None = None
    judge_fingerprints: list[str] = Field(default_factory=list)
    selection: Selection = Field(default_factory=Selection)
    options: dict[str, Any] = Field(default_factory=dict)
    baseline: str | None = None
    sets: list[SetResult] = Field(default_factory=list)
    trials: list[StoredTrial] = Field(default_factory=list)

    @property
    def signature(self) -> str:
        return self.selection.signature


# -- building records -------------------------------------------------------------------------


def new_run_id(now: datetime | None = None) -> str:
    """Sortable by start time, unique across processes: `20250101-120301-3f9a2c`."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def public_base_url(url: str | None) -> str | None:
    """The base URL without credentials, query or fragment: nothing secret is ever stored."""
    if not url:
        return None
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def git_state(path: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the repository holding `path`; (None, None) without git or a repo.

    Dirty means tracked files differ from the commit; untracked files do not count.
    """

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(path), *args],
                capture_output=True,
                text=True,
                timeout=10,
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit.strip(), (bool(status.strip()) if status is not None else None)


def _failures(record: dict[str, Any]) -> list[str]:
    out = [g["message"] for g in record.get("grader_results") or [] if not g.get("passed")]
    if record.get("error"):
        out.append(str(record["error"]).strip())
    for v in record.get("verdicts") or []:
        if v.get("outcome") == "fail":
            out.append(f"rubric {v.get('dimension')}: FAIL — {v.get('reasoning', '')}")
        elif v.get("outcome") in ("judge_error", "infra_error"):
            out.append(f"rubric {v.get('dimension')}: {v.get('outcome')} — {v.get('error')}")
    return out


def trial_from_record(record: dict[str, Any], messages: Iterable[str] = ()) -> StoredTrial:
    """A `pytest_commerce_evals_trial_recorded` record as a stored trial (unknown keys dropped)."""
    return StoredTrial(
        case_id=record["case_id"],
        trial=record["trial"],
        trials=record.get("trials", 1),
        set_name=record["set_name"],
        threshold=record["threshold"],
        priority=record["priority"],
        difficulty=record["difficulty"],
        tags=list(record.get("tags") or []),
        outcome=record["outcome"],
        failures=_failures(record),
        error=record.get("error"),
        grader_results=list(record.get("grader_results") or []),
        verdicts=list(record.get("verdicts") or []),
        turns=[list(turn) for turn in record.get("turns") or []],
        messages=list(messages),
        snapshot=record.get("snapshot"),
        duration_s=float(record.get("duration_s") or 0.0),
        file=record.get("file"),
        line=record.get("line"),
    )


def set_results(trials: Iterable[StoredTrial]) -> list[SetResult]:
    """Per-set pass rates over graded (pass or fail) trials, with the same rule as the exit
    status: a set with nothing graded is met only when all its trials were skipped."""
    groups: dict[str, dict[str, Any]] = {}
    for t in trials:
        g = groups.setdefault(
            t.set_name, {"passed": 0, "graded": 0, "threshold": t.threshold, "other": {}}
        )
        if t.outcome in ("pass", "fail"):
            g["graded"] += 1
            g["passed"] += t.outcome == "pass"
        else:
            g["other"][t.outcome] = g["other"].get(t.outcome, 0) + 1
    out = []
    for name in sorted(groups):
        g = groups[name]
        rate = g["passed"] / g["graded"] if g["graded"] else None
        if rate is None:
            met = not any(n for o, n in g["other"].items() if o != "skipped")
        else:
            met = rate + 1e-12 >= g["threshold"]
        out.append(
            SetResult(
                name=name,
                passed=g["passed"],
                graded=g["graded"],
                rate=rate,
                threshold=g["threshold"],
                met=met,
                other=g["other"],
            )
        )
    return out


def judge_identity(trials: Iterable[StoredTrial]) -> tuple[str | None, list[str]]:
    """The judge model and the sorted judge fingerprints found in the trials' verdicts."""
    models: list[str] = []
    prints: set[str] = set()
    for t in trials:
        for v in t.verdicts:
            if v.get("judge_model") and v["judge_model"] not in models:
                models.append(v["judge_model"])
            if v.get("judge_fingerprint"):
                prints.add(v["judge_fingerprint"])
    return (", ".join(models) or None), sorted(prints)


# -- JSON records -----------------------------------------------------------------------------


def _migrate_record(data: dict[str, Any], where: str) -> dict[str, Any]:
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise StoreError(
            f"{where}: schema_version {version!r} is newer than this plugin's {SCHEMA_VERSION}; "
            "upgrade pytest-commerce-evals to read it"
        )
    if version < 2:
        data.setdefault("kind", "regression")
        data.setdefault("judge_fingerprints", [])
        data.pop("sets", None)  # recomputed below from the trials
    data["schema_version"] = SCHEMA_VERSION
    if not data.get("sets"):
        trials = [StoredTrial.model_validate(t) for t in data.get("trials") or []]
        data["sets"] = [s.model_dump() for s in set_results(trials)]
    return data


def load_record(path: str | Path) -> RunRecord:
    """Read a run record written by `--commerce-json` (older schemas are migrated)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StoreError(f"{path}: cannot read a run record: {exc}") from None
    if not isinstance(data, dict):
        raise StoreError(f"{path}: a run record is a JSON object; found {type(data).__name__}")
    try:
        return RunRecord.model_validate(_migrate_record(data, str(path)))
    except ValidationError as exc:
        raise StoreError(f"{path}: not a commerce-evals run record: {exc}") from None


def write_record(record: RunRecord, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(record.model_dump_json(indent=1), encoding="utf-8")
    tmp.replace(path)
    return path


# -- the database -----------------------------------------------------------------------------

_SCHEMA_V2 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL DEFAULT 'regression' CHECK (kind IN ('regression', 'live')),
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
"""

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

_RUN_JSON = ("judge_fingerprints", "selection", "options")
_TRIAL_JSON = {
    "tags": "tags",
    "failures": "failures",
    "transcript": "turns",
    "verdicts": "verdicts",
    "grader_results": "grader_results",
    "messages": "messages",
    "snapshot": "snapshot",
}


class RunStore:
    """Runs, trials and set results in `<folder>/runs.sqlite`; safe under concurrent writers.

    Opening checks (and, for an older store, migrates) the schema; every failure to open, read or
    write raises `StoreError` naming the database file.
    """

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.folder}: cannot create the run store folder: {exc}") from None
        self._set_wal()
        with self._transaction() as conn:
            self._check_schema(conn)

    def __repr__(self) -> str:
        return f"RunStore({str(self.folder)!r})"

    def _set_wal(self) -> None:
        """WAL is a property of the file: set once, every later connection uses it. Two
        processes opening a new store at once can find it locked (changing the journal mode
        does not wait on the busy timeout), so that is tried again for a while."""
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        while True:
            try:
                with self._connect() as conn:
                    conn.execute("PRAGMA journal_mode=WAL")
                return
            except StoreError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    # connections -------------------------------------------------------------------------

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            with closing(
                sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
            ) as conn:
                conn.row_factory = sqlite3.Row
                conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: run store error: {exc}") from None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock up front, so concurrent writers queue
        on the busy timeout instead of failing a lock upgrade."""
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:  # a new store; the write lock is held, so no other process races us
            for statement in _SCHEMA_V2.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
            return
        if "meta" not in tables or "runs" not in tables:
            raise StoreError(
                f"{self.path}: not a commerce-evals run store (tables: {', '.join(sorted(tables))})"
            )
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        version = int(row[0]) if row else 1
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: run store schema_version {version} is newer than this plugin's "
                f"{SCHEMA_VERSION}; upgrade pytest-commerce-evals or use another --commerce-store"
            )
        if version < 2:
            self._migrate_1_to_2(conn)
        conn.execute(
            "INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),)
        )

    def _migrate_1_to_2(self, conn: sqlite3.Connection) -> None:
        for statement in _MIGRATE_1_TO_2.split(";"):
            if statement.strip():
                conn.execute(statement)
        for (run_id,) in conn.execute("SELECT run_id FROM runs").fetchall():
            trials = self._trials(conn, run_id)
            _, prints = judge_identity(trials)
            conn.execute(
                "UPDATE runs SET judge_fingerprints = ? WHERE run_id = ?",
                (json.dumps(prints), run_id),
            )
            self._write_sets(conn, run_id, set_results(trials))

    # writing -----------------------------------------------------------------------------

    def begin_run(self, record: RunRecord) -> None:
        """Write the run row, marked incomplete; trials follow with `add_trials`."""
        with self._transaction() as conn:
            conn.execute(
                "INSERT INTO runs (run_id, kind, started_at, ended_at, complete, exit_status, "
                "git_commit, git_dirty, agent_model, agent_base_url, judge_model, "
                "judge_fingerprints, selection, signature, options, baseline) "
                "VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.run_id,
                    record.kind,
                    record.started_at,
                    record.ended_at,
                    record.exit_status,
                    record.git_commit,
                    None if record.git_dirty is None else int(record.git_dirty),
                    record.agent_model,
                    public_base_url(record.agent_base_url),
                    record.judge_model,
                    json.dumps(record.judge_fingerprints),
                    record.selection.model_dump_json(),
                    record.signature,
                    json.dumps(record.options),
                    record.baseline,
                ),
            )

    def add_trials(self, run_id: str, trials: Iterable[StoredTrial]) -> int:
        rows = [
            (
                run_id,
                t.case_id,
                t.trial,
                t.set_name,
                t.threshold,
                t.priority,
                t.difficulty,
                json.dumps(t.tags),
                t.outcome,
                json.dumps(t.failures, ensure_ascii=False),
                json.dumps(t.turns, ensure_ascii=False),
                json.dumps(t.verdicts, ensure_ascii=False),
                t.trials,
                t.error,
                json.dumps(t.grader_results, ensure_ascii=False, default=str),
                json.dumps(t.messages, ensure_ascii=False),
                json.dumps(t.snapshot, ensure_ascii=False) if t.snapshot is not None else None,
                t.duration_s,
                t.file,
                t.line,
            )
            for t in trials
        ]
        if not rows:
            return 0
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO trials (run_id, case_id, trial, set_name, threshold, "
                "priority, difficulty, tags, outcome, failures, transcript, verdicts, trials, "
                "error, grader_results, messages, snapshot, duration_s, file, line) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
        return len(rows)

    def finish_run(
        self,
        run_id: str,
        *,
        complete: bool,
        exit_status: int | None,
        ended_at: str | None = None,
        baseline: str | None = None,
        trials: list[StoredTrial] | None = None,
    ) -> RunRecord:
        """Close a run: set results and the judge identity from its trials, the end time, and
        `complete` (false for an interrupted run). Returns the stored record.

        `trials`: every trial of the run as the caller added them, so they need not be read
        back twice (a case and trial added twice counts once, the last, as stored); by default
        they are read from the store."""
        with self._transaction() as conn:
            if trials is None:
                trials = self._trials(conn, run_id)
            else:
                trials = list({(t.case_id, t.trial): t for t in trials}.values())
            judge_model, prints = judge_identity(trials)
            conn.execute(
                "UPDATE runs SET ended_at = ?, complete = ?, exit_status = ?, judge_model = ?, "
                "judge_fingerprints = ?, baseline = ? WHERE run_id = ?",
                (
                    ended_at or utc_now(),
                    int(complete),
                    exit_status,
                    judge_model,
                    json.dumps(prints),
                    baseline,
                    run_id,
                ),
            )
            self._write_sets(conn, run_id, set_results(trials))
        return self.load_run(run_id)

    @staticmethod
    def _write_sets(conn: sqlite3.Connection, run_id: str, sets: list[SetResult]) -> None:
        conn.execute("DELETE FROM set_results WHERE run_id = ?", (run_id,))
        conn.executemany(
            "INSERT INTO set_results VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run_id,
                    s.name,
                    s.passed,
                    s.graded,
                    s.rate,
                    s.threshold,
                    int(s.met),
                    json.dumps(s.other),
                )
                for s in sets
            ],
        )

    def import_record(self, record: RunRecord) -> None:
        """Store a whole record (e.g. one written aside while the store was unusable)."""
        self.begin_run(record)
        self.add_trials(record.run_id, record.trials)
        self.finish_run(
            record.run_id,
            trials=list(record.trials),
            complete=record.complete,
            exit_status=record.exit_status,
            ended_at=record.ended_at,
            baseline=record.baseline,
        )

    # reading -----------------------------------------------------------------------------

    @staticmethod
    def _trials(conn: sqlite3.Connection, run_id: str) -> list[StoredTrial]:
        rows = conn.execute(
            "SELECT * FROM trials WHERE run_id = ? ORDER BY set_name, case_id, trial", (run_id,)
        ).fetchall()
        out = []
        for row in rows:
            data = dict(row)
            data.pop("run_id")
            for column, field in _TRIAL_JSON.items():
                raw = data.pop(column)
                data[field] = json.loads(raw) if raw is not None else None
            out.append(StoredTrial.model_validate(data))
        return out

    def _record(self, conn: sqlite3.Connection, row: sqlite3.Row, with_trials: bool) -> RunRecord:
        data = dict(row)
        data.pop("signature")
        for column in _RUN_JSON:
            data[column] = json.loads(data[column])
        data["complete"] = bool(data["complete"])
        data["git_dirty"] = None if data["git_dirty"] is None else bool(data["git_dirty"])
        sets = conn.execute(
            "SELECT * FROM set_results WHERE run_id = ? ORDER BY set_name", (data["run_id"],)
        ).fetchall()
        data["sets"] = [
            dict(
                dict(s)
                | {"name": s["set_name"], "met": bool(s["met"]), "other": json.loads(s["other"])}
            )
            for s in sets
        ]
        for s in data["sets"]:
            s.pop("run_id"), s.pop("set_name")
        if with_trials:
            data["trials"] = self._trials(conn, data["run_id"])
        return RunRecord.model_validate(data)

    def load_run(self, run_id: str, *, with_trials: bool = True) -> RunRecord:
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no run {run_id!r}")
            return self._record(conn, row, with_trials)

    def runs(
        self,
        *,
        kind: str | None = None,
        complete: bool | None = None,
        signature: str | None = None,
        agent_model: str | None = None,
        exclude: str | None = None,
        limit: int | None = None,
    ) -> list[RunRecord]:
        """Runs without their trials, newest first, filtered by the given fields."""
        where, args = [], []
        for column, value in (
            ("kind", kind),
            ("signature", signature),
            ("agent_model", agent_model),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if complete is not None:
            where.append("complete = ?")
            args.append(int(complete))
        if exclude is not None:
            where.append("run_id != ?")
            args.append(exclude)
        query = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        query += " ORDER BY started_at DESC, run_id DESC"
        if limit is not None:
            query += f" LIMIT {int(limit)}"
        with self._connect() as conn:
            return [self._record(conn, row, False) for row in conn.execute(query, args)]

    def verdicts(self, run_id: str) -> list[dict[str, Any]]:
        """Every judge verdict of a run, without loading its transcripts (for live trends)."""
        out: list[dict[str, Any]] = []
        with self._connect() as conn:
            for (raw,) in conn.execute("SELECT verdicts FROM trials WHERE run_id = ?", (run_id,)):
                out += json.loads(raw or "[]")
        return out

    def previous_comparable(self, record: RunRecord) -> RunRecord | None:
        """The latest complete run of the same kind and selection, started before `record`."""
        for candidate in self.runs(
            kind=record.kind, complete=True, signature=record.signature, exclude=record.run_id
        ):
            if candidate.started_at <= record.started_at:
                return self.load_run(candidate.run_id)
        return None

    def latest_for_model(self, model: str, kind: str = "regression") -> RunRecord | None:
        found = self.runs(kind=kind, complete=True, agent_model=model, limit=1)
        return self.load_run(found[0].run_id) if found else None

    def models(self) -> list[str]:
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT DISTINCT agent_model FROM runs WHERE complete = 1 AND agent_model IS NOT "
                "NULL ORDER BY agent_model"
            ).fetchall()
        return [r[0] for r in rows]

    def find(self, ref: str) -> RunRecord | None:
        """A run by its id or a unique prefix of it (at least 8 characters)."""
        with self._connect() as conn:
            row = conn.execute("SELECT run_id FROM runs WHERE run_id = ?", (ref,)).fetchone()
            if row is None and len(ref) >= 8:
                rows = conn.execute(
                    "SELECT run_id FROM runs WHERE substr(run_id, 1, ?) = ?", (len(ref), ref)
                ).fetchall()
                if len(rows) > 1:
                    raise StoreError(
                        f"{self.path}: {ref!r} matches {len(rows)} runs: "
                        + ", ".join(r[0] for r in rows[:5])
                    )
                row = rows[0] if rows else None
        return self.load_run(row[0]) if row else None
