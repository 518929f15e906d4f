"""The one typed trial record: built once from the runner's result, carried to the controller,
handed to the hooks, stored and written in the formats of schema 2, and the rules every part of
the plugin shares (the threshold, the priority order) written once."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pydantic
import pytest
from run_builders import make_suite, run

from pytest_commerce_evals import (
    CartLine,
    Snapshot,
    Text,
    ToolCall,
    ToolResult,
    TurnEnd,
    rates,
    results,
)
from pytest_commerce_evals.cases.case import PRIORITIES, Case
from pytest_commerce_evals.errors import StoreError
from pytest_commerce_evals.rates import meets_threshold, set_verdict
from pytest_commerce_evals.results import GraderResult, RubricVerdict, TrialRecord
from pytest_commerce_evals.runner.summary import SetStats
from pytest_commerce_evals.runs import SCHEMA_VERSION
from pytest_commerce_evals.store.aggregate import set_results
from pytest_commerce_evals.store.record_file import load_record, record_json, write_record
from pytest_commerce_evals.store.run_store import RunStore

HERE = Path(__file__).parent
PACKAGE = HERE.parent / "pytest_commerce_evals"


def a_result(**changes) -> TrialRecord:
    """A trial as the runner holds it before it is recorded (built as `TrialRecord.begin`
    builds one: without validation)."""
    base = dict(
        case_id="cart-001-add",
        trial=2,
        trials=3,
        set_name="cases/cart",
        priority="high",
        difficulty="easy",
        tags=["cart"],
        outcome="fail",
        grader_results=[
            GraderResult("calls_tool", True, ["add_to_cart"], ["add_to_cart"], "called"),
            GraderResult("cart_contains", False, ["shoe-001"], [], "shoe-001 is missing"),
        ],
        verdicts=[
            RubricVerdict(
                dimension="grounded",
                rubric="only what the tools said",
                outcome="fail",
                verdict="FAIL",
                reasoning="invented a price",
                judge_model="judge-m",
                judge_fingerprint="jf",
                rubric_fingerprint="rf",
            )
        ],
        turns=[
            [
                ToolCall(call_id="c1", name="add_to_cart", arguments={"product_id": "shoe-002"}),
                ToolResult(call_id="c1", name="add_to_cart", result={"ok": True}),
                Text(text="Added it."),
                TurnEnd(turn=0),
            ]
        ],
        snapshot=Snapshot(cart=[CartLine(product_id="shoe-002")], memory=["m"], changes=[]),
        error=None,
        duration_s=0.25,
        file="cases/cart/add.yaml",
        line=3,
        threshold=0.8,
        messages=["Add the trail runner"],
    )
    return TrialRecord.model_construct(**(base | changes))


def a_record(**changes) -> TrialRecord:
    """The trial as it is recorded: why it failed said, in the form every writer takes."""
    return a_result(**changes).settle().clean()


# -- the record ---------------------------------------------------------------------------------


def test_the_record_of_a_trial_keeps_its_typed_parts():
    record = a_record()
    assert isinstance(record, TrialRecord)  # the store stores this very class
    assert [type(g) for g in record.grader_results] == [GraderResult, GraderResult]
    assert [type(v) for v in record.verdicts] == [RubricVerdict]
    assert [type(e) for e in record.turns[0]] == [ToolCall, ToolResult, Text, TurnEnd]
    assert record.turns[0][0].arguments == {"product_id": "shoe-002"}
    assert record.threshold == 0.8 and record.messages == ["Add the trail runner"]
    assert record.failures == [
        "shoe-001 is missing",
        "rubric grounded: FAIL — invented a price",
    ]
    assert (
        isinstance(record.snapshot, Snapshot) and record.snapshot.cart[0].product_id == "shoe-002"
    )
    assert record.model_dump()["snapshot"] == {
        "cart": [{"product_id": "shoe-002", "quantity": 1, "variant": None}],
        "memory": ["m"],
        "changes": [],
    }
    assert record.clean() is record  # JSON holds every value: no copy


def test_failures_name_the_error_and_the_verdicts_that_could_not_be_given():
    verdict = RubricVerdict(dimension="d", rubric="r", outcome="judge_error", error="no verdict")
    record = a_record(grader_results=[], verdicts=[verdict], error="boom\n", outcome="judge_error")
    assert record.failures == ["boom", "rubric d: judge_error — no verdict"]


def test_a_key_json_cannot_hold_is_kept_as_its_text_and_the_event_reads_back_typed():
    result = a_result(turns=[[ToolResult(call_id="c1", result={("a", 1): "x", "k\ud83e": 1})]])
    [[event]] = a_record(turns=result.turns).turns
    assert isinstance(event, ToolResult) and event.call_id == "c1"
    assert event.result == {"('a', 1)": "x", "k\\ud83e": 1}


def test_the_record_travels_as_its_own_dump_and_is_rebuilt_where_reports_gather():
    from pytest_commerce_evals.runner._plugin import record_of

    record = a_record()
    sent = json.loads(json.dumps(record.model_dump()))  # plain data, as a worker sends it
    report = SimpleNamespace(commerce={"kind": "trial", "outcome": "fail", "record": sent})
    rebuilt = record_of(report)
    assert rebuilt == record and isinstance(rebuilt.turns[0][1], ToolResult)
    assert "record" not in report.commerce  # pytest keeps the report; the record is not kept
    assert record_of(report) is None
    local = SimpleNamespace(commerce={"kind": "trial", "outcome": "fail", "record": record})
    assert record_of(local) is record  # no xdist: the typed record itself, not a copy


def test_a_record_refuses_what_is_not_a_grader_result_verdict_or_event():
    data = a_record().model_dump()
    for key, bad in (
        ("grader_results", [{"key": "k", "passed": "yes", "expected": 1, "observed": 1}]),
        ("verdicts", [{"dimension": "d", "rubric": "r", "outcome": "pass", "junk": 1}]),
        ("turns", [[{"type": "telemetry"}]]),
    ):
        with pytest.raises(ValueError, match=key):
            TrialRecord.model_validate(data | {key: bad})


# -- the formats did not change -----------------------------------------------------------------

# a trial of a schema 2 JSON record, as the plugin wrote it before the record was typed
SCHEMA_2_TRIAL = {
    "case_id": "cart-001-add",
    "trial": 2,
    "trials": 3,
    "set_name": "cases/cart",
    "threshold": 0.8,
    "priority": "high",
    "difficulty": "easy",
    "tags": ["cart"],
    "outcome": "fail",
    "failures": ["shoe-001 is missing", "rubric grounded: FAIL — invented a price"],
    "error": None,
    "grader_results": [
        {
            "key": "calls_tool",
            "passed": True,
            "expected": ["add_to_cart"],
            "observed": ["add_to_cart"],
            "message": "called",
        },
        {
            "key": "cart_contains",
            "passed": False,
            "expected": ["shoe-001"],
            "observed": [],
            "message": "shoe-001 is missing",
        },
    ],
    "verdicts": [
        {
            "dimension": "grounded",
            "rubric": "only what the tools said",
            "outcome": "fail",
            "verdict": "FAIL",
            "reasoning": "invented a price",
            "error": None,
            "judge_model": "judge-m",
            "judge_fingerprint": "jf",
            "rubric_fingerprint": "rf",
            "transcript_hash": None,
            "truncated_chars": 0,
            "truncated_turns": 0,
            "reused": False,
        }
    ],
    "turns": [
        [
            {
                "type": "tool_call",
                "call_id": "c1",
                "name": "add_to_cart",
                "arguments": {"product_id": "shoe-002"},
            },
            {
                "type": "tool_result",
                "call_id": "c1",
                "name": "add_to_cart",
                "status": "ok",
                "reason": None,
                "result": {"ok": True},
            },
            {"type": "text", "text": "Added it."},
            {"type": "turn_end", "turn": 0},
        ]
    ],
    "messages": ["Add the trail runner"],
    "snapshot": {
        "cart": [{"product_id": "shoe-002", "quantity": 1, "variant": None}],
        "memory": ["m"],
        "changes": [],
    },
    "duration_s": 0.25,
    "file": "cases/cart/add.yaml",
    "line": 3,
}


def test_a_record_written_today_is_written_as_schema_5_and_reads_back_the_same(tmp_path):
    # schema 3 added the `regrade` kind and the record's per-case results, schema 4 a trial's
    # `stopping` (the rule adaptive trials stopped its case by), schema 5 a conversation's
    # `ended` (written only for one with a simulated customer), schema 6 `calls` and `turn_s`,
    # schema 7 `cached` (each written only when some), schema 8 nothing in the record (the
    # store's shard tables), schema 9 `attack` (only for an attack case); otherwise a trial is
    # written key for key as under schema 2
    assert SCHEMA_VERSION == 9
    record = a_record()
    written = json.loads(record_json(run([record])))
    assert written["trials"] == [{**SCHEMA_2_TRIAL, "stopping": None}]  # in the same order
    assert list(written["trials"][0]) == [*SCHEMA_2_TRIAL, "stopping"]
    assert load_record(write_record(run([record]), tmp_path / "run.json")).trials == [record]
    store = RunStore(tmp_path / "runs")
    store.import_record(run([record]))
    assert store.load_run(run([record]).run_id).trials == [record]


def test_why_a_conversation_ended_is_written_and_read_back(tmp_path):
    record = a_record().model_copy(update={"ended": "max_turns"})
    written = json.loads(record_json(run([record])))
    assert written["trials"][0]["ended"] == "max_turns"
    assert load_record(write_record(run([record]), tmp_path / "run.json")).trials == [record]
    store = RunStore(tmp_path / "runs")
    store.import_record(run([record]))
    assert store.load_run(run([record]).run_id).trials[0].ended == "max_turns"
    bad = json.loads(record_json(run([record])))
    bad["trials"][0]["ended"] = "bored"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(StoreError, match="trials.0.ended"):
        load_record(path)


def test_an_attack_cases_category_is_written_and_read_back_and_an_unknown_one_refused(tmp_path):
    record = a_record().model_copy(update={"attack": "discounts-prices"})
    written = json.loads(record_json(run([record])))
    assert written["trials"][0]["attack"] == "discounts-prices"
    assert load_record(write_record(run([record]), tmp_path / "run.json")).trials == [record]
    older = json.loads(record_json(run([a_record()])))
    older["schema_version"] = 8  # written before the category: no attack, whatever its tags
    older["trials"][0]["tags"] = ["attack", "attack:discounts-prices"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(older), encoding="utf-8")
    assert load_record(path).trials[0].attack is None
    written["trials"][0]["attack"] = "anything at all"
    path.write_text(json.dumps(written), encoding="utf-8")
    with pytest.raises(StoreError, match="trials.0.attack"):
        load_record(path)


def test_a_schema_2_record_written_before_the_record_was_typed_reads_as_the_typed_record(
    tmp_path,
):
    data = json.loads(run([a_record()]).model_dump_json())
    data["trials"] = [SCHEMA_2_TRIAL]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    assert load_record(path).trials == [a_record()]


def test_an_event_an_older_version_could_not_record_reads_back_as_a_note(tmp_path):
    """Schema-2 writers before the typed record put {"type", "unserializable"} in place of an
    event JSON could not hold; such a record and such a stored trial still load."""
    import copy
    import sqlite3
    from contextlib import closing

    trial = copy.deepcopy(SCHEMA_2_TRIAL)
    trial["turns"][0][1] = {"type": "tool_result", "unserializable": "ToolResult(result={1j: 2})"}
    data = json.loads(run([a_record()]).model_dump_json())
    data["trials"] = [trial]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [loaded] = load_record(path).trials
    note = loaded.turns[0][1]
    assert isinstance(note, Text)
    assert note.text == (
        "[a tool_result event that could not be recorded: ToolResult(result={1j: 2})]"
    )
    assert loaded.turns[0][0] == a_record().turns[0][0]  # the rest of the turn is untouched
    store = RunStore(tmp_path / "runs")
    store.import_record(run([a_record()]))
    with closing(sqlite3.connect(tmp_path / "runs" / "runs.sqlite")) as conn, conn:
        conn.execute("UPDATE trials SET transcript = ?", (json.dumps(trial["turns"]),))
    assert store.load_run(run([a_record()]).run_id).trials[0].turns[0][1] == note


def test_the_store_columns_hold_the_json_they_held_before(tmp_path):
    import sqlite3
    from contextlib import closing

    record = run([a_record()])
    RunStore(tmp_path / "runs").import_record(record)
    with closing(sqlite3.connect(tmp_path / "runs" / "runs.sqlite")) as conn:
        row = conn.execute("SELECT transcript, verdicts, grader_results FROM trials").fetchone()
    assert row == (
        json.dumps(SCHEMA_2_TRIAL["turns"], ensure_ascii=False),
        json.dumps(SCHEMA_2_TRIAL["verdicts"], ensure_ascii=False),
        json.dumps(SCHEMA_2_TRIAL["grader_results"], ensure_ascii=False),
    )


def test_a_schema_1_verdict_without_its_rubric_reads_with_an_empty_one(tmp_path):
    data = json.loads(run([a_record()]).model_dump_json())
    data["schema_version"] = 1
    del data["kind"], data["judge_fingerprints"]
    del data["trials"][0]["verdicts"][0]["rubric"]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [verdict] = load_record(path).trials[0].verdicts
    assert verdict.rubric == "" and verdict.dimension == "grounded"


def test_the_store_hands_live_trends_typed_verdicts(tmp_path):
    store = RunStore(tmp_path / "runs")
    store.import_record(run([a_record()]))
    [verdict] = store.verdicts(run([a_record()]).run_id)
    assert isinstance(verdict, RubricVerdict) and verdict.judge_fingerprint == "jf"


# -- the rules, written once --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("passed", "graded", "threshold", "met"),
    [
        (4, 5, 0.8, True),  # 0.8 on float rounding
        (3, 4, 0.8, False),
        (9, 10, 0.9, True),
        (2, 3, 2 / 3, True),
        (1, 1, 1.0, True),
        (0, 3, 0.0, True),
        (0, 0, 0.0, False),
    ],
)
def test_meets_threshold_is_the_rule_of_sets_summaries_and_the_store(
    passed, graded, threshold, met
):
    assert meets_threshold(passed, graded, threshold) is met
    if graded:
        assert (set_verdict(passed, graded, threshold) == "ok") is met
        assert (SetStats("s", threshold, passed, graded).verdict == "ok") is met
        trials = [
            a_record(outcome="pass" if n < passed else "fail").model_copy(update={"trial": n})
            for n in range(graded)
        ]
        trials = [t.model_copy(update={"threshold": threshold}) for t in trials]
        assert set_results(trials)[0].met is met


def test_every_threshold_verdict_goes_through_meets_threshold(monkeypatch):
    monkeypatch.setattr(rates, "meets_threshold", lambda passed, graded, threshold: False)
    assert set_verdict(5, 5, 0.5) == "short"
    assert SetStats("s", 0.5, 5, 5).verdict == "short"
    assert set_results([a_record(outcome="pass")])[0].met is False


def _sources_holding(text: str) -> list[str]:
    return sorted(
        p.relative_to(PACKAGE).as_posix()
        for p in PACKAGE.rglob("*.py")
        if text in p.read_text(encoding="utf-8")
    )


def test_the_priorities_difficulties_and_threshold_tolerance_are_written_once():
    assert _sources_holding('"critical", "high", "medium", "low"') == ["cases/case.py"]
    assert _sources_holding('"easy", "medium", "hard"') == ["cases/case.py"]
    assert _sources_holding("1e-12") == ["rates.py"]
    from pytest_commerce_evals.reports import html
    from pytest_commerce_evals.runner import summary
    from pytest_commerce_evals.store import history

    assert summary.PRIORITIES is PRIORITIES and html.PRIORITIES is PRIORITIES
    assert list(history.PRIORITY_ORDER) == list(PRIORITIES)
    assert html.TABLE_OUTCOMES == tuple(o for o in results.OUTCOMES if o != "error")


# -- one path per trial -------------------------------------------------------------------------


def _case(**expected) -> Case:
    return Case.model_validate(
        {
            "id": "cart-001-add",
            "priority": "high",
            "difficulty": "easy",
            "turns": ["Add the trail runner"],
            "expected": expected,
        }
    )


def _config(verdicts):
    calls = []

    def grade_rubric(config, case, result):
        calls.append(case.id)
        return verdicts

    return SimpleNamespace(hook=SimpleNamespace(pytest_commerce_evals_grade_rubric=grade_rubric))


@pytest.mark.parametrize(
    ("verdict", "outcome"),
    [("pass", "pass"), ("fail", "fail"), ("judge_error", "judge_error"), (None, "pass")],
)
def test_grade_trial_grades_judges_and_folds_the_outcome(verdict, outcome):
    from pytest_commerce_evals.runner.trial import grade_trial

    case = _case(calls_tool=["add_to_cart"], rubric={"grounded": "only what the tools said"})
    verdicts = None if verdict is None else [RubricVerdict("grounded", "r", verdict)]
    result = a_result(outcome="pass", grader_results=[], verdicts=[], snapshot=None)
    graded = grade_trial(_config(verdicts), case, result)
    assert graded is result and result.outcome == outcome
    assert [g.key for g in result.grader_results] == ["calls_tool"]
    assert result.rubric_not_judged is (verdict is None)


def test_a_failed_grader_fails_the_trial_whatever_the_judge_says():
    from pytest_commerce_evals.runner.trial import grade_trial

    case = _case(calls_tool=["checkout"], rubric={"grounded": "only what the tools said"})
    result = a_result(outcome="pass", grader_results=[], verdicts=[], snapshot=None)
    grade_trial(_config([RubricVerdict("grounded", "r", "pass")]), case, result)
    assert result.outcome == "fail"


def test_live_sampling_runs_its_trials_through_the_regression_trial_path():
    from pytest_commerce_evals.live import _plugin as live
    from pytest_commerce_evals.runner import trial
    from pytest_commerce_evals.runner.items import CaseItem

    assert live.grade_trial is trial.grade_trial
    assert live.LiveItem.runtest is CaseItem.runtest  # recorded and reported as any trial
    assert not hasattr(trial, "_fold")


def test_the_store_paths_are_public(pytester: pytest.Pytester):
    from pytest_commerce_evals.store.paths import output_path, store_folder

    root = pytester.path
    assert store_folder(pytester.parseconfigure()) == root / ".commerce" / "runs"
    assert store_folder(pytester.parseconfigure("--commerce-store=none")) is None
    pytester.makeini("[pytest]\ncommerce_store = /abs/store\n")
    config = pytester.parseconfigure()
    assert store_folder(config) == Path("/abs/store")
    where = Path(config.invocation_params.dir)
    assert output_path(config, "out/run.json") == where / "out" / "run.json"
    assert output_path(config, "/tmp/run.json") == Path("/tmp/run.json")


# -- through pytest -----------------------------------------------------------------------------

RECORDING_HOOK = """
import json
from pytest_commerce_evals.results import RubricVerdict, TrialRecord
from pytest_commerce_evals.events import ToolCall

