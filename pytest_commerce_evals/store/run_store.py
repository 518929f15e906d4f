"""The run store: every eval run recorded in a folder holding one SQLite file.

    <store>/runs.sqlite          runs, trials and per-set results (WAL mode, busy timeout)
    <store>/unsaved-<run>.json   a run's record, written here only when the database failed

or in a PostgreSQL database named by a `postgresql://` URL: the same tables and statements,
through `store.database` (a lost connection is opened again and the operation tried again).

A run row is written (with `complete = 0`) before its first trial result is stored; trials are
written as they arrive, in small batches; `complete = 1` is set at the end of the session only when
the session was not interrupted. Several processes may write runs to one store at once: each
operation opens its own short connection and writes in `BEGIN IMMEDIATE` transactions.

The database and the JSON record (`--commerce-json`, `store.record_file`) share one
`SCHEMA_VERSION` (`runs`, with the record models); an older database is migrated when it
is opened (`store.schema`, which holds the tables and the schema history), an older JSON record
when it is read. How a run lies in the tables is `store.rows`.

Whatever a trial holds is written: a lone surrogate (half of a UTF-16 pair, which no UTF-8 file or
database takes) is written as the escape `\\udXXX`, and a value nested deeper than `MAX_DEPTH` is
kept as its JSON text. A reader never gets past a damaged record or store with anything but a
`StoreError` naming the file, the key or column, and what is wrong.
"""

from __future__ import annotations

import functools
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from ..errors import StoreError, StoreUnavailable
from ..results import RubricVerdict, TrialRecord, verdicts_from_json
from ..runs import RunRecord
from .aggregate import judge_identity, set_results
from .database import (
    DriverMissing,
    PostgresDatabase,
    describe,
    is_database_url,
    public_url,
)
from .identity import public_base_url, utc_now
from .record_file import clean_header, clean_trial
from .rows import DamagedRun, json_column, read_run, read_trials, trial_row, write_sets
from .schema import MOVE_ASIDE, StoreSchema

__all__ = ["DEFAULT_STORE_PATH", "RunStore", "damaged_lines"]

DEFAULT_STORE_PATH = Path(".commerce") / "runs"
"""Relative to the pytest rootdir unless an absolute path is configured."""
DB_NAME = "runs.sqlite"
PG_SCHEMA = "commerce_runs"
"""The PostgreSQL schema of a run store whose URL names none (`?schema=`)."""

_BUSY_TIMEOUT_S = 60.0

# text in the database that is not UTF-8 (written by another tool) is read with its bad bytes
# escaped as \\xNN instead of failing the whole query
_TEXT = functools.partial(str, encoding="utf-8", errors="backslashreplace")


def _folder_read_only(folder: Path) -> bool:
    """No write permission on the folder, or none for anyone (root ignores the mode bits)."""
    try:
        return not os.access(folder, os.W_OK) or not folder.stat().st_mode & 0o222
    except OSError:
        return True


