"""The statistics every verdict about a pass rate uses (docs/run-history.md explains the method).

Pure functions on counts, no model and no store: the interval shown beside a pass rate, the
one-sided exact test that says whether a case's pass rate dropped (or rose) against its
baseline, and the Beta/beta-binomial arithmetic that adaptive trials decide with.

- **Interval:** Wilson's score interval. It stays inside [0, 1], does not collapse to a point at
  0/n or n/n (where the textbook Wald interval says "100% ± 0"), has close to nominal coverage at
  the small counts a case has (2 to 10 trials), and is the interval the live trend already shows.
- **Drop test:** Fisher's exact test, one-sided: the chance, if both runs had the same pass rate,
  of the current run passing this few of its trials given the pooled counts (the hypergeometric
  lower tail). Exact at any count, and conservative: it never says "dropped" more often than its
  level. 0/5 against 5/5 gives p = 1/252 ≈ 0.004.
- **Rise test on per-trial values** (tokens, agent time): the one-sided Mann–Whitney U test
  (`mann_whitney_greater_p`), rank-based, since those values are skewed and heavy-tailed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

Z95 = 1.959963984540054  # the two-sided 95% quantile of the standard normal


def wilson_interval(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval (95% by default) of ``passed`` out of ``n``; (0, 1) when n is 0."""
    _check_counts(passed, n)
    if n == 0:
        return 0.0, 1.0
    p = passed / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low, high = max(0.0, centre - half), min(1.0, centre + half)
    if passed == 0:
        low = 0.0
    if passed == n:
        high = 1.0
    return low, high


def _check_counts(passed: int, n: int) -> None:
    if n < 0 or passed < 0 or passed > n:
        raise ValueError(f"pass counts must satisfy 0 <= passed <= n; got {passed}/{n}")


@lru_cache(maxsize=65536)
def fisher_drop_p(passed: int, n: int, base_passed: int, base_n: int) -> float:
    """One-sided Fisher exact p-value that the current rate (``passed``/``n``) is *lower* than the
    baseline's (``base_passed``/``base_n``): P(X <= passed) for X hypergeometric with the pooled
    counts. 1.0 when either side has no trials (nothing to compare)."""
    _check_counts(passed, n)
    _check_counts(base_passed, base_n)
    if n == 0 or base_n == 0:
        return 1.0
    total, successes = n + base_n, passed + base_passed
    lowest = max(0, n - (total - successes))
    tail = sum(
        math.comb(successes, k) * math.comb(total - successes, n - k)
        for k in range(lowest, passed + 1)
    )
    return min(1.0, tail / math.comb(total, n))


def fisher_rise_p(passed: int, n: int, base_passed: int, base_n: int) -> float:
    """One-sided Fisher exact p-value that the current rate is *higher* than the baseline's."""
    _check_counts(passed, n)
    _check_counts(base_passed, base_n)
    return fisher_drop_p(n - passed, n, base_n - base_passed, base_n)


def beta_binomial_pmf(k: int, trials: int, a: float, b: float) -> float:
    """P(k successes in ``trials``) when the success rate is Beta(a, b) distributed."""
    if k < 0 or k > trials:
        return 0.0
    return math.exp(
        math.log(math.comb(trials, k)) + _log_beta(k + a, trials - k + b) - _log_beta(a, b)
    )


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def beta_cdf(x: float, a: float, b: float) -> float:
    """P(rate <= x) for a Beta(a, b) rate: the regularized incomplete beta function, by its
    continued fraction (Lentz's method)."""
    if a <= 0 or b <= 0:
        raise ValueError(f"Beta parameters must be positive; got a={a}, b={b}")
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(a * math.log(x) + b * math.log1p(-x) - _log_beta(a, b))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(x, a, b) / a
    return 1.0 - front * _beta_fraction(1.0 - x, b, a) / b


def _beta_fraction(x: float, a: float, b: float) -> float:
    tiny, eps = 1e-300, 1e-15
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a + m2 - 1) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < eps:
            break
    return result


def jeffreys_posterior(passed: int, n: int) -> tuple[float, float]:
    """The Beta parameters of a pass rate after ``passed``/``n``, from Jeffreys' prior
    Beta(1/2, 1/2): the prior that says least about the rate before any trial."""
    _check_counts(passed, n)
    return passed + 0.5, n - passed + 0.5


