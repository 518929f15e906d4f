"""The run store: every eval run recorded in a folder holding one SQLite file.

    <store>/runs.sqlite          runs, trials and per-set results (WAL mode, busy timeout)
    <store>/unsaved-<run>.json   a run's record, written here only when the database failed

or in a PostgreSQL database named by a `postgresql://` URL: the same tables and statements,
through `store.database` (a lost connection is opened again and the operation tried again).

A run row is written (with `complete = 0`) before its first trial result is stored; trials are
written as they arrive, in small batches; `complete = 1` is set at the end of the session only when
the session was not interrupted. Several processes may write runs to one store at once: each
operation opens its own short connection and writes in `BEGIN IMMEDIATE` transactions.

The database and the JSON record (`--commerce-json`) share one `SCHEMA_VERSION`; an older database
is migrated when it is opened, an older JSON record when it is read.

Whatever a trial holds is written: a lone surrogate (half of a UTF-16 pair, which no UTF-8 file or
database takes) is written as the escape `\\udXXX`, and a value nested deeper than `MAX_DEPTH` is
kept as its JSON text. A reader never gets past a damaged record or store with anything but a
`StoreError` naming the file, the key or column, and what is wrong.

Schema history:
  1  runs (no `kind`, no judge fingerprints, no exit status or options) and trials (no error,
     grader results, snapshot, turn messages, duration or location).
  2  adds `runs.kind` ('regression' | 'live'), `runs.judge_fingerprints`, `runs.exit_status`,
     `runs.options`, the missing trial columns, and the `set_results` table (backfilled from the
     trials of every stored run).
"""

from __future__ import annotations

import functools
import json
import os
import re
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

from ..errors import CommerceEvalsError
from ..jsonsafe import (
    MAX_DEPTH,
    clean_json,
    deep_json_path,
    first_json_problem,
    is_clean,
    json_text,
    key_path,
    printable,
    short_repr,
    surrogate_problem,
    text_encodes,
)
from ..results import (
    GRADED,
    CaseTally,
    RubricVerdict,
    TrialRecord,
    failure_lines,
    set_rate_counts,
    set_verdict,
    verdicts_from_json,
)
from ..stats import wilson_interval
from .database import (
    DriverMissing,
    PostgresDatabase,
    describe,
    is_database_url,
    public_url,
)

__all__ = [
    "DEFAULT_STORE_PATH",
    "MAX_DEPTH",
    "SCHEMA_VERSION",
    "CaseResult",
    "RunRecord",
    "RunStore",
    "Selection",
    "SetResult",
    "StoreError",
    "StoreUnavailable",
    "StoredTrial",
    "clean_json",
    "git_state",
    "json_text",
    "load_record",
    "new_run_id",
    "printable",
    "public_base_url",
    "case_results",
    "set_results",
    "trial_from_record",
    "write_record",
]

SCHEMA_VERSION = 4
DEFAULT_STORE_PATH = Path(".commerce") / "runs"
"""Relative to the pytest rootdir unless an absolute path is configured."""
DB_NAME = "runs.sqlite"
PG_SCHEMA = "commerce_runs"
"""The PostgreSQL schema of a run store whose URL names none (`?schema=`)."""

_BUSY_TIMEOUT_S = 60.0
RunKind = Literal["regression", "live", "regrade"]


class StoreError(CommerceEvalsError):
    """The run store cannot be opened, read or written; the message names the file."""


class StoreUnavailable(StoreError):
    """The store's server cannot be reached, or the connection to it was lost (PostgreSQL);
    the operation is tried again a few times before this is raised."""


class _DamagedRun(StoreError):
    """One run's rows do not decode; the rest of the store may still be read."""


def _id_problem(data: Any) -> str | None:
    """Where a run record's identifiers break: the run id or a trial's case id holding a lone
    surrogate (anywhere else one comes back escaped; an id escaped names another run or case)."""
    if not isinstance(data, dict):
        return None
    found = [("run_id", data.get("run_id"))]
    trials = data.get("trials")
    if isinstance(trials, list):
        found += [(f"trials[{i}].case_id", t.get("case_id")) for i, t in enumerate(trials)
                  if isinstance(t, dict)]  # fmt: skip
    for key, value in found:
        if isinstance(value, str) and not text_encodes(value):
            return f"{key}: {surrogate_problem(value)}; an id is refused, not escaped"
    return None


