"""One run across many CI runners (`--commerce-shard=K/N`, `--commerce-merge`, docs/shards.md):
the plan, the shared run in the store, a shard's exit status, and the merged gate deciding what
one runner would on the same trials."""

from __future__ import annotations

import json
import re
import sqlite3
import xml.etree.ElementTree as ET
from collections import Counter
from contextlib import closing, suppress
from pathlib import Path

import pytest
from helpers import toy_conftest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_builders import run as stored_run
from run_builders import trial as stored_trial

from pytest_commerce_evals.errors import ShardError, StoreError
from pytest_commerce_evals.runner.merge import shard_problems
from pytest_commerce_evals.runner.shards import case_weights, plan_shards
from pytest_commerce_evals.settings.values import Shard, parse_run_id, parse_shard
from pytest_commerce_evals.store.identity import ci_run_id
from pytest_commerce_evals.store.run_store import RunStore
from pytest_commerce_evals.store.shards import (
    ShardRow,
    begin_shard,
    case_seconds,
    check_against_plan,
    finish_shard,
    read_plan,
    shard_rows,
    write_plan,
)

HERE = Path(__file__).parent

ADD = 'tool_reply("add_to_cart", product_id="{pid}"), text_reply("Done.")'


def case_file(prefix: str, count: int, product: str) -> str:
    return "".join(
        f"- id: {prefix}-{n:03d}-add\n"
        f"  priority: {('critical', 'high', 'medium', 'low')[n % 4]}\n"
        f"  difficulty: easy\n"
        f'  turns: ["Add it to my cart"]\n'
        f"  expected:\n"
        f"    cart_contains: [{product}]\n"
        for n in range(1, count + 1)
    )


FAILING = {"cart-002-add", "cart-005-add", "bag-003-add"}
"""The cases the default script fails: cart 4 of 6 (short of 80%), bag 3 of 4 ... see below."""


def scripts(failing: set[str]) -> str:
    items = []
    for prefix, count, product in (("cart", 6, "shoe-001"), ("bag", 4, "bag-001")):
        for n in range(1, count + 1):
            case_id = f"{prefix}-{n:03d}-add"
            pid = "shoe-002" if case_id in failing else product
            items.append(f"{case_id!r}: [{ADD.format(pid=pid)}]")
    return "{" + ", ".join(items) + "}"


@pytest.fixture
def shop(pytester: pytest.Pytester):
    """Ten cases in two sets (cases/cart: 6, threshold 0.8; cases/bag: 4, threshold 0.5);
    `write(failing)` sets which cases the toy agent fails."""
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    for folder, prefix, count, product, threshold in (
        ("cart", "cart", 6, "shoe-001", 0.8),
        ("bag", "bag", 4, "bag-001", 0.5),
    ):
        (pytester.path / "cases" / folder).mkdir(parents=True)
        (pytester.path / "cases" / folder / "cases.yaml").write_text(
            case_file(prefix, count, product)
        )
        (pytester.path / "cases" / folder / "_set.yaml").write_text(f"threshold: {threshold}\n")

    def write(failing: set[str] = FAILING) -> None:
        pytester.makeconftest(toy_conftest(scripts(failing)))

    write()
    return pytester, write


def run_id_of(result: pytest.RunResult) -> str:
    (found,) = re.findall(r"run (\S+) recorded in", result.stdout.str())
    return found


def per_case(case: dict) -> tuple:
    return case["case_id"], case["set_name"], case["passed"], case["graded"], case["pass_hat_k"]


def junit_cases(path: Path) -> dict[str, str]:
    """{test name: pass | failure | error | skipped} of a JUnit file."""
    out = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        kinds = [child.tag for child in case if child.tag in ("failure", "error", "skipped")]
        out[f"{case.get('classname')}.{case.get('name')}"] = kinds[0] if kinds else "pass"
    return out


# -- the plan ------------------------------------------------------------------------------------


def test_the_plan_balances_by_time_longest_first_and_is_the_same_in_every_process():
    weights = {"a": 10.0, "b": 7.0, "c": 5.0, "d": 4.0, "e": 3.0, "f": 1.0}
    plan = plan_shards(weights, 2)
    loads = Counter()
    for case_id, shard in plan.items():
        loads[shard] += weights[case_id]
    assert plan == {"a": 1, "b": 2, "c": 2, "d": 1, "e": 2, "f": 1}
    assert loads == {1: 15.0, 2: 15.0}
    # the order cases arrive in does not change the plan
    assert plan_shards(dict(reversed(list(weights.items()))), 2) == plan
    # equal weights: round robin in id order (the fallback to counts)
    assert plan_shards(dict.fromkeys("abcde", 1.0), 3) == {
        "a": 1,
        "b": 2,
        "c": 3,
        "d": 1,
        "e": 2,
    }
    # more shards than cases: the last shards get none
    assert set(plan_shards({"a": 1.0}, 4).values()) == {1}


def test_a_cases_weight_is_its_trials_times_its_recorded_seconds_or_the_median_or_one():
    trials = Counter({"a": 5, "b": 5, "c": 1, "d": 2})
    seconds = {"a": 2.0, "b": 4.0, "c": 10.0}
    weights = case_weights(trials, seconds)
    assert weights == {"a": 10.0, "b": 20.0, "c": 10.0, "d": 8.0}  # d: the median 4.0 x 2
    assert case_weights(trials, {}) == {"a": 5.0, "b": 5.0, "c": 1.0, "d": 2.0}


def test_a_shard_is_k_of_n_and_a_run_id_is_safe_to_name_files():
    assert parse_shard("2/4") == Shard(2, 4) and str(Shard(2, 4)) == "2/4"
    assert parse_shard("1/1") == Shard(1, 1)
    for bad in ("0/4", "5/4", "2", "a/b", "2/0", "1/257", "-1/4", "2/4/1", "²/4"):
        with pytest.raises(ShardError):
            parse_shard(bad)
    assert parse_run_id("github-acme.shop-123") == "github-acme.shop-123"
    for bad in ("", "a b", "../x", "-x", "a/b", "x" * 129):
        with pytest.raises(ShardError):
            parse_run_id(bad)


def test_ci_reads_the_shard_from_gitlabs_or_buildkites_parallel_jobs():
    from pytest_commerce_evals.settings.values import ci_shard

    assert parse_shard("ci", {"CI_NODE_INDEX": "2", "CI_NODE_TOTAL": "4"}) == Shard(2, 4)
    # Buildkite counts its jobs from 0
    assert ci_shard({"BUILDKITE_PARALLEL_JOB": "0", "BUILDKITE_PARALLEL_JOB_COUNT": "3"}) == (
        Shard(1, 3)
    )
    assert ci_shard({"BUILDKITE_PARALLEL_JOB": "2", "BUILDKITE_PARALLEL_JOB_COUNT": "3"}) == (
        Shard(3, 3)
    )
    for env in (
        {},
        {"CI_NODE_INDEX": "2"},
        {"CI_NODE_INDEX": "x", "CI_NODE_TOTAL": "4"},
        {"CI_NODE_INDEX": "5", "CI_NODE_TOTAL": "4"},
        {"BUILDKITE_PARALLEL_JOB": "3", "BUILDKITE_PARALLEL_JOB_COUNT": "3"},
    ):
        with pytest.raises(ShardError):
            ci_shard(env)
    with pytest.raises(ShardError):
        parse_shard("ci")  # no environment to read: not K/N