def chance_flagged_at_max(
    passed: int, n: int, base_passed: int, base_n: int, max_trials: int, level: float
) -> float:
    """The predictive chance that, with trials run on to ``max_trials``, the drop test against
    the baseline ends below ``level``: the remaining trials' passes are beta-binomial under the
    Jeffreys posterior of the current trials."""
    _check_counts(passed, n)
    remaining = max(0, max_trials - n)
    a, b = jeffreys_posterior(passed, n)
    return sum(
        beta_binomial_pmf(k, remaining, a, b)
        for k in range(remaining + 1)
        if fisher_drop_p(passed + k, n + remaining, base_passed, base_n) < level
    )


def format_rate(passed: int, n: int) -> str:
    """``4/5 80% [38–96]``: the count, the rate and its 95% Wilson interval, in percent."""
    if n == 0:
        return "0/0 —"
    low, high = wilson_interval(passed, n)
    return f"{passed}/{n} {100 * passed / n:.0f}% [{100 * low:.0f}–{100 * high:.0f}]"


def pool_baseline(history: list[tuple[int, int]], level: float) -> tuple[int, int, int]:
    """Pool one case's (passed, graded) counts over earlier comparable runs, newest first.

    Runs are added while they agree with what is pooled so far; the first older run whose rate
    differs from the pool (either one-sided exact test below ``level``) ends the pool, so a
    regression or a fix further back never blends old behaviour into the baseline. Runs where the
    case had no graded trial are passed over. Returns (passed, graded, runs pooled)."""
    passed = graded = runs = 0
    for run_passed, run_graded in history:
        _check_counts(run_passed, run_graded)
        if run_graded == 0:
            continue
        if graded and (
            fisher_drop_p(run_passed, run_graded, passed, graded) < level
            or fisher_rise_p(run_passed, run_graded, passed, graded) < level
        ):
            break
        passed, graded, runs = passed + run_passed, graded + run_graded, runs + 1
    return passed, graded, runs


def sequential_rate(
    path: Sequence[bool | None], continues: Callable[[int, int, int], bool]
) -> Fraction | None:
    """A pass rate that a stopping rule does not bias: one case's trials as the rule saw them
    (`path`, in order: True passed, False failed, None not graded), and the rule (`continues(
    passed, graded, ran)`: whether it runs another trial after those counts).

    Stopping when the results look good makes passed / graded read high (a case that passes its
    first trials stops there, one that fails them runs on and can recover). This is the unbiased
    estimator of Girshick, Mosteller and Savage (1946), the Rao-Blackwell estimate of "the first
    graded trial passed": among the orders of these outcomes the rule would have run to the
    end, the share whose first graded trial passed. Under a fixed count it is passed / graded.
    None when nothing was graded."""
    ran = len(path)
    graded = sum(x is not None for x in path)
    passed = sum(x is True for x in path)
    if graded == 0:
        return None
    # per count of passes so far: (orders reaching it, those whose first graded trial passed)
    states: dict[int, tuple[int, int]] = {0: (1, 0)}
    seen = 0
    for step, outcome in enumerate(path, 1):
        if outcome is not None:
            grown: dict[int, tuple[int, int]] = {}
            for s, (k, k1) in states.items():
                up = grown.get(s + 1, (0, 0))
                grown[s + 1] = (up[0] + k, up[1] + (k if seen == 0 else k1))
                down = grown.get(s, (0, 0))
                grown[s] = (down[0] + k, down[1] + (0 if seen == 0 else k1))
            states = grown
            seen += 1
        if step < ran:
            states = {s: v for s, v in states.items() if continues(s, seen, step)}
    k, k1 = states.get(passed, (0, 0))
    return Fraction(k1, k) if k else Fraction(passed, graded)


def two_proportion_p(a_passed: int, a_n: int, b_passed: int, b_n: int) -> float:
    """Two-sided p-value of the pooled two-proportion z-test (the live trend's test between two
    runs' verdict counts); 1.0 when it cannot be computed (a side without counts, or both rates
    0 or 1). Counts outside 0 <= passed <= n are refused with `ValueError`."""
    _check_counts(a_passed, a_n)
    _check_counts(b_passed, b_n)
    if a_n == 0 or b_n == 0:
        return 1.0
    pooled = (a_passed + b_passed) / (a_n + b_n)
    se = math.sqrt(pooled * (1 - pooled) * (1 / a_n + 1 / b_n))
    if se == 0:
        return 1.0
    z = abs(a_passed / a_n - b_passed / b_n) / se
    return math.erfc(z / math.sqrt(2))