def _loads_clean(raw: bytes, where: str, what: str, limit: int, check: Any = None) -> Any:
    """Parse a JSON document of `what` from `where` with every failure a `StoreError` naming
    the file and, where there is one, the key; lone surrogates come back escaped, except where
    `check(data)` names one it refuses."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StoreError(
            f"{where}: cannot read {what}: not UTF-8 text (byte {exc.start}: {exc.reason})"
        ) from None
    try:
        data = json.loads(text)
    except RecursionError:
        raise StoreError(
            f"{where}: key {deep_json_path(text, limit)}: nested deeper than {limit} levels; "
            f"{what} nests at most {limit}"
        ) from None
    except ValueError as exc:
        raise StoreError(f"{where}: cannot read {what}: {exc}") from None
    problem = check(data) if check is not None else None
    if problem is not None:
        raise StoreError(f"{where}: key {problem}")
    if is_clean(data, limit):
        return data
    problem = first_json_problem(data, limit, surrogates=False)
    if problem is not None:
        raise StoreError(f"{where}: key {problem}; {what} nests at most {limit}")
    return clean_json(data, limit)


def validation_summary(exc: ValidationError, limit: int = 4) -> str:
    """'key a.b: what; key c: what (and N more)': each key and what is wrong with it."""
    parts = []
    for err in exc.errors(include_url=False):
        where = key_path(err["loc"])
        found = ""
        if err["type"] not in ("missing", "extra_forbidden") and "input" in err:
            found = f" (found {type(err['input']).__name__})"
        parts.append(f"key {where}: {printable(err['msg'])}{found}")
    more = f" (and {len(parts) - limit} more)" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


# -- records ----------------------------------------------------------------------------------


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


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


StoredTrial = TrialRecord
"""One finished trial as stored: the typed trial record (`results.TrialRecord`) itself."""


class SetResult(_Record):
    """A set's pass rate over graded trials against its threshold."""

    name: str
    passed: int
    graded: int
    rate: float | None
    threshold: float
    met: bool
    other: dict[str, int] = Field(default_factory=dict)

    @property
    def verdict(self) -> str:
        """`ok`, `short`, `undecided` (trials ran, none graded) or `skipped` (every case
        skipped), by the one rule the exit status uses (`results.set_verdict`); `met` holds the
        threshold's answer on `rate` (under adaptive trials the mean of per-case rates)."""
        if self.graded <= 0:
            return set_verdict(self.passed, self.graded, self.threshold, self.other)
        return "ok" if self.met else "short"


class CaseResult(_Record):
    """One case's graded trials in a run: its pass rate with a 95% Wilson interval, and (when
    the run store knew its history) whether it is flaky and its per-run strip, oldest first
    (`✓` every graded trial passed, `✗` not). Derived from the trials: the JSON record carries
    it for readers without this package; the database does not store it."""

    case_id: str
    set_name: str
    priority: str
    passed: int
    graded: int
    rate: float | None
    interval: list[float] | None
    flaky: bool | None = None
    history: str | None = None


class RunRecord(_Record):
    """A whole run: what the database holds for it and what `--commerce-json` writes."""

    schema_version: int = SCHEMA_VERSION
    run_id: str = Field(min_length=1, pattern=r"^[^\s]+$")
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
    cases: list[CaseResult] = Field(default_factory=list)
    diff: dict[str, Any] | None = None
    """The failing-set diff against the run's baseline (`history.FailingSetDiff.summary`): the
    JSON record carries it for readers; the database does not store it."""
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
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:  # not a URL (a bad port or IPv6 host): store nothing rather than guess
        return None
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


