"""Failing-set diffs against the previous comparable run or a named baseline, and model
against model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from run_builders import make_suite, run, trial

from pytest_commerce_evals.store.compare import compare_runs
from pytest_commerce_evals.store.diff import NOISE_NOTE, diff_failing_sets, what_decides
from pytest_commerce_evals.store.history import (
    History,
    case_lines,
    flaky_case,
    is_flaky,
    strip,
    strip_counts,
)
from pytest_commerce_evals.store.record_file import load_record
from pytest_commerce_evals.store.run_store import RunStore

HERE = Path(__file__).parent


@pytest.fixture
def suite(pytester: pytest.Pytester):
    write = make_suite(pytester, (HERE / "helpers.py").read_text())
    return pytester, write


def ids(entries) -> list[str]:
    return [e.case_id for e in entries]


# -- the diff itself --------------------------------------------------------------------------


def test_one_trial_a_case_never_decides_a_change_it_only_lists_it():
    before = run(
        [
            trial("a-001-x", "pass"),
            trial("b-001-x", "fail"),
            trial("c-001-x", "fail"),
            trial("d-001-x", "pass"),
            trial("e-001-x", "fail"),
            trial("g-001-x", "fail"),
        ]
    )
    after = run(
        [
            trial("a-001-x", "fail", priority="low"),
            trial("a-001-x", "pass", n=2, priority="low"),
            trial("b-001-x", "pass"),
            trial("c-001-x", "fail", priority="critical"),
            trial("d-001-x", "pass"),
            trial("e-001-x", "infra_error"),
            trial("f-001-x", "fail"),  # new case
        ]
    )
    diff = diff_failing_sets(before, after)
    # 1/1 -> 1/2 and 0/1 -> 1/1 moved the any-fail status, but p = 0.67 and 0.5: inconclusive
    assert ids(diff.newly_failing) == [] and ids(diff.fixed) == []
    assert ids(diff.inconclusive) == ["b-001-x", "a-001-x"]  # by priority: high before low
    assert diff.inconclusive[1].tested() == "1/1 100% [21–100] → 1/2 50% [9–91]  p=0.67"
    assert ids(diff.still_failing) == ["c-001-x"]
    assert ids(diff.not_compared) == ["e-001-x", "f-001-x", "g-001-x"]
    assert [e.note for e in diff.not_compared] == [
        "not graded on one side",
        "new case: no baseline",
        "not run in this run",
    ]
    assert diff.not_compared[0].tested() == "0/1 0% [0–79] → not graded (1 infra_error)"
    assert diff.not_compared[2].tested() == "0/1 0% [0–79] → not run"


def test_overall_rate_always_comes_with_the_noise_note():
    diff = diff_failing_sets(
        run([trial("a-001-x"), trial("b-001-x", "fail")]), run([trial("a-001-x"), trial("b-001-x")])
    )
    last = diff.lines()[-1]
    assert last == f"overall graded pass rate: 50.0% → 100.0% (+50.0 points); {NOISE_NOTE}"
    assert "±1 point" in NOISE_NOTE and "failing sets" in NOISE_NOTE


def test_comparison_sides():
    a = run([trial("a-001-x", "fail"), trial("b-001-x", "fail"), trial("c-001-x")], model="m-a")
    b = run(
        [trial("a-001-x", "fail"), trial("b-001-x"), trial("c-001-x", "fail")],
        model="m-b",
        run_id="20250102-000000-bbbbbb",
    )
    c = compare_runs(a, b)
    assert (ids(c.only_a), ids(c.only_b), ids(c.both)) == (["b-001-x"], ["c-001-x"], ["a-001-x"])
    lines = c.lines()
    assert "failing only under A (m-a) (1):" in lines and "failing only under B (m-b) (1):" in lines
    assert any(
        re.fullmatch(r"  c-001-x\s+high\s+A 100% \(1/1\)\s+B 0% \(0/1\)", line) for line in lines
    )
    assert (
        lines[-1].startswith("overall graded pass rate: A 33.3% → B 33.3%")
        and NOISE_NOTE in lines[-1]
    )


# -- through pytest ---------------------------------------------------------------------------


def test_each_run_is_diffed_against_the_pooled_comparable_runs(suite, tmp_path):
    p, write = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    write(cart_003_vegan_tote="shoe-001")
    first = p.runpytest("cases", store, "--commerce-trials=2")
    first.stdout.fnmatch_lines(["*commerce-evals run history*", "*no previous comparable run*"])
    write(cart_002_checkout_total="shoe-002")  # 002 breaks, 003 is fixed
    second = p.runpytest("cases", store, "--commerce-trials=2")
    (first_id,) = re.findall(r"run (\S+) recorded", first.stdout.str())
    # 2/2 -> 0/2 is p = 1/6: two trials cannot tell a change from noise
    second.stdout.fnmatch_lines(
        [
            "case pass rates (graded trials, 95% Wilson interval; outcome per run over the last "
            "2 comparable runs, oldest first):",
            "  cart-002-checkout-total  critical  0/2 0% [0–66]  ✓✗",  # failing first
            "  cart-001-add-single      high      2/2 100% [34–100]  ✓✓",
            "  cart-003-vegan-tote      low       2/2 100% [34–100]  ✗✓",
            "*failing-set diff",
            f"baseline: run {first_id} (*, agent *, commit no git) — the latest complete "
            "comparable run (same kind and agent model) that ran these cases",
            f"baseline: 1 comparable run pooled per case, newest {first_id}; per-case pools stop "
            "at a change",
            "a case is newly failing (fixed) when the one-sided Fisher exact test of its trials "
            "against its baseline gives p < 0.01; *",
            "newly failing (0):",
            "fixed (0):",
            "inconclusive (2): changed, but within noise:",
            "  cart-002-checkout-total  critical  2/2 100% [34–100] → 0/2 0% [0–66]  p=0.17",
            "*decided at p < 0.01 with 13 trials in this run at its rate (--commerce-trials=13), "
            "or with a baseline of 13 trials at its rate (about 6 more runs of 2)",
            "  cart-003-vegan-tote      low       0/2 0% [0–66] → 2/2 100% [34–100]  p=0.17",
            "*decided at p < 0.01 with 13 trials in this run*",
            "still failing (0):",
            f"overall graded pass rate: 66.7% → 66.7% (+0.0 points); {NOISE_NOTE}",
        ]
    )
    (second_id,) = re.findall(r"run (\S+) recorded", second.stdout.str())
    assert RunStore(tmp_path / "store").runs()[0].baseline == first_id


def test_a_named_baseline_by_run_id_or_json_file(suite, tmp_path):
    p, write = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    record = tmp_path / "base.json"
    write(cart_001_add_single="shoe-002")
    first = p.runpytest("cases", store, f"--commerce-json={record}")
    (first_id,) = re.findall(r"run (\S+) recorded", first.stdout.str())
    write()
    p.runpytest("cases", store)  # now the previous comparable run is this one
    by_id = p.runpytest("cases", store, f"--commerce-baseline={first_id[:-1]}")
    by_id.stdout.fnmatch_lines(
        [
            f"baseline: run {first_id} * — named with --commerce-baseline",
            "baseline: this run alone",
            "*",
            "newly failing (0):",
            "fixed (0):",
            "inconclusive (1): *",
            "  cart-001-add-single  high      0/1 0% [0–79] → 1/1 100% [21–100]  p=0.50",
        ]
    )
    by_file = p.runpytest("cases", "--commerce-store=none", f"--commerce-baseline={record}")
    by_file.stdout.fnmatch_lines([f"baseline: run {first_id} *", "baseline: this run alone"])
    missing = p.runpytest("cases", store, "--commerce-baseline=20990101-nope")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(
        [
            "*--commerce-baseline '20990101-nope': no such run id, and no complete regression run of an agent model of that name in *runs.sqlite*"
        ]
    )


def test_model_against_model_by_name_prints_both_failing_sets_and_runs_nothing(suite, tmp_path):
    p, write = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    endpoint = "--commerce-base-url=http://localhost:9/v1"
    write(cart_002_checkout_total="shoe-002")
    p.runpytest("cases", store, endpoint, "--commerce-model=model-a")
    write(cart_002_checkout_total="shoe-002", cart_003_vegan_tote="shoe-001")
    p.runpytest("cases", store, endpoint, "--commerce-model=model-a")  # the latest of model-a
    write(cart_001_add_single="shoe-002", cart_003_vegan_tote="shoe-001")
    p.runpytest("cases", store, endpoint, "--commerce-model=model-b")
    html = tmp_path / "compare.html"
    result = p.runpytest(store, "--commerce-compare=model-a,model-b", f"--commerce-html={html}")
    assert result.ret == 0
    assert "passed" not in result.stdout.str() and "failed" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*commerce-evals: failing sets side by side*",
            "A: run * agent model-a*",
            "B: run * agent model-b*",
            "failing only under A (model-a) (1):",
            "  cart-002-checkout-total  critical  A 0% (0/1)    B 100% (1/1)",
            "failing only under B (model-b) (1):",
            "  cart-001-add-single      high      A 100% (1/1)  B 0% (0/1)",
            "failing under both (1):",
            "  cart-003-vegan-tote      low       A 0% (0/1)    B 0% (0/1)",
            f"overall graded pass rate: A 33.3% → B 33.3% (+0.0 points); {NOISE_NOTE}",
            f"HTML report written to {html}",
        ]
    )
    assert len(RunStore(tmp_path / "store").runs()) == 3  # comparing recorded no run
    page = html.read_text()
    assert (
        "Failing only under A (model-a) (1)" in page
        and "Failing only under B (model-b) (1)" in page
    )
    assert "cart-002-checkout-total" in page and "±1 point" in page
    # by run ids too, in either order
    ids_ = [r.run_id for r in RunStore(tmp_path / "store").runs()]
    swapped = p.runpytest(store, f"--commerce-compare={ids_[0]},{ids_[1]}")
    swapped.stdout.fnmatch_lines(["failing only under A (model-b) (1):", "  cart-001-add-single*"])


def test_compare_names_what_it_could_not_find(suite, tmp_path):
    p, _ = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    p.runpytest(
        "cases", store, "--commerce-base-url=http://localhost:9/v1", "--commerce-model=model-a"
    )
    result = p.runpytest(store, "--commerce-compare=model-a,model-z")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            "*B 'model-z': no such run id, and no complete regression run of an agent model of that name in *runs.sqlite (recent runs: *; models: model-a)"
        ]
    )
    bad = p.runpytest(store, "--commerce-compare=model-a")
    bad.stdout.fnmatch_lines(["*--commerce-compare takes two runs or models, A,B; got 'model-a'"])


def test_compare_on_a_corrupt_store_names_the_file(suite, tmp_path):
    p, _ = suite
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "runs.sqlite").write_text("nope" * 500)
    result = p.runpytest(f"--commerce-store={tmp_path / 'store'}", "--commerce-compare=a,b")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(
        [
            f"*commerce-evals: {tmp_path / 'store' / 'runs.sqlite'}: run store error: file is not a database"
        ]
    )


def test_json_records_can_be_compared_without_a_store(tmp_path, pytester):
    from pytest_commerce_evals.store.record_file import write_record

    a = write_record(run([trial("a-001-x", "fail")], model="m-a"), tmp_path / "a.json")
    b = write_record(run([trial("a-001-x")], model="m-b"), tmp_path / "b.json")
    result = pytester.runpytest("--commerce-store=none", f"--commerce-compare={a},{b}")
    result.stdout.fnmatch_lines(["failing only under A (m-a) (1):", "  a-001-x *"])
    assert json.loads(a.read_text())["agent_model"] == "m-a"


def test_the_run_names_the_agent_it_ran_and_compare_finds_it_by_that_name(suite, tmp_path):
    p, write = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    # the toy agent brings its own (fake) client: nothing claims the embedded model
    out = tmp_path / "plain.json"
    p.runpytest("cases", store, f"--commerce-json={out}")
    assert json.loads(out.read_text())["agent_model"] is None
    # named by the user
    write(cart_002_checkout_total="shoe-002")
    named = tmp_path / "named.json"
    p.runpytest("cases", store, "--commerce-agent=shop-bot v1", f"--commerce-json={named}")
    assert json.loads(named.read_text())["agent_model"] == "shop-bot v1"
    write()
    p.runpytest("cases", store, "--commerce-agent=shop-bot v2")
    result = p.runpytest(store, "--commerce-compare=shop-bot v1,shop-bot v2")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        ["A: run * agent shop-bot v1*", "B: run * agent shop-bot v2*", "failing only under A*"]
    )


def test_a_glue_error_is_never_newly_failing():
    before = run([trial("a-001-x"), trial("b-001-x"), trial("c-001-x", "fail")])
    after = run([trial("a-001-x", "error"), trial("b-001-x", "fail"), trial("c-001-x", "error")])
    diff = diff_failing_sets(before, after)
    assert ids(diff.newly_failing) == [] and ids(diff.inconclusive) == ["b-001-x"]  # the agent's
    assert ids(diff.still_failing) == [] and ids(diff.fixed) == []
    assert ids(diff.not_compared) == ["c-001-x"]
    assert diff.not_compared[0].rates() == "0% (0/1) → not graded (1 error)"


# -- noise-aware diffs: known counts ------------------------------------------------------------


def counted(passes: int, graded: int, *, case: str = "a-001-x", day: int = 1, **kw):
    """A run in which `case` passed `passes` of `graded` trials."""
    trials = [
        trial(case, "pass" if n <= passes else "fail", n=n, trials=graded)
        for n in range(1, graded + 1)
    ]
    return run(
        trials,
        run_id=f"2025010{day}-120000-aaaaaa",
        started_at=f"2025-01-0{day}T12:00:00.000+00:00",
        **kw,
    )


def history_of(*runs_) -> History:
    """Earlier runs, newest first, as the store would give them."""
    from pytest_commerce_evals.store.history import case_rates

    return History(
        runs=list(runs_),
        counts={
            r.run_id: {c: (x.passed, x.graded) for c, x in case_rates(r).items()} for r in runs_
        },
    )


def test_a_clear_regression_is_newly_failing_at_the_default_level():
    diff = diff_failing_sets(counted(5, 5), counted(0, 5, day=2))
    assert ids(diff.newly_failing) == ["a-001-x"]
    assert diff.newly_failing[0].p == pytest.approx(1 / 252)
    assert diff.newly_failing[0].tested() == "5/5 100% [57–100] → 0/5 0% [0–43]  p=0.004"


def test_the_level_decides_at_the_boundary():
    before, after = counted(5, 5), counted(0, 5, day=2)  # p = 1/252 = 0.003968
    assert ids(diff_failing_sets(before, after, level=0.00397).newly_failing) == ["a-001-x"]
    just_above = diff_failing_sets(before, after, level=0.00396)
    assert ids(just_above.newly_failing) == [] and ids(just_above.inconclusive) == ["a-001-x"]


def test_a_small_drop_is_inconclusive_with_both_rates():
    diff = diff_failing_sets(counted(4, 5), counted(3, 5, day=2))
    assert ids(diff.newly_failing) == [] and ids(diff.still_failing) == []
    assert ids(diff.inconclusive) == ["a-001-x"]
    assert diff.inconclusive[0].tested() == "4/5 80% [38–96] → 3/5 60% [23–88]  p=0.50"
    lines = diff.lines()
    assert "inconclusive (1): changed, but within noise:" in lines
    # the same rate on both sides is still failing
    same = diff_failing_sets(counted(3, 5), counted(3, 5, day=2))
    assert ids(same.still_failing) == ["a-001-x"] and ids(same.inconclusive) == []


def test_pooled_history_flags_what_one_run_cannot():
    newest, middle, oldest = counted(5, 5, day=3), counted(5, 5, day=2), counted(5, 5, day=1)
    now = counted(1, 5, day=4)
    pooled = diff_failing_sets(newest, now, history=history_of(newest, middle, oldest), pooled=True)
    assert ids(pooled.newly_failing) == ["a-001-x"]
    entry = pooled.newly_failing[0]
    assert (entry.base_passed, entry.base_graded, entry.base_runs) == (15, 15, 3)
    assert entry.p == pytest.approx(16 / 15504)  # C(16,1)·C(4,4) / C(20,5)
    assert entry.tested() == "15/15 100% [80–100] over 3 runs → 1/5 20% [4–62]  p=0.001"
    assert pooled.pool_text() == (
        "3 comparable runs pooled per case, newest 20250103-120000-aaaaaa; per-case pools stop "
        "at a change"
    )
    # 4/5 -> 1/5 against one run: p = 26/252
    alone = diff_failing_sets(counted(4, 5), counted(1, 5, day=2))
    assert ids(alone.newly_failing) == [] and ids(alone.inconclusive) == ["a-001-x"]
    assert alone.inconclusive[0].p == pytest.approx(26 / 252)


def test_the_pool_stops_at_an_older_change():
    # the case was broken (0/5) three runs back and fixed since: the pool is the 10 passes only
    runs_ = counted(5, 5, day=3), counted(5, 5, day=2), counted(0, 5, day=1)
    diff = diff_failing_sets(
        runs_[0], counted(5, 5, day=4), history=history_of(*runs_), pooled=True
    )
    assert diff.pooled_runs == [runs_[0].run_id, runs_[1].run_id]


def test_an_explicit_baseline_is_that_run_alone():
    runs_ = counted(5, 5, day=3), counted(5, 5, day=2), counted(5, 5, day=1)
    diff = diff_failing_sets(counted(5, 5, day=2), counted(1, 5, day=4), history=history_of(*runs_))
    assert diff.pool_text() == "this run alone"
    assert ids(diff.newly_failing) == [] and ids(diff.inconclusive) == ["a-001-x"]
    assert diff.inconclusive[0].base_graded == 5


def test_a_fix_is_decided_by_the_rise_test():
    diff = diff_failing_sets(counted(0, 5), counted(5, 5, day=2))
    assert ids(diff.fixed) == ["a-001-x"] and diff.fixed[0].p == pytest.approx(1 / 252)
    small = diff_failing_sets(counted(3, 5), counted(5, 5, day=2))
    assert ids(small.fixed) == [] and ids(small.inconclusive) == ["a-001-x"]


def test_flaky_is_an_outcome_that_flipped_back_and_forth():
    outcomes = [5, 2, 5, 5, 2]  # oldest first: ✓✗✓✓✗ with the current run last
    past = [counted(p, 5, day=d + 1) for d, p in enumerate(outcomes[:-1])][::-1]
    now = counted(outcomes[-1], 5, day=6)
    history = history_of(*past)
    from pytest_commerce_evals.store.history import case_rates

    current = case_rates(now)["a-001-x"]
    marks = strip(history, "a-001-x", current)
    assert marks == "✓✗✓✓✗" and strip_counts(history, "a-001-x", current) == (19, 25)
    assert is_flaky(marks, 19, 25) and flaky_case(history, "a-001-x", current)
    assert not is_flaky(marks, 22, 25)  # 22/25: Wilson upper bound 0.958, not below 0.95
    assert not is_flaky("✓✓✓✗", 10, 20) and not is_flaky("✗✗✓", 1, 15)
    assert is_flaky("✗✓✗", 8, 15)
    # flipping is not enough: a case failing 1 trial in 50 flips now and then, but its rate is
    # not clearly below FLAKY_BAR (49/50: Wilson upper bound 0.996); 40/50 (0.89) is
    assert not is_flaky("✓✓✓✓✓✓✓✓✗✓", 49, 50) and is_flaky("✓✓✓✓✓✓✓✓✗✓", 40, 50)
    assert is_flaky("✓✗✓", 44, 50) and not is_flaky("✓✗✓", 45, 50)  # upper 0.944 / 0.957
    # M runs at most, the current one included
    history.max_runs = 3
    assert strip(history, "a-001-x", case_rates(now)["a-001-x"]) == "✓✓✗"
    history.max_runs = 10
    lines = case_lines(now, history)
    assert lines[1] == "  a-001-x  high      2/5 40% [12–77]  ✓✗✓✓✗  flaky"
    diff = diff_failing_sets(past[0], now, history=history, pooled=True)
    assert diff.inconclusive[0].tested().endswith("flaky ✓✗✓✓✗")


# -- through pytest ---------------------------------------------------------------------------

PATTERNED = """
from helpers import ToyAgent, ToyBackend
from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply

