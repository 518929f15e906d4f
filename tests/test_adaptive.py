"""Adaptive trials (`--commerce-trials=auto:MIN:MAX`): the stopping rule at known counts, the set
rate when cases ran unequal counts, and runs where a scripted agent passes or fails each case
deterministically (sequential and concurrent)."""

from __future__ import annotations

import textwrap

import pytest

from pytest_commerce_evals.rates import CaseTally, set_rate_counts
from pytest_commerce_evals.results import Stopping, TrialRecord
from pytest_commerce_evals.runner.adaptive import AdaptiveRun, Decision, decide
from pytest_commerce_evals.runner.summary import Summary
from pytest_commerce_evals.settings import AutoTrials
from pytest_commerce_evals.store.aggregate import set_results

pytest_plugins = ["pytester"]


def _decide(passed, ran, baseline=None, minimum=2, maximum=10, threshold=0.8):
    return decide(
        passed,
        ran,
        ran,
        minimum=minimum,
        maximum=maximum,
        baseline=baseline,
        threshold=threshold,
    )


# -- the stopping rule -----------------------------------------------------------------------


def test_a_case_consistent_with_its_baseline_stops_at_the_minimum():
    assert _decide(2, 2, (20, 20), maximum=6) == Decision("consistent", 2)
    assert _decide(2, 2, (5, 5)) == Decision("consistent", 2)


def test_a_large_pool_keeps_a_short_clean_run_going_until_a_drop_would_be_ruled_out():
    # against 20/20, 2/2 still leaves a 13% chance that 10 trials would flag it (delta 0.1)
    assert _decide(2, 2, (20, 20), maximum=10) is None
    assert _decide(4, 4, (20, 20), maximum=10) == Decision("consistent", 4)


def test_failing_trials_against_a_clean_baseline_continue_then_stop_as_dropped():
    assert _decide(0, 2, (20, 20)) is None  # p = 1/231: not below level/10 yet
    assert _decide(0, 3, (20, 20)) == Decision("dropped", 3)  # p = 1/1771
    assert _decide(0, 5, (20, 20)) == Decision("dropped", 5)
    assert _decide(1, 2, (20, 20)) is None


def test_nothing_is_decided_before_the_minimum_and_everything_at_the_maximum():
    assert _decide(0, 2, (20, 20), minimum=3) is None
    assert _decide(0, 1, None, minimum=2) is None
    assert _decide(5, 10, (20, 20), maximum=10) == Decision("max", 10)
    assert _decide(1, 1, None, minimum=1, maximum=1) == Decision("max", 1)


def test_without_history_the_jeffreys_posterior_decides_against_the_threshold():
    assert _decide(0, 2, None) == Decision("failing", 2)  # P(rate >= 0.8) = 0.007
    assert _decide(1, 2, None) is None  # 0.14: undecided
    assert _decide(2, 2, None) is None  # 0.69: not clearly passing yet
    assert _decide(2, 2, None, threshold=0.5) is None  # P(rate >= 0.5) = 0.924
    assert _decide(3, 3, None, threshold=0.5) == Decision("passing", 3)  # 0.967
    assert _decide(8, 8, None, maximum=20) is None  # P(rate >= 0.8) = 0.945
    assert _decide(9, 9, None, maximum=20) == Decision("passing", 9)  # 0.958


def test_trials_without_a_grade_count_toward_the_maximum_but_not_as_evidence():
    assert decide(0, 0, 10, minimum=2, maximum=10, baseline=(20, 20), threshold=0.8) == Decision(
        "max", 10
    )
    assert decide(0, 0, 3, minimum=2, maximum=10, baseline=(20, 20), threshold=0.8) is None


def test_the_decision_text_names_the_trials_and_the_reason():
    assert Decision("dropped", 3).text() == "decided after 3 trials: dropped against its baseline"
    assert Decision("max", 10).text() == "decided after 10 trials: the maximum was reached"


