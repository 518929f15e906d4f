"""Trial outcomes, grader results and judge verdicts, the typed record of a finished trial
(`TrialRecord`), and the outcome once judged (`fold_outcome`). The pass rates and the threshold
rule over trials are in `rates.py`."""

from __future__ import annotations

import typing
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass
from dataclasses import fields as dc_fields
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    SerializerFunctionWrapHandler,
    ValidationError,
    create_model,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from .backend import Snapshot
from .cases.case import AttackCategory, Case, Difficulty, Priority
from .events import Event
from .usage import ModelCall

__all__ = [
    "ENDINGS",
    "NOT_GRADED",
    "OUTCOMES",
    "GraderResult",
    "Outcome",
    "RubricVerdict",
    "TrialRecord",
    "TrialSpec",
    "failure_lines",
    "fold_outcome",
    "REPORT_KINDS",
    "attach_payload",
    "report_payload",
    "Stopping",
    "verdicts_from_json",
]

Outcome = Literal["pass", "fail", "judge_error", "user_error", "infra_error", "error", "skipped"]
"""`pass`/`fail`: graded. `judge_error`: the judge's reply held no verdict. `user_error`: the
simulated customer failed (its endpoint past the retries, an unusable reply, a rule the plugin
checks). `infra_error`: the endpoint failed past the retries. `error`: the glue failed (a conftest
hook raised before the agent ran, or returned the wrong type). `skipped`: the case carries `skip`.
Only `pass` and `fail` count in rates; the others are reported apart and never count against the
agent."""
OUTCOMES: tuple[Outcome, ...] = (
    "pass",
    "fail",
    "judge_error",
    "user_error",
    "infra_error",
    "error",
    "skipped",
)
NOT_GRADED: tuple[Outcome, ...] = ("judge_error", "user_error", "infra_error", "error")
"""Outcomes of a trial that ran but could not be graded: JUnit `<error>`, never `<failure>`."""
GRADED: tuple[Outcome, ...] = ("pass", "fail")

Ended = Literal["customer", "max_turns", "agent_error", "user_error"]
ENDINGS: dict[str, str] = {
    "customer": "the customer ended it",
    "max_turns": "it reached the case's max_turns",
    "agent_error": "the agent failed",
    "user_error": "the simulated customer failed",
}
"""Why a conversation with a simulated customer ended, and how the reports say it."""
"""The outcomes that count in pass rates."""

REPORT_KINDS = ("trial", "not_needed", "not_started", "vacuity", "invalid")
"""What a pytest report of the plugin's items carries, as `report.commerce` (one mapping, with
`kind`): `trial` a trial's record (`outcome`, `record`, `rubric_not_judged`, `agent_endpoint`,
`decided`), `not_needed` a trial adaptive trials did not run (`decided`, its reason),
`not_started` a trial the run's budget left unstarted (`reason`, `set_name`, `threshold`), `vacuity`
a case's vacuity findings (`finding`), `invalid` a case entry that cannot run (`message`). A
worker under xdist sends it as plain data."""


def attach_payload(report: Any, kind: str, **fields: Any) -> None:
    """Put the plugin's mapping on a pytest report: `kind` (one of `REPORT_KINDS`) and its
    fields. pytest-xdist sends it with the report, as plain data."""
    if kind not in REPORT_KINDS:
        raise ValueError(f"a report carries one of {', '.join(REPORT_KINDS)}; found {kind!r}")
    report.commerce = {"kind": kind, **fields}


def report_payload(report: Any, kind: str | None = None) -> dict[str, Any] | None:
    """The plugin's mapping on a pytest report (of `kind`, when given); None when it has none."""
    data = getattr(report, "commerce", None)
    if data is None or (kind is not None and data.get("kind") != kind):
        return None
    return data


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

    `calibration` is how far the judge in use is trusted on this dimension, as the reports show
    it beside the verdict: `κ 0.72 (n=40)`, `κ undefined (n=4)` or `uncalibrated` (None: not
    looked up, e.g. a record written before calibration was recorded). `advisory` is set when
    the verdict is shown but does not decide the trial's outcome, and says why (the judge's
    calibrated kappa is below `--commerce-judge-min-kappa`, or it is uncalibrated).
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
    calibration: str | None = None
    advisory: str | None = None