PATTERNS = {patterns}
RIGHT = {{"cart-001-add-single": "shoe-001", "cart-002-checkout-total": "shoe-001",
         "cart-003-vegan-tote": "bag-001"}}
SEEN = {{}}

def pytest_commerce_evals_make_backend(config, case):
    return ToyBackend()

def pytest_commerce_evals_make_agent(config, case, backend):
    n = SEEN[case.id] = SEEN.get(case.id, -1) + 1
    pattern = PATTERNS.get(case.id, "p")
    product = RIGHT[case.id] if pattern[n % len(pattern)] == "p" else "shoe-002"
    return ToyAgent(FakeClient([tool_reply("add_to_cart", product_id=product),
                                text_reply("Done.")]), backend)
"""


def patterned(p, **patterns: str) -> None:
    """The toy agent passes a case's n-th trial when its pattern's n-th letter is `p`."""
    found = {k.replace("_", "-"): v for k, v in patterns.items()}
    p.makeconftest(PATTERNED.format(patterns=repr(found)))


def test_a_targeted_run_is_diffed_against_the_full_run_restricted_to_its_cases(suite, tmp_path):
    p, _ = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    patterned(p)
    full = p.runpytest("cases", store, "--commerce-trials=5")
    (full_id,) = re.findall(r"run (\S+) recorded", full.stdout.str())
    patterned(p, cart_002_checkout_total="f")
    narrowed = p.runpytest("cases", store, "--commerce-trials=5", "-k", "checkout")
    narrowed.stdout.fnmatch_lines(
        [
            f"baseline: run {full_id} * — the latest complete comparable run (same kind and "
            "agent model) that ran these cases",
            f"baseline: 1 comparable run pooled per case, newest {full_id}; per-case pools stop "
            "at a change; restricted to the 1 selected case",
            "newly failing (1):",
            "  cart-002-checkout-total  critical  5/5 100% [57–100] → 0/5 0% [0–43]  p=0.004",
            "fixed (0):",
            "still failing (0):",
        ]
    )
    shown = narrowed.stdout.str().split("failing-set diff")[1]
    assert "cart-001-add-single" not in shown  # not "not run": it was not selected
    # the overall rates are over the selected cases on both sides
    assert "overall graded pass rate: 100.0% → 0.0% (-100.0 points)" in shown


def test_flaky_cases_from_history_and_the_flaky_listing(suite, tmp_path):
    p, _ = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    endpoint = ("--commerce-agent=shop-bot",)
    for pattern in ("ppp", "pff", "ppp", "fpf"):  # 003: ✓✗✓✗ with 3 trials a run, 8/12
        patterned(p, cart_003_vegan_tote=pattern)
        last = p.runpytest("cases", store, "--commerce-trials=3", *endpoint)
    last.stdout.fnmatch_lines(
        [
            "case pass rates (graded trials, 95% Wilson interval; outcome per run over the last "
            "4 comparable runs, oldest first):",
            "  cart-003-vegan-tote      low       1/3 33% [6–79]  ✓✗✓✗  flaky",
            "  cart-002-checkout-total  critical  3/3 100% [44–100]  ✓✓✓✓",
        ]
    )
    last.stdout.fnmatch_lines(
        [
            "inconclusive *",
            "  cart-003-vegan-tote  low       7/9 78% [45–94] over 3 runs → 1/3 33% [6–79]  "
            "p=0.24  flaky ✓✗✓✗",
        ]
    )
    listed = p.runpytest(store, "--commerce-flaky")
    assert listed.ret == 0
    assert not {"passed", "failed"} & set(listed.parseoutcomes())  # it ran no tests
    listed.stdout.fnmatch_lines(
        [
            "*commerce-evals: flaky cases*",
            "agent shop-bot: the last 4 complete regression run(s) (up to 10 per case; *",
            "flaky (1): outcome per run, oldest first *",
            "  cart-003-vegan-tote  ✓✗✓✗        8/12 67% [39–86] over 4 runs",
            "not flaky: 2 case(s) of the latest run",
        ]
    )
    assert len(RunStore(tmp_path / "store").runs()) == 4  # listing recorded no run
    short = p.runpytest(store, "--commerce-flaky", "--commerce-history-runs=2")
    short.stdout.fnmatch_lines(["flaky (0):*"])
    none = p.runpytest(store, "--commerce-flaky", "--commerce-agent=nobody")
    assert none.ret == pytest.ExitCode.USAGE_ERROR
    none.stdout.fnmatch_lines(
        ["*no complete regression run of agent 'nobody' in *(models: shop-bot)"]
    )


def runs_before(store: str) -> str:
    """The run id of the store's second newest run (the one a new run diffs against)."""
    return RunStore(store.split("=", 1)[1]).runs()[1].run_id


