"""The database under the run store and the verdict store: SQLite (a file, the default) or
PostgreSQL (a `postgresql://` URL, with the optional `[postgres]` extra: psycopg 3).

Both stores write plain SQL in SQLite's dialect with `?` placeholders; on PostgreSQL each
statement is translated as it is run (`translate`):

- `?` becomes `%s` (a `?` inside a quoted literal is kept) and every `%` is escaped as `%%`;
- `INSERT OR REPLACE INTO t ...` becomes `INSERT INTO t ... ON CONFLICT (<t's primary key>) DO
  UPDATE SET <every other listed column> = EXCLUDED.<column>`, and `INSERT OR IGNORE` becomes
  `... ON CONFLICT DO NOTHING` (the primary key and the columns are read from the catalog once);
- in `CREATE TABLE` and `ALTER TABLE`: `INTEGER PRIMARY KEY AUTOINCREMENT` becomes an identity
  column, `INTEGER` becomes `BIGINT` (SQLite's integers are 64-bit), `REAL` becomes `DOUBLE
  PRECISION` (PostgreSQL's `REAL` is 32-bit), `BLOB` becomes `BYTEA`, and `TEXT` is compared
  byte by byte (`COLLATE "C"`, as SQLite orders it);
- `rowid` becomes `ctid` (insertion order, as far as ordering needs it); `BEGIN IMMEDIATE` is
  `BEGIN`.

Rows read back as on SQLite: by index, by column name and through `dict(row)`; a `numeric`
(what `SUM` of integers gives) comes back as an int when whole and a float otherwise; a Python
bool is written as 1 or 0.

A URL names a database and, optionally, a schema (`?schema=NAME`); without one the run store
uses the schema `commerce_runs` and the verdict store `commerce_verdicts`, so one URL serves
both. A schema is created when a store is first opened for writing (when it is missing: a role
may be given one made for it). Tests and separate histories each get a schema of their own.

A password in the URL, in `PGPASSWORD` or in a `.pgpass` is used by the driver and never shown:
`public_url` is the URL as every message, header and record shows it, and `scrub` takes the
password out of a driver's error.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

from ..errors import DriverMissing
from ..settings.database_urls import (
    INSTALL_HINT,
    POSTGRES_SCHEMES,
    driver_available,
    is_database_url,
    public_url,
    scrub,
    split_url,
)

T = TypeVar("T")

__all__ = [
    "APPLICATION_NAME",
    "CONNECT_TIMEOUT_S",
    "INSTALL_HINT",
    "POSTGRES_SCHEMES",
    "RETRY_DELAYS_S",
    "lasting",
    "DriverMissing",
    "PostgresDatabase",
    "Row",
    "driver_available",
    "describe",
    "is_database_url",
    "public_url",
    "scrub",
    "translate",
]

CONNECT_TIMEOUT_S = 5
APPLICATION_NAME = "pytest-commerce-evals"
"""How the plugin's connections are named in `pg_stat_activity` (a URL's `application_name`
wins)."""
RETRY_DELAYS_S = (0.2, 0.5, 1.0, 2.0, 4.0, 8.0)
"""Waits between the tries of an operation whose connection was lost: at most seven tries over
about 16 s (plus the connect timeout of each try that cannot reach the server), so a server's
crash and restart rides through (5 to 7.6 s measured: recovery, a stale postmaster.pid). A
retried write upserts on its key, so a batch that did commit before the connection dropped is
not written twice. Past that, the run tries once more at its end before writing the record
aside."""

_LASTING = (
    "does not exist",  # the database or the role
    "authentication failed",
    "no pg_hba.conf entry",
    "invalid sslmode",
    "permission denied",
    "no password supplied",
    "invalid connection option",
)
"""What a connection error says when trying again cannot help (a wrong name, a refused user):
such an error is reported at once instead of after the retries' waits."""


def lasting(exc: BaseException) -> bool:
    """Whether a connection error, or one it was raised from, says something trying again will
    not change."""
    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen).lower()
        if any(mark in text for mark in _LASTING):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


_LOCK_KEY = 0x636F6D6D  # the advisory lock a writer holds while it creates or migrates a schema