def test_the_shard_given_as_ci_runs_the_gitlab_jobs_slice(shop, monkeypatch):
    p, _ = shop
    monkeypatch.setenv("CI_NODE_INDEX", "2")
    monkeypatch.setenv("CI_NODE_TOTAL", "2")
    result = p.runpytest("cases", "--commerce-shard=ci", "--commerce-run-id=gl")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["shard 2/2 of run gl (id from --commerce-run-id) recorded in *"])
    monkeypatch.delenv("CI_NODE_INDEX")
    result = p.runpytest("cases", "--commerce-shard=ci", "--commerce-run-id=gl")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--commerce-shard: ci: GitLab CI's parallel jobs give *"])


def test_the_run_id_comes_from_the_ci_systems_own_variables():
    github = {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "9876", "GITHUB_RUN_ATTEMPT": "2"}
    assert ci_run_id(github) == ("github-9876", "GITHUB_REPOSITORY and GITHUB_RUN_ID")
    # the attempt is left out: a re-run job writes into the run its first attempt began
    assert ci_run_id(github | {"GITHUB_REPOSITORY": "acme/shop"})[0] == "github-acme.shop-9876"
    assert ci_run_id({"GITLAB_CI": "true", "CI_PIPELINE_ID": "55"})[0] == "gitlab-55"
    assert ci_run_id({"BUILDKITE": "true", "BUILDKITE_BUILD_ID": "0a-1b"})[0] == "buildkite-0a-1b"
    assert ci_run_id({"GITHUB_RUN_ID": "1"}) is None  # not in GitHub Actions
    assert ci_run_id({}) is None


def test_a_missing_or_unfinished_shard_is_named():
    plan = {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5}
    rows = [
        ShardRow(1, 5, "t0", "t1", True, 0, 4),
        ShardRow(2, 5, "t0", None, False, None, 2),
        ShardRow(3, 5, "t0", "t1", False, 2, 1),
        ShardRow(4, 5, "t0", "t1", True, 1, 3, errors=["failed: tests/test_x.py::test_y"]),
    ]
    problems = shard_problems(5, plan, rows)
    assert [p.split(" (")[0] for p in problems] == [
        "shard 2/5",
        "shard 3/5",
        "shard 4/5",
        "shard 5/5",
    ]
    assert "never ended" in problems[0] and "ended incomplete" in problems[1]
    assert "failed on its own" in problems[2] and "tests/test_x.py::test_y" in problems[2]
    assert "never began" in problems[3]
    assert shard_problems(1, {"a": 1}, [ShardRow(1, 1, "t0", "t1", True, 0, 1)]) == []


# -- usage ---------------------------------------------------------------------------------------


def test_a_shard_needs_a_run_id_and_a_store_and_a_run_id_needs_a_shard(shop, monkeypatch):
    p, _ = shop
    for name in ("GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "COMMERCE_RUN_ID"):
        monkeypatch.delenv(name, raising=False)
    result = p.runpytest("cases", "--commerce-shard=1/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*needs the run's id: give --commerce-run-id=ID*"])
    result = p.runpytest(
        "cases", "--commerce-shard=1/2", "--commerce-run-id=r1", "--commerce-store=none"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the run store, which is off*"])
    result = p.runpytest("cases", "--commerce-run-id=r1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*give it with --commerce-shard=K/N*"])
    result = p.runpytest("cases", "--commerce-shard=3/2", "--commerce-run-id=r1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--commerce-shard*K must be from 1 to N (2)*"])
    result = p.runpytest("cases", "--commerce-shard=1/2", "--commerce-run-id=a b")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--commerce-run-id*is not a run id*"])


