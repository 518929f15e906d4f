"""Cost and latency regressions in the failing-set diff: the one-sided Mann–Whitney U test on
per-trial agent tokens and agent time, against the trials the pass/fail test pools, listed apart
from the failing sets."""

from __future__ import annotations

import itertools
import json
import random
import re
from fractions import Fraction
from functools import cache
from pathlib import Path

import pytest
from run_builders import make_suite, run, trial

from pytest_commerce_evals.stats import (
    MW_EXACT_MAX_PAIRS,
    mann_whitney_greater_p,
    mann_whitney_u,
    midranks,
)
from pytest_commerce_evals.store.cost_regressions import (
    MIN_COST_RISE,
    MIN_COST_TRIALS,
    cost_regression,
)
from pytest_commerce_evals.store.diff import diff_failing_sets
from pytest_commerce_evals.store.history import History, case_rates, load_history
from pytest_commerce_evals.store.run_store import RunStore
from pytest_commerce_evals.usage import ModelCall

HERE = Path(__file__).parent

# -- the test itself --------------------------------------------------------------------------


def brute_force_p(new: list[float], base: list[float]) -> Fraction:
    """P(U >= U observed) over every split of the pooled values into sides of these sizes."""
    pooled = [*new, *base]
    observed = mann_whitney_u(new, base)
    hits = total = 0
    for chosen in itertools.combinations(range(len(pooled)), len(new)):
        rest = [v for i, v in enumerate(pooled) if i not in chosen]
        total += 1
        hits += mann_whitney_u([pooled[i] for i in chosen], rest) >= observed - 1e-9
    return Fraction(hits, total)


@cache
def u_count(m: int, n: int, u: int) -> int:
    """The classic recurrence (Mann and Whitney, 1947): orderings of m and n values with U = u."""
    if u < 0 or u > m * n:
        return 0
    if m == 0 or n == 0:
        return 1 if u == 0 else 0
    return u_count(m - 1, n, u - n) + u_count(m, n - 1, u)


def test_midranks_share_the_ranks_of_ties():
    assert midranks([10, 30, 20, 20, 5]) == [2.0, 5.0, 3.5, 3.5, 1.0]
    assert mann_whitney_u([3, 4], [1, 2]) == 4.0
    assert mann_whitney_u([2, 4], [2, 1]) == 3.5  # the tie counts one half


@pytest.mark.parametrize("seed", range(12))
def test_the_exact_p_is_the_permutation_tail(seed):
    rng = random.Random(seed)
    n1, n2 = rng.randint(1, 6), rng.randint(1, 7)
    new = [rng.random() + 0.3 * rng.random() for _ in range(n1)]
    base = [rng.random() for _ in range(n2)]
    assert mann_whitney_greater_p(new, base) == pytest.approx(
        float(brute_force_p(new, base)), abs=1e-12
    )


def test_known_exact_values():
    assert mann_whitney_greater_p([4, 5, 6], [1, 2, 3]) == pytest.approx(1 / 20)
    assert mann_whitney_greater_p([1, 2, 3], [4, 5, 6]) == pytest.approx(1.0)
    # five values above all of ten: 1 / C(15, 5)
    assert mann_whitney_greater_p(range(20, 25), range(10)) == pytest.approx(1 / 3003)
    # one value below one of three: P(U >= 2) with U uniform on 0..3 = 2/4
    assert mann_whitney_greater_p([2.5], [1, 2, 3]) == pytest.approx(0.5)


def test_the_exact_path_at_its_largest_matches_the_classic_recurrence():
    rng = random.Random(3)
    new = [rng.random() + 0.2 for _ in range(20)]
    base = [rng.random() for _ in range(20)]
    assert 20 * 20 == MW_EXACT_MAX_PAIRS
    u = round(mann_whitney_u(new, base))
    tail = sum(u_count(20, 20, k) for k in range(u, 401))
    expected = tail / sum(u_count(20, 20, k) for k in range(401))
    assert mann_whitney_greater_p(new, base) == pytest.approx(expected, rel=1e-12)
    # the smaller side on either argument gives the same law
    assert mann_whitney_greater_p(new[:5], base) == pytest.approx(
        1 - mann_whitney_greater_p(base, new[:5]) + _point(new[:5], base), rel=1e-9
    )