GRANT_HINT = (
    "the database user lacks a grant the store needs: GRANT USAGE, CREATE ON SCHEMA <schema> "
    "(CREATE for the first run only) and GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN "
    'SCHEMA <schema> (docs/run-history.md, "Grants")'
)


def describe(error: BaseException, url: str | None) -> str:
    """A driver's error on one line (libpq's messages run over several), without the password;
    a missing privilege names the GRANT it needs."""
    text = scrub(" ".join(str(error).split()), url)
    # PostgreSQL says "no schema has been selected to create in" for a schema without USAGE
    if any(m in text.lower() for m in ("permission denied", "no schema has been selected")):
        text += f"; {GRANT_HINT}"
    return text


# -- translation -----------------------------------------------------------------------------

_UPSERT = re.compile(
    r"^\s*INSERT\s+OR\s+(REPLACE|IGNORE)\s+INTO\s+([\w.\"]+)\s*(?:\(([^)]*)\))?\s*"
    r"(VALUES\b.*|SELECT\b.*)$",
    re.S | re.I,
)
_PARAMS = re.compile(r"'(?:[^']|'')*'|\?|%")
_DDL = re.compile(r"^\s*(CREATE\s+TABLE|ALTER\s+TABLE)\b", re.I)
_ROWID = re.compile(r"\browid\b", re.I)


def _placeholders(sql: str) -> str:
    def swap(m: re.Match[str]) -> str:
        token = m.group(0)
        if token == "?":
            return "%s"
        return token.replace("%", "%%")  # the driver reads % inside a literal too

    return _PARAMS.sub(swap, sql)


def translate(sql: str, table_info: Callable[[str], tuple[list[str], list[str]]]) -> str:
    """One SQLite statement as PostgreSQL runs it. `table_info(table)` gives the table's columns
    and its primary key (for `INSERT OR REPLACE` / `OR IGNORE`)."""
    text = sql.strip().rstrip(";")
    if re.fullmatch(r"BEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)", text, re.I):
        return "BEGIN"
    if _DDL.match(text):
        text = re.sub(
            r"\bINTEGER\s+PRIMARY\s+KEY\s+AUTOINCREMENT\b",
            "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY",
            text,
            flags=re.I,
        )
        text = re.sub(r"\bINTEGER\b", "BIGINT", text, flags=re.I)
        text = re.sub(r"\bREAL\b", "DOUBLE PRECISION", text, flags=re.I)
        text = re.sub(r"\bBLOB\b", "BYTEA", text, flags=re.I)
        text = re.sub(r"\bTEXT\b", 'TEXT COLLATE "C"', text, flags=re.I)
        return _placeholders(text)
    text = _ROWID.sub("ctid", text)
    m = _UPSERT.match(text)
    if m:
        how, table, listed, rest = m.groups()
        columns, key = table_info(table)
        names = [c.strip().strip('"') for c in listed.split(",")] if listed else columns
        head = f"INSERT INTO {table} ({', '.join(names)}) {rest}"
        update = [c for c in names if c not in key]
        if how.upper() == "IGNORE" or not update or not key:
            text = f"{head} ON CONFLICT DO NOTHING"
        else:
            sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in update)
            text = f"{head} ON CONFLICT ({', '.join(key)}) DO UPDATE SET {sets}"
    return _placeholders(text)


def _params(params: Sequence[Any] | dict[str, Any]) -> Any:
    """Parameters as SQLite would store them: a bool as 1 or 0."""
    if isinstance(params, dict):
        return {k: int(v) if isinstance(v, bool) else v for k, v in params.items()}
    return [int(v) if isinstance(v, bool) else v for v in params]


# -- rows and connections ----------------------------------------------------------------------


