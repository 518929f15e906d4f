"""Calibrating the judge: agreement and Cohen's kappa against human verdicts per dimension.

A calibration set is a folder of JSON files (or one file), each holding one labelled transcript
or a list of them:

    {
      "schema_version": 1,
      "id": "cal-003-budget-over-unflagged",
      "source": "synthetic",                 # or "reference-agent <commit>" once recorded
      "role": "customer",
      "state": {"memory": ["only buys vegan leather"]},   # optional, the case's `state`
      "turns": [{"user": "...", "events": [{"type": "tool_call", ...}, ...]}],
      "rubric": {"custom_dimension": "PASS if ... FAIL if ..."},   # optional; standard names
      "labels": {"budget_respected": "FAIL"},                        # need no text
      "notes": "the fixture fact that decides each label"
    }

Events use the event-stream format (`events.py`), so transcripts recorded from the reference agent
or captured from production drop in unchanged.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..cases.case import State
from ..errors import CommerceEvalsError
from ..events import Event
from .rubrics import STANDARD, resolve_dimensions

if TYPE_CHECKING:
    from .judge import Judge

__all__ = [
    "CalibrationAborted",
    "CalibrationError",
    "CalibrationItem",
    "CalibrationTurn",
    "DimensionAgreement",
    "agreement_table",
    "cohen_kappa",
    "format_agreement",
    "load_calibration_set",
    "run_calibration",
]

CALIBRATION_SCHEMA_VERSION = 1
Verdict = Literal["PASS", "FAIL"]


class CalibrationError(CommerceEvalsError, ValueError):
    """A calibration file that cannot be used; the message names the file, item and key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CalibrationTurn(_Strict):
    user: str = Field(min_length=1)
    events: list[Event] = Field(default_factory=list)


class CalibrationItem(_Strict):
    schema_version: Literal[1] = 1
    id: str = Field(min_length=1)
    source: str = Field(min_length=1)
    role: Literal["customer", "operator"] = "customer"
    state: State = Field(default_factory=State)
    turns: list[CalibrationTurn] = Field(min_length=1)
    rubric: dict[str, str] = Field(default_factory=dict)
    labels: dict[str, Verdict] = Field(min_length=1)
    notes: str = ""

    @model_validator(mode="after")
    def _labels_match_rubric(self) -> CalibrationItem:
        for name in self.labels:
            if name not in self.rubric and name not in STANDARD:
                raise ValueError(
                    f"label {name!r} is not a standard dimension and has no text under 'rubric'; "
                    f"standard dimensions: {', '.join(sorted(STANDARD))}"
                )
        for name in self.rubric:
            if name not in self.labels:
                raise ValueError(f"rubric dimension {name!r} has no human label under 'labels'")
        return self

    def dimensions(self) -> dict[str, str]:
        """Every labelled dimension with the exact text the judge will read."""
        return resolve_dimensions({name: self.rubric.get(name, "standard") for name in self.labels})