def test_merging_a_run_that_is_not_there_or_not_sharded_says_so(shop):
    p, _ = shop
    result = p.runpytest("--commerce-merge=nope")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*--commerce-merge=nope: no run of that id in *"])
    ran = p.runpytest("cases")
    result = p.runpytest(f"--commerce-merge={run_id_of(ran)}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stdout.fnmatch_lines(["*that run was not recorded in shards*"])
    result = p.runpytest("--commerce-merge=ci", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# -- shards into one run, and the one gate -----------------------------------------------------


def shard_runs(p, run_id: str, total: int, *extra: str) -> list[pytest.RunResult]:
    return [
        p.runpytest("cases", f"--commerce-shard={k}/{total}", f"--commerce-run-id={run_id}", *extra)
        for k in range(1, total + 1)
    ]


def test_shards_write_one_run_and_the_merge_decides_as_one_runner_would(shop, tmp_path):
    p, write = shop
    baseline = p.runpytest("cases", "--commerce-trials=2")
    assert baseline.ret == pytest.ExitCode.TESTS_FAILED  # cart 4/6 is short of 80%
    base_id = run_id_of(baseline)
    write(
        FAILING - {"cart-002-add"} | {"bag-001-add", "bag-002-add"}
    )  # cart fixed 5/6, bag now short 1/4
    single = p.runpytest(
        "cases",
        "--commerce-trials=2",
        f"--commerce-baseline={base_id}",
        f"--commerce-json={tmp_path / 'single.json'}",
        f"--junitxml={tmp_path / 'single.xml'}",
    )
    for total in (1, 2, 4):
        run_id = f"split-{total}"
        results = shard_runs(p, run_id, total, "--commerce-trials=2")
        # a shard's exit status is its own errors': none here, though the bag set is short
        assert [r.ret for r in results] == [pytest.ExitCode.OK] * total, run_id
        results[0].stdout.fnmatch_lines(
            [f"shard 1/{total} of run {run_id} (id from --commerce-run-id) recorded in *"]
        )
        merged = p.runpytest(
            f"--commerce-merge={run_id}",
            f"--commerce-baseline={base_id}",
            f"--commerce-json={tmp_path / f'{run_id}.json'}",
            f"--junitxml={tmp_path / f'{run_id}.xml'}",
        )
        assert merged.ret == single.ret == pytest.ExitCode.TESTS_FAILED
        merged.stdout.fnmatch_lines(
            [
                f"commerce-evals: merging run {run_id} from *: 20 trials of 10 case(s) in "
                f"{total} shard(s)",
                "*SHORT cases/bag: 2/8 = 25.0% (threshold 50%)",
                "*ok    cases/cart: 10/12 = 83.3% (threshold 80%)",
                "verdict: fail — 1 set(s) short",
                f"run {run_id} recorded in *: 20 trials, complete",
            ]
        )
        one = json.loads((tmp_path / "single.json").read_text())
        got = json.loads((tmp_path / f"{run_id}.json").read_text())
        assert got["complete"] is True and got["run_id"] == run_id
        # the shards ran the trials again: the same outcomes, other latencies and history
        assert got["sets"] == one["sets"] and got["diff"] == one["diff"], run_id
        assert [per_case(c) for c in got["cases"]] == [per_case(c) for c in one["cases"]]
        assert got["exit_status"] == one["exit_status"] == 1
        assert junit_cases(tmp_path / f"{run_id}.xml") == junit_cases(tmp_path / "single.xml")
    store = RunStore(p.path / ".commerce" / "runs")
    assert [r.shard for r in shard_rows(store, "split-4")] == [1, 2, 3, 4]
    total, plan = read_plan(store, "split-4")
    assert total == 4 and len(plan) == 10 and set(plan.values()) == {1, 2, 3, 4}


def test_a_shard_run_again_replaces_its_own_part_and_nothing_else(shop):
    p, write = shop
    first = shard_runs(p, "again", 2)
    assert [r.ret for r in first] == [0, 0]
    store = RunStore(p.path / ".commerce" / "runs")
    _, plan = read_plan(store, "again")
    before = {(t.case_id, t.trial): t for t in store.load_run("again").trials}
    merged = p.runpytest("--commerce-merge=again")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    assert store.load_run("again").complete
    write(set())  # every case passes now; shard 1 is run again
    again = p.runpytest("cases", "--commerce-shard=1/2", "--commerce-run-id=again")
    assert again.ret == 0
    run = store.load_run("again")
    assert not run.complete, "a shard run again waits for the merge once more"
    after = {(t.case_id, t.trial): t for t in run.trials}
    assert set(after) == set(before)
    for key, trial in after.items():
        if plan[key[0]] == 2:  # shard 2's trials are the ones it stored
            assert trial.model_dump() == before[key].model_dump()
        else:
            assert trial.outcome == "pass"
    changed = {k[0] for k in after if after[k].outcome != before[k].outcome}
    assert changed and all(plan[c] == 1 for c in changed)
    merged = p.runpytest("--commerce-merge=again", "-v")
    # the merge reads shard 1's new trials and shard 2's first ones
    still_failing = sorted(c for c in FAILING if plan[c] == 2)
    for case_id in sorted(plan):
        state = "FAILED" if case_id in still_failing else "PASSED"
        merged.stdout.fnmatch_lines([f"*::{case_id} {state}*"])


def test_a_missing_shard_makes_the_run_incomplete_and_the_gate_fail_until_it_runs(shop, tmp_path):
    p, write = shop
    write(set())
    first = p.runpytest("cases", "--commerce-shard=1/3", "--commerce-run-id=gap")
    assert first.ret == 0
    merged = p.runpytest("--commerce-merge=gap", f"--commerce-json={tmp_path / 'gap.json'}")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    merged.stdout.fnmatch_lines(
        [
            "run incomplete or failed in a shard:",
            "  shard 2/3 (* case(s)) never began: none of its trials is stored",
            "  shard 3/3 (* case(s)) never began: none of its trials is stored",
            "verdict: fail — 2 shard(s) missing, unfinished or failed",
            "run gap recorded in *: * trials, INCOMPLETE*",
        ]
    )
    assert json.loads((tmp_path / "gap.json").read_text())["complete"] is False
    for k in (2, 3):
        assert p.runpytest("cases", f"--commerce-shard={k}/3", "--commerce-run-id=gap").ret == 0
    merged = p.runpytest("--commerce-merge=gap")
    assert merged.ret == pytest.ExitCode.OK
    merged.stdout.fnmatch_lines(["verdict: pass — all 2 set(s) met their thresholds"])


def test_a_shard_with_no_case_exits_0_and_its_own_error_fails_it_and_the_merge(shop):
    p, _ = shop
    (p.path / "cases" / "cart" / "cases.yaml").write_text(case_file("cart", 1, "shoe-001"))
    (p.path / "cases" / "bag" / "cases.yaml").write_text(case_file("bag", 1, "bag-001"))
    p.makepyfile(test_plain="def test_plain():\n    assert False\n")
    results = shard_runs(p, "small", 4, "cases", "test_plain.py")
    # two cases and one plain test over four shards: some shards run nothing and pass
    failed = [r for r in results if r.ret != 0]
    assert len(failed) == 1 and failed[0].ret == pytest.ExitCode.TESTS_FAILED
    failed[0].stdout.fnmatch_lines(["*this shard failed on its own: 1 other test(s) failed*"])
    assert (
        sum("no tests ran" in r.stdout.str() or "deselected" in r.stdout.str() for r in results)
        >= 2
    )
    merged = p.runpytest("--commerce-merge=small")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    merged.stdout.fnmatch_lines(
        ["*failed on its own (exit status 1): failed: test_plain.py::test_plain*"]
    )


def test_shards_that_collect_other_cases_than_the_plan_are_refused(shop):
    p, _ = shop
    assert p.runpytest("cases", "--commerce-shard=1/2", "--commerce-run-id=plan").ret == 0
    other = p.runpytest("cases", "--commerce-shard=2/2", "--commerce-run-id=plan", "-k", "cart")
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    other.stderr.fnmatch_lines(["*case(s) of the plan not collected: bag-001-add*"])
    other = p.runpytest("cases", "--commerce-shard=2/3", "--commerce-run-id=plan")
    assert other.ret == pytest.ExitCode.USAGE_ERROR
    other.stderr.fnmatch_lines(["*run plan is split into 2 shards, not 3*"])


def test_the_same_stored_trials_split_1_2_and_4_ways_give_one_runners_verdicts_and_diff(
    shop, tmp_path
):
    """One runner's stored trials, written again as 1, 2 and 4 shards of a run (each in a store
    holding the same history: the baseline run), merged: every verdict, the diff, the per-case
    results with their history strips and costs, and the exit status are the single run's."""
    p, write = shop
    single_store = tmp_path / "single"
    base = p.runpytest("cases", "--commerce-trials=3", f"--commerce-store={single_store}")
    write(FAILING - {"cart-002-add"} | {"bag-001-add", "bag-002-add"})
    single = p.runpytest(
        "cases",
        "--commerce-trials=3",
        f"--commerce-store={single_store}",
        f"--commerce-json={tmp_path / 'single.json'}",
    )
    assert base.ret == single.ret == pytest.ExitCode.TESTS_FAILED
    one = json.loads((tmp_path / "single.json").read_text())
    source = RunStore(single_store)
    baseline = source.load_run(run_id_of(base))
    ran = source.load_run(run_id_of(single))
    for total in (1, 2, 4):
        folder = tmp_path / f"store-{total}"
        store = RunStore(folder)
        store.import_record(baseline)
        run_id = f"same-{total}"
        header = ran.model_copy(update={"run_id": run_id, "trials": [], "complete": False})
        counts = Counter(t.case_id for t in ran.trials)
        plan = plan_shards(case_weights(counts, {}), total)
        assert write_plan(store, run_id, total, plan) == (total, plan)
        for k in range(1, total + 1):
            begin_shard(store, header, k, total)
            mine = [t for t in ran.trials if plan[t.case_id] == k]
            store.add_trials(run_id, mine)
            finish_shard(store, run_id, k, complete=True, exit_status=0, trials=len(mine))
        merged = p.runpytest(
            f"--commerce-merge={run_id}",
            f"--commerce-store={folder}",
            f"--commerce-json={tmp_path / f'{run_id}.json'}",
        )
        assert merged.ret == single.ret, run_id
        got = json.loads((tmp_path / f"{run_id}.json").read_text())
        for key in ("sets", "cases", "diff", "attacks", "cost", "exit_status", "baseline"):
            assert got[key] == one[key], (run_id, key)
        assert got["diff"]["newly_failing"] or got["diff"]["inconclusive"], "a diff was made"
        assert got["complete"] is True and store.load_run(run_id).complete


@pytest.mark.parametrize(
    ("statement", "said"),
    [
        ("UPDATE shard_plans SET plan = 'not json'", "column shard_plans.plan is not a map"),
        ('UPDATE shard_plans SET plan = \'{"cart-001-add": "1"}\'', "column shard_plans.plan"),
        ("UPDATE shard_plans SET plan = '{\"cart-001-add\": 2}'", "column shard_plans.plan"),
        ("UPDATE shards SET errors = '{}'", "column shards.errors is not a list"),
        ("UPDATE shards SET not_started = 'x'", "column shards.not_started is not a list"),
        # a wrong kind of value, a very deep plan, a count out of range
        ("UPDATE shard_plans SET shards = 'two'", "column shard_plans.shards is not a whole"),
        ("UPDATE shard_plans SET shards = 1.5", "column shard_plans.shards is not a whole"),
        ("UPDATE shard_plans SET plan = 7", "column shard_plans.plan is not a map"),
        ("UPDATE shard_plans SET plan = '{}'", "column shard_plans.plan is not a map of 1 to"),
        (
            "UPDATE shard_plans SET plan = '" + "[" * 100_000 + "'",
            "column shard_plans.plan is not a map",
        ),
        ("UPDATE shards SET shard = 'one'", "column shards.shard is not a whole number"),
        ("UPDATE shards SET shards = x'00'", "column shards.shards is not a whole number"),
        ("UPDATE shards SET started_at = x'01'", "column shards.started_at is not a time"),
        ("UPDATE shards SET ended_at = x'02'", "column shards.ended_at is not a time"),
        ("UPDATE shards SET complete = 2", "column shards.complete is not 0 or 1"),
        ("UPDATE shards SET complete = 'yes'", "column shards.complete is not 0 or 1"),
        ("UPDATE shards SET exit_status = 'ok'", "column shards.exit_status is not a whole"),
        ("UPDATE shards SET trials = -1", "column shards.trials is not a whole number from 0"),
        ("UPDATE shards SET trials = 1e30", "column shards.trials is not a whole number from 0"),
        ("UPDATE shards SET errors = '[1]'", "column shards.errors is not a list of text"),
        ("UPDATE shards SET errors = '" + "[" * 100_000 + "'", "column shards.errors is not"),
        (
            "UPDATE shards SET not_started = "
            '\'[{"case_id": "cart-001-add", "trial": 1, "set_name": "s", "threshold": NaN}]\'',
            "column shards.not_started, item 0, is not {case_id: text, trial: *, threshold: a "
            "number from 0 to 1} (found *nan*",
        ),
        (
            'UPDATE shards SET not_started = \'[{"case_id": "cart-001-add", "trial": '
            'true, "set_name": "s", "threshold": 0.5}]\'',
            "column shards.not_started, item 0, is not*",
        ),
        (
            'UPDATE shards SET not_started = \'[{"case_id": "nope", "trial": 1, '
            '"set_name": "s", "threshold": 0.5}]\'',
            "column shards.not_started of the row of shard 1 names 1 case(s) the run's plan*",
        ),
        # counts against the plan
        ("UPDATE shards SET shards = 3", "the row of shard 1 says 1/3, and the run's plan*"),
        (
            "INSERT INTO shards (run_id, shard, shards, started_at) VALUES ('dmg', 2, 1, 't')",
            "the row of shard 2 says 2/1, and the run's plan (shard_plans.shards) splits it into 1",
        ),
        (
            "UPDATE shard_plans SET plan = json_remove(plan, '$.\"cart-001-add\"')",
            "1 case(s) with stored trials are not in the run's plan (shard_plans.plan holds 9): "
            "'cart-001-add'*",
        ),
    ],
)
def test_damaged_shard_rows_are_named_never_a_traceback(shop, statement, said):
    p, _ = shop
    assert p.runpytest("cases", "--commerce-shard=1/1", "--commerce-run-id=dmg").ret == 0
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(p.path / ".commerce" / "runs" / "runs.sqlite")) as conn:
        conn.execute(statement)
        conn.commit()
    store = RunStore(p.path / ".commerce" / "runs")
    with closing(sqlite3.connect(p.path / ".commerce" / "runs" / "runs.sqlite")) as conn:
        before = conn.execute("SELECT * FROM runs").fetchall()
        trials = conn.execute("SELECT COUNT(*) FROM trials").fetchone()
    merged = p.runpytest("--commerce-merge=dmg")
    assert merged.ret == pytest.ExitCode.USAGE_ERROR
    merged.stdout.fnmatch_lines([f"commerce-evals: --commerce-merge: *run dmg: {said}*"])
    assert "Traceback" not in merged.stdout.str() + merged.stderr.str()
    # a merge that cannot be done writes nothing
    with closing(sqlite3.connect(p.path / ".commerce" / "runs" / "runs.sqlite")) as conn:
        assert conn.execute("SELECT * FROM runs").fetchall() == before
        assert conn.execute("SELECT COUNT(*) FROM trials").fetchone() == trials
    store.close()


@pytest.mark.parametrize("shards", [10**12, 0, -1])
def test_a_plan_of_a_count_no_shard_writes_is_refused_at_once(shop, shards):
    """10^12 shards (it counted cases over every one, until killed), or 0 and -1 with no shard
    row (it merged "complete" with exit 0)."""
    p, _ = shop
    assert p.runpytest("cases", "--commerce-shard=1/1", "--commerce-run-id=huge").ret == 0
    with closing(sqlite3.connect(p.path / ".commerce" / "runs" / "runs.sqlite")) as conn, conn:
        conn.execute("UPDATE shard_plans SET shards = ?", (shards,))
        if shards < 1:
            conn.execute("DELETE FROM shards")
    merged = p.runpytest("--commerce-merge=huge")
    assert merged.ret == pytest.ExitCode.USAGE_ERROR
    merged.stdout.fnmatch_lines(
        [
            "commerce-evals: --commerce-merge: *run huge: column shard_plans.shards is not a "
            f"whole number of shards from 1 to 256 (found {shards})*"
        ]
    )
    shard = p.runpytest("cases", "--commerce-shard=1/1", "--commerce-run-id=huge")
    assert shard.ret == pytest.ExitCode.USAGE_ERROR
    shard.stderr.fnmatch_lines(["*--commerce-shard=1/1: *column shard_plans.shards is not*"])


def test_a_shard_whose_stored_trials_are_not_the_ones_it_counted_makes_the_run_incomplete(shop):
    p, _ = shop
    assert p.runpytest("cases", "--commerce-shard=1/1", "--commerce-run-id=lost").ret == 0
    with closing(sqlite3.connect(p.path / ".commerce" / "runs" / "runs.sqlite")) as conn, conn:
        conn.execute("DELETE FROM trials WHERE case_id = 'cart-001-add'")
    merged = p.runpytest("--commerce-merge=lost")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    merged.stdout.fnmatch_lines(
        [
            "  shard 1/1 (10 case(s)) ended with 10 trial(s), and the store holds 9 of its "
            "cases' trials: trials were lost or added after it ended; run it again",
            "run lost recorded in *: 9 trials, INCOMPLETE*",
        ]
    )


def test_a_shards_own_errors_reach_the_terminal_escaped(shop):
    p, _ = shop
    assert p.runpytest("cases", "--commerce-shard=1/1", "--commerce-run-id=esc").ret == 0
    with closing(sqlite3.connect(p.path / ".commerce" / "runs" / "runs.sqlite")) as conn, conn:
        conn.execute(
            "UPDATE shards SET exit_status = 1, errors = ?, started_at = ?",
            (json.dumps(["failed: \x1b]0;owned\x07x\x9b2J\x7f"]), "t\x1b[2J"),
        )
    merged = p.runpytest("--commerce-merge=esc")
    out = merged.stdout.str()
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    assert not re.search("[\x1b\x07\x7f\x9b]", out)
    assert "failed: \\x1b]0;owned\\x07x\\x9b2J\\x7f" in out and "t\\x1b[2J" in out


@pytest.fixture(scope="module")
def sharded_store(tmp_path_factory):
    """A store holding run `r` of 2 shards, each finished with its one trial."""
    folder = tmp_path_factory.mktemp("sharded") / "runs"
    store = RunStore(folder)
    header = stored_run([], run_id="r").model_copy(update={"complete": False})
    write_plan(store, "r", 2, {"a": 1, "b": 2})
    for k, case_id in ((1, "a"), (2, "b")):
        begin_shard(store, header, k, 2)
        store.add_trials("r", [stored_trial(case_id)])
        finish_shard(store, "r", k, complete=True, exit_status=0, trials=1)
    yield store, folder / "runs.sqlite"
    store.close()


ANY_VALUE = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | st.text(max_size=30)
    | st.binary(max_size=8)
    | st.sampled_from(["[]", "{}", "[1]", '["x"]', '{"a": 1}', '{"a": 3}', "[" * 5000, "NaN"])
    | st.dictionaries(st.text(max_size=5), st.integers(-3, 300), max_size=4).map(json.dumps)
    | st.lists(
        st.fixed_dictionaries(
            {
                "case_id": st.sampled_from(["a", "b", "z", ""]) | st.integers(),
                "trial": st.integers(-1, 3) | st.booleans() | st.floats(),
                "set_name": st.text(max_size=3) | st.none(),
                "threshold": st.floats() | st.integers(-1, 2) | st.text(max_size=2),
            }
        ),
        max_size=2,
    ).map(json.dumps)
)
SHARD_COLUMNS = (
    "shard",
    "shards",
    "started_at",
    "ended_at",
    "complete",
    "exit_status",
    "trials",
    "not_started",
    "errors",
)