def pytest_commerce_evals_trial_recorded(config, record):
    seen = {
        "typed": isinstance(record, TrialRecord),
        "case_id": record.case_id,
        "outcome": record.outcome,
        "calls": [e.name for t in record.turns for e in t if isinstance(e, ToolCall)],
        "messages": record.messages,
    }
    with open("seen.jsonl", "a") as fp:
        fp.write(json.dumps(seen) + "\\n")
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2", "-p", "no:benchmark"]])
def test_the_hook_gets_the_typed_record_with_and_without_xdist(pytester, workers):
    make_suite(pytester, (HERE / "helpers.py").read_text())
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text() + RECORDING_HOOK)
    result = pytester.runpytest("cases", "--commerce-store=none", *workers)
    assert "INTERNALERROR" not in result.stdout.str()
    lines = (pytester.path / "seen.jsonl").read_text().splitlines()
    seen = sorted((json.loads(line) for line in lines), key=lambda s: s["case_id"])
    assert [s["typed"] for s in seen] == [True] * len(seen) and len(seen) >= 3
    first = seen[0]
    assert first["case_id"] == "cart-001-add-single" and "add_to_cart" in first["calls"]
    assert first["messages"] == ["Add the trail runner to my cart"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"threshold": float("nan")}, "threshold"),
        ({"threshold": 1.5}, "threshold"),
        ({"priority": "P0"}, "priority"),
        ({"difficulty": "trivial"}, "difficulty"),
        ({"trial": 0}, "trial"),
        ({"trials": 0}, "trials"),
        ({"case_id": ""}, "case_id"),
        ({"case_id": "cart-001-\ud800"}, "case_id"),
    ],
)
def test_a_trial_record_refuses_values_no_run_writes(change, message):
    data = {**a_record().model_dump(), **change}
    with pytest.raises(pydantic.ValidationError) as info:
        TrialRecord.model_validate(data)
    assert info.value.errors()[0]["loc"][0] == message