def test_json_and_html_carry_each_case_rate_interval_and_history(suite, tmp_path):
    p, _ = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    patterned(p, cart_003_vegan_tote="pppp")
    p.runpytest("cases", store, "--commerce-trials=4")
    patterned(p, cart_003_vegan_tote="ppfp")
    record, html = tmp_path / "run.json", tmp_path / "run.html"
    p.runpytest(
        "cases",
        store,
        "--commerce-trials=4",
        f"--commerce-json={record}",
        f"--commerce-html={html}",
    )
    data = json.loads(record.read_text())
    (tote,) = [c for c in data["cases"] if c["case_id"] == "cart-003-vegan-tote"]
    assert (tote["passed"], tote["graded"], tote["rate"]) == (3, 4, 0.75)
    assert tote["interval"] == [pytest.approx(0.3006, abs=1e-4), pytest.approx(0.9544, abs=1e-4)]
    assert (tote["history"], tote["flaky"]) == ("✓✗", False)
    assert load_record(record).cases[2].case_id == "cart-003-vegan-tote"  # it reads back
    page = html.read_text()
    assert "3/4 75% [30–95] (95% CI)" in page
    assert '<span class="strip"' in page and "this run" in page and "commit no git" in page
    assert "Inconclusive (1)" in page and "4/4 100% [51–100]" in page
    # the diff in the record and the page, with what would decide the inconclusive case
    [entry] = data["diff"]["inconclusive"]
    assert (entry["case_id"], entry["baseline"], entry["current"]) == (
        "cart-003-vegan-tote",
        [4, 4],
        [3, 4],
    )
    assert entry["decides"].startswith("p < 0.01 with ") and entry["decides"] in page.replace(
        "&lt;", "<"
    )
    assert data["diff"]["newly_failing"] == [] and data["diff"]["baseline"] == runs_before(store)
    # each case's outcomes across the comparable runs, visible without hovering: newest first
    runs = RunStore(tmp_path / "store").runs()
    tote_section = page[page.index('id="case-cart-003-vegan-tote"') :]
    table = tote_section[: tote_section.index("</table>")]
    table = table[table.index("Outcomes across comparable runs") :]
    assert table.index(f"{runs[0].run_id} (this run)") < table.index(runs[1].run_id)
    assert '<td class="num">3/4</td>' in table and '<td class="num">4/4</td>' in table


