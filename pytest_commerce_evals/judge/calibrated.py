"""How far the judge in use is trusted: its calibration, looked up by judge fingerprint, and the
`--commerce-judge-min-kappa` bar under which its verdicts are shown but decide nothing.

A calibration run (`--commerce-judge-calibrate`) records each dimension's agreement and Cohen's
kappa in the verdict store against the judge fingerprint. A regression run looks the judge in
use up there first; when the store holds nothing for that fingerprint it reads the calibrations
shipped with the plugin (`calibrations.json` beside this module: the embedded judge's, measured
by the project). No row at all: the dimension is `uncalibrated`.

The bar (`judge_min_kappa`):

- a number in [-1, 1]: a dimension whose kappa is below it, undefined, measured on fewer than
  `MIN_LABELS` labels, or uncalibrated is advisory;
- `none`: every verdict decides;
- `auto` (the default): the bar is `EMBEDDED_MIN_KAPPA` (0.4) for the embedded judge, and none
  for any other, so a team's own judge never stops deciding unless the team sets the bar.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from ..results import RubricVerdict
from ..settings.values import MinKappaError, parse_min_kappa
from .verdict_store import StoredCalibration

if TYPE_CHECKING:
    from .verdict_store import VerdictStore

__all__ = [
    "EMBEDDED_MIN_KAPPA",
    "MIN_LABELS",
    "SHIPPED_FILE",
    "Bar",
    "CalibrationLookup",
    "MinKappaError",
    "ShippedCalibration",
    "advisory_reason",
    "annotate",
    "calibration_label",
    "parse_min_kappa",
    "resolve_bar",
    "shipped_calibrations",
]

EMBEDDED_MIN_KAPPA = 0.4
"""The bar `auto` sets for the embedded judge: moderate agreement beyond chance."""

MIN_LABELS = 10
"""Under a bar, a kappa measured on fewer labels is too noisy to clear it (over 3 labels of both
kinds a judge that guesses agrees on all, kappa 1.0, one time in eight)."""

SHIPPED_FILE = "calibrations.json"


# -- the shipped calibrations -----------------------------------------------------------------


@dataclass(frozen=True)
class ShippedCalibration:
    """One judge's calibration as shipped: per dimension, plus the pooled figures and a note
    saying how it was measured."""

    judge_fingerprint: str
    judge_model: str
    note: str
    overall_n: int
    overall_agreement: float | None
    overall_kappa: float | None
    dimensions: dict[str, StoredCalibration]


def _read_shipped(text: str) -> dict[str, ShippedCalibration]:
    data = json.loads(text)
    out: dict[str, ShippedCalibration] = {}
    for entry in data.get("calibrations", []):
        fingerprint = entry["judge_fingerprint"]
        dims = {
            name: StoredCalibration(
                judge_fingerprint=fingerprint,
                dimension=name,
                set_id=entry["set_id"],
                judge_model=entry["judge_model"],
                set_items=entry.get("set_items", 0),
                created_at=entry.get("created_at", 0.0),
                source="shipped",
                **row,
            )
            for name, row in entry["dimensions"].items()
        }
        overall = entry.get("overall", {})
        out[fingerprint] = ShippedCalibration(
            judge_fingerprint=fingerprint,
            judge_model=entry["judge_model"],
            note=entry.get("note", ""),
            overall_n=int(overall.get("n", sum(d.n for d in dims.values()))),
            overall_agreement=overall.get("agreement"),
            overall_kappa=overall.get("kappa"),
            dimensions=dims,
        )
    return out


_SHIPPED: dict[str, ShippedCalibration] | None = None


def shipped_calibrations() -> dict[str, ShippedCalibration]:
    """The calibrations packaged with the plugin, by judge fingerprint."""
    global _SHIPPED
    if _SHIPPED is None:
        resource = files(__package__).joinpath(SHIPPED_FILE)
        _SHIPPED = _read_shipped(resource.read_text(encoding="utf-8")) if resource.is_file() else {}
    return _SHIPPED


class CalibrationLookup:
    """Per judge fingerprint: the store's newest calibration, else the shipped one, else {}."""

    def __init__(
        self,
        store: VerdictStore | None = None,
        shipped: Mapping[str, ShippedCalibration] | None = None,
    ) -> None:
        self.store = store
        self.shipped = shipped_calibrations() if shipped is None else shipped
        self._cache: dict[str, dict[str, StoredCalibration]] = {}

    def __call__(self, judge_fingerprint: str | None) -> dict[str, StoredCalibration]:
        if not judge_fingerprint:
            return {}
        if judge_fingerprint not in self._cache:
            found = self.store.calibration(judge_fingerprint) if self.store is not None else {}
            if not found and judge_fingerprint in self.shipped:
                found = dict(self.shipped[judge_fingerprint].dimensions)
            self._cache[judge_fingerprint] = found
        return self._cache[judge_fingerprint]