def test_the_history_hook_is_pooled_into_each_case_baseline(pytester: pytest.Pytester):
    class Item:
        def __init__(self, case_id, trial):
            self.case = type("C", (), {"id": case_id})()
            self.trial, self.threshold = trial, 0.8

    class History:
        @pytest.hookimpl
        def pytest_commerce_evals_case_history(self, config, case_ids):
            assert case_ids == ["a", "b"]
            # newest first: b's oldest run (0/5) disagrees with the rest and ends its pool
            return {"a": [(5, 5), (5, 5)], "b": [(4, 5), (5, 5), (0, 5)], "x": [(1, 1)]}

    config = pytester.parseconfigure()
    config.pluginmanager.register(History())
    run = AdaptiveRun(AutoTrials(2, 6))
    run.add_items([Item("a", 2), Item("a", 1), Item("b", 1)])
    run.ask_history(config)
    assert run.cases["a"].baseline == (10, 10)
    assert run.cases["b"].baseline == (9, 10)
    assert [i.trial for i in run.cases["a"].items] == [1, 2]
    assert run.record("a", "pass") is None  # one trial: below the minimum
    assert run.record("a", "pass") == Decision("consistent", 2)
    assert run.next_trial("a", 2, lambda i: False) is None  # decided: nothing more to run
    assert run.record("b", "fail") is None
    assert run.next_trial("b", 1, lambda i: False) is None  # the first two were submitted
    run.add_items([Item("b", 2), Item("b", 3)])
    assert run.record("b", "fail") is None
    assert run.next_trial("b", 2, lambda i: False).trial == 3
    assert run.next_trial("b", 2, lambda i: i.trial == 3) is None


# -- the set rate under unequal counts -------------------------------------------------------


def test_equal_counts_pool_the_trials_and_unequal_counts_average_the_case_rates():
    # a fixed count (errors included in what each case recorded): pooled, as always
    assert set_rate_counts([(5, 5, 5), (3, 4, 5)]) == (8, 9)
    # adaptive: case A stopped at 2/2, the flaky case B ran 6/10 -> (1 + 0.6) / 2 = 0.8
    assert set_rate_counts([(2, 2, 2), (6, 10, 10)]) == (4, 5)
    assert set_rate_counts([(0, 0, 3)]) == (0, 0)


def _record(case_id, outcome, trial=1, set_name="cases/a", threshold=0.8):
    return TrialRecord(
        case_id=case_id,
        trial=trial,
        trials=10,
        set_name=set_name,
        threshold=threshold,
        priority="high",
        difficulty="easy",
        outcome=outcome,
    )


def _adaptive_records():
    out = [_record("steady", "pass", t) for t in (1, 2)]
    outcomes = ["pass", "fail"] * 3 + ["pass"] * 2 + ["fail"] * 2  # 5/10
    out += [_record("flaky", o, t) for t, o in enumerate(outcomes, 1)]
    return out


def test_summary_and_store_give_an_adaptive_set_the_mean_of_its_case_rates():
    # pooled: 7/12 = 58% < 70%; per case: (100% + 50%) / 2 = 75% >= 70%
    records = [r.model_copy(update={"threshold": 0.7}) for r in _adaptive_records()]
    summary = Summary(adaptive=AutoTrials(2, 10))
    for r in records:
        summary.add(r)
    group = summary.sets["cases/a"]
    assert (group.passed, group.graded, group.rate, group.verdict) == (7, 12, 0.75, "ok")
    assert "  ok    cases/a: 7/12 mean of per-case rates 75.0% (threshold 70%)" in summary.lines()
    (stored,) = set_results(records)
    assert (stored.passed, stored.graded, stored.rate, stored.met) == (7, 12, 0.75, True)
    assert stored.verdict == "ok"
    records = [r.model_copy(update={"threshold": 0.8}) for r in records]
    (stored,) = set_results(records)
    assert (stored.met, stored.verdict) == (False, "short")