# -- adaptive trials: the stopping rule, and the case rate it leaves -----------------------------

LEVEL = 0.01
"""The level of the drop test a case is reported newly failing at (the failing-set diff's)."""
INTERIM_FACTOR = 10
"""Before the last trial a case stops as dropped only at LEVEL / INTERIM_FACTOR, so looking after
every trial does not add false alarms."""
DELTA = 0.1
"""A case stops as consistent with its baseline when the predictive chance that running on to the
maximum would flag it is below DELTA."""
CONFIDENCE = 0.95
"""Without history: stop when the Jeffreys posterior puts at least this much probability on one
side of the set threshold."""


@dataclass(frozen=True)
class Decision:
    """Why a case stopped: `reason` is `dropped`, `consistent`, `passing`, `failing` or `max`."""

    reason: str
    trials: int

    def text(self) -> str:
        words = {
            "dropped": "dropped against its baseline",
            "consistent": "consistent with its baseline",
            "passing": "clearly above the set threshold",
            "failing": "clearly below the set threshold",
            "max": "the maximum was reached",
        }[self.reason]
        return f"decided after {self.trials} trials: {words}"


def decide(
    passed: int,
    graded: int,
    ran: int,
    *,
    minimum: int,
    maximum: int,
    baseline: tuple[int, int] | None,
    threshold: float,
    level: float = LEVEL,
    delta: float = DELTA,
    confidence: float = CONFIDENCE,
) -> Decision | None:
    """Whether a case that ran `ran` trials (`passed` of `graded` graded) has run enough; None
    while it needs another trial.

    - Fewer than `minimum` trials: go on. `maximum` trials: stop.
    - With a baseline pool (`baseline` = (passed, graded) of earlier comparable runs, n0 > 0):
      stop `dropped` when the one-sided Fisher test of the counts against the pool is below
      `level / INTERIM_FACTOR`; stop `consistent` when the predictive chance that running on to
      `maximum` ends below `level` is under `delta`.
    - Without one (a first run, a new case): stop `passing` when the Jeffreys posterior gives
      P(rate >= threshold) >= `confidence`, `failing` when it is <= 1 - `confidence`.
    Trials that ended without a grade (judge, infrastructure or glue errors) count toward the
    maximum but not as evidence."""
    if ran >= maximum:
        return Decision("max", ran)
    if ran < minimum:
        return None
    if baseline is not None and baseline[1] > 0:
        base_passed, base_n = baseline
        if fisher_drop_p(passed, graded, base_passed, base_n) < level / INTERIM_FACTOR:
            return Decision("dropped", ran)
        left = maximum - ran
        chance = chance_flagged_at_max(passed, graded, base_passed, base_n, graded + left, level)
        if chance < delta:
            return Decision("consistent", ran)
        return None
    a, b = jeffreys_posterior(passed, graded)
    above = 1.0 - beta_cdf(threshold, a, b)
    if above >= confidence:
        return Decision("passing", ran)
    if above <= 1.0 - confidence:
        return Decision("failing", ran)
    return None


@lru_cache(maxsize=65536)
def adaptive_rate(
    path: tuple[bool | None, ...],
    *,
    minimum: int,
    maximum: int,
    baseline: tuple[int, int] | None,
    threshold: float,
    level: float = LEVEL,
    delta: float = DELTA,
) -> Fraction | None:
    """A case's pass rate after adaptive trials (`decide` with these settings stopped it after
    `path`, its outcomes in the order the rule saw them): the part of the set rate it stands for.

    - This run's trials are read with `sequential_rate` under the rule, so stopping early when
      the first trials pass does not read high (passed / graded does: 0.8 reads about 0.86).
    - A case the drop test does not flag against its baseline pool (at `level`, the diff's)
      adds the pool's trials to its own, weighted by count (the history of an unchanged case is
      evidence of its rate: about 2.5 trials a run would judge a set less surely than 5); a
      case it flags is read from this run alone.
    None when nothing was graded."""

    def goes_on(passed: int, graded: int, ran: int) -> bool:
        return (
            decide(
                passed,
                graded,
                ran,
                minimum=minimum,
                maximum=maximum,
                baseline=baseline,
                threshold=threshold,
                level=level,
                delta=delta,
            )
            is None
        )

    own = sequential_rate(path, goes_on)
    if own is None:
        return None
    graded = sum(x is not None for x in path)
    passed = sum(x is True for x in path)
    if baseline is None or baseline[1] <= 0:
        return own
    if fisher_drop_p(passed, graded, baseline[0], baseline[1]) < level:
        return own
    return (own * graded + baseline[0]) / (graded + baseline[1])


