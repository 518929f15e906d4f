"""The judge's pytest hooks: the built-in rubric grader and calibration (the judge's options are
declared in `settings.TABLE`)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..reports.terminal import line_writer
from ..results import RubricVerdict
from ..settings import settings
from .judge import ContextBudget, Judge, JudgeParams
from .rubrics import resolve_dimensions
from .verdict_store import VerdictStore

if TYPE_CHECKING:
    from ..cases.case import Case
    from ..results import TrialResult

JUDGE = pytest.StashKey["Judge | None"]()
DEFAULT_CALIBRATION_SET = Path("tests") / "data" / "calibration"


# -- settings (declared in settings.TABLE) -------------------------------------------------------


def store_path(config: pytest.Config) -> Path | str | None:
    """Where verdicts are stored (a SQLite file, or a PostgreSQL URL as a str), or None when
    storing is switched off."""
    return settings(config).judge_store


def _endpoint_model(endpoint: Any) -> str:
    for attr in ("model", "model_id"):
        value = getattr(endpoint, attr, None)
        if value:
            return str(value)
    if isinstance(endpoint, dict) and endpoint.get("model"):
        return str(endpoint["model"])
    raise pytest.UsageError(
        "the judge endpoint has no model id: set --commerce-judge-model "
        f"(resolved endpoint: {endpoint!r:.120})"
    )


def _is_embedded(endpoint: Any) -> bool:
    if getattr(endpoint, "embedded", False):
        return True
    kind = str(getattr(endpoint, "kind", "") or getattr(endpoint, "server", "")).lower()
    return "llama" in kind


def judge_params(config: pytest.Config, endpoint: Any = None) -> JudgeParams:
    found = settings(config)
    fmt = found.judge_format
    if fmt == "auto":
        fmt = "json_object" if _is_embedded(endpoint) else "json_schema"
    defaults = JudgeParams()
    seed, max_tokens = found.judge_seed, found.judge_max_tokens
    return JudgeParams(
        temperature=0.0,
        seed=defaults.seed if seed is None else seed,
        max_tokens=defaults.max_tokens if max_tokens is None else max_tokens,
        response_format=fmt,
    )


EMBEDDED_BUDGET_CHARS = 10_000
"""The embedded model's default budget: its 8k-token window holds more, but on two CPU cores
every 1,000 prompt tokens cost about 7 s, and a tiny judge gains nothing from a longer quote."""


def judge_budget(config: pytest.Config, embedded: bool = False) -> ContextBudget:
    found = settings(config)
    limit, unit = found.judge_budget, found.judge_budget_unit
    if not limit and embedded:
        limit, unit = EMBEDDED_BUDGET_CHARS, "chars"
    try:
        return ContextBudget(limit=limit or ContextBudget().limit, unit=unit)
    except ValueError as exc:
        raise pytest.UsageError(f"commerce judge budget: {exc}") from None


def build_judge(config: pytest.Config, *, with_store: bool = True) -> Judge:
    """The judge the options describe, on the endpoint `endpoint.py` resolves for role `judge`."""
    from ..models import endpoint  # imported late: it may start the embedded server

    resolved = endpoint.resolve_endpoint(config, "judge")
    # shared for the session and closed at its end, so no connection outlives the run
    client = endpoint.session_client(config, "judge")
    path = store_path(config) if with_store else None
    store = VerdictStore(path) if path is not None else None
    if store is not None:
        config.add_cleanup(store.close)
    return Judge(
        client=client,
        model=_endpoint_model(resolved),
        params=judge_params(config, resolved),
        budget=judge_budget(config, embedded=_is_embedded(resolved)),
        store=store,
    )


def _infra_verdicts(case: Case, error: BaseException) -> list[RubricVerdict]:
    return [
        RubricVerdict(
            dimension=name,
            rubric=text,
            outcome="infra_error",
            error=f"the judge endpoint could not be set up: {type(error).__name__}: {error}",
        )
        for name, text in resolve_dimensions(case.expected.rubric_dimensions()).items()
    ]


_build_lock = threading.Lock()

# -- hooks -------------------------------------------------------------------------------------


@pytest.hookimpl(trylast=True)
def pytest_commerce_evals_grade_rubric(
    config: pytest.Config, case: Case, result: TrialResult
) -> list[RubricVerdict] | None:
    """The built-in judge; trylast, so a team's own implementation in conftest.py wins."""
    if settings(config).no_judge:
        return None
    if not case.expected.rubric_dimensions():
        return []
    from ..agent import InfraError

    judge = config.stash.get(JUDGE, None)
    if judge is None:
        with _build_lock:  # concurrent trials: one judge for the session
            judge = config.stash.get(JUDGE, None)
            if judge is None:
                try:
                    judge = build_judge(config)
                except InfraError as exc:
                    return _infra_verdicts(case, exc)
                config.stash[JUDGE] = judge
    return judge.grade(case, result)


def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    if settings(config).judge_calibrate:
        # the same shape as --fixtures: configure, run one command, unconfigure, exit
        from _pytest.main import wrap_session

        return wrap_session(config, _calibrate_main)
    return None


def _calibrate_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    from ..agent import InfraError
    from .calibration import (
        CalibrationAborted,
        CalibrationError,
        format_agreement,
        load_calibration_set,
        run_calibration,
    )

    write = line_writer(config)

    value = settings(config).judge_calibration_set
    path = Path(value) if value else DEFAULT_CALIBRATION_SET
    if not path.is_absolute():
        path = (
            Path(config.rootpath) / path if not value else Path(config.invocation_params.dir) / path
        )
    try:
        items = load_calibration_set(path)
    except CalibrationError as exc:
        write(f"commerce-evals: {exc}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    try:
        judge = build_judge(config, with_store=False)
    except InfraError as exc:
        write(f"commerce-evals: the judge endpoint could not be set up: {exc}", red=True)
        return pytest.ExitCode.INTERNAL_ERROR
    write(
        f"calibrating judge {judge.model} on {len(items)} labelled transcripts from {path}",
        bold=True,
    )
    write(f"judge fingerprint {judge.fingerprint}")
    try:
        table = run_calibration(judge, items, stop_on_infra_error=True)
    except CalibrationAborted as exc:
        write(f"commerce-evals: calibration stopped, the judge endpoint failed: {exc}", red=True)
        return pytest.ExitCode.TESTS_FAILED
    for line in format_agreement(table):
        write(line)
    errors = sum(row.judge_errors + row.infra_errors for row in table.values())
    return pytest.ExitCode.TESTS_FAILED if errors else pytest.ExitCode.OK
