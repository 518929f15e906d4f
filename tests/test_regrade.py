"""`--commerce-regrade=RUN`: a stored run graded again with today's cases and judge, the agent not
called; the new run names its source and diffs against it; a judge change prints agreement and
Cohen's kappa per rubric dimension."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from run_builders import CASES, make_suite

from pytest_commerce_evals.judge import _plugin as _judge_plugin
from pytest_commerce_evals.judge.judge import Judge
from pytest_commerce_evals.judge.verdict_store import VerdictStore
from pytest_commerce_evals.results import RubricVerdict, TrialRecord, TrialSpec
from pytest_commerce_evals.runner.regrade import regrade_trial
from pytest_commerce_evals.runner.regrade_plan import Regrade, _judge_lines, judge_agreement
from pytest_commerce_evals.runs import RunRecord
from pytest_commerce_evals.settings import settings
from pytest_commerce_evals.store.run_store import RunStore
from pytest_commerce_evals.testing.fake import FakeClient

HERE = Path(__file__).parent

PASS = '{"reasoning": "fine", "verdict": "PASS"}'
FAIL = '{"reasoning": "not fine", "verdict": "FAIL"}'

# the agent's hooks count their calls in a file: a regrade must leave it unwritten
COUNTING_CONFTEST = """
from pathlib import Path
from helpers import ToyAgent, ToyBackend
from pytest_commerce_evals.testing import FakeClient, text_reply

def _count(what):
    with open(Path(__file__).parent / "agent-calls.txt", "a") as f:
        f.write(what + "\\n")

def pytest_commerce_evals_make_backend(config, case):
    _count("backend " + case.id)
    return ToyBackend()

def pytest_commerce_evals_make_agent(config, case, backend):
    _count("agent " + case.id)
    return ToyAgent(FakeClient([text_reply("ok")]), backend)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester):
    write = make_suite(pytester, (HERE / "helpers.py").read_text())
    return pytester, write


def args(p: pytest.Pytester, *extra: str) -> list[str]:
    return [
        "cases",
        "-p",
        "no:cacheprovider",
        f"--commerce-store={p.path / 'runs'}",
        f"--commerce-judge-store={p.path / 'verdicts.sqlite'}",
        # the fake judge stands in on the embedded endpoint: asked whatever its calibration
        "--commerce-judge-min-kappa=none",
        *extra,
    ]


def runs(p: pytest.Pytester) -> list[dict]:
    with closing(sqlite3.connect(p.path / "runs" / "runs.sqlite")) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY started_at")]


def outcomes(p: pytest.Pytester, run_id: str) -> dict[tuple[str, int], str]:
    run = RunStore(p.path / "runs").load_run(run_id)
    return {(t.case_id, t.trial): t.outcome for t in run.trials}


def cases_file(p: pytest.Pytester) -> Path:
    return p.path / "cases" / "cart" / "add.yaml"


# -- grading stored transcripts -------------------------------------------------------------------


def test_a_regrade_grades_the_stored_transcripts_with_the_edited_expected(suite):
    p, write = suite
    write(cart_002_checkout_total="shoe-002")  # the agent adds the wrong shoe
    first = p.runpytest(*args(p, "--commerce-trials=2", "--commerce-agent=agent-m"))
    first.assert_outcomes(passed=4, failed=2, warnings=None)
    source = runs(p)[0]["run_id"]

    # today: cart-002 expects what the agent did, cart-003 is gone, cart-004 is new; the agent's
    # hooks count their calls
    cases = CASES.replace(
        '  turns: ["Add the trail runner to my cart"]\n  expected:\n    cart_contains: [shoe-001]',
        '  turns: ["Add the trail runner to my cart"]\n  expected:\n    cart_contains: [shoe-002]',
    )
    assert cases != CASES
    cases = cases.split("- id: cart-003-vegan-tote")[0] + (
        '- id: cart-004-new\n  priority: low\n  difficulty: easy\n  turns: ["Add the tote"]\n  expected:\n    cart_contains: [bag-001]\n'
    )
    cases_file(p).write_text(cases)
    p.makeconftest(COUNTING_CONFTEST)

    result = p.runpytest(*args(p, f"--commerce-regrade={source[:15]}"))
    # cart-001 x2 still pass, cart-002 x2 now pass; cart-004 (added) is not run
    result.assert_outcomes(passed=4, deselected=2, warnings=None)
    assert not (p.path / "agent-calls.txt").exists()  # neither the agent nor a backend was made
    out = result.stdout.str()
    assert f"commerce-evals: regrading run {source} (6 stored trials of 3 cases" in out
    assert (
        "cases not in the source run (added since, or outside its selection; not run) (1): cart-004-new"
        in out
    )
    assert "not collected now (removed since, invalid, or outside this selection) (1): " in out
    assert "cart-003-vegan-tote" in out.split("not collected now")[1].splitlines()[0]
    assert (
        "graded with a definition changed since the source run (1): cart-002-checkout-total "
        "(expected cart_contains)"
    ) in out
    result.stdout.fnmatch_lines(
        [
            "*baseline: *" + source + "* the run this regrade grades again*",
            "fixed (1):",
            "*cart-002-checkout-total*",
        ]
    )
    new = runs(p)[1]
    assert new["kind"] == "regrade" and json.loads(new["options"])["regrade_of"] == source
    assert new["baseline"] == source
    assert new["agent_model"] == "agent-m"  # the source's agent made the transcripts
    assert json.loads(new["selection"])["trials"] == 2
    assert outcomes(p, new["run_id"]) == {
        ("cart-001-add-single", 1): "pass",
        ("cart-001-add-single", 2): "pass",
        ("cart-002-checkout-total", 1): "pass",
        ("cart-002-checkout-total", 2): "pass",
    }
    regraded = RunStore(p.path / "runs").load_run(new["run_id"]).trials
    stored = RunStore(p.path / "runs").load_run(source).trials
    assert regraded[2].turns == stored[2].turns  # the stored transcript, graded again


