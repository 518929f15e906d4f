"""The statistics behind every pass rate shown and every "newly failing": known counts give known
intervals and p-values."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from pytest_commerce_evals.stats import (
    adaptive_rate,
    beta_binomial_pmf,
    beta_cdf,
    chance_flagged_at_max,
    decide,
    fisher_drop_p,
    fisher_rise_p,
    format_rate,
    jeffreys_posterior,
    pool_baseline,
    sequential_rate,
    wilson_interval,
)


@pytest.mark.parametrize(
    "passed,n,low,high",
    [
        (4, 5, 0.3755, 0.9638),
        (5, 5, 0.5655, 1.0),
        (0, 5, 0.0, 0.4345),
        (0, 10, 0.0, 0.2775),
        (8, 10, 0.4902, 0.9433),
        (1, 2, 0.0945, 0.9055),
    ],
)
def test_wilson_interval_matches_published_values(passed, n, low, high):
    lo, hi = wilson_interval(passed, n)
    assert lo == pytest.approx(low, abs=5e-4)
    assert hi == pytest.approx(high, abs=5e-4)


def test_wilson_interval_without_trials_is_everything_and_bad_counts_are_refused():
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError, match="0 <= passed <= n; got 6/5"):
        wilson_interval(6, 5)


def test_fisher_drop_of_five_of_five_to_none_of_five_is_one_in_252():
    assert fisher_drop_p(0, 5, 5, 5) == pytest.approx(1 / 252)
    assert fisher_drop_p(5, 5, 0, 5) == pytest.approx(1.0)


def test_fisher_drop_matches_the_tea_tasting_table():
    # 1 of 4 against 3 of 4: (C(4,0)C(4,4) + C(4,1)C(4,3)) / C(8,4) = 17/70
    assert fisher_drop_p(1, 4, 3, 4) == pytest.approx(17 / 70)
    assert fisher_drop_p(3, 10, 20, 20) == pytest.approx(
        math.comb(23, 3) * math.comb(7, 7) / math.comb(30, 10)
    )


def test_fisher_rise_is_the_drop_of_the_failures():
    assert fisher_rise_p(5, 5, 0, 5) == pytest.approx(1 / 252)
    assert fisher_rise_p(3, 4, 1, 4) == pytest.approx(17 / 70)
    assert fisher_rise_p(0, 5, 5, 5) == pytest.approx(1.0)


def test_fisher_without_trials_on_either_side_says_nothing():
    assert fisher_drop_p(0, 0, 5, 5) == 1.0
    assert fisher_drop_p(0, 5, 0, 0) == 1.0


@pytest.mark.parametrize("x", [0.1, 0.37, 0.5, 0.8, 0.95])
def test_beta_cdf_matches_closed_forms(x):
    assert beta_cdf(x, 1, 1) == pytest.approx(x)
    assert beta_cdf(x, 2, 1) == pytest.approx(x * x)
    assert beta_cdf(x, 1, 2) == pytest.approx(1 - (1 - x) ** 2)
    assert beta_cdf(x, 0.5, 0.5) == pytest.approx(2 / math.pi * math.asin(math.sqrt(x)))


def test_beta_cdf_matches_numeric_integration_for_a_skewed_posterior():
    a, b, x = 12.5, 1.5, 0.8
    steps = 200_000
    h = x / steps
    log_norm = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    area = sum(
        math.exp((a - 1) * math.log(t) + (b - 1) * math.log1p(-t) - log_norm) * h
        for t in ((i + 0.5) * h for i in range(steps))
    )
    assert beta_cdf(x, a, b) == pytest.approx(area, rel=1e-4)


def test_beta_binomial_is_uniform_under_a_uniform_rate_and_sums_to_one():
    assert [beta_binomial_pmf(k, 4, 1, 1) for k in range(5)] == pytest.approx([0.2] * 5)
    assert sum(beta_binomial_pmf(k, 8, 2.5, 0.5) for k in range(9)) == pytest.approx(1.0)
    assert beta_binomial_pmf(9, 8, 1, 1) == 0.0


def test_jeffreys_posterior_adds_a_half_to_each_side():
    assert jeffreys_posterior(3, 5) == (3.5, 2.5)


def test_chance_flagged_at_max_is_certain_once_the_trials_are_spent():
    assert chance_flagged_at_max(0, 5, 5, 5, 5, 0.01) == 1.0  # p = 1/252 < 0.01
    assert chance_flagged_at_max(1, 5, 5, 5, 5, 0.01) == 0.0  # p = 6/252
    # two passes of two against a long clean history: a flag at ten is possible (the eight trials
    # left would need at most 4 passes: 6/10 vs 20/20 gives p = 0.0077, 7/10 gives 0.0296)
    chance = chance_flagged_at_max(2, 2, 20, 20, 10, 0.01)
    a, b = 2.5, 0.5
    assert chance == pytest.approx(sum(beta_binomial_pmf(k, 8, a, b) for k in range(5)))
    assert 0.1 < chance < 0.15
    # one pass of two leaves much more room for a drop
    assert chance_flagged_at_max(1, 2, 20, 20, 10, 0.01) > 3 * chance


def test_format_rate_shows_count_rate_and_interval():
    assert format_rate(4, 5) == "4/5 80% [38–96]"
    assert format_rate(0, 0) == "0/0 —"


def test_pool_baseline_adds_agreeing_runs_and_stops_at_a_change():
    # three clean runs pool; the old run where the case failed everything is a different regime
    assert pool_baseline([(5, 5), (5, 5), (4, 5), (0, 5), (5, 5)], 0.01) == (14, 15, 3)
    # runs without graded trials are passed over
    assert pool_baseline([(2, 2), (0, 0), (3, 3)], 0.01) == (5, 5, 2)
    assert pool_baseline([], 0.01) == (0, 0, 0)
    # a level of zero never splits the history
    assert pool_baseline([(5, 5), (0, 5)], 0.0) == (5, 10, 2)


# -- the rate adaptive trials leave: optional stopping must not bias it ---------------------------


def _paths(continues, maximum):
    """Every outcome order a stopping rule runs to its end, as tuples of True/False."""
    out, stack = [], [()]
    while stack:
        path = stack.pop()
        passed = sum(path)
        if path and (len(path) >= maximum or not continues(passed, len(path), len(path))):
            out.append(path)
            continue
        stack += [(*path, True), (*path, False)]
    return out


def _expectation(estimate, paths, p):
    total = Fraction(0)
    for path in paths:
        chance = Fraction(1)
        for x in path:
            chance *= p if x else 1 - p
        total += chance * estimate(path)
    return total


def _adaptive_rule(baseline):
    def continues(passed, graded, ran):
        return (
            decide(passed, graded, ran, minimum=2, maximum=8, baseline=baseline, threshold=0.9)
            is None
        )

    return continues


@pytest.mark.parametrize("baseline", [None, (24, 25), (9, 10)])
@pytest.mark.parametrize("p", [Fraction(3, 10), Fraction(4, 5), Fraction(19, 20)])
def test_the_sequential_rate_is_unbiased_under_the_plugins_stopping_rule(baseline, p):
    continues = _adaptive_rule(baseline)
    paths = _paths(continues, 8)
    assert len({len(path) for path in paths}) > 1  # the rule stops cases at different counts
    exact = _expectation(lambda path: sequential_rate(path, continues), paths, p)
    assert exact == p  # exactly, in fractions
    naive = _expectation(lambda path: Fraction(sum(path), len(path)), paths, p)
    assert naive != p  # passed / graded is what optional stopping biases


def test_under_a_fixed_count_the_sequential_rate_is_passed_over_graded():
    assert sequential_rate((True, False, True, True, True), lambda s, g, r: True) == Fraction(4, 5)
    # an ungraded trial is no evidence either way
    assert sequential_rate((True, None, False), lambda s, g, r: True) == Fraction(1, 2)
    assert sequential_rate((None, None), lambda s, g, r: True) is None


def test_the_adaptive_rate_adds_the_baseline_only_when_the_drop_test_does_not_flag_the_case():
    rule = {"minimum": 2, "maximum": 10, "threshold": 0.9}
    # consistent with 24/25: this run's 2/2 and the pool together
    assert adaptive_rate((True, True), baseline=(24, 25), **rule) == Fraction(26, 27)
    # flagged against 24/25 (0/3): this run alone
    flagged = adaptive_rate((False, False, False), baseline=(24, 25), **rule)
    assert flagged == Fraction(0)
    # without a baseline: this run's unbiased rate
    path = (True, False, True, True, True, True, True, True, True, True)
    alone = sequential_rate(
        path,
        lambda s, g, r: (
            decide(s, g, r, minimum=2, maximum=10, baseline=None, threshold=0.9) is None
        ),
    )
    assert adaptive_rate(path, baseline=None, **rule) == alone
    assert adaptive_rate((None, None), baseline=None, **rule) is None


def test_the_two_proportion_test_refuses_impossible_counts_instead_of_a_math_error():
    from pytest_commerce_evals.stats import two_proportion_p

    assert round(two_proportion_p(80, 100, 60, 100), 4) == 0.002
    assert two_proportion_p(0, 0, 3, 5) == 1.0 and two_proportion_p(5, 5, 5, 5) == 1.0
    with pytest.raises(ValueError):
        two_proportion_p(12, 10, 3, 5)  # more passes than trials: once a `math domain error`


def test_the_live_trend_uses_the_one_interval_and_test_in_stats():
    from pytest_commerce_evals import stats
    from pytest_commerce_evals.live import trend as traffic

    assert traffic.wilson_interval is stats.wilson_interval
    assert traffic.two_proportion_p is stats.two_proportion_p
