"""The verdict store: judge verdicts kept in SQLite, reused only when nothing they depend on moved.

A verdict is keyed by three hashes: the rendered transcript the judge read, the judge fingerprint
(model id, prompt template, parameters) and the rubric fingerprint (dimension name, rubric text).
A lookup hits only when all three match, so a new judge model or an edited rubric never reuses an
old verdict. Only real verdicts (PASS or FAIL) are stored; a judge or infrastructure error is
always retried on the next run.

Calibration results are kept beside the verdicts, in `calibrations`: one row per judge
fingerprint, dimension and calibration set, holding the number of labels, the agreement and
Cohen's kappa. `calibration(fingerprint)` reads the newest row of each dimension back; a
regression run looks the judge in use up there (see `judge.calibrated`).

Simulated customers' replies are kept beside them, in `replies`: one row per key (the hash of the
simulator's model, prompt and the conversation so far), so an unchanged agent meets the same
customer on the next run without a model call (`customer.simulator`).

The tables, their row models and the schema history are in `verdict_rows`.

A damaged store is named when opened (a meta table that does not say a known schema); a row that no
longer reads as a verdict is a miss, asked again and written over. Text a judge wrote with a lone
surrogate is stored with it escaped (`\\udXXX`).

Several pytest-xdist workers may write at once: the database runs in WAL mode with a busy
timeout, and writes are single statements. Each process and thread keeps one connection of its
own (a forked child opens a new one, never touching the parent's); `close()` closes them, and so
does garbage collection of the store.

A `postgresql://` URL (see `store.database`) keeps the verdicts in PostgreSQL instead: the same
table and statements, one connection per process and thread, and a lookup or write whose
connection was lost is tried again on a new one.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar, cast

from pydantic import ValidationError

from ..errors import DriverMissing
from ..jsonsafe import printable
from ..results import RubricVerdict
from ..store.database import (
    PostgresConnection,
    PostgresDatabase,
    describe,
    is_database_url,
    public_url,
)
from .verdict_rows import (
    SCHEMA,
    SCHEMA_VERSION,
    StoredCalibration,
    StoredVerdict,
    read_row,
)

__all__ = [
    "DEFAULT_STORE_PATH",
    "SCHEMA_VERSION",
    "StoredCalibration",
    "StoredVerdict",
    "VerdictStore",
    "copy_verdicts",
]

DEFAULT_STORE_PATH = Path(".commerce") / "verdicts.sqlite"
"""Relative to the pytest rootdir unless an absolute path is configured."""

_BUSY_TIMEOUT_S = 60.0
PG_SCHEMA = "commerce_verdicts"
"""The PostgreSQL schema of a verdict store whose URL names none (`?schema=`)."""
_PG_LOCK = 0x76657264  # the advisory lock writers hold while they create the tables
T = TypeVar("T")

RECONNECT_AFTER_S = 30.0
"""How long a PostgreSQL verdict store whose server went away waits before trying it again: one
connection attempt each time, so a trial waits at most one connect timeout for it."""


class VerdictStore:
    """SQLite-backed verdicts, safe under several writing processes."""

    def __init__(self, path: str | Path) -> None:
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[tuple[int, sqlite3.Connection]] = []  # (pid, connection)
        self._pg: PostgresDatabase | None = None
        self.url: str | None = None
        if is_database_url(path):
            self.url = str(path).strip()
            self.path: Path | str = public_url(self.url)
            try:
                self._pg = PostgresDatabase(self.url, schema=PG_SCHEMA)
            except DriverMissing as exc:
                raise ValueError(str(exc)) from None
        else:
            self.path = Path(path)
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.unavailable: str | None = None
        """Why a PostgreSQL store's server cannot be reached (None while it can): every lookup
        is then a miss and every write is skipped, so the judge runs as without a store, until
        a try to reconnect (at most every RECONNECT_AFTER_S) succeeds."""
        self.outage: str | None = None
        """The first time the server could not be reached, for the run's summary."""
        self.missed = 0
        """Lookups that could not be made while the server was away: verdicts the judge was
        asked for instead of reused (or found missing)."""
        self.unstored = 0
        """Verdicts (and calibrations) not kept while the server was away."""
        self.reconnected = 0
        self._retry_at = 0.0
        errors: tuple[type[BaseException], ...] = (
            sqlite3.Error,
            UnicodeDecodeError,
            *(self._pg.errors if self._pg else ()),
        )
        try:
            found = self._retry(self._create)
        except tuple(self._pg.transient if self._pg else ()) as exc:
            self._lost(exc)
            return
        except errors as exc:  # a message quoting damaged bytes
            self.close()
            if self._pg is not None:
                raise ValueError(
                    f"{self.path}: verdict store unusable "
                    f"({describe(exc, self.url)}); it only caches verdicts: point "
                    "--commerce-judge-store at another schema or database"
                ) from None
            raise ValueError(
                f"{self.path}: verdict store damaged or unreadable ({exc}); it only caches "
                "verdicts: move it aside and the next run starts a new one"
            ) from None
        try:
            version = int(str(found[0]).strip())
        except ValueError:
            version = 0
        if version < 1:
            raise ValueError(
                f"{self.path}: verdict store damaged: meta.schema_version is {found[0]!r:.40}, "
                f"not a schema version (1 to {SCHEMA_VERSION}); it only caches verdicts: move "
                "it aside and the next run starts a new one"
            )
        if version > SCHEMA_VERSION:
            raise ValueError(
                f"{self.path}: verdict store schema_version {found[0]} is newer than this "
                f"plugin's {SCHEMA_VERSION}"
            )
        if version < SCHEMA_VERSION:
            self._migrate_store(version)

    def _migrate_store(self, version: int) -> None:
        """Bring an older store up to `SCHEMA_VERSION`: the `calibrations` (2) and `replies` (3)
        tables are made by the schema script (`verdict_rows.SCHEMA`), which creates only what is
        missing; this sets the version."""
        with self._connect() as conn:
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = 'schema_version' AND value = ?",
                (str(SCHEMA_VERSION), str(version)),
            )

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`: for the rare statement that must differ between the two
        (most SQL runs on both as written; see `store.database`)."""
        return "sqlite" if self._pg is None else "postgresql"

    def _lost(self, exc: BaseException) -> None:
        self.close()
        self.unavailable = f"{self.path}: verdict store unreachable: {describe(exc, self.url)}"
        self.outage = self.outage or self.unavailable
        self._retry_at = time.monotonic() + RECONNECT_AFTER_S

    def _available(self) -> bool:
        """Whether the store can be used now: always for SQLite; for PostgreSQL while its server
        answers, and again once a single try to reconnect (with its tables made if missing)
        succeeds, at most every RECONNECT_AFTER_S while it is away."""
        if self.unavailable is None:
            return True
        if self._pg is None or time.monotonic() < self._retry_at:
            return False
        try:
            self._create()
        except self._pg.transient as exc:
            self._lost(exc)
            return False
        self.unavailable = None
        self.reconnected += 1
        return True

    def _retry(self, work: Callable[[], T]) -> T:
        """`work()`; on PostgreSQL tried again on a new connection while the connection is lost
        (`store.database.RETRY_DELAYS_S`). Every statement here is safe to repeat."""
        if self._pg is None:
            return work()
        return self._pg.retry(work)

    def _create(self) -> Any:
        with self._connect() as conn:
            if self._pg is not None:
                # writers creating the tables at once queue on one lock
                conn.execute("SELECT pg_advisory_xact_lock(?)", (_PG_LOCK,))
                # a PostgreSQL store's connections are PostgresConnections (_connection)
                if self._pg.tables(cast(PostgresConnection, conn)) & {"runs", "trials"}:
                    raise ValueError(
                        f"{self.path}: this schema holds a run store; give the verdict store a "
                        "schema of its own (?schema=NAME, or none for commerce_verdicts)"
                    )
            else:
                # WAL is a property of the file: set once, every later connection uses it.
                conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                (str(SCHEMA_VERSION),),
            )
            return conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()

    def __repr__(self) -> str:
        return f"VerdictStore({str(self.path)!r})"

    def _connection(self) -> Any:
        if self._pg is not None:
            return self._pg.connection()
        conn = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        # new thread, or a forked child: a connection of its own (SQLite connections must not
        # cross a fork; the parent's is left alone, never closed or used here)
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
        conn.row_factory = sqlite3.Row
        conn.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
        # WAL with synchronous=NORMAL: a commit survives a crash of the process; only a power
        # loss can take the last commits back, and a verdict lost that way is asked again.
        conn.execute("PRAGMA synchronous = NORMAL")
        self._local.conn, self._local.pid = conn, os.getpid()
        with self._lock:
            self._open.append((os.getpid(), conn))
        return conn

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection | PostgresConnection]:
        conn = self._connection()
        with conn:  # one transaction: committed on success, rolled back on error
            yield conn

    def close(self) -> None:
        """Close this process's connections; the store reopens one if used again."""
        if self._pg is not None:
            self._pg.close()
        pid = os.getpid()
        with self._lock:
            mine = [c for p, c in self._open if p == pid]
            self._open = [(p, c) for p, c in self._open if p != pid]
        for conn in mine:
            conn.close()
        self._local = threading.local()

    def __enter__(self) -> VerdictStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if hasattr(self, "_open"):
                self.close()
        except Exception:  # interpreter shutdown: nothing left to release
            pass

    def get(
        self, transcript_hash: str, judge_fingerprint: str, rubric_fingerprint: str
    ) -> StoredVerdict | None:
        """The stored verdict for exactly these three hashes, or None."""
        if not self._available():
            self.missed += 1
            return None

        def read() -> Any:
            with self._connect() as conn:
                return conn.execute(
                    "SELECT * FROM verdicts WHERE transcript_hash = ? AND judge_fingerprint = ? "
                    "AND rubric_fingerprint = ?",
                    (transcript_hash, judge_fingerprint, rubric_fingerprint),
                ).fetchone()

        try:
            row = self._retry(read)
        except tuple(self._pg.transient if self._pg else ()) as exc:
            self._lost(exc)
            self.missed += 1
            return None
        if row is None:
            return None
        return read_row(row)

    def put(self, verdict: RubricVerdict) -> bool:
        """Store a PASS or FAIL verdict; returns False (and stores nothing) for anything else,
        and on a PostgreSQL store whose server cannot be reached."""
        if verdict.outcome not in ("pass", "fail") or verdict.verdict is None:
            return False
        if not (
            verdict.transcript_hash and verdict.judge_fingerprint and verdict.rubric_fingerprint
        ):
            raise ValueError("a verdict needs all three fingerprints to be stored")
        record = StoredVerdict(
            transcript_hash=verdict.transcript_hash,
            judge_fingerprint=verdict.judge_fingerprint,
            rubric_fingerprint=verdict.rubric_fingerprint,
            dimension=printable(verdict.dimension),
            rubric=printable(verdict.rubric),
            verdict=verdict.verdict,
            reasoning=printable(verdict.reasoning),
            judge_model=printable(verdict.judge_model) if verdict.judge_model else None,
            truncated_chars=verdict.truncated_chars,
            truncated_turns=verdict.truncated_turns,
            created_at=time.time(),
        )
        self.put_stored(record)
        return self.unavailable is None  # a PostgreSQL server that cannot be reached kept nothing

    def put_stored(self, record: StoredVerdict) -> None:
        """Store a verdict as it was read from a store (its `created_at` kept), over any with
        the same three hashes. On a PostgreSQL store whose server cannot be reached, nothing."""
        if not self._available():
            self.unstored += 1
            return
        data = record.model_dump()
        columns = ", ".join(data)
        marks = ", ".join("?" for _ in data)

        def write() -> None:
            with self._connect() as conn:
                conn.execute(
                    f"INSERT OR REPLACE INTO verdicts ({columns}) VALUES ({marks})",
                    tuple(data.values()),
                )

        try:
            self._retry(write)
        except tuple(self._pg.transient if self._pg else ()) as exc:
            self._lost(exc)
            self.unstored += 1

    def get_reply(self, key: str) -> str | None:
        """The simulated customer's stored reply under `key`, or None (a PostgreSQL server that
        cannot be reached is a miss)."""
        if not self._available():
            self.missed += 1
            return None

        def read() -> Any:
            with self._connect() as conn:
                return conn.execute(
                    "SELECT reply FROM replies WHERE reply_key = ?", (key,)
                ).fetchone()

        try:
            row = self._retry(read)
        except tuple(self._pg.transient if self._pg else ()) as exc:
            self._lost(exc)
            self.missed += 1
            return None
        return None if row is None or not isinstance(row[0], str) else row[0]

    def put_reply(self, key: str, model: str | None, reply: str) -> None:
        """Keep a simulated customer's reply under `key` (over any there)."""
        if not self._available():
            self.unstored += 1
            return

        def write() -> None:
            with self._connect() as conn:
                conn.execute(
                    "INSERT OR REPLACE INTO replies (reply_key, model, reply, created_at) "
                    "VALUES (?, ?, ?, ?)",
                    (key, printable(model) if model else None, printable(reply), time.time()),
                )

        try:
            self._retry(write)
        except tuple(self._pg.transient if self._pg else ()) as exc:
            self._lost(exc)
            self.unstored += 1

    def count(self) -> int:
        def read() -> int:
            with self._connect() as conn:
                return int(conn.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

        return self._retry(read)

    def all(self, dimension: str | None = None) -> list[StoredVerdict]:
        """Every stored verdict (of one dimension), oldest first: what trends are built from."""
        query = "SELECT * FROM verdicts"
        args: tuple = ()
        if dimension is not None:
            query += " WHERE dimension = ?"
            args = (dimension,)

        def read() -> list[Any]:
            with self._connect() as conn:
                return conn.execute(query + " ORDER BY created_at, rowid", args).fetchall()

        return [v for v in map(read_row, self._retry(read)) if v is not None]

    # -- calibrations ------------------------------------------------------------------------

    def put_calibration(self, row: StoredCalibration) -> bool:
        """Record one dimension's calibration result, replacing an earlier one of the same judge
        fingerprint, dimension and calibration set. False when a PostgreSQL store's server cannot
        be reached (nothing kept)."""
        if not self._available():
            self.unstored += 1
            return False
        data = row.model_dump(exclude={"source"})
        data["dimension"] = printable(data["dimension"])
        if data["judge_model"]:
            data["judge_model"] = printable(data["judge_model"])
        if not data["created_at"]:
            data["created_at"] = time.time()
        columns = ", ".join(data)
        marks = ", ".join("?" for _ in data)

        def write() -> None:
            with self._connect() as conn:
                conn.execute(
                    "DELETE FROM calibrations WHERE judge_fingerprint = ? AND dimension = ? "
                    "AND set_id = ?",
                    (data["judge_fingerprint"], data["dimension"], data["set_id"]),
                )
                conn.execute(
                    f"INSERT INTO calibrations ({columns}) VALUES ({marks})",
                    tuple(data.values()),
                )

        self._retry(write)
        return True

    def calibration(self, judge_fingerprint: str) -> dict[str, StoredCalibration]:
        """The newest calibration of each dimension for this judge fingerprint ({} if none, or
        when a PostgreSQL store's server cannot be reached)."""
        if not self._available():
            return {}

        def read() -> list[Any]:
            with self._connect() as conn:
                return conn.execute(
                    "SELECT * FROM calibrations WHERE judge_fingerprint = ? ORDER BY created_at",
                    (judge_fingerprint,),
                ).fetchall()

        rows = self._retry(read)
        out: dict[str, StoredCalibration] = {}
        for row in rows:
            try:
                found = StoredCalibration.model_validate(dict(row))
            except ValidationError:
                continue  # a damaged row: as if that calibration had not been run
            out[found.dimension] = found
        return out


def copy_verdicts(source: VerdictStore, dest: VerdictStore) -> int:
    """Copy every verdict of `source` into `dest` (each keeps its time); a verdict already
    there is written over with the same values, so copying again changes nothing. Returns how
    many were copied. A PostgreSQL store whose server cannot be reached is a `ValueError`."""
    for store in (source, dest):
        if store.unavailable is not None:
            raise ValueError(store.unavailable)
    found = source.all()
    for verdict in found:
        dest.put_stored(verdict)
    if dest.unavailable is not None:
        raise ValueError(dest.unavailable)
    return len(found)