@given(
    table=st.sampled_from(["shard_plans", "shards"]),
    values=st.dictionaries(
        st.sampled_from(SHARD_COLUMNS + ("plan",)), ANY_VALUE, min_size=1, max_size=3
    ),
)
@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
def test_whatever_a_damaged_shard_or_plan_row_holds_the_merge_reads_it_or_names_it(
    sharded_store, table, values
):
    store, database = sharded_store
    """Any value of any kind in the columns of a `shard_plans` or `shards` row: what the merge
    reads is what a shard writes (types, ranges, counts against the plan), or a `StoreError`
    naming the column; never another exception."""
    allowed = {"shard_plans": ("shards", "plan"), "shards": SHARD_COLUMNS}[table]
    values = {c: v for c, v in values.items() if c in allowed}
    if not values or (table == "shards" and "shard" in values and values["shard"] != 1):
        values.pop("shard", None)  # the row's key: a row of another number is a row added
    if not values:
        return
    conn = sqlite3.connect(database)
    try:
        saved = conn.execute(f"SELECT * FROM {table} WHERE run_id = 'r'").fetchall()
        with suppress(sqlite3.IntegrityError), conn:  # a NULL the table refuses is no row
            conn.execute(
                f"UPDATE {table} SET {', '.join(f'{c} = ?' for c in values)} WHERE run_id = 'r'"
                + (" AND shard = 1" if table == "shards" else ""),
                tuple(values.values()),
            )
        try:
            found = read_plan(store, "r")
            rows = shard_rows(store, "r")
            assert found is not None
            total, plan = found
            cases = {t.case_id for t in store.load_run("r").trials}
            check_against_plan("store", "r", total, plan, rows, cases)
        except StoreError as exc:
            assert re.search(r"column shard|the row of shard|shard_plans\.plan", str(exc)), exc
        else:
            assert 1 <= total <= 256 and set(plan) >= cases
            assert all(type(v) is int and 1 <= v <= total for v in plan.values())
            for row in rows:
                assert type(row.shard) is int and 1 <= row.shard <= total == row.shards
                assert type(row.trials) is int and row.trials >= 0
                assert all(type(e) is str for e in row.errors)
                for left in row.not_started:
                    assert left["case_id"] in plan and 0 <= left["threshold"] <= 1
            shard_problems(total, plan, rows)
    finally:
        with conn:
            conn.execute(f"DELETE FROM {table} WHERE run_id = 'r'")
            marks = ", ".join("?" * len(saved[0]))
            conn.executemany(f"INSERT INTO {table} VALUES ({marks})", [tuple(r) for r in saved])
        conn.close()