# -- per-trial values: the one-sided Mann–Whitney U (Wilcoxon rank-sum) test ------------------

MW_EXACT_MAX_PAIRS = 400
"""Without ties, `mann_whitney_greater_p` is exact while n1·n2 is at most this (both sides up
to 20, or 5 against 80); beyond it, and with ties, the normal approximation is used."""


def midranks(values: Sequence[float]) -> list[float]:
    """The rank of each value among `values` (1 the smallest), tied values sharing the mean of
    the ranks they span."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def mann_whitney_u(new: Sequence[float], base: Sequence[float]) -> float:
    """U of `new` against `base`: the pairs (x from new, y from base) with x > y, a tie counting
    one half."""
    ranks = midranks([*new, *base])
    n1 = len(new)
    return sum(ranks[:n1]) - n1 * (n1 + 1) / 2


@lru_cache(maxsize=1024)
def _u_upper_tails(n1: int, n2: int) -> tuple[Fraction, ...]:
    """P(U >= u) for u = 0 … n1·n2 under the null (no ties), n1 <= n2: the coefficients of the
    Gaussian binomial [n1+n2 choose n1]_q, counted by dynamic programming, over C(n1+n2, n1)."""
    k, other = n1, n2
    # ways[j][u]: subsets of size j of the items seen so far whose U (items below each chosen
    # one that were not chosen) is u; adding item i as the (j+1)-th chosen adds i - j to U.
    ways: list[list[int]] = [[1]] + [[] for _ in range(k)]
    for i in range(k + other):
        for j in range(min(i, k - 1), -1, -1):
            row, shift = ways[j], i - j
            if not row:
                continue
            grown = ways[j + 1]
            if len(grown) < shift + len(row):
                grown.extend([0] * (shift + len(row) - len(grown)))
            for u, count in enumerate(row):
                if count:
                    grown[u + shift] += count
    counts = ways[k] + [0] * (k * other + 1 - len(ways[k]))
    total = math.comb(k + other, k)
    tails, running = [], 0
    for count in reversed(counts):
        running += count
        tails.append(Fraction(running, total))
    return tuple(reversed(tails))


def mann_whitney_greater_p(new: Sequence[float], base: Sequence[float]) -> float:
    """One-sided p-value of the Mann–Whitney U (Wilcoxon rank-sum) test that `new` is
    stochastically larger than `base`: P(U >= U observed) if both were drawn from one
    distribution. 1.0 when a side is empty.

    Exact (the permutation distribution of U) when there are no ties and n1·n2 <=
    `MW_EXACT_MAX_PAIRS`; otherwise the normal approximation with the tie correction of the
    variance and a continuity correction of 1/2."""
    n1, n2 = len(new), len(base)
    if n1 == 0 or n2 == 0:
        return 1.0
    combined = [*new, *base]
    if any(math.isnan(v) for v in combined):
        raise ValueError("Mann–Whitney test of values with NaN in them")
    u = mann_whitney_u(new, base)
    ties = len(set(combined)) < len(combined)
    if not ties and n1 * n2 <= MW_EXACT_MAX_PAIRS:
        # under the null U is the U of a random n1-subset of the ranks 1..n, whose law is the
        # same for n1 and n2 chosen (the Gaussian binomial is symmetric): count the smaller
        tails = _u_upper_tails(min(n1, n2), max(n1, n2))
        return float(tails[round(u)])
    n = n1 + n2
    counts: dict[float, int] = {}
    for v in combined:
        counts[v] = counts.get(v, 0) + 1
    tie_term = sum(t**3 - t for t in counts.values()) / (n * (n - 1))
    variance = n1 * n2 / 12 * ((n + 1) - tie_term)
    if variance <= 0:  # every value equal: nothing says one side is larger
        return 1.0
    z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(variance)
    return min(1.0, 0.5 * math.erfc(z / math.sqrt(2)))