def _point(new: list[float], base: list[float]) -> float:
    """P(U = U observed), exact (no ties)."""
    m, n = len(new), len(base)
    u = round(mann_whitney_u(new, base))
    return u_count(m, n, u) / sum(u_count(m, n, k) for k in range(m * n + 1))


def test_ties_and_large_samples_use_the_corrected_normal_approximation():
    # reference values: scipy 1.17.1, mannwhitneyu(new, base, alternative="greater",
    # method="asymptotic", use_continuity=True)
    assert mann_whitney_greater_p([2, 2, 3, 3, 3], [1, 1, 2, 2, 2]) == pytest.approx(
        0.020625008296969744, rel=1e-9
    )
    rng = random.Random(5)
    base = [rng.lognormvariate(0, 1) for _ in range(30)]
    new = [rng.lognormvariate(0.3, 1) for _ in range(25)]  # 750 pairs: past the exact path
    assert mann_whitney_greater_p(new, base) == pytest.approx(0.09509976238273243, rel=1e-6)
    assert mann_whitney_greater_p([7, 7, 7], [7, 7, 7]) == 1.0  # all equal: nothing is larger
    assert mann_whitney_greater_p([], [1, 2]) == 1.0
    with pytest.raises(ValueError):
        mann_whitney_greater_p([float("nan")], [1.0])


def test_under_no_change_it_flags_about_level_of_the_cases():
    rng = random.Random(11)
    flagged = 0
    for _ in range(400):  # skewed, heavy-tailed per-trial tokens, nothing changed
        base = [1000 * rng.lognormvariate(0, 0.8) for _ in range(20)]
        new = [1000 * rng.lognormvariate(0, 0.8) for _ in range(5)]
        flagged += mann_whitney_greater_p(new, base) < 0.05
    assert flagged <= 0.05 * 400 * 1.6  # ~20 expected
    assert flagged >= 5  # and it is not vacuous


# -- in the diff ------------------------------------------------------------------------------


def costly(
    case_id: str,
    tokens: int | None,
    *,
    n: int = 1,
    outcome: str = "pass",
    agent_s: float | None = None,
    priority: str = "high",
):
    """A trial of `case_id` whose agent made one call of `tokens` (None: no call reported) and
    took `agent_s` over its one turn (None: not reported)."""
    calls = [] if tokens is None else [ModelCall("agent", "m", tokens - 200, 200, 0, 0.5, turn=0)]
    return trial(case_id, outcome, n=n, priority=priority).model_copy(
        update={"calls": calls, "turn_s": [] if agent_s is None else [agent_s]}
    )


def costed(values, *, case: str = "checkout-003", day: int = 1, outcome: str = "pass", **kw):
    """A run of `case` with one trial per value of tokens."""
    trials = [costly(case, v, n=i + 1, outcome=outcome) for i, v in enumerate(values)]
    return run(
        trials,
        run_id=f"2025010{day}-120000-aaaaaa",
        started_at=f"2025-01-0{day}T12:00:00.000+00:00",
        **kw,
    )


def history_of(*runs_, loader=None, bare: bool = False) -> History:
    """Earlier runs, newest first; `bare`: without their trials, as the store lists them."""
    return History(
        runs=[r.model_copy(update={"trials": []}) for r in runs_] if bare else list(runs_),
        counts={
            r.run_id: {c: (x.passed, x.graded) for c, x in case_rates(r).items()} for r in runs_
        },
        loader=loader,
    )


BASE = [1650, 1700, 1760, 1800, 1830, 1850, 1880, 1910, 1960, 2040]  # median 1,840
DOUBLED = [3700, 3850, 3920, 4000, 4200]  # median 3,920