def test_a_damaged_plan_stops_a_shard_before_any_trial_saying_so(shop):
    p, _ = shop
    assert p.runpytest("cases", "--commerce-shard=1/2", "--commerce-run-id=bad").ret == 0
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(p.path / ".commerce" / "runs" / "runs.sqlite")) as conn:
        conn.execute("UPDATE shard_plans SET plan = '[1]'")
        conn.commit()
    again = p.runpytest("cases", "--commerce-shard=2/2", "--commerce-run-id=bad")
    assert again.ret == pytest.ExitCode.USAGE_ERROR
    again.stderr.fnmatch_lines(["*--commerce-shard=2/2: *run bad: column shard_plans.plan is not*"])


def test_the_plan_balances_by_the_times_the_store_recorded(shop):
    """A case that took 50 seconds a trial in the last complete run gets a shard of its own;
    the nine that took one second share the other."""
    from run_builders import run, trial

    p, _ = shop
    ids = [f"cart-{n:03d}-add" for n in range(1, 7)] + [f"bag-{n:03d}-add" for n in range(1, 5)]
    past = [
        trial(case_id).model_copy(update={"duration_s": 50.0 if case_id == "bag-004-add" else 1.0})
        for case_id in ids
    ]
    store = RunStore(p.path / ".commerce" / "runs")
    store.import_record(run(past))
    assert p.runpytest("cases", "--commerce-shard=1/2", "--commerce-run-id=timed").ret == 0
    _, plan = read_plan(store, "timed")
    slow = plan["bag-004-add"]
    assert [c for c, k in plan.items() if k == slow] == ["bag-004-add"]
    # without that history every case weighs the same: five and five
    assert sorted(Counter(plan_shards(dict.fromkeys(ids, 1.0), 2).values()).values()) == [5, 5]