def calibration_label(row: StoredCalibration | None) -> str:
    """`κ 0.72 (n=40)`, `κ undefined (n=4)` or `uncalibrated`."""
    if row is None:
        return "uncalibrated"
    kappa = "undefined" if row.kappa is None else f"{row.kappa:.2f}"
    return f"κ {kappa} (n={row.n})"


# -- the bar ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bar:
    """The minimum kappa applied to one judge, and why (for the header and the reasons)."""

    kappa: float | None  # None: no bar, every verdict decides
    why: str  # e.g. "--commerce-judge-min-kappa=0.6" or "auto: the embedded judge"


def resolve_bar(setting: float | str | None, embedded: bool) -> Bar:
    """The bar for a judge under `setting` (as `parse_min_kappa` returns it, or its text)."""
    if isinstance(setting, str):
        setting = parse_min_kappa(setting)
    if setting == "auto":
        if embedded:
            return Bar(
                EMBEDDED_MIN_KAPPA,
                f"--commerce-judge-min-kappa=auto sets {EMBEDDED_MIN_KAPPA:g} for the embedded "
                "judge",
            )
        return Bar(None, "--commerce-judge-min-kappa=auto sets no bar for a configured judge")
    if setting is None:
        return Bar(None, "--commerce-judge-min-kappa=none")
    return Bar(float(setting), f"--commerce-judge-min-kappa={float(setting):g}")


def advisory_reason(row: StoredCalibration | None, bar: Bar) -> str | None:
    """Why a dimension with calibration `row` is advisory under `bar`; None when it decides."""
    if bar.kappa is None:
        return None
    if row is None:
        return f"judge uncalibrated on this dimension, bar κ {bar.kappa:g} ({bar.why})"
    if row.kappa is None:
        return f"judge κ undefined (n={row.n}) on this dimension, bar κ {bar.kappa:g} ({bar.why})"
    if row.kappa < bar.kappa:
        return f"judge κ {row.kappa:.2f} (n={row.n}) < {bar.kappa:g} ({bar.why})"
    if row.n < MIN_LABELS:
        return (
            f"judge κ {row.kappa:.2f} measured on {row.n} labels, fewer than the {MIN_LABELS} "
            f"a kappa needs to clear the bar κ {bar.kappa:g} ({bar.why})"
        )
    return None


def annotate(
    verdicts: Iterable[RubricVerdict],
    lookup: CalibrationLookup,
    setting: float | str | None,
    is_embedded: Any = lambda verdict: False,
) -> list[RubricVerdict]:
    """Mark each verdict with its judge's calibration on its dimension and, under the bar, as
    advisory (shown, deciding nothing). `is_embedded(verdict)` says whether the verdict came from
    the embedded judge (what `auto` asks)."""
    out = list(verdicts)
    for v in out:
        row = lookup(v.judge_fingerprint).get(v.dimension)
        v.calibration = calibration_label(row)
        v.advisory = advisory_reason(row, resolve_bar(setting, bool(is_embedded(v))))
    return out
