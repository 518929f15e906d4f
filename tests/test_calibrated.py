"""Calibrated judging: calibrations stored by judge fingerprint, the kappa shown beside each
judged dimension, the --commerce-judge-min-kappa bar, the shipped calibration of the embedded
judge, and calibration progress."""

from __future__ import annotations

import json
import sqlite3
import textwrap
from contextlib import closing
from pathlib import Path

import pytest
from helpers import toy_conftest

from pytest_commerce_evals.judge import _plugin as _judge_plugin
from pytest_commerce_evals.judge.calibrated import (
    EMBEDDED_MIN_KAPPA,
    MIN_LABELS,
    CalibrationLookup,
    annotate,
    calibration_label,
    parse_min_kappa,
    shipped_calibrations,
)
from pytest_commerce_evals.judge.calibration import (
    calibration_rows,
    calibration_set_id,
    format_duration,
    load_calibration_set,
    progress_line,
    run_calibration,
)
from pytest_commerce_evals.judge.judge import Judge, JudgeParams
from pytest_commerce_evals.judge.verdict_store import (
    SCHEMA_VERSION,
    StoredCalibration,
    VerdictStore,
)
from pytest_commerce_evals.models.embedded import DEFAULT_MODEL, PACKAGED_MODELS
from pytest_commerce_evals.results import RubricVerdict, TrialRecord, fold_outcome
from pytest_commerce_evals.testing.fake import FakeClient

pytest_plugins = ["pytester"]

HERE = Path(__file__).parent
CALIBRATION_SET = HERE / "data" / "calibration"
PASS = '{"reasoning": "Ridgeline 3 costs 109.00, under 120.", "verdict": "PASS"}'
EMBEDDED_ID = PACKAGED_MODELS[DEFAULT_MODEL].model_id
EMBEDDED_FP = Judge(
    None, EMBEDDED_ID, params=JudgeParams(response_format="json_object")
).fingerprint


def cal(dimension="price_accurate", kappa=0.72, n=40, fp="f" * 64, **changes):
    fields = dict(
        judge_fingerprint=fp,
        dimension=dimension,
        set_id="s" * 64,
        judge_model="team-judge",
        n=n,
        agreement=0.9,
        kappa=kappa,
        set_items=20,
    )
    fields.update(changes)
    return StoredCalibration(**fields)


def fail_verdict(dimension="price_accurate", fp="f" * 64, model="team-judge") -> RubricVerdict:
    return RubricVerdict(
        dimension=dimension,
        rubric="PASS if a. FAIL if b.",
        outcome="fail",
        verdict="FAIL",
        reasoning="quotes $129",
        judge_model=model,
        judge_fingerprint=fp,
    )


# -- the store -----------------------------------------------------------------------------------


def test_a_calibration_is_stored_and_read_back_by_judge_fingerprint(tmp_path):
    store = VerdictStore(tmp_path / "v.sqlite")
    store.put_calibration(cal(kappa=0.5, created_at=1.0))
    store.put_calibration(cal(kappa=0.72, set_id="t" * 64, created_at=2.0))  # a later set
    store.put_calibration(cal("budget_respected", kappa=None, n=4))
    store.put_calibration(cal(fp="g" * 64, kappa=0.1))
    found = store.calibration("f" * 64)
    assert set(found) == {"price_accurate", "budget_respected"}
    assert (found["price_accurate"].kappa, found["price_accurate"].set_id) == (0.72, "t" * 64)
    assert found["budget_respected"].kappa is None
    assert store.calibration("h" * 64) == {}
    # the same fingerprint, dimension and set again: replaced, not added
    store.put_calibration(cal(kappa=0.8, set_id="t" * 64, created_at=3.0))
    assert store.calibration("f" * 64)["price_accurate"].kappa == 0.8
    with closing(sqlite3.connect(tmp_path / "v.sqlite")) as conn:
        assert conn.execute("SELECT COUNT(*) FROM calibrations").fetchone()[0] == 4


SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE verdicts (
    transcript_hash TEXT NOT NULL, judge_fingerprint TEXT NOT NULL,
    rubric_fingerprint TEXT NOT NULL, schema_version INTEGER NOT NULL, dimension TEXT NOT NULL,
    rubric TEXT NOT NULL, verdict TEXT NOT NULL CHECK (verdict IN ('PASS', 'FAIL')),
    reasoning TEXT NOT NULL, judge_model TEXT, truncated_chars INTEGER NOT NULL DEFAULT 0,
    truncated_turns INTEGER NOT NULL DEFAULT 0, created_at REAL NOT NULL,
    PRIMARY KEY (transcript_hash, judge_fingerprint, rubric_fingerprint));
INSERT INTO meta VALUES ('schema_version', '1');
INSERT INTO verdicts VALUES ('t', 'j', 'r', 1, 'price_accurate', 'PASS if a. FAIL if b.', 'PASS',
    'quotes $109', 'judge-m', 0, 0, 1.0);
"""


def test_a_version_1_store_is_migrated_and_keeps_its_verdicts(tmp_path):
    path = tmp_path / "v.sqlite"
    with closing(sqlite3.connect(path)) as conn:
        conn.executescript(SCHEMA_1)
    store = VerdictStore(path)
    assert SCHEMA_VERSION == 3
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            "3",
        )
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"calibrations", "replies"} <= tables
    kept = store.get("t", "j", "r")
    assert kept is not None and kept.reasoning == "quotes $109"
    assert store.calibration("j") == {}
    store.put_calibration(cal(fp="j"))
    assert store.calibration("j")["price_accurate"].kappa == 0.72


def test_a_store_of_a_newer_schema_is_refused(tmp_path):
    path = tmp_path / "v.sqlite"
    VerdictStore(path).close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    with pytest.raises(ValueError, match="schema_version 4 is newer than this plugin's 3"):
        VerdictStore(path)


# -- labels and the bar --------------------------------------------------------------------------


def test_the_label_beside_a_dimension():
    assert calibration_label(cal(kappa=0.724, n=40)) == "κ 0.72 (n=40)"
    assert calibration_label(cal(kappa=None, n=4)) == "κ undefined (n=4)"
    assert calibration_label(None) == "uncalibrated"


@pytest.mark.parametrize(
    ("raw", "parsed"),
    [("auto", "auto"), ("none", None), ("0.6", 0.6), ("-1", -1.0), ("1", 1.0), (" 0 ", 0.0)],
)
def test_min_kappa_values(raw, parsed):
    assert parse_min_kappa(raw) == parsed


@pytest.mark.parametrize("raw", ["1.5", "-1.01", "high", "nan"])
def test_bad_min_kappa_is_a_usage_error_naming_what_is_allowed(pytester, raw):
    result = pytester.runpytest(f"--commerce-judge-min-kappa={raw}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"*--commerce-judge-min-kappa: expected *kappa between -1 and 1*found '{raw}'*"]
    )


def test_a_bad_ini_min_kappa_names_the_ini_key(pytester):
    pytester.makeini("[pytest]\ncommerce_judge_min_kappa = strict\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini commerce_judge_min_kappa: expected auto, none or a kappa*"])


def test_below_the_bar_a_fail_is_advisory_and_does_not_fail_the_trial():
    lookup = CalibrationLookup(shipped={})
    lookup._cache["f" * 64] = {"price_accurate": cal(kappa=0.3, n=20)}
    [v] = annotate([fail_verdict()], lookup, 0.6)
    assert v.calibration == "κ 0.30 (n=20)"
    assert v.advisory == "judge κ 0.30 (n=20) < 0.6 (--commerce-judge-min-kappa=0.6)"
    assert fold_outcome("pass", [v]) == "pass"
    [w] = annotate([fail_verdict()], lookup, 0.2)
    assert w.advisory is None
    assert fold_outcome("pass", [w]) == "fail"
    # code graders still decide
    assert fold_outcome("fail", [v]) == "fail"


def test_a_kappa_over_too_few_labels_does_not_clear_the_bar():
    lookup = CalibrationLookup(shipped={})
    lookup._cache["f" * 64] = {"price_accurate": cal(kappa=1.0, n=MIN_LABELS - 1)}
    [v] = annotate([fail_verdict()], lookup, 0.6)
    assert v.advisory == (
        f"judge κ 1.00 measured on {MIN_LABELS - 1} labels, fewer than the {MIN_LABELS} a kappa "
        "needs to clear the bar κ 0.6 (--commerce-judge-min-kappa=0.6)"
    )
    assert fold_outcome("pass", [v]) == "pass"
    lookup._cache["f" * 64] = {"price_accurate": cal(kappa=1.0, n=MIN_LABELS)}
    [v] = annotate([fail_verdict()], lookup, 0.6)
    assert (v.advisory, fold_outcome("pass", [v])) == (None, "fail")


def test_uncalibrated_is_advisory_only_under_a_bar_the_user_set():
    lookup = CalibrationLookup(shipped={})
    [v] = annotate([fail_verdict()], lookup, "auto")  # a team's judge, default bar
    assert (v.calibration, v.advisory, fold_outcome("pass", [v])) == ("uncalibrated", None, "fail")
    [v] = annotate([fail_verdict()], lookup, 0.6)
    assert v.advisory.startswith("judge uncalibrated on this dimension, bar κ 0.6")
    assert fold_outcome("pass", [v]) == "pass"
    [v] = annotate([fail_verdict(fp=EMBEDDED_FP)], lookup, "none")
    assert v.advisory is None


def test_advisory_judge_errors_do_not_decide_either():
    lookup = CalibrationLookup(shipped={})
    v = fail_verdict()
    v.outcome, v.verdict, v.error = "judge_error", None, "not JSON"
    [v] = annotate([v], lookup, 0.6)
    assert fold_outcome("pass", [v]) == "pass"


def test_the_failure_text_and_the_record_say_advisory_and_old_records_load():
    lookup = CalibrationLookup(shipped={})
    lookup._cache["f" * 64] = {"price_accurate": cal(kappa=0.3, n=20)}
    [v] = annotate([fail_verdict()], lookup, 0.6)
    from pytest_commerce_evals.results import failure_lines

    assert failure_lines([], None, [v]) == [
        "rubric price_accurate: FAIL (advisory, does not decide the outcome: judge κ 0.30 (n=20) "
        "< 0.6 (--commerce-judge-min-kappa=0.6)) — quotes $129"
    ]
    base = dict(
        case_id="c",
        trial=1,
        set_name="s",
        threshold=0.9,
        priority="low",
        difficulty="easy",
        outcome="pass",
    )
    record = TrialRecord.model_validate({**base, "verdicts": [v.__dict__]})
    assert record.verdicts[0].advisory == v.advisory
    old = {k: val for k, val in v.__dict__.items() if k not in ("calibration", "advisory")}
    record = TrialRecord.model_validate({**base, "verdicts": [old]})
    assert (record.verdicts[0].calibration, record.verdicts[0].advisory) == (None, None)


# -- the shipped calibration of the embedded judge ---------------------------------------------


def test_the_embedded_judge_has_a_shipped_calibration_below_the_default_bar():
    shipped = shipped_calibrations()
    assert EMBEDDED_FP in shipped
    entry = shipped[EMBEDDED_FP]
    assert entry.judge_model == EMBEDDED_ID and entry.note
    assert all(r.source == "shipped" for r in entry.dimensions.values())
    assert entry.overall_kappa is None or entry.overall_kappa < EMBEDDED_MIN_KAPPA


def test_by_default_the_embedded_judges_verdicts_are_advisory_from_the_shipped_file():
    lookup = CalibrationLookup()  # no store: the shipped file alone
    entry = shipped_calibrations()[EMBEDDED_FP]
    below = [d for d, r in entry.dimensions.items() if (r.kappa or -2) < EMBEDDED_MIN_KAPPA]
    dimension = below[0] if below else "price_accurate"
    v = fail_verdict(dimension, fp=EMBEDDED_FP, model=EMBEDDED_ID)
    [v] = annotate([v], lookup, "auto", is_embedded=lambda verdict: True)
    assert v.calibration == calibration_label(entry.dimensions.get(dimension))
    assert "sets 0.4 for the embedded judge" in v.advisory
    assert fold_outcome("pass", [v]) == "pass"
    # a calibration of that fingerprint in the store wins over the shipped one
    store_lookup = CalibrationLookup(shipped=shipped_calibrations())
    store_lookup._cache[EMBEDDED_FP] = {dimension: cal(dimension, kappa=0.9, fp=EMBEDDED_FP)}
    [w] = annotate(
        [fail_verdict(dimension, fp=EMBEDDED_FP, model=EMBEDDED_ID)],
        store_lookup,
        "auto",
        is_embedded=lambda verdict: True,
    )
    assert (w.advisory, fold_outcome("pass", [w])) == (None, "fail")


def test_the_default_embedded_judge_fingerprint_matches_the_shipped_file(pytester):
    config = pytester.parseconfig()
    header = _judge_plugin.calibration_header(config)
    entry = shipped_calibrations()[EMBEDDED_FP]
    kappa = "" if entry.overall_kappa is None else f" κ {entry.overall_kappa:.2f}"
    assert header == [
        f"commerce-evals judge verdicts advisory: embedded {EMBEDDED_ID} calibrated{kappa} "
        f"over {entry.overall_n} labels, "
        f"{entry.overall_agreement:.0%} agreement (calibration shipped with the plugin) < 0.4 "
        "(--commerce-judge-min-kappa=auto sets 0.4 for the embedded judge); the embedded judge "
        "is not asked for a case none of whose dimensions it could decide (each call takes "
        "seconds on a CPU): those rubrics are reported as not judged "
        "(--commerce-judge-min-kappa=none asks it, and lets every verdict decide)"
    ]
    config = pytester.parseconfig("--commerce-judge-min-kappa=0.6")
    assert _judge_plugin.calibration_header(config)[0].startswith(
        f"commerce-evals judge verdicts advisory: embedded {EMBEDDED_ID} calibrated{kappa} "
    )
    config = pytester.parseconfig("--commerce-judge-min-kappa=none")
    assert _judge_plugin.calibration_header(config)[0].endswith(
        "every verdict decides (--commerce-judge-min-kappa=none)"
    )


# -- a regression run ----------------------------------------------------------------------------

TEAM_JUDGE = """
from pytest_commerce_evals import RubricVerdict