# -- rules a mutation run found untested ---------------------------------------------------------


def test_a_ci_run_id_is_read_only_inside_its_ci_system_and_is_a_safe_run_id():
    assert ci_run_id({"CI_PIPELINE_ID": "55"}) is None  # not in GitLab CI
    assert ci_run_id({"BUILDKITE_BUILD_ID": "0a-1b"}) is None  # not in Buildkite
    found, _ = ci_run_id({"BUILDKITE": "true", "BUILDKITE_BUILD_ID": " a b/c\u00e9 "})
    assert re.fullmatch(r"buildkite-a\.b\.c\.:[0-9a-f]{16}", found) and parse_run_id(found) == found
    # a value that is what its CI writes is kept whole, however long the id may be
    long, _ = ci_run_id({"GITLAB_CI": "true", "CI_PIPELINE_ID": "9" * 100})
    assert long == "gitlab-" + "9" * 100
    uuid = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert ci_run_id({"BUILDKITE": "true", "BUILDKITE_BUILD_ID": uuid})[0] == f"buildkite-{uuid}"


def test_the_plan_reads_the_times_of_complete_regression_runs_only(tmp_path):
    store = RunStore(tmp_path / "runs")

    def timed(seconds: float) -> list:
        return [stored_trial("cart-001-a").model_copy(update={"duration_s": seconds})]

    store.import_record(stored_run(timed(2.0), run_id="20250101-000000-000001"))
    store.import_record(
        stored_run(
            timed(50.0),
            run_id="20250102-000000-000002",
            started_at="2025-01-02T12:00:00.000+00:00",
            complete=False,
        )
    )
    store.import_record(
        stored_run(
            timed(80.0),
            run_id="20250103-000000-000003",
            started_at="2025-01-03T12:00:00.000+00:00",
            kind="live",
        )
    )
    assert case_seconds(store, 5) == {"cart-001-a": 2.0}


def test_a_schema_7_store_gains_the_shard_tables_and_a_store_missing_them_is_damaged(tmp_path):
    folder = tmp_path / "runs"
    RunStore(folder).close()
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        conn.execute("DROP TABLE shard_plans")
        conn.execute("DROP TABLE shards")
        conn.execute("UPDATE meta SET value = '7' WHERE key = 'schema_version'")
    store = RunStore(folder)  # the store of the release before shards
    assert write_plan(store, "r1", 2, {"a": 1, "b": 2}) == (2, {"a": 1, "b": 2})
    store.close()
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            "9",  # the current schema
        )
        conn.execute("DROP TABLE shards")
    with pytest.raises(StoreError, match=r"table\(s\) shards missing"):
        RunStore(folder).runs()


def test_a_shard_that_only_collects_writes_no_plan(shop):
    p, _ = shop
    looked = p.runpytest(
        "cases", "--commerce-shard=1/2", "--commerce-run-id=look", "--collect-only", "-k", "cart"
    )
    assert looked.ret == 0
    assert read_plan(RunStore(p.path / ".commerce" / "runs"), "look") is None
    # the run's shards then plan it from what they collect, not from the look
    assert [r.ret for r in shard_runs(p, "look", 2)] == [0, 0]


def test_a_shard_that_collects_nothing_exits_as_pytest_does(shop):
    p, _ = shop
    result = p.runpytest(
        "cases", "--commerce-shard=1/2", "--commerce-run-id=typo", "-k", "no-such-case"
    )
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_every_plain_test_runs_on_exactly_one_shard(shop):
    p, _ = shop
    p.makepyfile(test_plain="".join(f"def test_{n}():\n    pass\n\n\n" for n in range(8)))
    ran = Counter()
    for result in shard_runs(p, "plain", 3, "test_plain.py", "-v"):
        assert result.ret == 0
        ran.update(re.findall(r"test_plain\.py::(test_\d+) PASSED", result.stdout.str()))
    assert ran == Counter({f"test_{n}": 1 for n in range(8)})


def test_an_invalid_case_entry_fails_its_shard_and_the_merge_and_the_run_stays_complete(
    shop, tmp_path
):
    p, _ = shop
    with (p.path / "cases" / "bag" / "cases.yaml").open("a") as cases:
        cases.write("- id: bag-099-bad\n  priority: urgent\n")
    results = shard_runs(p, "invalid", 2)
    failed = [r for r in results if r.ret != 0]
    assert len(failed) == 1 and failed[0].ret == pytest.ExitCode.TESTS_FAILED
    failed[0].stdout.fnmatch_lines(["*this shard failed on its own: 1 invalid case entr(ies)*"])
    merged = p.runpytest("--commerce-merge=invalid", f"--commerce-json={tmp_path / 'run.json'}")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    merged.stdout.fnmatch_lines(["*failed on its own (exit status 1): invalid case entry: *"])
    # every trial is stored: the run is complete, and failed
    assert json.loads((tmp_path / "run.json").read_text())["complete"] is True


GLUE_ERROR = """

_toy_agent = pytest_commerce_evals_make_agent


def pytest_commerce_evals_make_agent(config, case, backend):
    if case.id == "bag-002-add":
        raise RuntimeError("the shop's sandbox is down")
    return _toy_agent(config, case, backend)
"""

SKIPPED = (
    "- id: cart-007-add\n"
    "  priority: low\n"
    "  difficulty: easy\n"
    "  skip: the shoe is not in stock yet\n"
    '  turns: ["Add it to my cart"]\n'
    "  expected:\n"
    "    cart_contains: [shoe-001]\n"
)


def test_errored_and_skipped_trials_merge_as_one_runner_reports_them(shop, tmp_path):
    p, _ = shop
    p.makeconftest(toy_conftest(scripts(FAILING)) + GLUE_ERROR)
    with (p.path / "cases" / "cart" / "cases.yaml").open("a") as cases:
        cases.write(SKIPPED)
    (p.path / "cases" / "later").mkdir()  # a set whose every case is skipped
    (p.path / "cases" / "later" / "cases.yaml").write_text(SKIPPED.replace("cart-007", "later-001"))
    single = p.runpytest(
        "cases",
        "--commerce-store=none",
        f"--commerce-json={tmp_path / 'single.json'}",
        f"--junitxml={tmp_path / 'single.xml'}",
    )
    one_junit = junit_cases(tmp_path / "single.xml")
    assert one_junit["cases.bag.cases.yaml.bag-002-add"] == "error"
    assert one_junit["cases.cart.cases.yaml.cart-007-add"] == "skipped"
    assert [r.ret for r in shard_runs(p, "odd", 2)] == [0, 0]
    merged = p.runpytest(
        "--commerce-merge=odd",
        f"--commerce-json={tmp_path / 'merged.json'}",
        f"--junitxml={tmp_path / 'merged.xml'}",
    )
    assert merged.ret == single.ret == pytest.ExitCode.TESTS_FAILED
    assert junit_cases(tmp_path / "merged.xml") == one_junit
    set_lines = re.compile(r"^  (?:ok|SHORT|UNDECIDED|skip) +cases/.*$", re.M)
    assert set_lines.findall(merged.stdout.str()) == set_lines.findall(single.stdout.str())
    assert "  skip  cases/later: 0/0 = n/a (threshold 80%, 1 skipped)" in single.stdout.lines
    one = json.loads((tmp_path / "single.json").read_text())
    got = json.loads((tmp_path / "merged.json").read_text())
    assert got["sets"] == one["sets"]
    assert [per_case(c) for c in got["cases"]] == [per_case(c) for c in one["cases"]]