def test_the_case_history_hook(suite, tmp_path):
    p, _ = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    probe = """
import json, pathlib
def pytest_collection_finish(session):
    found = session.config.hook.pytest_commerce_evals_case_history(
        config=session.config, case_ids=["cart-003-vegan-tote", "cart-009-none"])
    pathlib.Path("history.json").write_text(json.dumps(found))
"""
    for pattern in ("pp", "pf", "ff"):
        patterned(p, cart_003_vegan_tote=pattern)
        (p.path / "conftest.py").write_text((p.path / "conftest.py").read_text() + probe)
        p.runpytest("cases", store, "--commerce-trials=2")
    # asked in the third run: the two earlier runs, newest first
    assert json.loads((p.path / "history.json").read_text()) == {
        "cart-003-vegan-tote": [[1, 2], [2, 2]]
    }
    p.runpytest("cases", "--commerce-store=none", "--commerce-trials=2")
    assert json.loads((p.path / "history.json").read_text()) is None
    p.runpytest("cases", f"--commerce-store={tmp_path / 'empty'}", "--commerce-trials=2")
    assert json.loads((p.path / "history.json").read_text()) == {}


def test_comparable_runs_are_complete_same_kind_same_agent_and_earlier(tmp_path):
    from pytest_commerce_evals.store.history import load_history

    store = RunStore(tmp_path / "runs")
    now = counted(0, 5, day=9)
    for record in (
        counted(5, 5, day=1),  # comparable
        counted(4, 5, day=2, args=("cases/cart",)),  # another selection: comparable
        counted(5, 5, day=3, model="model-b"),  # another agent
        counted(5, 5, day=4, complete=False),  # incomplete
        counted(5, 5, day=5, kind="live"),  # another kind
        counted(5, 5, case="b-001-x", day=6),  # did not run the case
    ):
        store.import_record(record)
    later = {"run_id": "20250110-later", "started_at": "2025-01-10T12:00:00.000+00:00"}
    store.import_record(counted(1, 1, day=9).model_copy(update=later))  # started after it
    found = [r.run_id for r in store.comparable_runs(now)]
    assert found == [
        "20250106-120000-aaaaaa",
        "20250102-120000-aaaaaa",
        "20250101-120000-aaaaaa",
    ]
    assert store.case_counts("20250102-120000-aaaaaa") == {"a-001-x": (4, 5)}
    history = load_history(store, now, {"a-001-x"}, max_runs=10)
    assert [(p.passed, p.graded) for p in history.past("a-001-x")] == [(4, 5), (5, 5)]
    # an unnamed agent is comparable with unnamed agents only
    assert store.comparable_runs(counted(0, 5, day=9, model=None)) == []


