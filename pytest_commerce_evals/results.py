"""Trial outcomes, grader results and judge verdicts, and the statistics over them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from math import comb
from typing import Any, Literal

from pydantic import BaseModel

from .backend import Snapshot

__all__ = [
    "NOT_GRADED",
    "OUTCOMES",
    "GraderResult",
    "Outcome",
    "RubricVerdict",
    "TrialResult",
    "pass_hat_k",
    "set_verdict",
]

Outcome = Literal["pass", "fail", "judge_error", "infra_error", "error", "skipped"]
"""`pass`/`fail`: graded. `judge_error`: the judge's reply held no verdict. `infra_error`: the
endpoint failed past the retries. `error`: the glue failed (a conftest hook raised before the agent
ran, or returned the wrong type). `skipped`: the case carries `skip`. Only `pass` and `fail` count
in rates; the others are reported apart and never count against the agent."""
OUTCOMES: tuple[Outcome, ...] = ("pass", "fail", "judge_error", "infra_error", "error", "skipped")
NOT_GRADED: tuple[Outcome, ...] = ("judge_error", "infra_error", "error")
"""Outcomes of a trial that ran but could not be graded: JUnit `<error>`, never `<failure>`."""


@dataclass
class GraderResult:
    """One `expected` key graded: what was asked, what was seen, and the sentence a user reads."""

    key: str
    passed: bool
    expected: Any
    observed: Any
    message: str


@dataclass
class RubricVerdict:
    """The judge's decision on one rubric dimension.

    `outcome` is `pass`/`fail` when the judge returned a verdict, `judge_error` when its reply
    could not be parsed into one, `infra_error` when the endpoint failed past the retries.
    """

    dimension: str
    rubric: str
    outcome: Literal["pass", "fail", "judge_error", "infra_error"]
    verdict: Literal["PASS", "FAIL"] | None = None
    reasoning: str = ""
    error: str | None = None
    judge_model: str | None = None
    judge_fingerprint: str | None = None
    rubric_fingerprint: str | None = None
    transcript_hash: str | None = None
    truncated_chars: int = 0
    truncated_turns: int = 0
    reused: bool = False


@dataclass
class TrialResult:
    """Everything one trial produced: the record the reports and the run store are built from."""

    case_id: str
    trial: int
    trials: int
    set_name: str
    priority: str
    difficulty: str
    tags: list[str]
    outcome: Outcome
    grader_results: list[GraderResult] = field(default_factory=list)
    verdicts: list[RubricVerdict] = field(default_factory=list)
    turns: list[list[Any]] = field(default_factory=list)
    snapshot: Snapshot | None = None
    error: str | None = None
    duration_s: float = 0.0
    file: str | None = None
    line: int | None = None
    rubric_not_judged: bool = False

    @property
    def failures(self) -> list[GraderResult]:
        return [g for g in self.grader_results if not g.passed]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (events as their JSON objects)."""
        # field by field: asdict() would deep-copy every event only for it to be dumped again
        data: dict[str, Any] = {f: getattr(self, f) for f in _SCALARS}
        data["tags"] = list(self.tags)
        data["grader_results"] = [asdict(g) for g in self.grader_results]
        data["verdicts"] = [asdict(v) for v in self.verdicts]
        data["snapshot"] = None
        data["turns"] = [[_json_ready(e) for e in turn] for turn in self.turns]
        if self.snapshot is not None:
            data["snapshot"] = {
                "cart": [_json_ready(c) for c in self.snapshot.cart],
                "memory": list(self.snapshot.memory),
                "changes": [_json_ready(c) for c in self.snapshot.changes],
            }
        return data


def _json_ready(value: Any) -> Any:
    """An event or state model as JSON data. What pydantic's JSON mode refuses (a lone surrogate,
    a value nested past its depth limit, an object JSON has no type for) is kept anyway:
    surrogates escaped, the deepest parts as their JSON text (`store.clean_json`), other objects
    as their `repr`, so the trial is recorded rather than lost."""
    if not isinstance(value, BaseModel):
        return value
    try:
        return value.model_dump(mode="json")
    except ValueError:  # UnicodeEncodeError and pydantic's depth and unknown-type errors are
        import json

        from .store.run_store import clean_json

        cleaned = clean_json(value.model_dump())
        try:
            return json.loads(json.dumps(cleaned, default=repr, ensure_ascii=False))
        except (TypeError, ValueError, RecursionError):  # keys JSON cannot hold, say
            return {"type": getattr(value, "type", None), "unserializable": repr(value)[:10_000]}


_SCALARS = (
    "case_id",
    "trial",
    "trials",
    "set_name",
    "priority",
    "difficulty",
    "outcome",
    "error",
    "duration_s",
    "file",
    "line",
    "rubric_not_judged",
)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k: the chance that k trials drawn from n (c of them passing) all pass.

    The unbiased estimator C(c, k) / C(n, k) that tau-bench reports; 0 when k > c.
    """
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and n={n}, got {k}")
    return comb(c, k) / comb(n, k)


SetVerdict = Literal["ok", "short", "undecided", "skipped"]


def set_verdict(
    passed: int, graded: int, threshold: float, others: Mapping[str, int] | None = None
) -> SetVerdict:
    """A set's verdict: `ok` when its pass rate over graded (pass or fail) trials reaches the
    threshold, `short` when it does not, `undecided` when trials ran but none was graded (each
    ended in a judge, infrastructure or glue error: nothing was measured). A set whose every case
    carries `skip` is `skipped`: deliberately not run, it neither passes nor fails the run.
    `short` and `undecided` fail the run."""
    if graded <= 0:
        ran = any(n for outcome, n in (others or {}).items() if outcome != "skipped")
        return "undecided" if ran or not others else "skipped"
    # the tolerance keeps 4/5 at a threshold of 0.8 from failing on float rounding
    return "ok" if passed / graded + 1e-12 >= threshold else "short"