def test_an_unchanged_case_set_regrades_to_the_same_outcomes(suite):
    p, write = suite
    write(cart_003_vegan_tote="shoe-001")
    p.runpytest(*args(p)).assert_outcomes(passed=2, failed=1, warnings=None)
    source = runs(p)[0]["run_id"]
    result = p.runpytest(*args(p, f"--commerce-regrade={source}"))
    result.assert_outcomes(passed=2, failed=1, warnings=None)
    assert outcomes(p, runs(p)[1]["run_id"]) == outcomes(p, source)
    out = result.stdout.str()
    assert "added since" not in out and "not collected now" not in out
    assert "changed since" not in out
    result.stdout.fnmatch_lines(["newly failing (0):", "fixed (0):"])


def test_a_regrade_of_a_json_record_and_the_trials_it_stored(suite):
    p, write = suite
    p.runpytest(*args(p, "--commerce-trials=3", "--commerce-json=run.json")).assert_outcomes(
        passed=9, warnings=None
    )
    result = p.runpytest(*args(p, "--commerce-regrade=run.json"))
    result.assert_outcomes(passed=9, warnings=None)  # 3 per case, as stored, not the default 1
    # the same count given explicitly is fine; another is a usage error
    p.runpytest(*args(p, "--commerce-regrade=run.json", "--commerce-trials=3")).assert_outcomes(
        passed=9, warnings=None
    )
    bad = p.runpytest(*args(p, "--commerce-regrade=run.json", "--commerce-trials=2"))
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(
        [
            "*--commerce-trials=2 with --commerce-regrade: a regrade grades the trials run *"
            "stored (3 per case); leave --commerce-trials out*"
        ]
    )


def test_trials_the_agent_did_not_finish_are_kept_as_stored(suite, tmp_path):
    p, write = suite
    p.runpytest(*args(p, "--commerce-json=run.json")).assert_outcomes(passed=3, warnings=None)
    record = json.loads((p.path / "run.json").read_text())
    t = record["trials"][0]
    t.update(outcome="infra_error", error="InfraError: the endpoint failed", snapshot=None)
    t2 = record["trials"][1]
    t2.update(snapshot=None)  # graded, but its final state is not stored
    (p.path / "run.json").write_text(json.dumps(record))
    result = p.runpytest(*args(p, "--commerce-regrade=run.json", "-rA"))
    result.assert_outcomes(passed=1, failed=0, errors=1, warnings=None)  # and 1 infra_error
    out = result.stdout.str()
    assert (
        "kept as stored: the agent did not finish them in the source run (1): "
        "cart-001-add-single trial 1 infra_error"
    ) in out
    assert "not regraded (1):" in out
    assert "cart-002-checkout-total trial 1: the stored trial holds no final backend state" in out


# -- usage errors ---------------------------------------------------------------------------------