def test_doubled_tokens_against_the_pooled_history_are_a_cost_regression():
    older, newer = costed(BASE[:5], day=1), costed(BASE[5:], day=2)
    now = costed(DOUBLED, day=3)
    diff = diff_failing_sets(newer, now, history=history_of(newer, older), pooled=True)
    [found] = diff.cost_regressions
    assert found.text() == (
        "checkout-003: tokens 1,840 → 3,920 per trial (2.13×, p=0.00033, 10 vs 5 trials)"
    )
    assert found.p == pytest.approx(1 / 3003)
    lines = diff.lines()
    at = lines.index(
        "cost and latency regressions (median per trial, Mann–Whitney one-sided p < 0.01):"
    )
    assert lines[at + 1] == "  " + found.text()
    assert (
        lines.index("still failing (0):") < at < len(lines) - 1
    )  # after pass/fail, before overall
    assert lines[-1].startswith("overall graded pass rate:")
    # apart from the failing sets: every trial passed, nothing is newly failing or listed
    assert diff.entries == []
    summary = diff.summary()
    assert json.loads(json.dumps(summary))["cost_regressions"] == [
        {
            "case_id": "checkout-003",
            "priority": "high",
            "measure": "tokens",
            "baseline_median": 1840.0,
            "median": 3920.0,
            "ratio": pytest.approx(3920 / 1840),
            "p": pytest.approx(1 / 3003),
            "baseline_trials": 10,
            "trials": 5,
        }
    ]
    # against the latest run alone (5 vs 5) it is tested on that run's trials
    alone = diff_failing_sets(newer, now)
    assert [c.base_n for c in alone.cost_regressions] == [5]


def test_the_same_distribution_is_not_a_regression():
    values = sorted(BASE + DOUBLED)  # one list of 15, split evenly: noise only
    now, past = values[1::3], [v for i, v in enumerate(values) if i % 3 != 1]
    older, newer = costed(past[:5], day=1), costed(past[5:], day=2)
    diff = diff_failing_sets(
        newer, costed(now, day=3), history=history_of(newer, older), pooled=True
    )
    assert diff.cost_regressions == [] and diff.summary()["cost_regressions"] == []
    assert not any("cost and latency" in line for line in diff.lines())
    assert mann_whitney_greater_p(now, past) > 0.3
    # the same values permuted between the runs, many times: about `level` of them or fewer
    rng = random.Random(1)
    flagged = 0
    for _ in range(300):
        shuffled = [1000 + 37 * i + (i * i) % 11 for i in range(15)]
        rng.shuffle(shuffled)
        old, new = costed(shuffled[:10], day=1), costed(shuffled[10:], day=2)
        flagged += bool(diff_failing_sets(old, new).cost_regressions)
    assert flagged <= 9  # an exact permutation test: at most 1 in 100 expected (3)


def test_a_significant_but_small_rise_is_not_listed():
    base = [1000 + i for i in range(100)]
    now = [v + 32 for v in base]  # the median rose 3%, and the test is sure of it
    assert mann_whitney_greater_p(now, base) < 1e-9
    assert 1081.5 / 1049.5 - 1 < MIN_COST_RISE
    diff = diff_failing_sets(costed(base, day=1), costed(now, day=2))
    assert diff.cost_regressions == []
    # an 11% rise on the same trials is listed
    bigger = diff_failing_sets(costed(base, day=1), costed([v + 116 for v in base], day=2))
    assert [c.measure for c in bigger.cost_regressions] == ["tokens"]
    assert bigger.cost_regressions[0].text().endswith("(1.11×, p=1.3e-34, 100 vs 100 trials)")


def test_trials_without_calls_are_left_out_not_counted_as_zero():
    # the baseline: 3 trials that reported calls, 7 that did not
    before = costed([1800, 1850, 1900] + [None] * 7, day=1)
    now = costed([3700, 3800, 3850, 3900, 3950, 4000, 4100, 4200], day=2)
    [found] = diff_failing_sets(before, now).cost_regressions
    assert found.text() == (
        "checkout-003: tokens 1,850 → 3,925 per trial (2.12×, p=0.0061, 3 vs 8 trials)"
    )
    # fewer than MIN_COST_TRIALS reported on a side: the case is not tested at all
    assert MIN_COST_TRIALS == 3
    thin = costed([1800, 1850] + [None] * 8, day=1)
    assert diff_failing_sets(thin, now).cost_regressions == []
    few_now = costed([3900, 4000] + [None] * 6, day=2)
    assert diff_failing_sets(before, few_now).cost_regressions == []
    assert cost_regression("x", "high", "tokens", [5, 6], [1, 2, 3], level=0.5) is None
    # trials that ended without a grade are not the case's costs either
    errored = costed(DOUBLED, day=2, outcome="infra_error")
    assert diff_failing_sets(costed(BASE, day=1), errored).cost_regressions == []


