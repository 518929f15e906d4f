"""The verdict store's tables, its row models and the reading of rows written by older schemas.

`SCHEMA` is the SQL that creates the store's tables (`meta`, `verdicts`, `calibrations` and
`replies`) where they are missing; `StoredVerdict` and `StoredCalibration` are a verdict and a
calibration result as a row holds them; `read_row` reads a verdict row of any schema this plugin
knows, and `migrate_row` brings such a row up to `SCHEMA_VERSION`. The store itself, its
connections and its statements are `verdict_store`.

Schema history: 1, verdicts only; 2, adds `calibrations`; 3, adds `replies` (an older store is
migrated in place when opened: the missing tables are created and `meta.schema_version` set to
3). A store written by a newer version is refused.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..results import RubricVerdict

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "StoredCalibration",
    "StoredVerdict",
    "migrate_row",
    "read_row",
]

SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS verdicts (
    transcript_hash TEXT NOT NULL,
    judge_fingerprint TEXT NOT NULL,
    rubric_fingerprint TEXT NOT NULL,
    schema_version INTEGER NOT NULL,
    dimension TEXT NOT NULL,
    rubric TEXT NOT NULL,
    verdict TEXT NOT NULL CHECK (verdict IN ('PASS', 'FAIL')),
    reasoning TEXT NOT NULL,
    judge_model TEXT,
    truncated_chars INTEGER NOT NULL DEFAULT 0,
    truncated_turns INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    PRIMARY KEY (transcript_hash, judge_fingerprint, rubric_fingerprint)
);
CREATE INDEX IF NOT EXISTS verdicts_by_dimension ON verdicts (dimension, created_at);
CREATE TABLE IF NOT EXISTS calibrations (
    judge_fingerprint TEXT NOT NULL,
    dimension TEXT NOT NULL,
    set_id TEXT NOT NULL,
    judge_model TEXT,
    n INTEGER NOT NULL,
    agreement REAL,
    kappa REAL,
    judge_errors INTEGER NOT NULL DEFAULT 0,
    infra_errors INTEGER NOT NULL DEFAULT 0,
    set_items INTEGER NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    PRIMARY KEY (judge_fingerprint, dimension, set_id)
);
CREATE TABLE IF NOT EXISTS replies (
    reply_key TEXT PRIMARY KEY,
    model TEXT,
    reply TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""
# `calibrations` uses portable SQL only (TEXT, INTEGER, REAL columns; `?` parameters).


class StoredCalibration(BaseModel):
    """One dimension's calibration result for one judge fingerprint.

    `set_id` identifies the calibration set (sha256 of its items, see
    `calibration.calibration_set_id`); `agreement` and `kappa` are None when undefined.
    `source` says where the row was read from: `store`, or `shipped` for the calibrations
    packaged with the plugin (not a column).
    """

    model_config = ConfigDict(extra="forbid")

    judge_fingerprint: str
    dimension: str
    set_id: str
    judge_model: str | None = None
    n: int
    agreement: float | None = None
    kappa: float | None = None
    judge_errors: int = 0
    infra_errors: int = 0
    set_items: int = 0
    created_at: float = 0.0
    source: str = "store"


class StoredVerdict(BaseModel):
    """One stored verdict, as read back from the database."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = SCHEMA_VERSION
    transcript_hash: str
    judge_fingerprint: str
    rubric_fingerprint: str
    dimension: str
    rubric: str
    verdict: Literal["PASS", "FAIL"]
    reasoning: str
    judge_model: str | None = None
    truncated_chars: int = 0
    truncated_turns: int = 0
    created_at: float = 0.0

    def to_verdict(self) -> RubricVerdict:
        """The verdict as a trial reports it, marked as reused."""
        return RubricVerdict(
            dimension=self.dimension,
            rubric=self.rubric,
            outcome="pass" if self.verdict == "PASS" else "fail",
            verdict=self.verdict,
            reasoning=self.reasoning,
            judge_model=self.judge_model,
            judge_fingerprint=self.judge_fingerprint,
            rubric_fingerprint=self.rubric_fingerprint,
            transcript_hash=self.transcript_hash,
            truncated_chars=self.truncated_chars,
            truncated_turns=self.truncated_turns,
            reused=True,
        )


def migrate_row(row: dict) -> dict:
    """Bring a row written by an older schema up to `SCHEMA_VERSION` (there is only version 1)."""
    version = row.get("schema_version", SCHEMA_VERSION)
    if version > SCHEMA_VERSION:
        raise ValueError(
            f"verdict store row has schema_version {version}, newer than this plugin's "
            f"{SCHEMA_VERSION}; upgrade pytest-commerce-evals or point --commerce-judge-store "
            "at another file"
        )
    row["schema_version"] = SCHEMA_VERSION
    return row


def read_row(row: Any) -> StoredVerdict | None:
    """A row as a verdict; None for one that no longer reads as one (damaged, or written by
    something else): a miss, so the verdict is asked again and the row written over."""
    try:
        return StoredVerdict.model_validate(migrate_row(dict(row)))
    except (ValidationError, TypeError):
        return None