class RunStore:
    """Runs, trials and set results in `<folder>/runs.sqlite`; safe under concurrent writers.

    Opening checks (and, for an older store, migrates) the schema; every failure to open, read or
    write raises `StoreError` naming the database file. `read_only=True` opens an existing store
    without writing anything (SQLite's `mode=ro`; `immutable=1` where the folder is read-only, as
    SQLite could not create its shared-memory file there): what `--commerce-compare` and the
    trend use.

    Reading skips what is damaged where it can: `runs()` leaves out a run whose row or set results
    do not decode, noting it in `damaged`; `load_run` of such a run raises a `StoreError` naming
    the run, the column and what is wrong.
    """

    def __init__(self, folder: str | Path, *, read_only: bool = False) -> None:
        self.read_only = read_only
        self._wal = False  # the file is in WAL mode, set by this writer (`_set_wal`)
        self.damaged: list[str] = []
        """What reading had to leave out, one message per damaged run or trial."""
        self.retries = 0
        """How many times an operation was tried again after the connection was lost."""
        self._pg: PostgresDatabase | None = None
        if is_database_url(folder):
            # a PostgreSQL database (and schema): `path` is its URL without the password
            url = str(folder).strip()
            self.url: str | None = url
            self.folder = None
            self.path: Path | str = public_url(url)
            try:
                self._pg = PostgresDatabase(url, schema=PG_SCHEMA, read_only=read_only)
            except DriverMissing as exc:
                raise StoreError(str(exc)) from None
            self._schema = StoreSchema(self.path, read_only=read_only, pg=self._pg)
            self._retry(self._open_database)
            return
        self.url = None
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        self._schema = StoreSchema(self.path, read_only=read_only)
        if read_only:
            if not self.path.is_file():
                raise StoreError(f"{self.path}: no run store here (no run has been recorded)")
            with self._connect() as conn:
                self._schema.check(conn)
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.folder}: cannot create the run store folder: {exc}") from None
        self._set_wal()
        with self._transaction() as conn:
            self._schema.check(conn)

    def __repr__(self) -> str:
        return f"RunStore({str(self.folder or self.path)!r})"

    @staticmethod
    def exists(target: str | Path) -> bool:
        """Whether a store may be there to read: a SQLite store's file exists (a database URL
        is always worth a try)."""
        return is_database_url(target) or (Path(target) / DB_NAME).exists()

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`: for the rare statement that must differ between the two
        (most SQL runs on both as written; see `store.database`)."""
        return "sqlite" if self._pg is None else "postgresql"

    @property
    def reconnects(self) -> int:
        """How many times a lost database connection was opened again (PostgreSQL)."""
        return self._pg.reconnects if self._pg is not None else 0

    def close(self) -> None:
        """Close the store's connections (PostgreSQL; a SQLite store holds none between
        operations)."""
        if self._pg is not None:
            self._pg.close()

    def _open_database(self) -> None:
        if self.read_only:
            with self._connect() as conn:
                if not {"meta", "runs"} & self._schema.tables(conn):
                    raise StoreError(f"{self.path}: no run store here (no run has been recorded)")
                self._schema.check(conn)
            return
        with self._transaction(lock=True) as conn:
            self._schema.check(conn)

    def _retry(self, work: Any) -> Any:
        """`work()`; on PostgreSQL tried again (after a wait, on a new connection) while the
        connection is lost, up to `len(RETRY_DELAYS_S)` more times. Every write is safe to
        repeat: it upserts on its key."""
        if self._pg is None:
            return work()

        def counted() -> None:
            self.retries += 1

        return self._pg.retry(work, lost=(StoreUnavailable,), retried=counted)

    def _set_wal(self) -> None:
        """WAL is a property of the file: set once, every later connection uses it. Two
        processes opening a new store at once can find it locked (changing the journal mode
        does not wait on the busy timeout), so that is tried again for a while. In WAL mode
        commits do not wait for the disk (`synchronous = NORMAL`): one survives the process
        being killed and the file stays whole; only a system crash can take back the last
        (docs/run-history.md). Without WAL every commit still waits for the disk."""
        deadline = time.monotonic() + _BUSY_TIMEOUT_S
        while True:
            try:
                with self._connect() as conn:
                    mode = conn.execute("PRAGMA journal_mode=WAL").fetchone()
                self._wal = bool(mode) and str(mode[0]).lower() == "wal"
                return
            except StoreError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    # connections -------------------------------------------------------------------------

    def _open(self) -> sqlite3.Connection:
        if not self.read_only:
            return sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
        # a SQLite store's: a file in its folder
        assert isinstance(self.path, Path) and self.folder is not None
        uri = self.path.resolve().as_uri() + "?mode=ro"
        if _folder_read_only(self.folder):
            uri += "&immutable=1"
        return sqlite3.connect(uri, uri=True, timeout=_BUSY_TIMEOUT_S, isolation_level=None)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if self._pg is not None:
            with self._database(self._pg.connect()) as conn:
                yield conn
            return
        try:
            with closing(self._open()) as conn:
                conn.row_factory = sqlite3.Row
                conn.text_factory = _TEXT
                conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
                if self._wal:
                    conn.execute("PRAGMA synchronous = NORMAL")
                yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: run store error: {exc}") from None
        except OverflowError as exc:  # an integer SQLite cannot hold (64 bits)
            raise StoreError(f"{self.path}: run store error: {exc}") from None
        except UnicodeDecodeError as exc:  # SQLite's own message quotes damaged schema text
            raise StoreError(
                f"{self.path}: run store error: the database's schema is damaged (SQLite "
                f"reported bytes that are not UTF-8: {exc.reason}); {MOVE_ASIDE}"
            ) from None

    @contextmanager
    def _database(self, opened: Any) -> Iterator[Any]:
        """A PostgreSQL connection or transaction, its failures as `StoreError` (a lost or
        refused connection: `StoreUnavailable`), the password never in a message."""
        assert self._pg is not None
        try:
            with opened as conn:
                yield conn
        except self._pg.transient as exc:
            raise StoreUnavailable(
                f"{self.path}: run store unreachable: {describe(exc, self.url)}"
            ) from None
        except self._pg.errors as exc:
            raise StoreError(f"{self.path}: run store error: {describe(exc, self.url)}") from None

    @contextmanager
    def _transaction(self, *, lock: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction that takes the write lock up front, so concurrent writers queue
        on the busy timeout instead of failing a lock upgrade. On PostgreSQL rows are locked as
        written; `lock` serialises the writers that create or migrate the tables."""
        if self._pg is not None:
            with self._database(self._pg.transaction(lock=lock)) as conn:
                yield conn
            return
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    # writing -----------------------------------------------------------------------------

    def begin_run(self, record: RunRecord) -> None:
        """Write the run row, marked incomplete; trials follow with `add_trials`."""
        record = clean_header(record)
        self._retry(lambda: self._begin_run(record))

    def _begin_run(self, record: RunRecord) -> None:
        # a run written again (a retried write, or a record imported over a run the store had
        # begun) replaces its row
        with self._transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO runs (run_id, kind, started_at, ended_at, complete, "
                "exit_status, git_commit, git_dirty, agent_model, agent_base_url, judge_model, "
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

    def add_trials(
        self,
        run_id: str,
        trials: Iterable[TrialRecord],
        rows: list[tuple[Any, ...]] | None = None,
    ) -> int:
        """Store trials (a case and trial stored again replaces the earlier one). A trial whose
        text SQLite cannot take is stored as `clean_trial` makes it. `rows`: the trials' rows
        (`rows.trial_row`, in order) where the caller made them already."""
        trials = list(trials)
        if not trials:
            return 0
        try:
            if rows is None or len(rows) != len(trials):
                rows = [trial_row(run_id, t) for t in trials]
            self._insert_trials(rows)
        except (UnicodeEncodeError, RecursionError, ValueError, TypeError):
            self._insert_trials([trial_row(run_id, clean_trial(t)) for t in trials])
        return len(trials)

    def _insert_trials(self, rows: list[tuple[Any, ...]]) -> None:
        self._retry(lambda: self._write_trials(rows))

    def _write_trials(self, rows: list[tuple[Any, ...]]) -> None:
        # keyed by (run_id, case_id, trial): a batch written again replaces itself, never adds
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO trials (run_id, case_id, trial, set_name, threshold, "
                "priority, difficulty, tags, outcome, failures, transcript, verdicts, trials, "
                "error, grader_results, messages, snapshot, duration_s, file, line, stopping, "
                "ended, calls, turn_s, cached, attack) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )

    def set_agent(self, run_id: str, model: str | None, base_url: str | None) -> None:
        """Name the run's agent once the run knows it: the label the user gave, or the model of
        the client a trial's agent asked the plugin for (None: neither)."""

        def write() -> None:
            with self._transaction() as conn:
                conn.execute(
                    "UPDATE runs SET agent_model = ?, agent_base_url = ? WHERE run_id = ?",
                    (model, public_base_url(base_url), run_id),
                )

        self._retry(write)

    def finish_run(
        self,
        run_id: str,
        *,
        complete: bool,
        exit_status: int | None,
        ended_at: str | None = None,
        baseline: str | None = None,
        trials: list[TrialRecord] | None = None,
        not_started: Iterable[tuple[str, float]] = (),
    ) -> RunRecord:
        """Close a run: set results and the judge identity from its trials, the end time, and
        `complete` (false for an interrupted run). Returns the stored record.

        `trials`: every trial of the run as the caller added them, so they need not be read
        back twice (a case and trial added twice counts once, the last, as stored); by default
        they are read from the store."""
        self._retry(
            lambda: self._finish_run(
                run_id, complete, exit_status, ended_at, baseline, trials, not_started
            )
        )
        if trials is None:
            return self.load_run(run_id)
        # the run as stored, its trials the caller's (read back, a thousand trials cost 0.2 s
        # of CPU at the end of every run): as the store orders them, the last of a repeat
        kept = {(t.case_id, t.trial): t for t in trials}.values()
        ordered = sorted(kept, key=lambda t: (t.set_name, t.case_id, t.trial))
        return self.load_run(run_id, with_trials=False).model_copy(update={"trials": ordered})

    def _finish_run(
        self,
        run_id: str,
        complete: bool,
        exit_status: int | None,
        ended_at: str | None,
        baseline: str | None,
        trials: list[TrialRecord] | None,
        not_started: Iterable[tuple[str, float]] = (),
    ) -> None:
        with self._transaction() as conn:
            if trials is None:
                trials = read_trials(conn, run_id, self.path)
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
            write_sets(conn, run_id, set_results(trials, not_started))

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

    def load_run(self, run_id: str, *, with_trials: bool = True) -> RunRecord:
        return self._retry(lambda: self._load_run(run_id, with_trials))

    def _load_run(self, run_id: str, with_trials: bool) -> RunRecord:
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no run {run_id!r}")
            return read_run(conn, row, with_trials, self.path)

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
        """Runs without their trials, newest first, filtered by the given fields. A run whose
        row does not decode is left out and noted in `damaged`."""
        where: list[str] = []
        args: list[Any] = []
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
        return self._retry(lambda: self._select_runs(query, args, limit))

    def _select_runs(self, query: str, args: list[Any], limit: int | None) -> list[RunRecord]:
        out: list[RunRecord] = []
        with self._connect() as conn:
            for row in conn.execute(query, args):
                if limit is not None and len(out) >= limit:
                    break
                try:
                    out.append(read_run(conn, row, False, self.path))
                except DamagedRun as exc:
                    self._note(exc)
        return out

    def _note(self, exc: StoreError) -> None:
        if str(exc) not in self.damaged:
            self.damaged.append(str(exc))

    def verdicts(self, run_id: str) -> list[RubricVerdict]:
        """Every judge verdict of a run, without loading its transcripts (for live trends); a
        trial whose verdicts do not decode is left out and noted in `damaged`."""
        out: list[RubricVerdict] = []
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT case_id, trial, verdicts FROM trials WHERE run_id = ?", (run_id,)
            )
            for case_id, trial, raw in rows:
                where = f"run {run_id}, case {case_id!r:.80} trial {trial!r}"
                try:
                    found = json_column(raw or "[]", "trials.verdicts", where, self.path)
                except DamagedRun as exc:
                    self._note(exc)
                    continue
                try:
                    out += verdicts_from_json(found)
                except ValueError:
                    self._note(
                        DamagedRun(
                            f"{self.path}: {where}: column trials.verdicts is not a list of "
                            "verdicts"
                        )
                    )
        return out

    def previous_comparable(self, record: RunRecord) -> RunRecord | None:
        """The latest complete run of the same kind and selection, started before `record`; a
        damaged one is passed over (and noted in `damaged`) for the one before it."""
        for candidate in self.runs(
            kind=record.kind, complete=True, signature=record.signature, exclude=record.run_id
        ):
            if candidate.started_at <= record.started_at:
                try:
                    return self.load_run(candidate.run_id)
                except DamagedRun as exc:
                    self._note(exc)
        return None

    def comparable_runs(self, record: RunRecord, *, limit: int | None = None) -> list[RunRecord]:
        """Runs comparable with `record`, newest first, without their trials: complete, of the
        same kind and the same agent model (both unnamed counts as the same), started no later
        than it, other than it. Their selections and trial counts may differ: what a run says
        about a case is its counts (see `case_counts`). A damaged row is left out and noted."""
        where = ["kind = ?", "complete = ?", "run_id != ?", "started_at <= ?"]
        args: list[Any] = [record.kind, 1, record.run_id, record.started_at]
        if record.agent_model is None:
            where.append("agent_model IS NULL")
        else:
            where.append("agent_model = ?")
            args.append(record.agent_model)
        query = (
            "SELECT * FROM runs WHERE "
            + " AND ".join(where)
            + " ORDER BY started_at DESC, run_id DESC"
        )
        return self._retry(lambda: self._select_runs(query, args, limit))

    def case_counts(self, run_id: str) -> dict[str, tuple[int, int]]:
        """Each case of a run as (passed, graded): its pass and its pass-or-fail trials."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT case_id, SUM(CASE WHEN outcome = 'pass' THEN 1 ELSE 0 END), "
                "SUM(CASE WHEN outcome IN ('pass', 'fail') THEN 1 ELSE 0 END) "
                "FROM trials WHERE run_id = ? GROUP BY case_id",
                (run_id,),
            ).fetchall()
        return {str(r[0]): (int(r[1] or 0), int(r[2] or 0)) for r in rows}

    def latest_for_model(self, model: str, kind: str = "regression") -> RunRecord | None:
        """The model's latest complete run of `kind`; a damaged one is passed over."""
        for candidate in self.runs(kind=kind, complete=True, agent_model=model):
            try:
                return self.load_run(candidate.run_id)
            except DamagedRun as exc:
                self._note(exc)
        return None

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


def damaged_lines(store: RunStore) -> list[tuple[str, dict[str, bool]]]:
    """What reading the store had to leave out, as summary lines."""
    found = store.damaged
    out = [
        (
            f"run store {store.path}: {len(found)} damaged run(s) or trial(s) left out; the "
            "other runs were read",
            {"yellow": True, "bold": True},
        )
    ]
    out += [(f"  {line}", {"yellow": True}) for line in found[:5]]
    if len(found) > 5:
        out.append((f"  … and {len(found) - 5} more", {"yellow": True}))
    return out