def test_the_summary_says_what_adaptive_trials_ran_and_saved():
    summary = Summary(adaptive=AutoTrials(2, 10))
    for r in _adaptive_records():
        summary.add(r)
    summary.add(_record("third", "pass", 1))
    summary.add(_record("third", "pass", 2))
    summary.decided.update(steady="consistent", flaky="max", third="consistent")
    lines = summary.adaptive_lines()
    assert lines == [
        "adaptive trials auto:2:10: 14 of 30 possible trials ran (fixed 5 would run 15): "
        "1 trials saved (7%)",
        "  cases decided: 2 consistent with their baseline, 1 ran to the maximum of 10",
    ]  # the trials recorded no model calls: no claim about calls saved
    assert lines[0] in summary.lines()
    assert Summary().adaptive_lines() == []


# -- runs ------------------------------------------------------------------------------------

CASES = """
- {id: chat-001-good, priority: high, difficulty: easy, turns: [hi], expected: {reply_includes: [hello]}}
- {id: chat-002-bad, priority: high, difficulty: easy, turns: [hi], expected: {reply_includes: [hello]}}
- {id: chat-003-new-bad, priority: low, difficulty: easy, turns: [hi], expected: {reply_includes: [hello]}}
"""

CONFTEST = """
import itertools
import threading

from helpers import ToyAgent, ToyBackend
from pytest_commerce_evals.testing import FakeClient, text_reply

REPLIES = {"chat-001-good": "hello there", "chat-002-bad": "no", "chat-003-new-bad": "no"}
RAN = []
LOCK = threading.Lock()

def pytest_commerce_evals_make_backend(config, case):
    return ToyBackend()

def pytest_commerce_evals_make_agent(config, case, backend):
    with LOCK:
        RAN.append(case.id)
    return ToyAgent(FakeClient([text_reply(REPLIES[case.id])]), backend)

def pytest_commerce_evals_case_history(config, case_ids):
    return {"chat-001-good": [(10, 10), (10, 10)], "chat-002-bad": [(10, 10), (10, 10)]}

def pytest_sessionfinish(session):
    with open("ran.txt", "w") as f:
        f.write(",".join(sorted(RAN)))
"""


@pytest.fixture
def scripted(pytester: pytest.Pytester):
    from pathlib import Path

    helpers = Path(__file__).parent / "helpers.py"
    pytester.makepyfile(helpers=helpers.read_text())
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "suite.yaml").write_text(textwrap.dedent(CASES))
    pytester.makeconftest(CONFTEST)
    return pytester


@pytest.mark.parametrize("concurrency", ["1", "4"])
def test_each_case_runs_until_decided_and_the_rest_are_not_run(scripted, concurrency):
    result = scripted.runpytest(
        "cases",
        "--commerce-trials=auto:2:6",
        f"--commerce-concurrency={concurrency}",
        "--commerce-store=none",
        "-p",
        "no:cacheprovider",
        "-v",
    )
    # chat-001-good: 2/2 against 20/20 -> consistent at 2; chat-002-bad: 0/3 against 20/20 -> dropped
    # at 3; chat-003-new-bad (no history): 0/2 -> clearly failing at 2
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("failed")) == (2, 5), outcomes
    assert outcomes.get("decided") == 18 - 7
    assert "skipped" not in outcomes
    ran = (scripted.path / "ran.txt").read_text().split(",")
    assert (
        ran.count("chat-001-good"),
        ran.count("chat-002-bad"),
        ran.count("chat-003-new-bad"),
    ) == (2, 3, 2)
    result.stdout.fnmatch_lines(
        [
            "*chat-002-bad?trial-4? NOT NEEDED (decided after 3 trials: dropped against its "
            "baseline)*",
            "adaptive trials auto:2:6: 7 of 18 possible trials ran (fixed 5 would run 15): "
            "8 trials saved (53%)",
            "  model calls: 7 made; fixed 5 would make about 15 at each case's calls per "
            "trial: 8 saved",
            "  cases decided: 1 consistent with their baseline, 1 dropped against their "
            "baseline, 1 clearly failing (no history)",
        ]
    )
    # the set counts the trials that ran: good 2/2, bad 0/3, new 0/2 -> mean of rates 33%
    result.stdout.fnmatch_lines(["*SHORT cases: 2/7 mean of per-case rates 33.3%*"])
    assert result.ret == 1