def test_a_regrade_is_diffed_trial_for_trial_without_a_noise_test():
    # the same transcripts graded again: 2/2 -> 1/2 is the grading's change, not sampling noise
    before, after = counted(2, 2), counted(1, 2, day=2)
    assert ids(diff_failing_sets(before, after).inconclusive) == ["a-001-x"]
    paired = diff_failing_sets(before, after, paired=True)
    assert ids(paired.newly_failing) == ["a-001-x"] and paired.newly_failing[0].p is None
    assert ids(diff_failing_sets(after, before, paired=True).fixed) == ["a-001-x"]
    assert ids(diff_failing_sets(after, after, paired=True).still_failing) == ["a-001-x"]
    assert not diff_failing_sets(before, before, paired=True).entries
    assert "the same transcripts graded again" in "\n".join(paired.lines())


def test_a_failure_somewhere_in_the_pool_does_not_make_a_clean_run_inconclusive():
    # a 98% case: one failure in its pooled 25 trials, the latest run clean
    past = [counted(5, 5, day=5), counted(4, 5, day=4)] + [counted(5, 5, day=d) for d in (3, 2, 1)]
    history = history_of(*past)
    clean = diff_failing_sets(past[0], counted(5, 5, day=6), history=history, pooled=True)
    assert not clean.entries  # 5/5 after 5/5: no change to report, whatever the pool holds
    one_fail = diff_failing_sets(past[0], counted(4, 5, day=6), history=history, pooled=True)
    assert ids(one_fail.inconclusive) == ["a-001-x"]  # 5/5 -> 4/5 against 24/25: p = 0.31
    assert one_fail.inconclusive[0].tested().startswith("24/25 96% [80–99] over 5 runs → 4/5")
    # the latest run failed, this one is clean: a change the rise test does not decide
    back = diff_failing_sets(
        past[1], counted(5, 5, day=6), history=history_of(*past[1:]), pooled=True
    )
    assert ids(back.inconclusive) == ["a-001-x"]