@pytest.mark.parametrize(
    ("trial_change", "record_change", "text", "message"),
    [
        ({"threshold": "NaN"}, {}, None, "trials.0.threshold"),
        ({"priority": "P0"}, {}, None, "trials.0.priority"),
        ({"trial": 0}, {}, None, "trials.0.trial"),
        ({}, {"run_id": ""}, None, "run_id"),
        ({}, {}, ('"case_id": "cart-001-add"', '"case_id": "cart-\\ud800"'),
         "key trials[0].case_id: a lone surrogate \\ud800"),
        ({}, {}, ('"run_id": "', '"run_id": "\\udc00'), "key run_id: a lone surrogate \\udc00"),
    ],
)  # fmt: skip
def test_a_run_record_file_with_such_a_value_is_refused_naming_the_key(
    tmp_path, trial_change, record_change, text, message
):
    data = json.loads(record_json(run([a_record()])))
    data["trials"][0].update(trial_change)
    data.update(record_change)
    raw = json.dumps(data)
    if text is not None:
        assert text[0] in raw
        raw = raw.replace(text[0], text[1], 1)
    raw = raw.replace('"threshold": "NaN"', '"threshold": NaN')
    path = tmp_path / "run.json"
    path.write_text(raw, encoding="utf-8")
    with pytest.raises(StoreError) as info:
        load_record(path)
    assert message in str(info.value), str(info.value)
    assert str(info.value).startswith(str(path))