def test_a_fixed_count_run_is_unchanged(scripted):
    result = scripted.runpytest(
        "cases", "--commerce-trials=2", "--commerce-store=none", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=2, failed=4, warnings=None)
    assert "adaptive trials" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*SHORT cases: 2/6 = 33.3%*"])


def test_under_xdist_each_case_runs_on_one_worker_until_decided(scripted):
    pytest.importorskip("xdist")
    scripted.makeconftest(
        CONFTEST.replace('open("ran.txt", "w")', 'open(f"ran-{os.getpid()}.txt", "w")').replace(
            "import itertools", "import os"
        )
    )
    result = scripted.runpytest(
        "cases",
        "-n",
        "2",
        "-p",
        "no:benchmark",
        "--commerce-trials=auto:2:6",
        "--commerce-concurrency=2",
        "--commerce-store=none",
    )
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("failed"), outcomes.get("decided")) == (2, 5, 11)
    ran = {}  # case id: the workers that ran its trials
    for path in scripted.path.glob("ran-*.txt"):
        for case_id in filter(None, path.read_text().split(",")):
            ran.setdefault(case_id, []).append(path.name)
    assert {k: len(v) for k, v in ran.items()} == {
        "chat-001-good": 2,
        "chat-002-bad": 3,
        "chat-003-new-bad": 2,
    }
    assert all(len(set(v)) == 1 for v in ran.values()), ran  # one worker per case
    result.stdout.fnmatch_lines(
        ["adaptive trials auto:2:6: 7 of 18 possible trials ran (fixed 5 would run 15)*"]
    )


def test_under_xdist_the_workers_read_each_cases_history_from_the_store(scripted):
    pytest.importorskip("xdist")
    # no history from a conftest: the run store is the only source
    scripted.makeconftest(
        CONFTEST.split("def pytest_commerce_evals_case_history")[0]
        + "def pytest_sessionfinish(session):\n    import os\n"
        + '    with open(f"ran-{os.getpid()}.txt", "w") as f:\n'
        + '        f.write(",".join(sorted(RAN)))\n'
    )
    first = scripted.runpytest("cases", "--commerce-trials=5", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=5, failed=10, warnings=None)
    for path in scripted.path.glob("ran-*.txt"):
        path.unlink()
    result = scripted.runpytest(
        "cases",
        "-n",
        "2",
        "-p",
        "no:benchmark",
        "-p",
        "no:cacheprovider",
        "--commerce-trials=auto:2:6",
    )
    ran = []
    for path in scripted.path.glob("ran-*.txt"):
        ran += [c for c in path.read_text().split(",") if c]
    # chat-001-good: 2/2 against its stored 5/5 is consistent at 2 (with no history it would
    # need all 6: the no-history rule cannot be 95% sure of a rate above 0.8 from 6 passes);
    # the two bad cases failed all 5 before: 0/2 is consistent with that
    assert sorted(ran) == ["chat-001-good"] * 2 + ["chat-002-bad"] * 2 + ["chat-003-new-bad"] * 2
    result.stdout.fnmatch_lines(["*cases decided: 3 consistent with their baseline*"])


def test_adaptive_trials_decide_at_the_diff_level(scripted):
    # chat-002-bad: 0/2 against 20/20 has p = 1/231 = 0.0043: not below 0.01/10, but below 0.1/10
    result = scripted.runpytest(
        "cases",
        "--commerce-trials=auto:2:6",
        "--commerce-diff-level=0.1",
        "--commerce-store=none",
        "-p",
        "no:cacheprovider",
    )
    ran = (scripted.path / "ran.txt").read_text().split(",")
    assert ran.count("chat-002-bad") == 2, ran
    result.stdout.fnmatch_lines(["*1 dropped against their baseline*"])