def test_a_one_trial_run_is_told_it_cannot_show_a_drop():
    one = "\n".join(diff_failing_sets(counted(1, 1), counted(0, 1, day=2)).lines())
    assert "one trial per case cannot show a drop beyond noise" in one
    five = "\n".join(diff_failing_sets(counted(5, 5), counted(0, 5, day=2)).lines())
    assert "one trial per case" not in five


def test_classify_is_the_diffs_rule_on_counts():
    from pytest_commerce_evals.store.diff import classify

    assert classify(0, 5, 5, 5, was=False, level=0.01) == ("newly_failing", pytest.approx(1 / 252))
    assert classify(5, 5, 0, 5, was=True, level=0.01) == ("fixed", pytest.approx(1 / 252))
    assert classify(4, 5, 5, 5, was=False, level=0.01)[0] == "inconclusive"
    assert classify(2, 5, 4, 5, was=True, level=0.01)[0] == "inconclusive"  # failing, rate dropped
    assert classify(3, 5, 3, 5, was=True, level=0.01)[0] == "still_failing"
    assert classify(5, 5, 24, 25, was=False, level=0.01)[0] is None  # a clean run: nothing to say


def test_a_cases_past_is_at_most_max_runs_of_the_runs_that_graded_it_newest_first():
    from dataclasses import replace

    runs_ = [counted(n % 2 * 5, 5, day=9 - n) for n in range(6)]  # newest first
    runs_.insert(2, counted(5, 5, case="b-001-x", day=3))  # did not grade a-001-x: not counted
    history = replace(history_of(*runs_), max_runs=3)
    past = history.past("a-001-x")
    assert [p.run_id[:8] for p in past] == ["20250109", "20250108", "20250107"]
    assert [(p.passed, p.graded) for p in past] == [(0, 5), (5, 5), (0, 5)]
    assert len(replace(history, max_runs=1).past("a-001-x")) == 1
    assert len(replace(history, max_runs=50).past("a-001-x")) == 6