class Stopping(BaseModel):
    """The stopping rule adaptive trials ran a case under (`--commerce-trials=auto:MIN:MAX`):
    recorded on each of its trials, so its rate can be read without the rule's bias wherever the
    trials are (`stats.adaptive_rate`), a regrade of the run included."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    minimum: int = Field(ge=1)
    maximum: int = Field(ge=1)
    baseline: tuple[int, int] | None = None
    level: float = Field(gt=0, lt=1)
    delta: float = Field(gt=0, lt=1)

    @field_validator("baseline", mode="before")
    @classmethod
    def _pair(cls, value: Any) -> Any:
        # JSON writes the pair as a list; a tuple in memory, so the rule hashes
        return tuple(value) if isinstance(value, list) else value

    @field_validator("baseline")
    @classmethod
    def _counts(cls, value: tuple[int, int] | None) -> tuple[int, int] | None:
        if value is not None and not 0 <= value[0] <= value[1]:
            raise ValueError("a baseline is (passed, graded) with 0 <= passed <= graded")
        return value

    @field_validator("maximum")
    @classmethod
    def _bounds(cls, value: int, info: Any) -> int:
        if value < info.data.get("minimum", 1):
            raise ValueError("maximum is at least minimum")
        return value


def fold_outcome(outcome: Outcome, verdicts: Iterable[RubricVerdict]) -> Outcome:
    """A trial's outcome once the judge has spoken: a code failure or a FAIL verdict fails the
    trial; otherwise judge or endpoint trouble on a verdict is not a pass. An advisory verdict
    (`RubricVerdict.advisory`) is reported but decides nothing."""
    verdicts = [v for v in verdicts if not v.advisory]
    if outcome == "fail" or any(v.outcome == "fail" for v in verdicts):
        return "fail"
    if any(v.outcome == "infra_error" for v in verdicts):
        return "infra_error"
    if any(v.outcome == "judge_error" for v in verdicts):
        return "judge_error"
    return outcome


# -- the trial record ---------------------------------------------------------------------------


def failure_lines(
    grader_results: Iterable[GraderResult], error: str | None, verdicts: Iterable[RubricVerdict]
) -> list[str]:
    """Why a trial did not pass, one line per failed grader, the error, and each verdict that
    failed or could not be given (an advisory one marked so, with its reason)."""
    out = [g.message for g in grader_results if not g.passed]
    if error:
        out.append(str(error).strip())
    for v in verdicts:
        note = f" (advisory, does not decide the outcome: {v.advisory})" if v.advisory else ""
        if v.outcome == "fail":
            out.append(f"rubric {v.dimension}: FAIL{note} — {v.reasoning}")
        elif v.outcome in ("judge_error", "infra_error"):
            out.append(f"rubric {v.dimension}: {v.outcome}{note} — {v.error}")
    return out


def _data_model(cls: type, **defaults: Any) -> type[BaseModel]:
    """A pydantic model with the fields of dataclass `cls`, to check its JSON form strictly (a
    strict validation takes a stdlib dataclass only as an instance, never as its mapping).
    `defaults`: fields an older record may lack, and the value they are read as."""
    hints = typing.get_type_hints(cls)
    fields_: dict[str, Any] = {}
    for f in dc_fields(cls):
        default = defaults.get(f.name, f.default)
        fields_[f.name] = (hints[f.name], ... if default is MISSING else default)
    return create_model(
        f"{cls.__name__}Data", __config__=ConfigDict(extra="forbid", strict=True), **fields_
    )


def _as_dataclasses(value: Any, model: type[BaseModel], cls: type) -> Any:
    """Mappings in `value` (a list) as instances of dataclass `cls`, each checked strictly
    against `model`; anything else is left for the field's own validation to refuse."""
    if not isinstance(value, list):
        return value
    out = []
    for n, item in enumerate(value):
        if isinstance(item, Mapping):
            try:
                item = cls(**dict(model.model_validate(dict(item))))
            except ValidationError as exc:
                err = exc.errors(include_url=False)[0]
                where = ".".join(str(p) for p in (n, *err["loc"]))
                raise ValueError(f"item {where}: {err['msg']}") from None
        out.append(item)
    return out