def pytest_commerce_evals_grade_rubric(config, case, result):
    return [RubricVerdict("price_accurate", "PASS if a. FAIL if b.", "fail", verdict="FAIL",
                          reasoning="quotes $129", judge_model="team-judge",
                          judge_fingerprint="f" * 64),
            RubricVerdict("budget_respected", "PASS if a. FAIL if b.", "pass", verdict="PASS",
                          reasoning="within", judge_model="team-judge",
                          judge_fingerprint="f" * 64)]
"""


@pytest.fixture
def team_run(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(toy_conftest() + textwrap.dedent(TEAM_JUDGE))
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        "- {id: shop-001-price, priority: low, difficulty: easy, turns: [hi], "
        "expected: {rubric: {price_accurate: standard, budget_respected: standard}}}\n"
    )
    store = VerdictStore(pytester.path / ".commerce" / "verdicts.sqlite")
    store.put_calibration(cal("price_accurate", kappa=0.3, n=20))
    store.close()
    return pytester


def test_below_the_bar_the_run_passes_and_says_why(team_run):
    result = team_run.runpytest("cases", "--commerce-judge-min-kappa=0.6")
    result.assert_outcomes(passed=1, warnings=None)
    result.stdout.fnmatch_lines(
        [
            "*commerce-evals judge calibration*",
            "budget_respected: uncalibrated, 1 verdict(s), advisory (judge uncalibrated on this dimension, "
            "bar κ 0.6 (--commerce-judge-min-kappa=0.6))",
            "price_accurate: κ 0.30 (n=20), 1 verdict(s), advisory (judge κ 0.30 (n=20) < 0.6 "
            "(--commerce-judge-min-kappa=0.6)); 1 FAIL verdict(s) did not fail their trial",
        ]
    )


def test_above_the_bar_the_fail_decides(team_run):
    result = team_run.runpytest("cases", "--commerce-judge-min-kappa=0.2", "--commerce-trials=1")
    result.assert_outcomes(failed=1, warnings=None)
    result.stdout.fnmatch_lines(
        [
            "*rubric price_accurate: FAIL — quotes $129*",
            "*commerce-evals judge calibration*",
            "price_accurate: κ 0.30 (n=20), 1 verdict(s), decides",
        ]
    )


def test_a_teams_own_judge_still_decides_by_default(team_run):
    result = team_run.runpytest(
        "cases",
        "--commerce-judge-model=team-judge",
        "--commerce-judge-base-url=http://127.0.0.1:9/v1",
    )
    result.assert_outcomes(failed=1, warnings=None)
    result.stdout.fnmatch_lines(
        [
            "commerce-evals judge calibration: team-judge uncalibrated (judge *); every verdict "
            "decides (--commerce-judge-min-kappa=auto sets no bar for a configured judge)",
        ]
    )
    result.stdout.fnmatch_lines(["budget_respected: uncalibrated, 1 verdict(s), decides"])


def test_the_header_says_an_uncalibrated_judge_is_advisory_under_a_bar(team_run):
    result = team_run.runpytest(
        "cases",
        "--commerce-judge-model=team-judge",
        "--commerce-judge-base-url=http://127.0.0.1:9/v1",
        "--commerce-judge-min-kappa=0.6",
    )
    result.stdout.fnmatch_lines(
        [
            "commerce-evals judge verdicts advisory: team-judge uncalibrated (judge *), bar κ 0.6 "
            "(--commerce-judge-min-kappa=0.6); advisory verdicts are shown but decide no trial*",
        ]
    )


def test_a_teams_own_judge_decides_by_default_even_on_the_embedded_endpoint(team_run):
    # nothing configured: the endpoint is the embedded model, but the verdicts are the team's
    result = team_run.runpytest("cases")
    result.assert_outcomes(failed=1, warnings=None)
    result.stdout.fnmatch_lines(["price_accurate: κ 0.30 (n=20), 1 verdict(s), decides"])


def test_the_html_report_shows_kappa_and_advisory(team_run):
    result = team_run.runpytest(
        "cases", "--commerce-judge-min-kappa=0.6", "--commerce-html=report.html"
    )
    result.assert_outcomes(passed=1, warnings=None)
    html = (team_run.path / "report.html").read_text()
    assert "κ 0.30 (n=20)" in html
    assert "FAIL (advisory)" in html
    assert "advisory, does not decide the outcome: judge κ 0.30 (n=20) &lt; 0.6" in html


# -- calibration: stored, and progress -------------------------------------------------------------


def test_progress_lines_with_a_fake_clock():
    items = sorted(load_calibration_set(CALIBRATION_SET), key=lambda i: i.id)[:3]
    ticks = iter([0.0, 60.0, 185.0, 300.0])
    lines: list[str] = []
    run_calibration(
        Judge(FakeClient(lambda request: PASS), "judge-7b"),
        items,
        progress=lines.append,
        clock=lambda: next(ticks),
    )
    labels = [len(i.labels) for i in items]
    total = sum(labels)
    left_1 = format_duration(60.0 / labels[0] * (total - labels[0]))
    assert lines == [
        f"calibration: 1/3 items, 1m00s elapsed, about {left_1} left",
        f"calibration: 2/3 items, 3m05s elapsed, about "
        f"{format_duration(185.0 / sum(labels[:2]) * labels[2])} left",
        "calibration: 3/3 items, 5m00s elapsed, done",
    ]


def test_progress_line_and_durations():
    assert progress_line(12, 34, 24, 70, 185.0) == (
        "calibration: 12/34 items, 3m05s elapsed, about 5m55s left"
    )
    assert progress_line(0, 3, 0, 5, 2.0) == "calibration: 0/3 items, 2s elapsed"
    assert format_duration(3725) == "1h02m"


def test_the_calibrate_option_stores_the_result_and_prints_progress(pytester, monkeypatch):
    judge = Judge(FakeClient(lambda request: PASS), "judge-7b")
    monkeypatch.setattr(_judge_plugin, "build_judge", lambda config, with_store=True: judge)
    subset = sorted(load_calibration_set(CALIBRATION_SET), key=lambda i: i.id)[:4]
    path = pytester.path / "set.json"
    path.write_text(json.dumps([i.model_dump(mode="json") for i in subset]))
    result = pytester.runpytest(
        "--commerce-judge-calibrate", f"--commerce-judge-calibration-set={path}"
    )
    assert result.ret == 0
    labels = sum(len(i.labels) for i in subset)
    result.stdout.fnmatch_lines(
        [
            f"calibration: 0/4 items ({labels} labels), started",
            "calibration: 1/4 items, *s elapsed, about *s left",
            "calibration: 4/4 items, *s elapsed, done",
            f"calibration stored in *verdicts.sqlite for judge {judge.fingerprint[:12]} *",
        ]
    )
    store = VerdictStore(pytester.path / ".commerce" / "verdicts.sqlite")
    found = store.calibration(judge.fingerprint)
    table = run_calibration(judge, subset)
    assert {d: (r.n, r.agreement, r.kappa) for d, r in found.items()} == {
        d: (r.n, r.agreement, r.kappa) for d, r in table.items()
    }
    assert {r.set_id for r in found.values()} == {calibration_set_id(subset)}


def test_calibration_rows_carry_the_table():
    subset = sorted(load_calibration_set(CALIBRATION_SET), key=lambda i: i.id)[:2]
    table = run_calibration(Judge(FakeClient(lambda request: PASS), "judge-7b"), subset)
    rows = calibration_rows(
        table, judge_fingerprint="f" * 64, judge_model="judge-7b", set_id="s" * 64, set_items=2
    )
    assert [(r.dimension, r.n, r.kappa) for r in rows] == [
        (d, t.n, t.kappa) for d, t in table.items()
    ]


def test_the_header_reads_the_store_for_the_configured_judge(pytester):
    fingerprint = Judge(None, "team-judge", params=JudgeParams()).fingerprint
    store = VerdictStore(pytester.path / ".commerce" / "verdicts.sqlite")
    store.put_calibration(cal("price_accurate", kappa=0.8, n=30, fp=fingerprint))
    store.put_calibration(cal("budget_respected", kappa=0.5, n=12, fp=fingerprint))
    store.close()
    judge = ("--commerce-judge-model=team-judge", "--commerce-judge-base-url=http://127.0.0.1:9/v1")
    config = pytester.parseconfig(*judge, "--commerce-judge-min-kappa=0.6")
    assert _judge_plugin.calibration_header(config) == [
        "commerce-evals judge verdicts advisory on 1 of 2 calibrated dimension(s) "
        "(budget_respected): team-judge calibrated on 2 dimension(s), 42 labels (verdict store), "
        "bar κ 0.6 (--commerce-judge-min-kappa=0.6); advisory verdicts are shown but decide no "
        "trial, and so are those of dimensions it was not calibrated on "
        "(--commerce-judge-min-kappa=none lets every verdict decide)"
    ]
    config = pytester.parseconfig(*judge, "--commerce-judge-min-kappa=0.5")
    assert _judge_plugin.calibration_header(config) == [
        "commerce-evals judge calibration: team-judge calibrated on 2 dimension(s), 42 labels "
        "(verdict store); bar κ 0.5 (--commerce-judge-min-kappa=0.5) met on every calibrated "
        "dimension: those verdicts decide, the verdicts of dimensions it was not calibrated on "
        "are advisory"
    ]


EMBEDDED_VERDICT = """
from pytest_commerce_evals import RubricVerdict