def test_bad_references_are_usage_errors_naming_what_was_given(suite):
    p, write = suite
    p.runpytest(*args(p)).assert_outcomes(passed=3, warnings=None)
    p.runpytest(*args(p)).assert_outcomes(passed=3, warnings=None)
    (p.path / "broken.json").write_text("{not json")
    for ref, message in (
        (
            "nosuchrun-0000",
            "*--commerce-regrade='nosuchrun-0000': no run with that id or id "
            "prefix in *(recent runs: *); give a stored run's id, a unique prefix of one*",
        ),
        ("20", "*--commerce-regrade='20': no run with that id or id prefix*"),
        ("broken.json", "*--commerce-regrade='broken.json': *broken.json*; give a stored run's*"),
    ):
        result = p.runpytest(*args(p, f"--commerce-regrade={ref}"))
        assert result.ret == pytest.ExitCode.USAGE_ERROR, ref
        result.stderr.fnmatch_lines([message])
    ambiguous = runs(p)[0]["run_id"][:8]  # both runs started the same day
    result = p.runpytest(*args(p, f"--commerce-regrade={ambiguous}"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--commerce-regrade='{ambiguous}': *matches 2 runs*"])
    result = p.runpytest(*args(p, "--commerce-regrade=x", "--commerce-store=none"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no run store (--commerce-store=none)*JSON file*"])


def test_a_regrade_with_xdist_is_a_usage_error(suite):
    p, write = suite
    p.runpytest(*args(p, "--commerce-json=run.json")).assert_outcomes(passed=3, warnings=None)
    result = p.runpytest(*args(p, "--commerce-regrade=run.json", "-n", "2"))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--commerce-regrade with -n 2: a regrade calls no agent*"])


# -- the judge ------------------------------------------------------------------------------------

RUBRIC_CASES = """
- id: cart-101-one
  priority: high
  difficulty: easy
  turns: ["Add the trail runner to my cart"]
  expected:
    rubric: {helpful: "one: the reply is helpful"}
- id: cart-102-two
  priority: high
  difficulty: easy
  turns: ["Add the trail runner"]
  expected:
    rubric: {helpful: "two: the reply is helpful"}
- id: cart-103-three
  priority: high
  difficulty: easy
  turns: ["Add the runner"]
  expected:
    rubric: {helpful: "three: the reply is helpful"}
"""


@pytest.fixture
def judges(monkeypatch):
    """The built-in judge on a FakeClient whose model is --commerce-judge-model: judge-a fails
    case three's rubric, judge-b fails cases two and three."""
    clients: list[FakeClient] = []

    def reply(model: str, request: dict) -> str:
        content = request["messages"][1]["content"]
        failing = ("three:",) if model == "judge-a" else ("two:", "three:")
        return FAIL if any(word in content for word in failing) else PASS

    def build(config, *, with_store=True):
        model = settings(config).judge_model or "judge-a"
        client = FakeClient(lambda request: reply(model, request))
        clients.append(client)
        path = _judge_plugin.store_path(config)
        return Judge(client, model, store=VerdictStore(path) if path else None)

    monkeypatch.setattr(_judge_plugin, "build_judge", build)
    return clients


def judged(p: pytest.Pytester, model: str, *extra: str) -> list[str]:
    return args(
        p,
        f"--commerce-judge-model={model}",
        "--commerce-judge-base-url=http://127.0.0.1:9/v1",
        "--commerce-concurrency=1",  # one trial at a time: a repeated transcript is reused
        *extra,
    )


def asked(clients: list[FakeClient]) -> int:
    return sum(len(c.requests) for c in clients)


def test_a_judge_change_prints_agreement_and_kappa_per_dimension(suite, judges):
    p, write = suite
    cases_file(p).write_text(RUBRIC_CASES)
    first = p.runpytest(*judged(p, "judge-a", "--commerce-trials=2"))
    first.assert_outcomes(passed=4, failed=2, warnings=None)
    assert asked(judges) == 3  # a case's second trial has the same transcript: reused
    source = runs(p)[0]["run_id"]
    p.makeconftest(COUNTING_CONFTEST)

    # the same judge: every verdict is reused from the verdict store, none asked
    same = p.runpytest(*judged(p, "judge-a", f"--commerce-regrade={source}"))
    same.assert_outcomes(passed=4, failed=2, warnings=None)
    assert asked(judges) == 3
    out = same.stdout.str()
    assert "judge unchanged: judge-a" in out and "6 of 6 verdicts reused" in out
    assert "judge changed" not in out and "Cohen" not in out

    # judge-b: stored (P,P) x2 on cart-101-one, (P,F) x2 on cart-102-two, (F,F) x2 on cart-103-three: agreement 4/6,
    # chance agreement 4/6*2/6 + 2/6*4/6 = 4/9, kappa (2/3 - 4/9) / (5/9) = 0.40
    changed = p.runpytest(*judged(p, "judge-b", f"--commerce-regrade={source}"))
    changed.assert_outcomes(passed=2, failed=4, warnings=None)
    assert asked(judges) == 6  # three transcripts asked of judge-b, each reused once
    changed.stdout.fnmatch_lines(
        [
            "judge changed",
            "  stored verdicts: judge-a (fingerprint *)",
            "  new verdicts:    judge-b (fingerprint *)",
            "agreement of the stored and the new verdicts, per rubric dimension:",
            "  dimension     n  agreement      kappa  unpaired",
            "  helpful       6      66.7%       0.40         0",
        ]
    )
    assert "3 of 6 verdicts reused" in changed.stdout.str()
    assert not (p.path / "agent-calls.txt").exists()
    regrade_run = runs(p)[-1]
    assert regrade_run["judge_model"] == "judge-b"
    assert json.loads(regrade_run["options"])["regrade_of"] == source

    # judge-b again on the same transcripts: its verdicts are reused, agreement unchanged
    again = p.runpytest(*judged(p, "judge-b", f"--commerce-regrade={source}"))
    again.assert_outcomes(passed=2, failed=4, warnings=None)
    assert asked(judges) == 6
    again.stdout.fnmatch_lines(["  helpful       6      66.7%*", "*6 of 6 verdicts reused*"])


def test_an_edited_rubric_is_judged_anew_and_named(suite, judges):
    p, write = suite
    cases_file(p).write_text(RUBRIC_CASES)
    p.runpytest(*args(p)).assert_outcomes(passed=2, failed=1, warnings=None)
    source = runs(p)[0]["run_id"]
    cases_file(p).write_text(RUBRIC_CASES.replace("three: the reply", "one: the reply"))
    result = p.runpytest(*args(p, f"--commerce-regrade={source}"))
    result.assert_outcomes(passed=3, warnings=None)
    assert asked(judges) == 4  # only cart-103-three's new rubric was asked
    out = result.stdout.str()
    assert (
        "graded with a definition changed since the source run (1): cart-103-three (rubric helpful)"
        in out
    )
    assert "2 of 3 verdicts reused" in out


# -- the rebuilt trial ------------------------------------------------------------------------------


def test_a_stored_snapshot_reads_back_as_the_snapshot_the_graders_read():
    from pydantic import ValidationError

    from pytest_commerce_evals.backend import Snapshot

    def stored(snapshot):
        return TrialRecord(
            case_id="c",
            trial=1,
            set_name="s",
            threshold=0.8,
            priority="medium",
            difficulty="medium",
            outcome="pass",
            snapshot=snapshot,
        )

    cart = [{"product_id": "shoe-001", "quantity": 2, "variant": None}]
    snap = stored({"cart": cart, "memory": ["likes red"], "changes": []}).snapshot
    assert isinstance(snap, Snapshot)
    assert snap.cart[0].quantity == 2 and snap.memory == ["likes red"]
    assert stored(None).snapshot is None
    with pytest.raises(ValidationError, match="unknown snapshot keys"):
        stored({"cart": [], "orders": []})
    with pytest.raises(ValidationError, match="memory entries are strings"):
        stored({"cart": [], "memory": [3], "changes": []})
    # it is stored as it was read
    data = stored({"cart": cart, "memory": ["likes red"], "changes": []}).model_dump()
    assert data["snapshot"] == {"cart": cart, "memory": ["likes red"], "changes": []}


def test_a_changed_customer_message_is_not_regraded(pytester):
    from pytest_commerce_evals.cases.case import Case

    case = Case.model_validate(
        {
            "id": "cart-001-add",
            "priority": "high",
            "difficulty": "easy",
            "turns": ["new words"],
            "expected": {"cart_contains": ["x"]},
        }
    )
    stored = TrialRecord(
        case_id="cart-001-add",
        trial=1,
        set_name="s",
        threshold=0.8,
        priority="medium",
        difficulty="medium",
        outcome="pass",
        turns=[[{"type": "turn_end", "turn": 0}]],
        messages=["old words"],
        snapshot={"cart": [], "memory": [], "changes": []},
    )
    config = pytester.parseconfig()
    result = regrade_trial(config, TrialSpec(case, trial=1, trials=1, set_name="s"), stored)
    assert result.outcome == "error"
    assert result.error.startswith("not regraded: the case's customer messages changed since")
    # the same messages: graded (the cart is empty, so cart_contains fails)
    stored = stored.model_copy(update={"messages": ["new words"]})
    result = regrade_trial(config, TrialSpec(case, trial=1, trials=1, set_name="s"), stored)
    assert result.outcome == "fail" and result.failed_graders[0].key == "cart_contains"


def a_trial(case_id: str, n: int, verdicts: list[tuple[str, str, str]]) -> TrialRecord:
    """A stored or new trial with verdicts (dimension, outcome, judge fingerprint)."""
    return TrialRecord(
        case_id=case_id,
        trial=n,
        set_name="s",
        threshold=0.8,
        priority="high",
        difficulty="easy",
        outcome="pass",
        snapshot={"cart": [], "memory": [], "changes": []},
        verdicts=[
            RubricVerdict(
                dimension=dim,
                rubric="r",
                outcome=outcome,
                verdict={"pass": "PASS", "fail": "FAIL"}.get(outcome),
                judge_model="m-" + print_[:1],
                judge_fingerprint=print_,
            )
            for dim, outcome, print_ in verdicts
        ],
    )


def test_agreement_pairs_only_verdicts_of_a_changed_judge_and_kappa_can_be_undefined():
    old = [
        a_trial("cart-001-a", 1, [("tone", "pass", "a"), ("accuracy", "pass", "a")]),
        a_trial("cart-001-a", 2, [("tone", "pass", "a"), ("accuracy", "fail", "a")]),
        a_trial("cart-002-b", 1, [("tone", "pass", "a"), ("accuracy", "pass", "a")]),
    ]
    new = [
        a_trial("cart-001-a", 1, [("tone", "pass", "b"), ("accuracy", "pass", "b")]),
        a_trial("cart-001-a", 2, [("tone", "pass", "b"), ("accuracy", "judge_error", "b")]),
        # the same judge on this trial: not a judge change, not paired
        a_trial("cart-002-b", 1, [("tone", "pass", "a"), ("accuracy", "fail", "a")]),
    ]
    plan = Regrade(RunRecord(run_id="r", started_at="t", trials=old))
    table, unpaired = judge_agreement(plan, new)
    assert table["tone"].pairs == [("PASS", "PASS"), ("PASS", "PASS")]
    assert table["tone"].agreement == 1.0 and table["tone"].kappa is None  # one label everywhere
    assert table["accuracy"].pairs == [("PASS", "PASS")] and unpaired == {"accuracy": 1}
    lines = [line for line, _ in _judge_lines(plan, new)]
    rows = [line.split() for line in lines]
    assert ["tone", "2", "100.0%", "undefined", "0"] in rows
    assert ["accuracy", "1", "100.0%", "undefined", "1"] in rows
    assert lines[0] == "judge changed"


def test_a_trial_skipped_or_missing_in_the_source_is_not_graded(suite):
    p, write = suite
    p.runpytest(*args(p, "--commerce-trials=2", "--commerce-json=run.json")).assert_outcomes(
        passed=6, warnings=None
    )
    record = json.loads((p.path / "run.json").read_text())
    skipped = record["trials"][0]  # cart-001 trial 1: skipped then, so no transcript
    skipped.update(outcome="skipped", snapshot=None, turns=[], grader_results=[], failures=[])
    del record["trials"][3]  # cart-002 trial 2: the run stopped before it
    (p.path / "run.json").write_text(json.dumps(record))
    result = p.runpytest(*args(p, "--commerce-regrade=run.json", "-rs"))
    result.assert_outcomes(passed=4, skipped=1, deselected=1, warnings=None)
    out = result.stdout.str()
    assert "skipped in run " in out and ": no transcript to grade" in out
    assert (
        "stored trials missing from the source run (not run) (1): cart-002-checkout-total trial 2"
    ) in out
    assert "4 of its 5 stored trials graded again" in out


def test_a_regrade_records_the_commit_and_agent_of_the_run_it_grades_again(suite, tmp_path):
    p, _ = suite
    p.runpytest(*args(p, "--commerce-json=run.json")).assert_outcomes(passed=3, warnings=None)
    data = json.loads((p.path / "run.json").read_text())
    data.update(git_commit="0123456789abcdef", git_dirty=True, agent_model="the-old-agent")
    (p.path / "run.json").write_text(json.dumps(data))
    out = tmp_path / "regrade.json"
    p.runpytest(*args(p, "--commerce-regrade=run.json", f"--commerce-json={out}"))
    regraded = json.loads(out.read_text())
    assert regraded["kind"] == "regrade"
    assert (regraded["git_commit"], regraded["git_dirty"], regraded["agent_model"]) == (
        "0123456789abcdef",
        True,
        "the-old-agent",
    )  # the transcripts' commit and agent, not today's checkout
    assert regraded["options"]["regrade_of"] == data["run_id"]