def test_agent_time_per_trial_is_the_latency_measure():
    def timed(times, day):
        trials = [costly("search-001", 1000 + i, n=i + 1, agent_s=s) for i, s in enumerate(times)]
        return run(
            trials,
            run_id=f"2025010{day}-120000-aaaaaa",
            started_at=f"2025-01-0{day}T12:00:00.000+00:00",
        )

    slow = [1.4, 1.45, 1.5, 1.6, 1.7, 1.55]
    before = timed([0.55, 0.58, 0.6, 0.61, 0.63, 0.65, 0.7], day=1)
    [found] = diff_failing_sets(before, timed(slow, day=2)).cost_regressions
    assert found.measure == "latency"
    assert found.text() == (
        "search-001: latency 0.61 s → 1.52 s per trial (2.50×, p=0.00058, 7 vs 6 trials)"
    )
    # microseconds doubled (a scripted agent): a rise no customer waits for is not listed
    quick = timed([0.0004, 0.0004, 0.0005, 0.0004, 0.0005, 0.0004, 0.0004], day=1)
    assert diff_failing_sets(quick, timed([0.0009] * 6, day=2)).cost_regressions == []
    # not reported (no turn times): not tested
    untimed = run([costly("search-001", 1000 + i, n=i + 1) for i in range(6)], run_id="x-1")
    assert diff_failing_sets(before, untimed).cost_regressions == []


def test_the_cost_baseline_is_the_pass_fail_pool_that_stops_at_a_change():
    # the case was broken (0/20) long ago, and cheap then; its pool is the newer run only
    broken = costed([1000 + i for i in range(20)], day=1, outcome="fail")
    newer = costed([3800, 3850, 3900, 3950, 4000], day=2)
    now = costed([3820, 3870, 3910, 3960, 4010], day=3)
    pooled = diff_failing_sets(newer, now, history=history_of(newer, broken), pooled=True)
    assert pooled.pooled_runs == [newer.run_id]
    assert pooled.cost_regressions == []
    # had the broken run been pooled, its cheap trials would have made the same trials a rise
    assert (
        cost_regression(
            "checkout-003",
            "high",
            "tokens",
            [3820, 3870, 3910, 3960, 4010],
            [3800, 3850, 3900, 3950, 4000] + [1000 + i for i in range(20)],
            level=0.01,
        )
        is not None
    )


def test_earlier_runs_are_read_with_their_trials_only_when_needed_and_a_damaged_one_is_left_out():
    older, newer = costed(BASE[:5], day=1), costed(BASE[5:], day=2)
    now = costed(DOUBLED, day=3)
    read: list[str] = []

    def loader(run_id):
        read.append(run_id)
        return {r.run_id: r for r in (newer, older)}[run_id]

    diff = diff_failing_sets(
        newer, now, history=history_of(newer, older, loader=loader, bare=True), pooled=True
    )
    assert [c.base_n for c in diff.cost_regressions] == [10]
    assert read == [older.run_id]  # the baseline run itself is already read

    def damaged(run_id):
        raise OSError("damaged")

    hurt = diff_failing_sets(
        newer, now, history=history_of(newer, older, loader=damaged, bare=True), pooled=True
    )
    assert [c.base_n for c in hurt.cost_regressions] == [5]  # the older run's trials left out
    # a case with too few values here never reads its history
    read.clear()
    diff_failing_sets(
        newer,
        costed([4000, None, None], day=3),
        history=history_of(newer, older, loader=loader, bare=True),
        pooled=True,
    )
    assert read == []


def test_a_regrade_ran_no_agent_and_is_not_tested():
    before, after = costed(BASE, day=1), costed([v * 2 for v in BASE], day=2)
    assert diff_failing_sets(before, after).cost_regressions
    assert diff_failing_sets(before, after, paired=True).cost_regressions == []


