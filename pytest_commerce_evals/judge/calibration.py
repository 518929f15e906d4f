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

import hashlib
import json
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..cases.case import State
from ..errors import CalibrationAborted, CalibrationError
from ..events import Event
from ..rubrics import STANDARD, resolve_dimensions

if TYPE_CHECKING:
    from .judge import Judge

__all__ = [
    "CalibrationAborted",
    "CalibrationError",
    "CalibrationItem",
    "CalibrationTurn",
    "DimensionAgreement",
    "agreement_table",
    "calibration_rows",
    "calibration_set_id",
    "cohen_kappa",
    "format_agreement",
    "format_duration",
    "load_calibration_set",
    "pooled",
    "progress_line",
    "run_calibration",
]

CALIBRATION_SCHEMA_VERSION = 1
Verdict = Literal["PASS", "FAIL"]


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


def format_duration(seconds: float) -> str:
    """`45s`, `3m05s`, `1h02m`: how progress lines write a duration."""
    total = max(int(round(seconds)), 0)
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def progress_line(
    done: int, total: int, labels_done: int, labels_total: int, elapsed: float
) -> str:
    """`calibration: 12/34 items, 3m05s elapsed, about 5m40s left`. The estimate scales the time
    per judged label so far to the labels left (items carry different numbers of labels)."""
    line = f"calibration: {done}/{total} items, {format_duration(elapsed)} elapsed"
    if done >= total:
        return line + ", done"
    if labels_done:
        left = elapsed / labels_done * (labels_total - labels_done)
        return line + f", about {format_duration(left)} left"
    return line


def run_calibration(
    judge: Judge,
    items: Iterable[CalibrationItem],
    *,
    stop_on_infra_error: bool = False,
    progress: Callable[[str], None] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> dict[str, DimensionAgreement]:
    """Judge every labelled dimension of every item and compare with the human labels.

    `progress`, when given, receives a `progress_line` after each item (a small judge on a CPU
    takes many minutes over a set)."""
    items = list(items)
    labels_total = sum(len(item.labels) for item in items)
    labels_done = 0
    start = clock()
    labelled = []
    for done, item in enumerate(items, 1):
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
        labels_done += len(item.labels)
        if progress is not None:
            progress(progress_line(done, len(items), labels_done, labels_total, clock() - start))
    return agreement_table(labelled)


def calibration_set_id(items: Sequence[CalibrationItem]) -> str:
    """sha256 of the set's items (their JSON form, in id order): which set a result is for."""
    data = [item.model_dump(mode="json") for item in sorted(items, key=lambda i: i.id)]
    blob = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def calibration_rows(
    table: dict[str, DimensionAgreement],
    *,
    judge_fingerprint: str,
    judge_model: str | None,
    set_id: str,
    set_items: int,
) -> list:
    """The table as `verdict_store.StoredCalibration` rows, one per dimension."""
    from .verdict_store import StoredCalibration

    now = time.time()
    return [
        StoredCalibration(
            judge_fingerprint=judge_fingerprint,
            dimension=name,
            set_id=set_id,
            judge_model=judge_model,
            n=row.n,
            agreement=row.agreement,
            kappa=row.kappa,
            judge_errors=row.judge_errors,
            infra_errors=row.infra_errors,
            set_items=set_items,
            created_at=now,
        )
        for name, row in table.items()
    ]


def pooled(table: dict[str, DimensionAgreement]) -> DimensionAgreement:
    """Every dimension's pairs and errors together: the judge's overall agreement and kappa."""
    out = DimensionAgreement("(all)")
    for row in table.values():
        out.pairs.extend(row.pairs)
        out.judge_errors += row.judge_errors
        out.infra_errors += row.infra_errors
    return out


def _fmt(value: float | None, undefined: str) -> str:
    return undefined if value is None else f"{value:.2f}"


def format_agreement(table: dict[str, DimensionAgreement]) -> list[str]:
    """The calibration report as lines of text."""
    width = max([len("dimension"), *(len(d) for d in table)])
    lines = [
        f"{'dimension':<{width}}  {'n':>3}  {'agreement':>9}  {'kappa':>9}  "
        f"{'judge_err':>9}  {'infra_err':>9}"
    ]
    rows = dict(table)
    if len(table) > 1:
        rows["(all)"] = pooled(table)
    for name, row in rows.items():
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