def trial_from_record(record: dict[str, Any], messages: Iterable[str] = ()) -> StoredTrial:
    """A trial record in its JSON form (`TrialResult.to_dict()` plus the set's threshold, as the
    `pytest_commerce_evals_trial_recorded` hook carried it before it was typed) as the typed
    record; unknown keys dropped. `TrialRecord.from_result` makes one from a `TrialResult`."""
    data = {
        "case_id": record["case_id"],
        "trial": record["trial"],
        "trials": record.get("trials", 1),
        "set_name": record["set_name"],
        "threshold": record["threshold"],
        "priority": record["priority"],
        "difficulty": record["difficulty"],
        "tags": list(record.get("tags") or []),
        "outcome": record["outcome"],
        "error": record.get("error"),
        "grader_results": list(record.get("grader_results") or []),
        "verdicts": list(record.get("verdicts") or []),
        "turns": [list(turn) for turn in record.get("turns") or []],
        "messages": list(messages),
        "snapshot": record.get("snapshot"),
        "duration_s": float(record.get("duration_s") or 0.0),
        "file": record.get("file"),
        "line": record.get("line"),
    }
    trial = StoredTrial.model_validate(clean_json(data, MAX_DEPTH - 2))
    failures = failure_lines(trial.grader_results, trial.error, trial.verdicts)
    return trial.model_copy(update={"failures": clean_json(failures)})


def set_results(trials: Iterable[StoredTrial]) -> list[SetResult]:
    """Per-set pass rates over graded (pass or fail) trials, with the same rule as the exit
    status: a set with nothing graded is met only when all its trials were skipped."""
    groups: dict[str, dict[str, Any]] = {}
    for t in trials:
        g = groups.setdefault(
            t.set_name,
            {"passed": 0, "graded": 0, "threshold": t.threshold, "other": {}, "cases": {}},
        )
        case = g["cases"].get(t.case_id)
        if case is None:
            case = g["cases"][t.case_id] = CaseTally()
        case.add(t.trial, t.outcome, t.threshold, t.stopping)
        if t.outcome in GRADED:
            g["graded"] += 1
            g["passed"] += t.outcome == "pass"
        else:
            g["other"][t.outcome] = g["other"].get(t.outcome, 0) + 1
    out = []
    for name in sorted(groups):
        g = groups[name]
        # pooled trials; under adaptive trials the mean of the cases' unbiased rates
        num, den = set_rate_counts(c.counts() for c in g["cases"].values())
        rate = num / den if den else None
        met = set_verdict(num, den, g["threshold"], g["other"]) in ("ok", "skipped")
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


def case_results(
    trials: Iterable[StoredTrial],
    strips: dict[str, str] | None = None,
    flaky: Iterable[str] = (),
) -> list[CaseResult]:
    """Per-case pass rates over graded trials with their 95% Wilson interval, in case order;
    `strips` (case id -> per-run strip, oldest first) adds the history, and `flaky` names the
    cases the history calls flaky."""
    flaky = set(flaky)
    found: dict[str, dict[str, Any]] = {}
    for t in trials:
        c = found.setdefault(
            t.case_id, {"set_name": t.set_name, "priority": t.priority, "passed": 0, "graded": 0}
        )
        if t.outcome in GRADED:
            c["graded"] += 1
            c["passed"] += t.outcome == "pass"
    out = []
    for case_id in sorted(found):
        c = found[case_id]
        strip = (strips or {}).get(case_id)
        out.append(
            CaseResult(
                case_id=case_id,
                **c,
                rate=c["passed"] / c["graded"] if c["graded"] else None,
                interval=list(wilson_interval(c["passed"], c["graded"])) if c["graded"] else None,
                flaky=None if strips is None else case_id in flaky,
                history=strip,
            )
        )
    return out


def judge_identity(trials: Iterable[StoredTrial]) -> tuple[str | None, list[str]]:
    """The judge model and the sorted judge fingerprints found in the trials' verdicts."""
    models: list[str] = []
    prints: set[str] = set()
    for t in trials:
        for v in t.verdicts:
            if v.judge_model and v.judge_model not in models:
                models.append(v.judge_model)
            if v.judge_fingerprint:
                prints.add(v.judge_fingerprint)
    return (", ".join(models) or None), sorted(prints)


# -- JSON records -----------------------------------------------------------------------------


def _schema_version(data: dict[str, Any], where: str) -> int:
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