def test_a_pooled_diff_reads_the_cases_status_in_the_latest_run_that_graded_it():
    after = counted(5, 5, day=9)
    before = counted(5, 5, case="b-001-x", day=8)  # the previous run did not grade a-001-x
    for past, inconclusive in (
        ([counted(5, 5, day=7), counted(4, 5, day=6), counted(4, 5, day=5)], False),
        ([counted(4, 5, day=7), counted(5, 5, day=6), counted(5, 5, day=5)], True),
    ):
        diff = diff_failing_sets(before, after, history=history_of(*past), pooled=True)
        # passing now; the latest run that graded it passed too (the first history), or failed
        assert ("a-001-x" in ids(diff.inconclusive)) is inconclusive, past[0].run_id
        assert "a-001-x" not in ids(diff.newly_failing) + ids(diff.fixed)


# -- the diff at a glance --------------------------------------------------------------------


def many(outcomes: dict[str, tuple[int, int]], day: int):
    """A run of several cases: each case's (passed, graded)."""
    trials = [
        trial(case, "pass" if n <= passes else "fail", n=n, trials=graded)
        for case, (passes, graded) in outcomes.items()
        for n in range(1, graded + 1)
    ]
    return run(
        trials,
        run_id=f"2025010{day}-120000-aaaaaa",
        started_at=f"2025-01-0{day}T12:00:00.000+00:00",
    )