def test_cases_are_listed_most_urgent_first_tokens_before_latency():
    def trials(case, priority, tokens, times):
        return [
            costly(case, t, n=i + 1, agent_s=s, priority=priority)
            for i, (t, s) in enumerate(zip(tokens, times, strict=True))
        ]

    fast, slow = [0.5 + 0.01 * i for i in range(6)], [2.0 + 0.01 * i for i in range(6)]
    cheap, dear = [1000 + i for i in range(6)], [5000 + i for i in range(6)]
    before = run(trials("b-001", "low", cheap, fast) + trials("a-001", "critical", cheap, fast))
    after = run(
        trials("b-001", "low", dear, fast) + trials("a-001", "critical", dear, slow),
        run_id="20250102-120000-aaaaaa",
    )
    found = diff_failing_sets(before, after).cost_regressions
    assert [(c.case_id, c.measure) for c in found] == [
        ("a-001", "tokens"),
        ("a-001", "latency"),
        ("b-001", "tokens"),
    ]


# -- through the store, and through pytest -----------------------------------------------------


def test_the_store_gives_the_pooled_runs_trials_back(tmp_path):
    store = RunStore(tmp_path / "store")
    older, newer = costed(BASE[:5], day=1), costed(BASE[5:], day=2)
    for record in (older, newer):
        store.import_record(record)
    now = costed(DOUBLED, day=3)
    history = load_history(store, now, {"checkout-003"}, max_runs=10)
    assert all(not r.trials for r in history.runs)  # read without trials
    baseline = store.load_run(newer.run_id)
    diff = diff_failing_sets(baseline, now, history=history, pooled=True)
    assert [c.text() for c in diff.cost_regressions] == [
        "checkout-003: tokens 1,840 → 3,920 per trial (2.13×, p=0.00033, 10 vs 5 trials)"
    ]


@pytest.fixture
def suite(pytester: pytest.Pytester):
    write = make_suite(pytester, (HERE / "helpers.py").read_text())
    return pytester, write


def test_a_run_whose_agent_spends_more_tokens_lists_it_apart_from_the_failing_sets(suite, tmp_path):
    p, write = suite
    write()
    conftest = p.path / "conftest.py"
    source = conftest.read_text()
    assert 'FakeClient(list(SCRIPTS.get(case.id, [text_reply("ok")])))' in source

    def spend(tokens: int) -> None:
        conftest.write_text(
            source.replace(
                'FakeClient(list(SCRIPTS.get(case.id, [text_reply("ok")])))',
                'FakeClient(list(SCRIPTS.get(case.id, [text_reply("ok")])), '
                f"usage={{'input_tokens': {tokens}, 'output_tokens': 50}})",
            )
        )

    store = f"--commerce-store={tmp_path / 'store'}"
    spend(900)
    first = p.runpytest("cases", store, "--commerce-trials=5", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=15)
    spend(2400)
    out = tmp_path / "run.json"
    html = tmp_path / "run.html"
    second = p.runpytest(
        "cases",
        store,
        "--commerce-trials=5",
        f"--commerce-json={out}",
        f"--commerce-html={html}",
        "-p",
        "no:cacheprovider",
    )
    second.assert_outcomes(passed=15)
    assert second.ret == 0  # a cost regression alone never fails the run
    text = second.stdout.str()
    # two calls a trial (the tool call, the answer), every trial the same: ties, so the normal
    # approximation: 5 vs 5 all above is p = 0.0020
    second.stdout.fnmatch_lines(
        [
            "newly failing (0):",
            "cost and latency regressions (median per trial, Mann–Whitney one-sided p < 0.01):",
            "  cart-002-checkout-total: tokens 1,900 → 4,900 per trial (2.58×, p=0.002, "
            "5 vs 5 trials)",
        ]
    )
    assert re.search(r"cart-001-add-single: tokens 1,900 → 4,900", text)
    record = json.loads(out.read_text())
    tokens = [c for c in record["diff"]["cost_regressions"] if c["measure"] == "tokens"]
    assert sorted(c["case_id"] for c in tokens) == [
        "cart-001-add-single",
        "cart-002-checkout-total",
        "cart-003-vegan-tote",
    ]
    assert record["diff"]["newly_failing"] == []
    # the HTML report's diff lists them apart too
    page = html.read_text()
    assert "Cost and latency regressions (3)" in page  # tokens; the agent time is microseconds
    assert "tokens 1,900 → 4,900 per trial (2.58×, p=0.002, 5 vs 5 trials)" in page