def _items_in(path: Path) -> list[tuple[str, int | None, object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise CalibrationError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
    if isinstance(data, list):
        return [(str(path), i, item) for i, item in enumerate(data)]
    return [(str(path), None, data)]


def load_calibration_set(path: str | Path) -> list[CalibrationItem]:
    """Load and validate a calibration folder or file; raises CalibrationError listing problems."""
    root = Path(path)
    if root.is_dir():
        files = sorted(root.glob("*.json"))
        if not files:
            raise CalibrationError(f"{root}: no *.json calibration files in this folder")
    elif root.is_file():
        files = [root]
    else:
        raise CalibrationError(
            f"{root}: calibration set not found (pass --commerce-judge-calibration-set=PATH)"
        )
    items: list[CalibrationItem] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    for file in files:
        try:
            raw_items = _items_in(file)
        except CalibrationError as exc:
            problems.append(str(exc))
            continue
        for filename, index, raw in raw_items:
            where = filename if index is None else f"{filename} [item {index}]"
            try:
                item = CalibrationItem.model_validate(raw)
            except ValidationError as exc:
                ident = raw.get("id") if isinstance(raw, dict) else None
                for err in exc.errors(include_url=False):
                    loc = ".".join(str(p) for p in err["loc"]) or "(item)"
                    problems.append(f"{where} ({ident or 'no id'}): {loc}: {err['msg']}")
                continue
            if item.id in seen:
                problems.append(f"{where}: id {item.id!r} also used in {seen[item.id]}")
                continue
            seen[item.id] = where
            items.append(item)
    if problems:
        raise CalibrationError(
            f"calibration set {root} has {len(problems)} problem(s):\n  " + "\n  ".join(problems)
        )
    return items


def cohen_kappa(pairs: Iterable[tuple[Verdict, Verdict]]) -> float | None:
    """Cohen's kappa of (human, judge) verdict pairs; None when undefined.

    Undefined when there are no pairs, or when chance agreement is 1 (both raters gave one and
    the same label to everything, so agreement carries no information beyond chance).
    """
    pairs = list(pairs)
    n = len(pairs)
    if n == 0:
        return None
    observed = sum(h == j for h, j in pairs) / n
    expected = sum(
        (sum(h == label for h, _ in pairs) / n) * (sum(j == label for _, j in pairs) / n)
        for label in ("PASS", "FAIL")
    )
    if expected >= 1.0:
        return None
    return (observed - expected) / (1.0 - expected)


@dataclass
class DimensionAgreement:
    """Judge against humans on one dimension. Judge and infra errors are counted, not paired."""

    dimension: str
    pairs: list[tuple[Verdict, Verdict]] = field(default_factory=list)
    judge_errors: int = 0
    infra_errors: int = 0
    disagreements: list[str] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.pairs)

    @property
    def agreement(self) -> float | None:
        return sum(h == j for h, j in self.pairs) / self.n if self.pairs else None

    @property
    def kappa(self) -> float | None:
        return cohen_kappa(self.pairs)


def agreement_table(
    labelled: Iterable[tuple[str, str, Verdict, str]],
) -> dict[str, DimensionAgreement]:
    """Build per-dimension agreement from (item id, dimension, human verdict, judge outcome)."""
    table: dict[str, DimensionAgreement] = defaultdict(lambda: DimensionAgreement(""))
    for item_id, dimension, human, outcome in labelled:
        row = table[dimension]
        row.dimension = dimension
        if outcome == "judge_error":
            row.judge_errors += 1
        elif outcome == "infra_error":
            row.infra_errors += 1
        else:
            judge: Verdict = "PASS" if outcome == "pass" else "FAIL"
            row.pairs.append((human, judge))
            if judge != human:
                row.disagreements.append(f"{item_id}: human {human}, judge {judge}")
    return dict(sorted(table.items()))


class CalibrationAborted(CommerceEvalsError, RuntimeError):
    """The judge endpoint failed; calibrating further would only wait on retries."""


def run_calibration(
    judge: Judge, items: Iterable[CalibrationItem], *, stop_on_infra_error: bool = False
) -> dict[str, DimensionAgreement]:
    """Judge every labelled dimension of every item and compare with the human labels."""
    labelled = []
    for item in items:
        verdicts = judge.grade_transcript(
            [t.user for t in item.turns],
            [t.events for t in item.turns],
            item.dimensions(),
            role=item.role,
            state=item.state,
        )
        for v in verdicts:
            if stop_on_infra_error and v.outcome == "infra_error":
                raise CalibrationAborted(f"{item.id} / {v.dimension}: {v.error}")
            labelled.append((item.id, v.dimension, item.labels[v.dimension], v.outcome))
    return agreement_table(labelled)


def _fmt(value: float | None, undefined: str) -> str:
    return undefined if value is None else f"{value:.2f}"


def format_agreement(table: dict[str, DimensionAgreement]) -> list[str]:
    """The calibration report as lines of text."""
    width = max([len("dimension"), *(len(d) for d in table)])
    lines = [
        f"{'dimension':<{width}}  {'n':>3}  {'agreement':>9}  {'kappa':>9}  "
        f"{'judge_err':>9}  {'infra_err':>9}"
    ]
    for name, row in table.items():
        lines.append(
            f"{name:<{width}}  {row.n:>3}  {_fmt(row.agreement, 'n/a'):>9}  "
            f"{_fmt(row.kappa, 'undefined'):>9}  {row.judge_errors:>9}  {row.infra_errors:>9}"
        )
    disagreements = [f"  {name}: {d}" for name, row in table.items() for d in row.disagreements]
    if disagreements:
        lines.append("disagreements:")
        lines.extend(disagreements)
    lines.append(
        "kappa is undefined when chance agreement is 1 (every human and judge verdict the same "
        "label); read agreement and n there."
    )
    return lines