def test_inconclusive_cases_are_a_count_with_the_closest_to_deciding_and_v_lists_all():
    # five cases that each lost a trial (inconclusive), one by more than the others
    before = many({f"c-00{k}-x": (5, 5) for k in range(1, 6)}, day=1)
    after = many({**{f"c-00{k}-x": (4, 5) for k in range(1, 5)}, "c-005-x": (2, 5)}, day=2)
    diff = diff_failing_sets(before, after)
    assert len(diff.inconclusive) == 5
    lines = diff.lines()
    # newly failing and fixed come first, even when empty
    assert lines.index("newly failing (0):") < lines.index("fixed (0):")
    head = next(i for i, line in enumerate(lines) if line.startswith("inconclusive"))
    assert lines.index("fixed (0):") < head
    assert lines[head] == (
        "inconclusive (5): changed, but within noise; the 3 closest to deciding (-v lists all 5, "
        "as do the HTML report and the JSON record):"
    )
    shown = [line.split()[0] for line in lines[head + 1 :] if line.startswith("  c-")]
    assert len(shown) == 3 and shown[0] == "c-005-x"  # 2/5 against 5/5: the smallest p
    assert any("decided at p < 0.01 with" in line for line in lines)
    verbose = diff.lines(verbose=True)
    assert sum(line.startswith("  c-") for line in verbose) == 5
    assert "inconclusive (5): changed, but within noise:" in verbose
    summary = diff.summary()
    assert [e["case_id"] for e in summary["inconclusive"]][0] == "c-005-x"
    assert len(summary["inconclusive"]) == 5 and summary["newly_failing"] == []
    assert summary["inconclusive"][0]["decides"].startswith("p < 0.01 with ")
    assert summary["inconclusive"][0]["current"] == [2, 5]


def test_a_thin_history_says_what_would_decide_the_case():
    # one green run of 3 trials, then the behaviour breaks: 0/3 against 3/3 is p = 0.05
    diff = diff_failing_sets(counted(3, 3), counted(0, 3, day=2))
    [entry] = diff.inconclusive
    assert entry.p == pytest.approx(1 / 20)
    assert entry.decides() == (
        "p < 0.01 with 7 trials in this run at its rate (--commerce-trials=7), or with a "
        "baseline of 7 trials at its rate (about 2 more runs of 3)"
    )
    assert any("decided at p < 0.01 with 7 trials in this run" in line for line in diff.lines())


def test_what_decides_needs_both_sides_and_says_when_nothing_would():
    assert what_decides(0, 3, 3, 3, 1, 0.01).startswith("p < 0.01 with 7 trials in this run")
    assert what_decides(0, 0, 3, 3, 1, 0.01) is None
    assert "no number of trials" in what_decides(9, 10, 9, 10, 1, 0.01)
    assert "too close" in what_decides(5, 5, 49, 50, 10, 0.01)
    # a fix: 3/3 after a pool of 3/6 needs more trials in this run, none in the baseline
    assert what_decides(3, 3, 3, 6, 2, 0.01) == (
        "p < 0.01 with 18 trials in this run at its rate (--commerce-trials=18)"
    )


def test_a_simulated_customers_fault_never_makes_a_case_newly_failing():
    before = run([trial("a-001-x", "pass", n=n) for n in range(1, 6)])
    after = run([trial("a-001-x", "user_error", n=n) for n in range(1, 6)])
    assert ids(diff_failing_sets(before, after).newly_failing) == []
    failed = run([trial("a-001-x", "fail", n=n) for n in range(1, 6)])
    assert ids(diff_failing_sets(before, failed).newly_failing) == ["a-001-x"]


def test_a_large_run_lists_every_case_not_passing_and_counts_the_rest_unless_verbose():
    passing = [trial(f"a-{i:03d}-pass", n=1) for i in range(60)]
    odd = [trial("z-001-fails", "fail"), trial("z-002-broken", "infra_error")]
    now = run(passing + odd)
    short = case_lines(now, None, 40)
    assert len(short) == 1 + 40 + 1
    assert short[1].split()[0] == "z-001-fails"  # failing first, whatever its name
    assert short[-1] == "  … and 22 more that passed every graded trial (-v lists every case)"
    listed = [line.split()[0] for line in short[1:-1]]
    # in the usual order, the case with nothing graded too (listed, though it failed nothing)
    assert listed == ["z-001-fails", *[f"a-{i:03d}-pass" for i in range(38)], "z-002-broken"]
    assert len(case_lines(now, None)) == 1 + 62  # no limit (-v): every case
    assert case_lines(now, None, 62) == case_lines(now, None)  # within the limit: all, no count
    # more cases not passing than the limit: every one of them still, no passing case
    bad = run([trial(f"b-{i:03d}-x", "fail") for i in range(5)] + passing[:3])
    assert [line.split()[0] for line in case_lines(bad, None, 2)[1:-1]] == [
        f"b-{i:03d}-x" for i in range(5)
    ]
    assert case_lines(bad, None, 2)[-1].startswith("  … and 3 more")


def test_the_terminal_lists_every_case_with_v_and_past_the_limit_counts_the_passing(
    suite, tmp_path, monkeypatch
):
    from pytest_commerce_evals.store import recorder

    monkeypatch.setattr(recorder, "CASE_LINES", 2)
    p, write = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    write(cart_002_checkout_total="shoe-002")
    short = p.runpytest("cases", store)
    short.stdout.fnmatch_lines(
        [
            "case pass rates *",
            "  cart-002-checkout-total  critical  0/1 0% [0–79]",
            "  cart-001-add-single      high      1/1 100% [21–100]",
            "  … and 1 more that passed every graded trial (-v lists every case)",
        ]
    )
    assert "cart-003-vegan-tote      low" not in short.stdout.str()
    every = p.runpytest("cases", store, "-v")
    every.stdout.fnmatch_lines(
        ["case pass rates *", "  cart-002-*", "  cart-001-*", "  cart-003-vegan-tote *"]
    )
    assert "more that passed" not in every.stdout.str()