class Row:
    """A row read from PostgreSQL that reads like `sqlite3.Row`: `row[0]`, `row["name"]`,
    `dict(row)`, `keys()`, unpacking."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: Sequence[Any], index: dict[str, int]) -> None:
        self._values = tuple(values)
        self._index = index

    def __getitem__(self, key: int | slice | str) -> Any:
        if isinstance(key, str):
            return self._values[self._index[key]]
        return self._values[key]

    def keys(self) -> list[str]:
        return list(self._index)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Row):
            return self._values == other._values and self.keys() == other.keys()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._values)

    def __repr__(self) -> str:
        return f"Row({dict(zip(self._index, self._values, strict=False))!r})"


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], Row]:
    index = {d.name: n for n, d in enumerate(cursor.description or ())}
    return lambda values: Row(values, index)


class PostgresConnection:
    """A psycopg connection that takes SQLite's SQL (see `translate`), in autocommit mode:
    `BEGIN`/`COMMIT` as the caller says, or `with conn:` for one transaction (as `sqlite3`)."""

    dialect = "postgresql"

    def __init__(self, raw: Any, database: PostgresDatabase) -> None:
        self.raw = raw
        self.database = database

    def _sql(self, sql: str) -> str:
        return translate(sql, lambda table: self.database.table_info(self, table))

    def execute(self, sql: str, params: Sequence[Any] | dict[str, Any] = ()) -> Any:
        # parameters always given (an empty list too), so the driver reads `%%` as `%`
        return self.raw.execute(self._sql(sql), _params(params))

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Any:
        cursor = self.raw.cursor()
        cursor.executemany(self._sql(sql), [_params(r) for r in rows])
        return cursor

    def executescript(self, script: str) -> None:
        for statement in script.split(";"):
            if statement.strip():
                self.execute(statement)

    def commit(self) -> None:
        if self.raw.info.transaction_status != 0:  # not idle: a transaction is open
            self.raw.execute("COMMIT")

    def rollback(self) -> None:
        if self.raw.info.transaction_status != 0:
            self.raw.execute("ROLLBACK")

    def __enter__(self) -> PostgresConnection:
        if self.raw.info.transaction_status == 0:
            self.raw.execute("BEGIN")
        return self

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if kind is None:
            self.commit()
        else:
            try:
                self.rollback()
            except Exception:  # the connection is gone: nothing to roll back
                pass


class PostgresDatabase:
    """A PostgreSQL database (and schema) named by a URL: one connection per process and
    thread, opened when first used and again after it was lost."""

    dialect = "postgresql"

    def __init__(self, url: str, *, schema: str, read_only: bool = False) -> None:
        """`schema`: where the tables are when the URL names none (`?schema=`)."""
        if not driver_available():
            raise DriverMissing(
                f"{public_url(url)}: a PostgreSQL store needs the psycopg driver, which is not "
                f"installed: {INSTALL_HINT}"
            )
        import psycopg

        self.psycopg = psycopg
        self.url = url.strip()
        self.public = public_url(url)
        self.conninfo, named = split_url(self.url)
        self.schema = named or schema
        self.read_only = read_only
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[tuple[int, Any]] = []
        self._tables: dict[str, tuple[list[str], list[str]]] = {}
        self.reconnects = 0
        """How many times a lost connection was opened again."""
        self.errors: tuple[type[BaseException], ...] = (psycopg.Error,)
        self.transient: tuple[type[BaseException], ...] = (
            psycopg.OperationalError,
            psycopg.InterfaceError,
        )

    def __repr__(self) -> str:
        return f"PostgresDatabase({self.public!r})"

    def _new(self) -> Any:
        psycopg = self.psycopg
        named = dict(parse_qsl(urlsplit(self.conninfo).query))
        raw = psycopg.connect(
            self.conninfo,
            autocommit=True,
            # the URL's own, when it gives them, win
            **{
                k: v
                for k, v in (
                    ("connect_timeout", CONNECT_TIMEOUT_S),
                    ("application_name", APPLICATION_NAME),
                )
                if k not in named
            },
        )
        raw.row_factory = _row_factory
        _load_numeric(raw)
        found = raw.execute(
            "SELECT 1 FROM pg_namespace WHERE nspname = %s", (self.schema,)
        ).fetchone()
        if found is None and not self.read_only:
            # only when missing: a role without CREATE on the database can use a schema made
            # for it
            with raw.transaction():
                raw.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                raw.execute(
                    psycopg.sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(
                        psycopg.sql.Identifier(self.schema)
                    )
                )
        raw.execute(
            psycopg.sql.SQL("SET search_path TO {}").format(psycopg.sql.Identifier(self.schema))
        )
        if self.read_only:
            raw.execute("SET default_transaction_read_only = on")
        return raw

    def connection(self) -> PostgresConnection:
        """This process's and thread's connection, opened (again) when there is none or it was
        closed."""
        raw = getattr(self._local, "raw", None)
        if raw is not None and self._local.pid == os.getpid() and not raw.closed:
            return PostgresConnection(raw, self)
        again = raw is not None and self._local.pid == os.getpid()
        raw = self._new()
        self.reconnects += again
        self._local.raw, self._local.pid = raw, os.getpid()
        with self._lock:
            self._open.append((os.getpid(), raw))
        return PostgresConnection(raw, self)

    def retry(
        self,
        work: Callable[[], T],
        *,
        lost: tuple[type[BaseException], ...] = (),
        retried: Callable[[], None] | None = None,
    ) -> T:
        """`work()`, tried again on a new connection while the connection is lost: after each
        of `RETRY_DELAYS_S` in turn (about 16 s in all, the length of a server's crash and
        restart), on the driver's transient errors and on `lost` (a store's own wrapping of
        them). A failure that reconnecting cannot cure (`lasting`: a refused password, a missing
        database) is raised at once. `retried` is called before each new try. The one retry
        loop of both stores: every statement they run is safe to repeat."""
        errors = (*self.transient, *lost)
        for wait in (*RETRY_DELAYS_S, None):
            try:
                return work()
            except errors as exc:
                self.drop()
                if wait is None or lasting(exc):
                    raise
                if retried is not None:
                    retried()
                time.sleep(wait)
        raise AssertionError("unreachable")

    def drop(self) -> None:
        """Forget this thread's connection (after it failed): the next use opens a new one."""
        raw = getattr(self._local, "raw", None)
        if raw is not None and self._local.pid == os.getpid():
            try:
                raw.close()
            except Exception:  # already broken
                pass
            with self._lock:
                self._open = [(p, c) for p, c in self._open if c is not raw]

    def close(self) -> None:
        pid = os.getpid()
        with self._lock:
            mine = [c for p, c in self._open if p == pid]
            self._open = [(p, c) for p, c in self._open if p != pid]
        for raw in mine:
            try:
                raw.close()
            except Exception:  # already broken
                pass
        self._local = threading.local()

    def __del__(self) -> None:
        # a store dropped without close(): its connections go with it, quietly
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to release
            pass

    @contextmanager
    def transaction(self, *, lock: bool = False) -> Iterator[PostgresConnection]:
        """One transaction; `lock` takes the advisory lock writers share while they create or
        migrate tables."""
        conn = self.connection()
        try:
            with conn:
                if lock:
                    conn.raw.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                yield conn
        except self.transient:
            self.drop()
            raise

    @contextmanager
    def connect(self) -> Iterator[PostgresConnection]:
        conn = self.connection()
        try:
            yield conn
            conn.rollback()  # a read left nothing open
        except self.transient:
            self.drop()
            raise

    def tables(self, conn: PostgresConnection) -> set[str]:
        rows = conn.raw.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        ).fetchall()
        return {r[0] for r in rows}

    def columns(self, conn: PostgresConnection, table: str) -> list[str]:
        rows = conn.raw.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = "
            "current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,),
        ).fetchall()
        return [r[0] for r in rows]

    def table_info(self, conn: PostgresConnection, table: str) -> tuple[list[str], list[str]]:
        """(columns in order, primary key columns) of a table, read once."""
        name = table.strip('"').lower()
        if name not in self._tables:
            key = conn.raw.execute(
                "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass(%s) "
                "AND i.indisprimary ORDER BY array_position(i.indkey, a.attnum)",
                (name,),
            ).fetchall()
            self._tables[name] = (self.columns(conn, name), [r[0] for r in key])
        return self._tables[name]

    def forget_tables(self) -> None:
        """Read the tables' columns again (after a migration changed them)."""
        self._tables.clear()


def _load_numeric(raw: Any) -> None:
    """`numeric` read as SQLite gives it: an int when whole, else a float."""
    from decimal import Decimal

    from psycopg.adapt import Loader

    class NumericLoader(Loader):
        def load(self, data: Any) -> Any:
            value = Decimal(bytes(data).decode())
            return int(value) if value == value.to_integral_value() else float(value)

    raw.adapters.register_loader("numeric", NumericLoader)
