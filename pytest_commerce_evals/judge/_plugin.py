"""The judge's pytest hooks: the built-in rubric grader and calibration (the judge's options are
declared in `settings.TABLE`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..compat import line_writer, run_session
from ..results import RubricVerdict
from ..rubrics import resolve_dimensions
from ..settings import settings
from .skipping import (
    _calibration_lookup,
    _endpoint_model,
    _is_embedded,
    embedded_judge_decides,
    judge_params,
    store_path,
)

# The judge, its calibration and its store are imported where a hook needs them: a run without
# a rubric or the run header (`-q`) does not import them.
if TYPE_CHECKING:
    from ..cases.case import Case
    from ..results import TrialRecord
    from .judge import ContextBudget, Judge

JUDGE = pytest.StashKey["Judge | None"]()
SEEN = pytest.StashKey[dict]()  # dimension -> [calibration, advisory, verdicts, advisory FAILs]
DEFAULT_CALIBRATION_SET = Path("tests") / "data" / "calibration"


# -- settings (declared in settings.TABLE) -------------------------------------------------------


EMBEDDED_BUDGET_CHARS = 10_000
"""The embedded model's default budget: its 8k-token window holds more, but on two CPU cores
every 1,000 prompt tokens cost about 7 s, and a tiny judge gains nothing from a longer quote."""


def judge_budget(config: pytest.Config, embedded: bool = False) -> ContextBudget:
    from .judge import ContextBudget

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
    from ..models import clients, endpoint  # imported late: it may start the embedded server
    from .judge import Judge
    from .verdict_store import VerdictStore

    resolved = endpoint.resolve_endpoint(config, "judge")
    # shared for the session and closed at its end, so no connection outlives the run
    client = clients.session_client(config, "judge")
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


@pytest.hookimpl(wrapper=True, specname="pytest_commerce_evals_grade_rubric")
def pytest_commerce_evals_grade_rubric_calibrated(
    config: pytest.Config, case: Case, result: TrialRecord
) -> Any:
    """Whichever judge answered (the built-in one or a team's), its verdicts carry the judge's
    calibration on their dimension and, under --commerce-judge-min-kappa, are advisory."""
    verdicts = yield
    if not verdicts:
        return verdicts
    return annotate_verdicts(config, list(verdicts))


@pytest.hookimpl(trylast=True)
def pytest_commerce_evals_grade_rubric(
    config: pytest.Config, case: Case, result: TrialRecord
) -> list[RubricVerdict] | None:
    """The built-in judge; trylast, so a team's own implementation in conftest.py wins."""
    if settings(config).no_judge:
        return None
    dimensions = case.expected.rubric_dimensions()
    if not dimensions:
        return []
    decides = embedded_judge_decides(config)
    if decides is not None and not any(decides(name) for name in resolve_dimensions(dimensions)):
        return None  # the embedded judge's verdicts would decide nothing: not asked (not judged)
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
        return run_session(config, _calibrate_main)
    return None


# -- calibration of the judge in use ----------------------------------------------------------


def _embedded_judge_model(config: pytest.Config) -> str | None:
    """The model id of the judge endpoint when it is the embedded model, else None."""
    from ..models.endpoint import EndpointError, resolve_endpoint

    try:
        resolved = resolve_endpoint(config, "judge")
    except EndpointError:
        return None
    return resolved.model if _is_embedded(resolved) else None


def annotate_verdicts(config: pytest.Config, verdicts: list[RubricVerdict]) -> list[RubricVerdict]:
    """Each verdict with its judge's calibration and, under the bar, marked advisory."""
    from .calibrated import annotate

    embedded = _embedded_judge_model(config)
    return annotate(
        verdicts,
        _calibration_lookup(config),
        settings(config).judge_min_kappa,
        is_embedded=lambda v: embedded is not None and v.judge_model == embedded,
    )


def calibration_header(config: pytest.Config) -> list[str]:
    """The run header's line on the judge's calibration and whether its verdicts decide."""
    from ..models.endpoint import EndpointError, resolve_endpoint
    from .calibrated import advisory_reason, resolve_bar, shipped_calibrations
    from .judge import Judge

    found = settings(config)
    if found.no_judge or found.judge_calibrate:
        return []
    try:
        resolved = resolve_endpoint(config, "judge")
        model = _endpoint_model(resolved)
    except (EndpointError, pytest.UsageError):
        return []
    embedded = _is_embedded(resolved)
    fingerprint = Judge(client=None, model=model, params=judge_params(config, resolved)).fingerprint
    rows = _calibration_lookup(config)(fingerprint)
    bar = resolve_bar(found.judge_min_kappa, embedded)
    who = f"embedded {model}" if embedded else model
    shipped = shipped_calibrations().get(fingerprint)
    if shipped is not None and all(r.source == "shipped" for r in rows.values()):
        kappa = "" if shipped.overall_kappa is None else f" κ {shipped.overall_kappa:.2f}"
        rate = shipped.overall_agreement
        agreement = "" if rate is None else f", {rate:.0%} agreement"
        measured = (
            f"{who} calibrated{kappa} over {shipped.overall_n} labels{agreement} "
            "(calibration shipped with the plugin)"
        )
    elif not rows:
        measured = f"{who} uncalibrated (judge {fingerprint[:12]})"
    else:
        labels = sum(r.n for r in rows.values())
        measured = f"{who} calibrated on {len(rows)} dimension(s), {labels} labels (verdict store)"
    if bar.kappa is None:
        return [f"commerce-evals judge calibration: {measured}; every verdict decides ({bar.why})"]
    below = sorted(d for d, r in rows.items() if advisory_reason(r, bar))
    if rows and not below:
        return [
            f"commerce-evals judge calibration: {measured}; bar κ {bar.kappa:g} ({bar.why}) "
            "met on every calibrated dimension: those verdicts decide, the verdicts of "
            "dimensions it was not calibrated on are advisory"
        ]
    if not rows and shipped is None:
        head = f"judge verdicts advisory: {measured}, bar κ {bar.kappa:g} ({bar.why})"
    elif len(below) == len(rows) and (shipped is None or (shipped.overall_kappa or 0) < bar.kappa):
        head = f"judge verdicts advisory: {measured} < {bar.kappa:g} ({bar.why})"
    else:
        head = (
            f"judge verdicts advisory on {len(below)} of {len(rows)} calibrated dimension(s) "
            f"({', '.join(below) or 'none'}): {measured}, bar κ {bar.kappa:g} ({bar.why})"
        )
    if embedded:
        return [
            f"commerce-evals {head}; the embedded judge is not asked for a case none of whose "
            "dimensions it could decide (each call takes seconds on a CPU): those rubrics are "
            "reported as not judged (--commerce-judge-min-kappa=none asks it, and lets every "
            "verdict decide)"
        ]
    return [
        f"commerce-evals {head}; advisory verdicts are shown but decide no trial, and so are "
        "those of dimensions it was not calibrated on (--commerce-judge-min-kappa=none lets "
        "every verdict decide)"
    ]


def pytest_report_header(config: pytest.Config) -> list[str]:
    try:
        return calibration_header(config)
    except Exception as exc:  # a header must never stop the run
        return [f"commerce-evals judge calibration: not shown ({type(exc).__name__}: {exc})"]


def pytest_commerce_evals_trial_recorded(config: pytest.Config, record: TrialRecord) -> None:
    seen = config.stash.setdefault(SEEN, {})
    for v in record.verdicts:
        if v.calibration is None:
            continue
        row = seen.setdefault(v.dimension, [v.calibration, v.advisory, 0, 0])
        row[0], row[1] = v.calibration, v.advisory
        row[2] += 1
        row[3] += bool(v.advisory and v.outcome == "fail")


def calibration_summary(seen: dict) -> list[str]:
    """Per judged dimension: the judge's calibration, and whether its verdicts decided."""
    lines = []
    for dimension, (label, advisory, count, fails) in sorted(seen.items()):
        if advisory:
            also = f"; {fails} FAIL verdict(s) did not fail their trial" if fails else ""
            lines.append(f"{dimension}: {label}, {count} verdict(s), advisory ({advisory}){also}")
        else:
            lines.append(f"{dimension}: {label}, {count} verdict(s), decides")
    return lines


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    for line in verdict_store_lines(config):
        terminalreporter.write_line(line, yellow=True)
    seen = config.stash.get(SEEN, None)
    if not seen:
        return
    terminalreporter.section("commerce-evals judge calibration")
    for line in calibration_summary(seen):
        terminalreporter.write_line(line)


WORKER_STORES = pytest.StashKey[list]()
"""Under xdist, on the controller: each worker's verdict-store outage (`_store_outage`)."""
WORKER_KEY = "commerce_evals_verdict_store"


def _store_outage(config: pytest.Config) -> dict[str, Any] | None:
    """This process's verdict-store outage as plain data; None when the store never failed."""
    judge = config.stash.get(JUDGE, None)
    store = getattr(judge, "store", None)
    if store is None or store.outage is None:
        return None
    return {
        "outage": store.outage,
        "missed": store.missed,
        "unstored": store.unstored,
        "reconnected": store.reconnected,
        "away": store.unavailable is not None,
    }


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """An xdist worker hands its verdict store's outage to the controller's summary."""
    config = session.config
    output = getattr(config, "workeroutput", None)
    found = _store_outage(config)
    if output is not None and found is not None:
        output[WORKER_KEY] = found


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    found = getattr(node, "workeroutput", {}).get(WORKER_KEY)
    if found:
        node.config.stash.setdefault(WORKER_STORES, []).append(found)


def verdict_store_lines(config: pytest.Config) -> list[str]:
    """One line when the session's verdict store was away: why, what it cost, whether it came
    back; under xdist, over the workers (each worker's judge keeps its own store)."""
    outages = [o for o in [_store_outage(config), *config.stash.get(WORKER_STORES, [])] if o]
    if not outages:
        return []
    missed = sum(o["missed"] for o in outages)
    unstored = sum(o["unstored"] for o in outages)
    reconnected = sum(o["reconnected"] for o in outages)
    away = sum(o["away"] for o in outages)
    if away:
        state = "still away" if away == len(outages) else f"still away on {away} worker(s)"
        if reconnected:
            state += f", reconnected {reconnected} time(s)"
    else:
        state = f"reconnected {reconnected} time(s)"
    where = f" (on {len(outages)} workers)" if len(outages) > 1 else ""
    return [
        f"verdict store: {outages[0]['outage']}{where}; {missed} verdict(s) asked of the judge "
        f"instead of looked up, {unstored} not stored; {state}"
    ]


def _calibrate_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    from ..agent import InfraError
    from .calibration import (
        CalibrationAborted,
        CalibrationError,
        calibration_rows,
        calibration_set_id,
        format_agreement,
        load_calibration_set,
        run_calibration,
    )
    from .verdict_store import VerdictStore

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
    labels = sum(len(item.labels) for item in items)
    write(f"calibration: 0/{len(items)} items ({labels} labels), started")
    try:
        table = run_calibration(
            judge, items, stop_on_infra_error=True, progress=write, clock=time.monotonic
        )
    except CalibrationAborted as exc:
        write(f"commerce-evals: calibration stopped, the judge endpoint failed: {exc}", red=True)
        return pytest.ExitCode.TESTS_FAILED
    for line in format_agreement(table):
        write(line)
    stored_at = store_path(config)
    if stored_at is not None:
        rows = calibration_rows(
            table,
            judge_fingerprint=judge.fingerprint,
            judge_model=judge.model,
            set_id=calibration_set_id(items),
            set_items=len(items),
        )
        with VerdictStore(stored_at) as store:
            kept = all([store.put_calibration(row) for row in rows])
            shown = store.path
            unavailable = store.unavailable
        if kept:
            write(
                f"calibration stored in {shown} for judge {judge.fingerprint[:12]} "
                f"(set {rows[0].set_id[:12] if rows else '-'}); regression runs with this judge "
                "show these kappas beside its verdicts"
            )
        else:
            write(f"commerce-evals: calibration NOT stored: {unavailable}", red=True)
    errors = sum(row.judge_errors + row.infra_errors for row in table.values())
    return pytest.ExitCode.TESTS_FAILED if errors else pytest.ExitCode.OK


def pytest_commerce_evals_copy_stores(config: pytest.Config, write: Callable[..., None]) -> None:
    """`--commerce-judge-store-copy=SRC,DEST`: every verdict and calibration of SRC into DEST."""
    value = settings(config).judge_store_copy
    if not value:
        return
    from ..errors import StoreError
    from ..store.commands import copy_sides
    from .verdict_store import VerdictStore, copy_verdicts

    src, dst = copy_sides(config, "--commerce-judge-store-copy", value)
    if isinstance(src, Path) and not src.is_file():
        raise StoreError(f"{src}: no verdict store here")
    with VerdictStore(src) as vsrc, VerdictStore(dst) as vdst:
        count = copy_verdicts(vsrc, vdst)
        write(f"copied {count} verdict(s) from {vsrc.path} to {vdst.path}")