def _migrate_record(data: dict[str, Any], where: str) -> dict[str, Any]:
    if _schema_version(data, where) < 2:
        data.setdefault("kind", "regression")
        data.setdefault("judge_fingerprints", [])
        data.pop("sets", None)  # recomputed from the trials once they are read
    data["schema_version"] = SCHEMA_VERSION
    return data


def load_record(path: str | Path) -> RunRecord:
    """Read a run record written by `--commerce-json` (older schemas are migrated).

    Any failure is a `StoreError` naming the file and, where there is one, the key: not a file,
    not UTF-8, not JSON, nested deeper than `MAX_DEPTH`, a schema_version that is not 1 to
    `SCHEMA_VERSION`, a key missing or of the wrong type. Lone surrogates come back escaped.
    """
    path = Path(path)
    if path.exists() and not path.is_file():  # a folder, or a pipe that would block the read
        raise StoreError(f"{path}: cannot read a run record: not a regular file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise StoreError(f"{path}: cannot read a run record: {exc.strerror or exc}") from None
    data = _loads_clean(raw, str(path), "a run record", MAX_DEPTH, _id_problem)
    if not isinstance(data, dict):
        raise StoreError(f"{path}: a run record is a JSON object; found {type(data).__name__}")
    try:
        # strict: a record written by hand or by another tool gets no lax coercion ("yes" is not
        # true, "0.9" is not a number, 1.0 is not a trial number)
        record = RunRecord.model_validate(_migrate_record(data, str(path)), strict=True)
    except ValidationError as exc:
        raise StoreError(
            f"{path}: not a commerce-evals run record: {validation_summary(exc)}"
        ) from None
    if not record.sets and record.trials:
        record = record.model_copy(update={"sets": set_results(record.trials)})
    return record


def clean_trial(trial: StoredTrial) -> StoredTrial:
    """The trial itself, or a copy with every value `clean_json` makes writable."""
    room = MAX_DEPTH - 2  # a trial is level 3 of a record (the record, its trials, the trial)
    data = trial.model_dump()
    if is_clean(data, room):
        return trial
    return StoredTrial.model_validate(clean_json(data, room))


def clean_header(record: RunRecord) -> RunRecord:
    """The record itself, or a copy whose fields other than the trials `clean_json` made
    writable (a model name or path from the command line can hold a lone surrogate)."""
    data = record.model_dump(exclude={"trials"})
    if is_clean(data, MAX_DEPTH):
        return record
    return RunRecord.model_validate({**clean_json(data, MAX_DEPTH), "trials": record.trials})


def record_json(record: RunRecord) -> str:
    """The record as JSON text that `load_record` reads back, whatever its trials hold."""
    try:
        return record.model_dump_json(indent=1)
    except (ValueError, TypeError, RecursionError):
        # a lone surrogate, a value nested past pydantic's 254 levels, a type it cannot write
        data = clean_json(record.model_dump(), MAX_DEPTH)
        return json.dumps(data, ensure_ascii=False, indent=1, default=str)


def write_record(record: RunRecord, path: str | Path) -> Path:
    """Write the record as JSON (through a temporary file, so a reader never sees half of it);
    only an `OSError` of the file system can stop it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(record_json(record), encoding="utf-8")
    tmp.replace(path)
    return path


# -- the database -----------------------------------------------------------------------------

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

# schema 3 -> 4: a trial of an adaptive run records the rule that stopped its case
_MIGRATE_3_TO_4 = "ALTER TABLE trials ADD COLUMN stopping TEXT"

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

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_TRIAL_JSON = {
    "tags": "tags",
    "failures": "failures",
    "transcript": "turns",
    "verdicts": "verdicts",
    "grader_results": "grader_results",
    "messages": "messages",
    "snapshot": "snapshot",
    "stopping": "stopping",
}


_MOVE_ASIDE = (
    "move the file aside (keep it for inspection) and the next run starts a new store; see "
    "docs/run-history.md"
)
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
        self.damaged: list[str] = []
        """What reading had to leave out, one message per damaged run or trial."""
        self.retries = 0
        """How many times an operation was tried again after the connection was lost."""
        self._pg: PostgresDatabase | None = None
        self._errors: tuple[type[BaseException], ...] = (sqlite3.Error,)
        self._lost: tuple[type[BaseException], ...] = ()
        if is_database_url(folder):
            # a PostgreSQL database (and schema): `path` is its URL without the password
            self.url = str(folder).strip()
            self.folder = None
            self.path: Path | str = public_url(self.url)
            try:
                self._pg = PostgresDatabase(self.url, schema=PG_SCHEMA, read_only=read_only)
            except DriverMissing as exc:
                raise StoreError(str(exc)) from None
            self._errors += self._pg.errors
            self._lost = self._pg.transient
            self._retry(self._open_database)
            return
        self.url = None
        self.folder = Path(folder)
        self.path = self.folder / DB_NAME
        if read_only:
            if not self.path.is_file():
                raise StoreError(f"{self.path}: no run store here (no run has been recorded)")
            with self._connect() as conn:
                self._check_schema(conn)
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.folder}: cannot create the run store folder: {exc}") from None
        self._set_wal()
        with self._transaction() as conn:
            self._check_schema(conn)

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
                if not {"meta", "runs"} & self._tables(conn):
                    raise StoreError(f"{self.path}: no run store here (no run has been recorded)")
                self._check_schema(conn)
            return
        with self._transaction(lock=True) as conn:
            self._check_schema(conn)

    def _retry(self, work: Any) -> Any:
        """`work()`; on PostgreSQL tried again (after a wait, on a new connection) while the
        connection is lost, up to `len(RETRY_DELAYS_S)` more times. Every write is safe to
        repeat: it upserts on its key."""
        if self._pg is None:
            return work()

        def counted() -> None:
            self.retries += 1

        return self._pg.retry(work, lost=(StoreUnavailable,), retried=counted)

    def _tables(self, conn: Any) -> set[str]:
        if self._pg is not None:
            return self._pg.tables(conn)
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}

    def _columns(self, conn: Any, table: str) -> set[str]:
        if self._pg is not None:
            return set(self._pg.columns(conn, table))
        return {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}

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

    def _open(self) -> sqlite3.Connection:
        if not self.read_only:
            return sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
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
                yield conn
        except sqlite3.Error as exc:
            raise StoreError(f"{self.path}: run store error: {exc}") from None
        except OverflowError as exc:  # an integer SQLite cannot hold (64 bits)
            raise StoreError(f"{self.path}: run store error: {exc}") from None
        except UnicodeDecodeError as exc:  # SQLite's own message quotes damaged schema text
            raise StoreError(
                f"{self.path}: run store error: the database's schema is damaged (SQLite "
                f"reported bytes that are not UTF-8: {exc.reason}); {_MOVE_ASIDE}"
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

    def _damage(self, what: str) -> StoreError:
        return StoreError(f"{self.path}: run store damaged: {what}; {_MOVE_ASIDE}")

    def _stored_version(self, conn: sqlite3.Connection) -> int:
        """meta.schema_version, or 1 for a schema 1 store that predates it."""
        try:
            rows = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()
        except self._errors as exc:
            raise self._damage(f"the meta table cannot be read ({exc})") from None
        if not rows:
            if "kind" in self._columns(conn, "runs"):
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

    def _check_schema(self, conn: sqlite3.Connection) -> None:
        tables = self._tables(conn)
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
            try:
                self._migrate_1_to_2(conn)
            except self._lost:
                raise
            except self._errors as exc:
                raise self._damage(
                    f"meta.schema_version is 1 but the tables do not migrate to 2 ({exc})"
                ) from None
            if self._pg is not None:
                self._pg.forget_tables()
        if version < 3:
            try:
                self._migrate_2_to_3(conn)
            except self._lost:
                raise
            except self._errors as exc:
                raise self._damage(
                    f"meta.schema_version is {version} but the runs table does not migrate to 3 "
                    f"({exc})"
                ) from None
            if self._pg is not None:
                self._pg.forget_tables()
        if version < 4 and "stopping" not in self._columns(conn, "trials"):
            try:
                conn.execute(_MIGRATE_3_TO_4)
            except self._lost:
                raise
            except self._errors as exc:
                raise self._damage(
                    f"meta.schema_version is {version} but the trials table does not migrate to "
                    f"4 ({exc})"
                ) from None
            if self._pg is not None:
                self._pg.forget_tables()
        missing = {"trials", "set_results"} - self._tables(conn)
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
            trials = self._trials(conn, run_id)
            _, prints = judge_identity(trials)
            conn.execute(
                "UPDATE runs SET judge_fingerprints = ? WHERE run_id = ?",
                (json.dumps(prints), run_id),
            )
            self._write_sets(conn, run_id, set_results(trials))

    def _migrate_2_to_3(self, conn: sqlite3.Connection) -> None:
        """Schema 3 admits runs of kind `regrade`. PostgreSQL swaps the column's check; SQLite
        cannot alter a check, so its runs table is rebuilt with the same rows."""
        if self._pg is not None:
            conn.execute("ALTER TABLE runs DROP CONSTRAINT IF EXISTS runs_kind_check")
            conn.execute(
                "ALTER TABLE runs ADD CONSTRAINT runs_kind_check "
                "CHECK (kind IN ('regression', 'live', 'regrade'))"
            )
            return
        table = _SCHEMA.split("CREATE TABLE runs (", 1)[1].split(");", 1)[0]
        columns = ", ".join(self._columns(conn, "runs"))
        conn.execute(f"CREATE TABLE runs_v3 ({table})")
        conn.execute(f"INSERT INTO runs_v3 ({columns}) SELECT {columns} FROM runs")
        conn.execute("DROP TABLE runs")
        conn.execute("ALTER TABLE runs_v3 RENAME TO runs")
        for statement in _SCHEMA.split(";"):
            if statement.strip().startswith("CREATE INDEX"):
                conn.execute(statement)

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

    @staticmethod
    def _trial_row(run_id: str, t: StoredTrial) -> tuple[Any, ...]:
        # the typed grader results, verdicts and events as the JSON the columns hold
        data = t.model_dump(include={"grader_results", "verdicts", "turns"})
        return (
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
            json.dumps(data["turns"], ensure_ascii=False),
            json.dumps(data["verdicts"], ensure_ascii=False),
            t.trials,
            t.error,
            json.dumps(data["grader_results"], ensure_ascii=False, default=str),
            json.dumps(t.messages, ensure_ascii=False),
            json.dumps(t.snapshot, ensure_ascii=False) if t.snapshot is not None else None,
            t.duration_s,
            t.file,
            t.line,
            t.stopping.model_dump_json() if t.stopping is not None else None,
        )

    def add_trials(self, run_id: str, trials: Iterable[StoredTrial]) -> int:
        """Store trials (a case and trial stored again replaces the earlier one). A trial whose
        text SQLite cannot take is stored as `clean_trial` makes it."""
        trials = list(trials)
        if not trials:
            return 0
        try:
            self._insert_trials([self._trial_row(run_id, t) for t in trials])
        except (UnicodeEncodeError, RecursionError, ValueError, TypeError):
            self._insert_trials([self._trial_row(run_id, clean_trial(t)) for t in trials])
        return len(trials)

    def _insert_trials(self, rows: list[tuple[Any, ...]]) -> None:
        self._retry(lambda: self._write_trials(rows))

    def _write_trials(self, rows: list[tuple[Any, ...]]) -> None:
        # keyed by (run_id, case_id, trial): a batch written again replaces itself, never adds
        with self._transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO trials (run_id, case_id, trial, set_name, threshold, "
                "priority, difficulty, tags, outcome, failures, transcript, verdicts, trials, "
                "error, grader_results, messages, snapshot, duration_s, file, line, stopping) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        trials: list[StoredTrial] | None = None,
    ) -> RunRecord:
        """Close a run: set results and the judge identity from its trials, the end time, and
        `complete` (false for an interrupted run). Returns the stored record.

        `trials`: every trial of the run as the caller added them, so they need not be read
        back twice (a case and trial added twice counts once, the last, as stored); by default
        they are read from the store."""
        self._retry(
            lambda: self._finish_run(run_id, complete, exit_status, ended_at, baseline, trials)
        )
        return self.load_run(run_id)

    def _finish_run(
        self,
        run_id: str,
        complete: bool,
        exit_status: int | None,
        ended_at: str | None,
        baseline: str | None,
        trials: list[StoredTrial] | None,
    ) -> None:
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

    def _column(self, raw: Any, column: str, where: str) -> Any:
        """A JSON column's value, or a `StoreError` saying what is damaged where."""
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except RecursionError:
            raise _DamagedRun(
                f"{self.path}: {where}: column {column} is nested too deeply to read"
            ) from None
        except (ValueError, TypeError) as exc:
            raise _DamagedRun(
                f"{self.path}: {where}: column {column} is not JSON ({exc})"
            ) from None
        if isinstance(raw, str) and _SURROGATE_ESCAPE.search(raw):
            value = clean_json(value)
        return value

    def _trials(self, conn: sqlite3.Connection, run_id: str) -> list[StoredTrial]:
        rows = conn.execute(
            "SELECT * FROM trials WHERE run_id = ? ORDER BY set_name, case_id, trial", (run_id,)
        ).fetchall()
        out = []
        for row in rows:
            data = dict(row)
            where = f"run {run_id}, case {data.get('case_id')!r:.80} trial {data.get('trial')!r}"
            try:
                data.pop("run_id")
                for column, field in _TRIAL_JSON.items():
                    if column == "stopping" and column not in data:  # a store still migrating
                        continue
                    data[field] = self._column(data.pop(column), f"trials.{column}", where)
                out.append(StoredTrial.model_validate(data))
            except KeyError as exc:
                raise _DamagedRun(f"{self.path}: {where}: column trials.{exc} missing") from None
            except ValidationError as exc:
                raise _DamagedRun(
                    f"{self.path}: {where}: damaged: {validation_summary(exc)}"
                ) from None
        return out

    def _record(self, conn: sqlite3.Connection, row: sqlite3.Row, with_trials: bool) -> RunRecord:
        data = dict(row)
        where = f"run {printable(str(data.get('run_id')))[:80]}"
        try:
            data.pop("signature")
            for column in _RUN_JSON:
                data[column] = self._column(data[column], f"runs.{column}", where)
            data["complete"] = bool(data["complete"])
            data["git_dirty"] = None if data["git_dirty"] is None else bool(data["git_dirty"])
            sets = conn.execute(
                "SELECT * FROM set_results WHERE run_id = ? ORDER BY set_name", (data["run_id"],)
            ).fetchall()
            data["sets"] = []
            for found in sets:
                entry = dict(found)
                entry["name"] = entry.pop("set_name")
                entry["met"] = bool(entry["met"])
                entry["other"] = self._column(entry["other"], "set_results.other", where)
                entry.pop("run_id")
                data["sets"].append(entry)
            if with_trials:
                data["trials"] = self._trials(conn, data["run_id"])
            return RunRecord.model_validate(data)
        except KeyError as exc:
            raise _DamagedRun(f"{self.path}: {where}: column {exc} missing") from None
        except ValidationError as exc:
            raise _DamagedRun(f"{self.path}: {where}: damaged: {validation_summary(exc)}") from None

    def load_run(self, run_id: str, *, with_trials: bool = True) -> RunRecord:
        return self._retry(lambda: self._load_run(run_id, with_trials))

    def _load_run(self, run_id: str, with_trials: bool) -> RunRecord:
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
        """Runs without their trials, newest first, filtered by the given fields. A run whose
        row does not decode is left out and noted in `damaged`."""
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
        return self._retry(lambda: self._select_runs(query, args, limit))

    def _select_runs(self, query: str, args: list[Any], limit: int | None) -> list[RunRecord]:
        out: list[RunRecord] = []
        with self._connect() as conn:
            for row in conn.execute(query, args):
                if limit is not None and len(out) >= limit:
                    break
                try:
                    out.append(self._record(conn, row, False))
                except _DamagedRun as exc:
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
                    found = self._column(raw or "[]", "trials.verdicts", where)
                except _DamagedRun as exc:
                    self._note(exc)
                    continue
                try:
                    out += verdicts_from_json(found)
                except ValueError:
                    self._note(
                        _DamagedRun(
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
                except _DamagedRun as exc:
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
            except _DamagedRun as exc:
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