def test_a_shard_run_again_and_stopped_early_keeps_none_of_its_earlier_trials(shop):
    p, write = shop
    write(set())
    assert [r.ret for r in shard_runs(p, "redo", 2)] == [0, 0]
    store = RunStore(p.path / ".commerce" / "runs")
    _, plan = read_plan(store, "redo")
    first = min(c for c, k in plan.items() if k == 1)  # the first case shard 1 runs
    write({first})
    p.runpytest("cases", "--commerce-shard=1/2", "--commerce-run-id=redo", "-x")
    ones = [t for t in store.load_run("redo").trials if plan[t.case_id] == 1]
    assert [(t.case_id, t.outcome) for t in ones] == [(first, "fail")]
    row = shard_rows(store, "redo")[0]
    assert (row.shard, row.complete, row.trials) == (1, False, 1)
    merged = p.runpytest("--commerce-merge=redo")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    merged.stdout.fnmatch_lines(
        ["  shard 1/2 (5 case(s)) ended incomplete *only its 1 finished trial(s) are stored"]
    )


def test_a_shard_whose_budget_ran_out_is_incomplete_and_its_unstarted_trials_count(shop, tmp_path):
    p, _ = shop
    spent = p.runpytest(
        "cases", "--commerce-shard=1/2", "--commerce-run-id=spent", "--commerce-budget=calls:2"
    )
    assert spent.ret == 0
    assert p.runpytest("cases", "--commerce-shard=2/2", "--commerce-run-id=spent").ret == 0
    merged = p.runpytest("--commerce-merge=spent", f"--commerce-json={tmp_path / 'run.json'}")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    merged.stdout.fnmatch_lines(
        [
            "run stopped early: the run's budget ran out (shard 1's budget was spent); trials "
            "not started: 4 (their sets are UNDECIDED)",
            "  shard 1/2 (5 case(s)) ended incomplete *",
        ]
    )
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["complete"] is False
    # the merged record lists the unstarted trials and its sets count them, as one runner's does
    assert len(record["not_started"]) == 4
    assert sum(s["other"].get("not_started", 0) for s in record["sets"]) == 4


def test_a_shard_with_other_trials_per_case_than_its_run_is_not_stored(shop):
    p, _ = shop
    run_args = ("cases", "--commerce-run-id=sig")
    assert p.runpytest(*run_args, "--commerce-shard=1/2", "--commerce-trials=2").ret == 0
    other = p.runpytest(*run_args, "--commerce-shard=2/2")
    other.stdout.fnmatch_lines(["*run sig is already recorded with another selection or kind*"])
    store = RunStore(p.path / ".commerce" / "runs")
    _, plan = read_plan(store, "sig")
    assert [r.shard for r in shard_rows(store, "sig")] == [1]
    assert {plan[t.case_id] for t in store.load_run("sig").trials} == {1}
    merged = p.runpytest("--commerce-merge=sig")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    merged.stdout.fnmatch_lines(["  shard 2/2 (5 case(s)) never began*"])


def test_a_shard_is_not_a_merge_and_a_merge_needs_the_store(shop):
    p, _ = shop
    both = p.runpytest(
        "cases", "--commerce-shard=1/2", "--commerce-run-id=r1", "--commerce-merge=r1"
    )
    assert both.ret == pytest.ExitCode.USAGE_ERROR
    both.stderr.fnmatch_lines(["*--commerce-shard splits a run of the cases; --commerce-merge*"])
    off = p.runpytest("--commerce-merge=r1", "--commerce-store=none")
    assert off.ret == pytest.ExitCode.USAGE_ERROR
    off.stdout.fnmatch_lines(["*--commerce-merge reads the run store; it is off*"])


def test_a_merge_with_no_trial_stored_fails_while_a_shard_never_began(shop, tmp_path):
    p, _ = shop
    # one case over two shards: shard 2 has none, runs first and writes the plan
    lone = p.runpytest("cases", "--commerce-shard=2/2", "--commerce-run-id=lone", "-k", "cart-001")
    assert lone.ret == 0
    merged = p.runpytest("--commerce-merge=lone", f"--commerce-json={tmp_path / 'run.json'}")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    # no trial to summarise: the run still says why it fails
    merged.stdout.fnmatch_lines(
        [
            "run incomplete or failed in a shard:",
            "  shard 1/2 (1 case(s)) never began: none of its trials is stored",
            "verdict: fail — 1 shard(s) missing, unfinished or failed",
        ]
    )
    assert json.loads((tmp_path / "run.json").read_text())["complete"] is False


def test_a_shard_whose_part_the_store_refused_fails_on_its_own(shop):
    p, _ = shop
    assert p.runpytest("cases", "--commerce-shard=1/2", "--commerce-run-id=clash").ret == 0
    other = p.runpytest(
        "cases", "--commerce-shard=2/2", "--commerce-run-id=clash", "--commerce-trials=2"
    )
    assert other.ret == pytest.ExitCode.TESTS_FAILED
    other.stdout.fnmatch_lines(
        ["*this shard failed on its own: *", "run store error: *already recorded with another*"]
    )


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "GITHUB_ACTIONS",
                "GITHUB_RUN_ID",
                "GITHUB_REPOSITORY",
                "GITLAB_CI",
                "CI_PIPELINE_ID",
                "BUILDKITE",
                "BUILDKITE_BUILD_ID",
            ]
        ),
        st.text(max_size=300) | st.just("true"),
    )
)
@settings(max_examples=300, deadline=None)
def test_whatever_the_ci_variables_hold_the_run_id_made_of_them_is_a_valid_one(environ):
    found = ci_run_id(environ)
    if found is not None:
        assert parse_run_id(found[0]) == found[0]


# -- run ids: reserved words, and one id for each CI run -----------------------------------------