def verdicts_from_json(value: Any) -> list[RubricVerdict]:
    """Judge verdicts from their JSON form (a list of mappings), checked as a trial record
    checks them; a `ValueError` says what is wrong."""
    if not isinstance(value, list):
        raise ValueError(f"expected a list of verdicts; found {type(value).__name__}")
    found = _as_dataclasses(value, _VERDICT_DATA, RubricVerdict)
    if not all(isinstance(v, RubricVerdict) for v in found):
        raise ValueError("expected a list of verdicts (mappings)")
    return found


@dataclass(frozen=True, slots=True)
class TrialSpec:
    """Which trial runs: the case, its number among the case's `trials`, the set it counts
    toward and that set's threshold, and where the case was read (`file`, `line`). Built once
    per pytest item and passed whole to whatever runs the trial (a regression run, a regrade, a
    sampled live conversation, the vacuity check); `TrialRecord.begin` begins the record from
    it."""

    case: Case
    trial: int = 1
    trials: int = 1
    set_name: str = ""
    threshold: float = 0.0
    file: str | None = None
    line: int | None = None


class TrialRecord(BaseModel):
    """One trial, from the moment the runner starts it to the stored run: the case's identity
    and the set's threshold, the transcript (typed events per turn), the backend's final state
    (`Snapshot`), the grader results and judge verdicts, the outcome and why it failed.

    The one shape of a trial: the runner builds it (`begin`) and grades it in place, the hooks
    (`trial_done`, `grade_rubric`, `trial_recorded`) receive it, the run store stores it,
    the JSON record, the reports, live mode and regrade
    read it. Between processes (pytest-xdist) it travels as `model_dump()` and is rebuilt with
    `model_validate` where reports gather. `clean()` is the form every writer takes: the record
    itself, or a copy whose values JSON cannot hold (a lone surrogate, nesting past
    `jsonsafe.MAX_DEPTH`) were made writable.
    """

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    case_id: str
    trial: int = Field(ge=1)
    trials: int = Field(default=1, ge=1)
    set_name: str
    threshold: float = Field(ge=0, le=1)
    priority: Priority
    difficulty: Difficulty
    tags: list[str] = Field(default_factory=list)
    attack: AttackCategory | None = None
    """The category of the case's attacking customer (`user.attack.category`); None for a case
    without one. The attack success rate reads it, never the tags: a tag is anyone's to write.
    Written only when set (a record of schema 8 or older has none: its trials count as no
    attack)."""
    outcome: Outcome
    failures: list[str] = Field(default_factory=list)
    error: str | None = None
    grader_results: list[GraderResult] = Field(default_factory=list)
    verdicts: list[RubricVerdict] = Field(default_factory=list)
    turns: list[list[Event]] = Field(default_factory=list)
    messages: list[str] = Field(default_factory=list)
    cached: list[NonNegativeInt] = Field(default_factory=list)
    """The indexes in `messages` of the simulated customer's messages the reply cache answered
    (`--commerce-judge-store`) rather than its model: replayed, not generated in this run.
    Written only when some."""
    ended: Ended | None = None
    """Why a conversation with a simulated customer ended (`ENDINGS`); None for scripted turns.
    Written only when set."""
    snapshot: Snapshot | None = None
    duration_s: float = 0.0
    calls: list[ModelCall] = Field(default_factory=list)
    """The trial's answered model calls, the agent's, the judge's and the simulated
    customer's (`usage.ModelCall`); none when nothing reported any. Written only when some."""
    turn_s: list[float] = Field(default_factory=list)
    """The agent's wall time in each turn (what the customer waited). Written only when some."""
    file: str | None = None
    line: int | None = None
    stopping: Stopping | None = None
    rubric_not_judged: bool = Field(default=False, exclude=True)
    """The case has a rubric the judge did not grade (no judge answered the hook): the summary
    counts it; never stored (the report carries it across processes)."""

    @classmethod
    def begin(cls, spec: TrialSpec, *, messages: Iterable[str] | None = None) -> TrialRecord:
        """The record of the trial `spec` names, about to run (outcome `pass` until something
        fails it), its customer's messages the case's turns unless given. Built without
        validation: every part comes from a validated case or the runner itself."""
        case = spec.case
        return cls.model_construct(
            case_id=case.id,
            trial=spec.trial,
            trials=spec.trials,
            set_name=spec.set_name,
            threshold=spec.threshold,
            priority=case.priority,
            difficulty=case.difficulty,
            tags=list(case.tags),
            attack=case.attack.category if case.attack is not None else None,
            outcome="pass",
            messages=list(case.turns if messages is None else messages),
            cached=[],
            file=spec.file,
            line=spec.line,
            # every field given: pydantic's defaults cost an inspect.signature per factory
            failures=[],
            error=None,
            grader_results=[],
            verdicts=[],
            turns=[],
            snapshot=None,
            ended=None,
            duration_s=0.0,
            calls=[],
            turn_s=[],
            stopping=None,
            rubric_not_judged=False,
        )

    @property
    def failed_graders(self) -> list[GraderResult]:
        """The grader results that failed (`failures` are the lines the reports show)."""
        return [g for g in self.grader_results if not g.passed]

    def settle(self) -> TrialRecord:
        """Say why the trial failed (`failures`) from its grader results, verdicts and error;
        the runner calls it when the trial is graded or ends early. What looks like a secret in
        the error and the failures is masked (`errors.redact`). Returns the record."""
        from .errors import redact

        if self.error:  # an endpoint's error body may echo a key: never shown or stored
            self.error = redact(self.error)
        self.failures = [
            redact(line) for line in failure_lines(self.grader_results, self.error, self.verdicts)
        ]
        return self

    def clean(self) -> TrialRecord:
        """The record as every writer takes it: itself when JSON can hold every value (one
        serialisation tells), else a copy with what it cannot hold made writable, so the trial
        is recorded rather than lost and reads back as the same kinds of events: lone
        surrogates escaped and the deepest parts as their JSON text (`jsonsafe.clean_json`),
        an object JSON has no type for as its `repr`, keys JSON cannot hold as their text."""
        try:
            self.model_dump_json()
        except ValueError:  # pydantic's serialisation error: a surrogate, depth, an odd object
            pass
        else:
            return self
        import json

        from .jsonsafe import MAX_DEPTH, clean_json, json_text

        # a trial is level 3 of a run record (the record, its trials, the trial)
        data = clean_json(self.model_dump(), MAX_DEPTH - 2)
        try:
            data = json.loads(json.dumps(data, default=repr, ensure_ascii=False))
        except (TypeError, ValueError, RecursionError):  # keys JSON cannot hold, say
            data = json.loads(json_text(data))
        copy = type(self).model_validate(data)
        copy.rubric_not_judged = self.rubric_not_judged
        return copy

    @field_validator("case_id")
    @classmethod
    def _case_id(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a case id is not empty")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError(
                f"{value!r} holds a lone surrogate (half of a UTF-16 pair): not a case id"
            ) from None
        return value

    @field_validator("grader_results", mode="before")
    @classmethod
    def _grader_results(cls, value: Any) -> Any:
        return _as_dataclasses(value, _GRADER_DATA, GraderResult)

    @field_validator("verdicts", mode="before")
    @classmethod
    def _verdicts(cls, value: Any) -> Any:
        return _as_dataclasses(value, _VERDICT_DATA, RubricVerdict)

    @field_validator("calls", mode="before")
    @classmethod
    def _calls(cls, value: Any) -> Any:
        return _as_dataclasses(value, _CALL_DATA, ModelCall)

    @field_validator("snapshot", mode="before")
    @classmethod
    def _snapshot(cls, value: Any) -> Any:
        # as a record stores it: {"cart", "memory", "changes"}, nothing else
        if isinstance(value, Mapping):
            unknown = sorted(set(value) - {"cart", "memory", "changes", "data"})
            if unknown:
                raise ValueError(f"unknown snapshot keys {unknown}")
            try:
                return Snapshot.from_data(
                    cart=value.get("cart") or [],
                    memory=value.get("memory") or [],
                    changes=value.get("changes") or [],
                    data=value.get("data"),
                )
            except TypeError as exc:  # a value of the wrong kind where a list is read
                raise ValueError(str(exc)) from None
        return value

    @model_serializer(mode="wrap")
    def _out(self, handler: SerializerFunctionWrapHandler) -> Any:
        # a record carries no empty optional key: the attack's category only for an attack case,
        # why a conversation ended only for one with a simulated customer, calls, turn times
        # and cached messages only when reported
        data = handler(self)
        if isinstance(data, dict):
            for key in ("attack", "ended"):
                if data.get(key, "") is None:
                    del data[key]
            for key in ("calls", "turn_s", "cached"):
                if key in data and not data[key]:
                    del data[key]
        return data

    @field_serializer("snapshot", mode="wrap")
    def _snapshot_out(self, value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        # the domain's other state only when the backend reported some
        data = handler(value)
        if isinstance(data, dict) and not data.get("data"):
            data.pop("data", None)
        return data

    @field_serializer("verdicts", mode="wrap")
    def _verdicts_out(self, value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        # a verdict's calibration fields only when set
        data = handler(value)
        if isinstance(data, list):
            for item in data:
                if isinstance(item, dict):
                    for key in _VERDICT_OPTIONAL:
                        if item.get(key, "") is None:
                            del item[key]
        return data

    @model_validator(mode="after")
    def _cached_are_messages(self) -> TrialRecord:
        if self.cached and max(self.cached) >= len(self.messages):
            raise ValueError(
                f"cached: message {max(self.cached)} marked as cached, but the trial has "
                f"{len(self.messages)} message(s)"
            )
        return self

    @field_validator("turns", mode="before")
    @classmethod
    def _turns(cls, value: Any) -> Any:
        # Schema-2 records written before the record was typed hold an event JSON could not
        # write as {"type": ..., "unserializable": "<repr>"}: it reads back as a text note
        # saying so, so the rest of the record still loads (the other migrations:
        # store/schema.py).
        if not isinstance(value, list):
            return value
        return [
            [_unserializable_note(e) for e in turn] if isinstance(turn, list) else turn
            for turn in value
        ]


def _unserializable_note(event: Any) -> Any:
    if isinstance(event, dict) and set(event) == {"type", "unserializable"}:
        return {
            "type": "text",
            "text": f"[a {event['type']} event that could not be recorded: "
            f"{event['unserializable']}]",
        }
    return event


_GRADER_DATA = _data_model(GraderResult)
_CALL_DATA = _data_model(ModelCall)
# verdicts recorded under schema 1 carry no `rubric` (their stores and records are migrated
# without rewriting the verdicts): read as ''
_VERDICT_DATA = _data_model(RubricVerdict, rubric="")
_VERDICT_OPTIONAL = ("calibration", "advisory")  # written only when set