def test_an_agent_not_named_before_its_first_trial_finds_its_history_under_its_model(scripted):
    from run_builders import run as a_run
    from run_builders import trial as a_trial

    from pytest_commerce_evals.models.endpoint import resolve_endpoint
    from pytest_commerce_evals.store.run_store import RunStore

    # an agent that asks the plugin for a client is named by that client's model (here the
    # embedded default) only once a trial ran; its earlier runs are stored under that model
    model = resolve_endpoint(scripted.parseconfigure(), "agent").model
    trials = [a_trial("chat-001-good", "pass", n=n, trials=5) for n in range(1, 6)]
    store = RunStore(scripted.path / "store")
    store.import_record(a_run(trials, model=model))
    store.close()
    scripted.makeconftest(CONFTEST.split("def pytest_commerce_evals_case_history")[0])
    result = scripted.runpytest(
        "cases",
        "--commerce-trials=auto:2:6",
        f"--commerce-store={scripted.path / 'store'}",
        "-p",
        "no:cacheprovider",
        "-k",
        "good",
    )
    # 2/2 against the stored 5/5 is consistent at 2; without that history it runs all 6
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*2 of 6 possible trials ran*", "*1 consistent with their*"])


def test_ungraded_trials_are_never_imagined_as_passes_or_failures():
    against = dict(minimum=2, maximum=10, baseline=(20, 20), threshold=0.8)
    # 0 of 2 graded, 3 more that could not be graded: not 0 of 5 (which is dropped)
    assert decide(0, 2, 5, **against) is None
    assert decide(0, 5, 5, **against) == Decision("dropped", 5)
    alone = dict(minimum=2, maximum=10, baseline=None, threshold=0.5)
    # 2 of 2 graded and 2 ungraded: not 4 of 4 (clearly passing) nor 2 of 4
    assert decide(2, 2, 4, **alone) is None
    assert decide(4, 4, 4, **alone) == Decision("passing", 4)
    assert decide(2, 4, 4, **alone) is None
    strict = {**alone, "threshold": 0.8}
    assert decide(0, 2, 4, **strict) == Decision("failing", 4)  # the 2 graded decide it


def test_each_trial_records_its_cases_stopping_rule_and_a_regrade_keeps_it(scripted):
    from pytest_commerce_evals.store.record_file import load_record

    common = ["cases", "--commerce-store=none", "-p", "no:cacheprovider"]
    result = scripted.runpytest(*common, "--commerce-trials=auto:2:6", "--commerce-json=run.json")
    assert result.ret == 1
    record = load_record(scripted.path / "run.json")
    rules = {t.case_id: t.stopping for t in record.trials}
    assert rules["chat-001-good"] == Stopping(
        minimum=2, maximum=6, baseline=(20, 20), level=0.01, delta=0.1
    )
    assert rules["chat-003-new-bad"].baseline is None  # no history: the threshold rule
    # the stored set rate is the mean of the cases' adaptive rates: 1 (2/2 and the pool), 0, 0
    [group] = record.sets
    assert group.rate == pytest.approx(1 / 3)
    tallies = {}
    for t in record.trials:
        tallies.setdefault(t.case_id, CaseTally()).add(t.trial, t.outcome, t.threshold, t.stopping)
    assert tallies["chat-001-good"].rate() == 1
    again = scripted.runpytest(*common, "--commerce-regrade=run.json", "--commerce-json=re.json")
    assert again.ret == 1
    regraded = load_record(scripted.path / "re.json")
    assert {t.case_id: t.stopping for t in regraded.trials} == rules
    assert [g.rate for g in regraded.sets] == [group.rate]


def test_a_fixed_count_trial_records_no_stopping_rule():
    assert _record("a", "pass").stopping is None
    tally = CaseTally()
    tally.add(1, "pass", 0.8, None)
    assert tally.rate() is None and tally.counts() == (1, 1, 1, None)
