"""What a run is, as every feature and hook sees it: the record models (`RunRecord` with its
`Selection`, `SetResult`s, `CaseResult`s, `NotStarted` trials and trials, `results.TrialRecord`s),
the `SCHEMA_VERSION` the run store's database and the JSON record share, and
`validation_summary`, which says which keys of a record failed to validate.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .jsonsafe import key_path, printable
from .rates import set_verdict
from .results import TrialRecord

__all__ = [
    "SCHEMA_VERSION",
    "CaseResult",
    "NotStarted",
    "pass_k_curve",
    "RunKind",
    "RunRecord",
    "Selection",
    "SetResult",
    "validation_summary",
]

SCHEMA_VERSION = 9
RunKind = Literal["regression", "live", "regrade"]


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
        skipped), by the one rule the exit status uses (`rates.set_verdict`); `met` holds the
        threshold's answer on `rate` (under adaptive trials the mean of per-case rates)."""
        if self.graded <= 0 or self.other.get("not_started"):
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
    pass_hat_k: dict[str, float] | None = None
    """pass^k for k = 1 up to the case's graded trials (`rates.pass_hat_k`: the chance that k
    trials drawn from them all pass, as τ²-bench's leaderboard reports it); None when none was
    graded."""
    cost: dict[str, Any] | None = None
    """What the case's trials spent, per purpose (`costs.Tally.to_json`: calls, tokens, latency,
    money as decimal strings in USD, means per trial); None when no trial recorded any."""


def pass_k_curve(cases: list[CaseResult]) -> dict[int, float]:
    """pass^k over cases for each k: the mean of each case's pass^k over the cases with at least
    k graded trials (the curve the terminal summary prints)."""
    curve: dict[int, float] = {}
    top = max((c.graded for c in cases), default=0)
    for k in range(1, top + 1):
        values = [c.pass_hat_k[str(k)] for c in cases if c.pass_hat_k and str(k) in c.pass_hat_k]
        if values:
            curve[k] = sum(values) / len(values)
    return curve


class NotStarted(_Record):
    """A trial the run's budget (`--commerce-budget`) left unstarted."""

    case_id: str
    trial: int
    set_name: str


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
    """The failing-set diff against the run's baseline (`diff.FailingSetDiff.summary`): the
    JSON record carries it for readers; the database does not store it."""
    cost: dict[str, Any] | None = None
    """What the run spent (`costs.CostSummary.to_json`: per purpose for the run and each set,
    the price source of each model, the total in USD as a decimal string); derived from the
    trials for the JSON record, not stored in the database."""
    attacks: dict[str, Any] | None = None
    """The attack success rate per category and per attack case (`attacks.AttackRates.to_json`);
    None when the run had no attack."""
    trials: list[TrialRecord] = Field(default_factory=list)
    not_started: list[NotStarted] = Field(default_factory=list)
    """The trials the run's budget left unstarted (their sets are undecided); written to the
    JSON record, not kept by the run store (its sets keep the count, `other.not_started`)."""

    @property
    def signature(self) -> str:
        return self.selection.signature