def test_ci_is_no_run_id_since_the_merge_reads_it_as_the_ci_systems_run(shop, monkeypatch):
    for word in ("ci", "CI", "Ci"):
        with pytest.raises(ShardError, match="reserved .*--commerce-merge=ci"):
            parse_run_id(word)
    assert parse_run_id("ci-nightly") == "ci-nightly" and parse_run_id("cix") == "cix"
    p, _ = shop
    result = p.runpytest("cases", "--commerce-shard=1/2", "--commerce-run-id=ci")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--commerce-run-id*'ci' is not a run id: it is reserved*"])
    monkeypatch.setenv("COMMERCE_RUN_ID", "CI")
    result = p.runpytest("cases", "--commerce-shard=1/2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*COMMERCE_RUN_ID*'CI' is not a run id: it is reserved*"])
    assert not (p.path / ".commerce" / "runs" / "runs.sqlite").exists() or (
        read_plan(RunStore(p.path / ".commerce" / "runs"), "ci") is None
    )


def test_two_ci_runs_whose_variables_differ_only_where_a_run_id_cannot_say_it_get_two_ids():
    github = {"GITHUB_ACTIONS": "true", "GITHUB_RUN_ID": "9876"}
    ids = {
        ci_run_id(github | {"GITHUB_REPOSITORY": repo})[0]
        for repo in ("acmé/shop", "acmè/shop", "acm./shop", "acm/.shop", "acm.shop/x", "acm.shop")
    }
    assert len(ids) == 6
    cut = {
        ci_run_id({"GITLAB_CI": "true", "CI_PIPELINE_ID": "x" * 200 + tail})[0]
        for tail in ("a", "b")
    }
    assert len(cut) == 2 and all(len(i) <= 128 and parse_run_id(i) == i for i in cut)
    # a space around a value is a value of its own: the id says so, readably
    assert ci_run_id({"GITLAB_CI": "true", "CI_PIPELINE_ID": " 55"})[0].startswith("gitlab-55:")
    assert ci_run_id({"GITLAB_CI": "true", "CI_PIPELINE_ID": "55"})[0] == "gitlab-55"


CI_VALUE = st.text(max_size=150) | st.text(alphabet="0123456789abc-./é ", max_size=80)


def _ci_values(environ: dict[str, str]) -> tuple[str, ...] | None:
    """What a CI run's id is made of: its CI and the raw values that name it."""
    if environ.get("GITHUB_ACTIONS") == "true" and environ.get("GITHUB_RUN_ID", "").strip():
        return ("github", environ.get("GITHUB_REPOSITORY", ""), environ["GITHUB_RUN_ID"])
    if environ.get("GITLAB_CI") == "true" and environ.get("CI_PIPELINE_ID", "").strip():
        return ("gitlab", environ["CI_PIPELINE_ID"])
    if environ.get("BUILDKITE") == "true" and environ.get("BUILDKITE_BUILD_ID", "").strip():
        return ("buildkite", environ["BUILDKITE_BUILD_ID"])
    return None


@given(
    st.lists(
        st.sampled_from(["github", "gitlab", "buildkite"]).flatmap(
            lambda ci: st.fixed_dictionaries(
                {
                    "github": {
                        "GITHUB_ACTIONS": st.just("true"),
                        "GITHUB_REPOSITORY": CI_VALUE | st.just("acme/shop"),
                        "GITHUB_RUN_ID": CI_VALUE | st.from_regex(r"[0-9]{1,12}", fullmatch=True),
                    },
                    "gitlab": {
                        "GITLAB_CI": st.just("true"),
                        "CI_PIPELINE_ID": CI_VALUE | st.from_regex(r"[0-9]{1,12}", fullmatch=True),
                    },
                    "buildkite": {"BUILDKITE": st.just("true"), "BUILDKITE_BUILD_ID": CI_VALUE},
                }[ci]
            )
        ),
        min_size=2,
        max_size=6,
    )
)
@settings(max_examples=300, deadline=None)
def test_ci_runs_with_other_variables_never_share_a_run_id(environs):
    ids: dict[str, tuple[str, ...]] = {}
    for environ in environs:
        found = ci_run_id(environ)
        values = _ci_values(environ)
        assert (found is None) == (values is None)
        if found is None:
            continue
        run_id = found[0]
        assert parse_run_id(run_id) == run_id and len(run_id) <= 128
        if values[0] == "github" and not values[1]:
            values = values[:1] + values[2:]  # an empty repository is no repository
        assert ids.setdefault(run_id, values) == values, (run_id, ids[run_id], values)


# -- a refused shard changes nothing -------------------------------------------------------------


def stored_state(store: RunStore, run_id: str) -> tuple:
    run = store.load_run(run_id)
    trials = sorted((t.case_id, t.trial, t.outcome) for t in run.trials)
    return (
        trials,
        run.complete,
        run.exit_status,
        shard_rows(store, run_id),
        read_plan(store, run_id),
    )


@pytest.mark.parametrize(
    "refused",
    [
        ("--commerce-shard=1/3",),
        ("--commerce-shard=1/3", "-n", "2"),
        ("--commerce-shard=1/2", "-k", "cart"),
        ("--commerce-shard=2/2", "-k", "cart", "-n", "2"),
        ("--commerce-shard=1/2", "added"),
    ],
    ids=["another-N", "another-N-xdist", "other-cases", "other-cases-xdist", "a-case-added"],
)
def test_a_refused_shard_changes_nothing_in_the_store(shop, refused):
    """Shard 1/3 into a run of 2 shards, or a shard that collects other cases (another -k, or
    the same selection of a checkout with a case more), is refused; the finished shards'
    trials, their rows and the merged verdict stay as they were."""
    p, _ = shop
    assert [r.ret for r in shard_runs(p, "keep", 2)] == [0, 0]
    if "added" in refused:
        refused = refused[:1]
        with (p.path / "cases" / "bag" / "cases.yaml").open("a") as cases:
            cases.write(
                case_file("bag", 5, "bag-001").split("- id: bag-004-add\n")[1].split("\n", 5)[-1]
            )
    assert p.runpytest("--commerce-merge=keep").ret == pytest.ExitCode.TESTS_FAILED
    store = RunStore(p.path / ".commerce" / "runs")
    before = stored_state(store, "keep")
    assert before[1] is True and len(before[0]) == 10
    result = p.runpytest("cases", *refused, "--commerce-run-id=keep")
    if "-n" in refused:  # a worker's usage error ends an xdist session as its internal error
        assert result.ret != pytest.ExitCode.OK
    else:
        assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert stored_state(store, "keep") == before
    merged = p.runpytest("--commerce-merge=keep")
    assert merged.ret == pytest.ExitCode.TESTS_FAILED
    merged.stdout.fnmatch_lines(["run keep recorded in *: 10 trials, complete"])


def test_a_shard_of_another_n_is_refused_by_the_store_before_it_writes(tmp_path):
    store = RunStore(tmp_path / "runs")
    header = stored_run([], run_id="split").model_copy(update={"complete": False})
    write_plan(store, "split", 2, {"a": 1, "b": 2})
    begin_shard(store, header, 1, 2)
    store.add_trials("split", [stored_trial("a")])
    finish_shard(store, "split", 1, complete=True, exit_status=0, trials=1)
    before = stored_state(store, "split")
    with pytest.raises(StoreError, match="split into 2 shards, not 3"):
        begin_shard(store, header, 1, 3)
    assert stored_state(store, "split") == before
