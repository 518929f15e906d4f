"""How a run lies in the run store's tables: a trial as a `trials` row, set results written to
`set_results`, and a run's rows read back into a `RunRecord` and its trials. What does not decode
raises `DamagedRun`, naming the database, the run, the column and what is wrong.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import DamagedRun
from ..jsonsafe import clean_json, printable
from ..results import TrialRecord
from ..runs import RunRecord, SetResult, validation_summary

__all__ = ["DamagedRun", "json_column", "read_run", "read_trials", "trial_row", "write_sets"]

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
    "calls": "calls",
    "turn_s": "turn_s",
    "cached": "cached",
}
_LATER_COLUMNS = (
    "stopping",
    "calls",
    "turn_s",
    "cached",
)  # absent while a store is still migrating


# writing --------------------------------------------------------------------------------------


def trial_row(run_id: str, t: TrialRecord) -> tuple[Any, ...]:
    """The trial as the values of a `trials` row, in the table's column order."""
    # the typed grader results, verdicts and events as the JSON the columns hold
    try:
        turns, verdicts, graders, snapshot = _typed_json(t.model_dump(include=_TYPED), t)
    except TypeError:  # a value plain JSON has no type for (a datetime, a Decimal or a set in
        # an event's result): as the JSON record writes it
        turns, verdicts, graders, snapshot = _typed_json(
            t.model_dump(mode="json", include=_TYPED), t
        )
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
        turns,
        verdicts,
        t.trials,
        t.error,
        graders,
        json.dumps(t.messages, ensure_ascii=False),
        snapshot,
        t.duration_s,
        t.file,
        t.line,
        t.stopping.model_dump_json() if t.stopping is not None else None,
        t.ended,
        # plain dataclasses of plain values: their fields are the JSON, no serializer needed
        json.dumps([vars(c) for c in t.calls], ensure_ascii=False) if t.calls else None,
        json.dumps(t.turn_s) if t.turn_s else None,
        json.dumps(t.cached) if t.cached else None,
        t.attack,
    )


_TYPED = {"grader_results", "verdicts", "turns", "snapshot"}


def _typed_json(data: dict[str, Any], t: TrialRecord) -> tuple[str, str, str, str | None]:
    return (
        json.dumps(data["turns"], ensure_ascii=False),
        json.dumps(data["verdicts"], ensure_ascii=False),
        json.dumps(data["grader_results"], ensure_ascii=False, default=str),
        json.dumps(data["snapshot"], ensure_ascii=False) if t.snapshot is not None else None,
    )


def write_sets(conn: sqlite3.Connection, run_id: str, sets: list[SetResult]) -> None:
    """Replace the run's `set_results` rows with `sets`."""
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


# reading --------------------------------------------------------------------------------------


def json_column(raw: Any, column: str, where: str, path: Path | str) -> Any:
    """A JSON column's value, or a `DamagedRun` saying what is damaged where (`path` is the
    database's file or URL)."""
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except RecursionError:
        raise DamagedRun(f"{path}: {where}: column {column} is nested too deeply to read") from None
    except (ValueError, TypeError) as exc:
        raise DamagedRun(f"{path}: {where}: column {column} is not JSON ({exc})") from None
    if isinstance(raw, str) and _SURROGATE_ESCAPE.search(raw):
        value = clean_json(value)
    return value


def read_trials(conn: sqlite3.Connection, run_id: str, path: Path | str) -> list[TrialRecord]:
    """The run's trials in set, case and trial order; a row that does not decode raises
    `DamagedRun`."""
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
                if column in _LATER_COLUMNS and column not in data:
                    continue
                value = json_column(data.pop(column), f"trials.{column}", where, path)
                if value is None and column in ("calls", "turn_s", "cached"):
                    continue  # none recorded (or a trial stored before its schema)
                data[field] = value
            out.append(TrialRecord.model_validate(data))
        except KeyError as exc:
            raise DamagedRun(f"{path}: {where}: column trials.{exc} missing") from None
        except ValidationError as exc:
            raise DamagedRun(f"{path}: {where}: damaged: {validation_summary(exc)}") from None
    return out


def read_run(
    conn: sqlite3.Connection, row: sqlite3.Row, with_trials: bool, path: Path | str
) -> RunRecord:
    """The record of a `runs` row with its set results (and its trials, `with_trials`); what
    does not decode raises `DamagedRun`."""
    data = dict(row)
    where = f"run {printable(str(data.get('run_id')))[:80]}"
    try:
        data.pop("signature")
        for column in _RUN_JSON:
            data[column] = json_column(data[column], f"runs.{column}", where, path)
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
            entry["other"] = json_column(entry["other"], "set_results.other", where, path)
            entry.pop("run_id")
            data["sets"].append(entry)
        if with_trials:
            data["trials"] = read_trials(conn, data["run_id"], path)
        return RunRecord.model_validate(data)
    except KeyError as exc:
        raise DamagedRun(f"{path}: {where}: column {exc} missing") from None
    except ValidationError as exc:
        raise DamagedRun(f"{path}: {where}: damaged: {validation_summary(exc)}") from None
