"""Failing-set diffs against the previous comparable run or a named baseline, and model
against model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from run_builders import make_suite, run, trial

from pytest_commerce_evals.store.history import NOISE_NOTE, compare_runs, diff_failing_sets
from pytest_commerce_evals.store.run_store import RunStore

HERE = Path(__file__).parent


@pytest.fixture
def suite(pytester: pytest.Pytester):
    write = make_suite(pytester, (HERE / "helpers.py").read_text())
    return pytester, write


def ids(entries) -> list[str]:
    return [e.case_id for e in entries]


# -- the diff itself --------------------------------------------------------------------------


def test_diff_sorts_cases_into_newly_failing_fixed_and_still_failing():
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
    assert ids(diff.newly_failing) == ["f-001-x", "a-001-x"]  # by priority: high before low
    assert diff.newly_failing[0].note == "new case"
    assert (
        diff.newly_failing[1].rates() == "100% (1/1) → 50% (1/2)"
    )  # any failed trial fails a case
    assert ids(diff.fixed) == ["b-001-x"]
    assert ids(diff.still_failing) == ["c-001-x"]
    assert ids(diff.not_compared) == ["e-001-x", "g-001-x"]
    assert diff.not_compared[0].rates() == "0% (0/1) → not graded (1 infra_error)"
    assert diff.not_compared[1].rates() == "0% (0/1) → not run"


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


def test_each_run_is_diffed_against_the_previous_comparable_run(suite, tmp_path):
    p, write = suite
    store = f"--commerce-store={tmp_path / 'store'}"
    write(cart_003_vegan_tote="shoe-001")
    first = p.runpytest("cases", store, "--commerce-trials=2")
    first.stdout.fnmatch_lines(["*commerce-evals run history*", "*no previous comparable run*"])
    write(cart_002_checkout_total="shoe-002")  # 002 breaks, 003 is fixed
    second = p.runpytest("cases", store, "--commerce-trials=2")
    (first_id,) = re.findall(r"run (\S+) recorded", first.stdout.str())
    second.stdout.fnmatch_lines(
        [
            "*failing-set diff",
            f"baseline: run {first_id} (*, agent *, commit no git) — the previous complete run with the same kind, case paths, -k, -m and trials",
            "newly failing (1):",
            "  cart-002-checkout-total  critical  100% (2/2) → 0% (0/2)",
            "fixed (1):",
            "  cart-003-vegan-tote      low       0% (0/2) → 100% (2/2)",
            "still failing (0):",
            f"overall graded pass rate: 66.7% → 66.7% (+0.0 points); {NOISE_NOTE}",
        ]
    )
    # a different selection (-k) or trial count is not comparable: no diff against those runs
    narrowed = p.runpytest("cases", store, "--commerce-trials=2", "-k", "checkout")
    narrowed.stdout.fnmatch_lines(
        [
            "*no previous comparable run (same kind, case paths, -k, -m and trials: cases, -k 'checkout', 2 trials per case)*"
        ]
    )
    other_trials = p.runpytest("cases", store, "--commerce-trials=1")
    other_trials.stdout.fnmatch_lines(["*no previous comparable run*"])
    # the third comparable run is diffed against the second, not the first
    third = p.runpytest("cases", store, "--commerce-trials=2")
    (second_id,) = re.findall(r"run (\S+) recorded", second.stdout.str())
    third.stdout.fnmatch_lines([f"baseline: run {second_id} *", "still failing (1):"])
    assert RunStore(tmp_path / "store").runs()[0].baseline == second_id


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
            "fixed (1):",
            "  cart-001-add-single  high      0% (0/1) → 100% (1/1)",
        ]
    )
    by_file = p.runpytest("cases", "--commerce-store=none", f"--commerce-baseline={record}")
    by_file.stdout.fnmatch_lines([f"baseline: run {first_id} *", "fixed (1):"])
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
    from pytest_commerce_evals.store.run_store import write_record

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
    assert ids(diff.newly_failing) == ["b-001-x"]  # the agent's failure, not the glue's
    assert ids(diff.still_failing) == [] and ids(diff.fixed) == []
    assert ids(diff.not_compared) == ["c-001-x"]
    assert diff.not_compared[0].rates() == "0% (0/1) → not graded (1 error)"