def pytest_commerce_evals_grade_rubric(config, case, result):
    # what the built-in judge on the embedded model answers, without running the model
    return [RubricVerdict("price_accurate", "PASS if a. FAIL if b.", "fail", verdict="FAIL",
                          reasoning="quotes $129", judge_model={model!r},
                          judge_fingerprint={fingerprint!r})]
"""


def test_by_default_the_embedded_judge_is_shown_but_does_not_decide(team_run):
    team_run.makeconftest(
        toy_conftest()
        + textwrap.dedent(EMBEDDED_VERDICT.format(model=EMBEDDED_ID, fingerprint=EMBEDDED_FP))
    )
    entry = shipped_calibrations()[EMBEDDED_FP]
    label = calibration_label(entry.dimensions.get("price_accurate"))
    result = team_run.runpytest("cases")
    result.assert_outcomes(passed=1, warnings=None)
    result.stdout.fnmatch_lines(
        [
            f"commerce-evals judge verdicts advisory: embedded {EMBEDDED_ID} calibrated *",
            "*commerce-evals judge calibration*",
            f"price_accurate: {label}, 1 verdict(s), advisory (*--commerce-judge-min-kappa=auto "
            "sets 0.4 for the embedded judge)); 1 FAIL verdict(s) did not fail their trial",
        ]
    )
    # the same verdicts decide once the bar is lifted
    result = team_run.runpytest("cases", "--commerce-judge-min-kappa=none")
    result.assert_outcomes(failed=1, warnings=None)


def test_the_docs_count_the_shipped_calibration_set_as_the_loader_does():
    import re
    from pathlib import Path

    from pytest_commerce_evals.judge.calibration import load_calibration_set

    root = Path(__file__).parents[1]
    items = load_calibration_set(root / "tests" / "data" / "calibration")
    text = (root / "docs" / "judge.md").read_text(encoding="utf-8")
    found = re.search(r"The shipped set \((\d+) transcripts, (\d+) labels", text)
    assert found, "docs/judge.md names the shipped set's size"
    assert (int(found[1]), int(found[2])) == (len(items), sum(len(i.labels) for i in items))


def test_the_lookup_prefers_the_stores_calibration_to_the_shipped_one(tmp_path):
    from pytest_commerce_evals.judge.calibrated import ShippedCalibration

    fp = "f" * 64
    shipped = {
        fp: ShippedCalibration(
            judge_fingerprint=fp, judge_model="team-judge", note="shipped", overall_n=40,
            overall_agreement=0.5, overall_kappa=0.1,
            dimensions={"price_accurate": cal(kappa=0.1).model_copy(update={"source": "shipped"})},
        )
    }  # fmt: skip
    with VerdictStore(tmp_path / "v.sqlite") as store:
        # with nothing measured here, the shipped calibration answers
        assert CalibrationLookup(store, shipped)(fp)["price_accurate"].kappa == 0.1
        store.put_calibration(cal(kappa=0.8))
        found = CalibrationLookup(store, shipped)(fp)["price_accurate"]
        assert (found.kappa, found.source) == (0.8, "store")  # what was measured here wins
        assert CalibrationLookup(None, shipped)(fp)["price_accurate"].kappa == 0.1
        assert CalibrationLookup(store, shipped)("e" * 64) == {}
