"""The JSON run record (`--commerce-json`, and `unsaved-<run>.json` when the database failed):
reading one back (older schemas migrated, every failure a `StoreError` naming the file and the
key), writing one whatever its trials hold, and the copies of a trial or a record's header with
every value made writable (`clean_trial`, `clean_header`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import StoreError
from ..jsonsafe import (
    MAX_DEPTH,
    clean_json,
    deep_json_path,
    first_json_problem,
    is_clean,
    surrogate_problem,
    text_encodes,
)
from ..results import TrialRecord
from ..runs import RunRecord, validation_summary
from .aggregate import set_results
from .schema import migrate_record

__all__ = ["clean_header", "clean_trial", "load_record", "record_json", "write_record"]


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
        record = RunRecord.model_validate(migrate_record(data, str(path)), strict=True)
    except ValidationError as exc:
        raise StoreError(
            f"{path}: not a commerce-evals run record: {validation_summary(exc)}"
        ) from None
    if not record.sets and record.trials:
        record = record.model_copy(update={"sets": set_results(record.trials)})
    return record


def clean_trial(trial: TrialRecord) -> TrialRecord:
    """The trial itself, or a copy with every value `clean_json` makes writable
    (`TrialRecord.clean`)."""
    return trial.clean()


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
    import os

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    if tmp.is_symlink():  # a link planted where the temporary file goes is never followed
        tmp.unlink()
    data = record_json(record).encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # nothing half-written is left behind
        raise
    return path
