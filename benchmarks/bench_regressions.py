"""Simulate merges of an agent with known per-case pass probabilities, and measure how often
each regression rule raises a false alarm, how often it catches a real drop, and what it costs.

    python benchmarks/bench_regressions.py         # 200 merges, 5 and 10 runs of history
    python benchmarks/bench_regressions.py --merges 400 --history 10 --level 0.01 --delta 0.05

No model and no pytest run: a trial is a coin with the case's pass probability. The suite is 130
cases in 13 sets of 10 (threshold 0.9): 104 reliable cases (p = 0.98), 26 flaky ones (p = 0.8,
two per set), and case 0 (p = 0.95 in the history). Each merge is preceded by `--history` runs
of the unchanged agent, made with the same method as the merge itself (fixed 5 for the fixed
rows, `auto` for the `auto` row), and the merge run is compared with them:

- today's rule: a case is newly failing when a graded trial failed now and none failed in the
  previous run (the failing-set diff on "any trial failed");
- the pooled rule: a case is newly failing when the one-sided Fisher exact test of its counts now
  against its pooled baseline (`stats.pool_baseline` over the case's counts in the history runs,
  newest first, level as the test's) is below the level.

Rows: false alarms (merges of the unchanged agent where at least one case is reported newly
failing), detection (merges where case 0, dropped from 0.95 to 0.3 or 0.5, is reported), model
calls per merge run (one call per trial), how often each set's verdict agrees with an
independent fixed-5 run of the same agent, and how often it is right: equal to the truth (the
mean of the set's true pass probabilities against the threshold), over every set of an unchanged
merge and over the set holding case 0 after each drop (the set rate under `auto` is the
plugin's own, `stats.adaptive_rate` per case through `rates.set_rate_counts`).

The stopping rule is the plugin's own (`pytest_commerce_evals.runner.adaptive.decide`) and the
drop test and pool are `pytest_commerce_evals.stats`.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from fractions import Fraction
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_commerce_evals.rates import meets_threshold, set_rate_counts  # noqa: E402
from pytest_commerce_evals.runner.adaptive import DELTA, LEVEL, decide  # noqa: E402
from pytest_commerce_evals.stats import adaptive_rate, pool_baseline  # noqa: E402
from pytest_commerce_evals.store.diff import classify  # noqa: E402

RELIABLE, FLAKY, DROPPED_FROM = 0.98, 0.8, 0.95
SETS, PER_SET, THRESHOLD = 13, 10, 0.9
HISTORY_KEPT = 10  # the last M comparable runs the history hook answers with


def suite() -> list[float]:
    """Pass probabilities: case 0 at 0.95, two flaky cases per set of ten, the rest reliable."""
    probs = []
    for _ in range(SETS):
        for k in range(PER_SET):
            probs.append(FLAKY if k in (3, 7) else RELIABLE)
    probs[0] = DROPPED_FROM
    return probs


def run_fixed(rng: random.Random, probs: list[float], n: int) -> list[tuple[int, int]]:
    return [(sum(rng.random() < p for _ in range(n)), n) for p in probs]


class AutoCase(tuple):
    """(passed, ran) of one case under `auto`, with the outcomes in order and its baseline."""

    path: tuple[bool, ...]
    baseline: tuple[int, int] | None


def run_auto(
    rng: random.Random,
    probs: list[float],
    history: list[list[tuple[int, int]]],
    minimum: int,
    maximum: int,
    level: float,
    delta: float,
) -> list[tuple[int, int]]:
    """One run under `auto:minimum:maximum`: each case's trials until `decide` stops it."""
    out = []
    for c, p in enumerate(probs):
        pool = pool_baseline([run[c] for run in history[:HISTORY_KEPT]], level)
        baseline = (pool[0], pool[1]) if pool[1] else None
        passed = ran = 0
        path: list[bool] = []
        while True:
            path.append(rng.random() < p)
            passed += path[-1]
            ran += 1
            if decide(
                passed,
                ran,
                ran,
                minimum=minimum,
                maximum=maximum,
                baseline=baseline,
                threshold=THRESHOLD,
                level=level,
                delta=delta,
            ):
                break
        case = AutoCase((passed, ran))
        case.path, case.baseline = tuple(path), baseline
        out.append(case)
    return out


def flagged_pooled(
    now: list[tuple[int, int]], history: list[list[tuple[int, int]]], level: float
) -> tuple[set[int], int]:
    """The cases the failing-set diff's own rule (`store.diff.classify`) reports newly
    failing, and how many it lists at all (newly failing, fixed or inconclusive)."""
    flagged, listed = set(), 0
    for c, (s, n) in enumerate(now):
        s0, n0, _ = pool_baseline([run[c] for run in history[:HISTORY_KEPT]], level)
        latest_passed, latest_graded = history[0][c]
        bucket, _ = classify(s, n, s0, n0, was=latest_passed < latest_graded, level=level)
        flagged |= {c} if bucket == "newly_failing" else set()
        listed += bucket in ("newly_failing", "fixed", "inconclusive")
    return flagged, listed


def flagged_any_fail(
    now: list[tuple[int, int]], previous: list[tuple[int, int]]
) -> tuple[set[int], int]:
    """Newly failing under the any-fail rule, and how many cases it lists (newly failing or
    fixed)."""
    pairs = list(enumerate(zip(now, previous, strict=True)))
    flagged = {c for c, ((s, n), (s0, n0)) in pairs if s < n and s0 == n0}
    fixed = {c for c, ((s, n), (s0, n0)) in pairs if s == n and s0 < n0}
    return flagged, len(flagged) + len(fixed)


def set_verdicts(
    counts: list[tuple[int, int]], per_case: bool, auto: tuple[int, int, float, float] | None = None
) -> list[bool]:
    """Each set's verdict (met or not): pooled trials, the mean of the per-case rates, or under
    `auto` (min, max, level, delta) the plugin's own reading, `rates.set_rate_counts` over
    each case's `stats.adaptive_rate`."""
    out = []
    for s in range(SETS):
        part = counts[s * PER_SET : (s + 1) * PER_SET]
        if auto is not None:
            minimum, maximum, level, delta = auto
            rates = [
                adaptive_rate(
                    c.path,
                    minimum=minimum,
                    maximum=maximum,
                    baseline=c.baseline,
                    threshold=THRESHOLD,
                    level=level,
                    delta=delta,
                )
                for c in part
            ]
            num, den = set_rate_counts((p, n, n, r) for (p, n), r in zip(part, rates, strict=True))
            out.append(meets_threshold(num, den, THRESHOLD))
        elif per_case:
            mean = sum(Fraction(p, n) for p, n in part) / len(part)
            out.append(meets_threshold(mean.numerator, mean.denominator, THRESHOLD))
        else:
            out.append(meets_threshold(sum(p for p, _ in part), sum(n for _, n in part), THRESHOLD))
    return out


def truth(probs: list[float]) -> list[bool]:
    """Each set's true verdict: the mean of its cases' pass probabilities reaches the threshold."""
    return [
        sum(probs[s * PER_SET : (s + 1) * PER_SET]) / PER_SET + 1e-12 >= THRESHOLD
        for s in range(SETS)
    ]


def agree(a: list[bool], b: list[bool]) -> int:
    return sum(x == y for x, y in zip(a, b, strict=True))


def simulate(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    rng = random.Random(args.seed)
    base = suite()
    minimum, maximum = args.min, args.max
    rows: dict[str, dict[str, float]] = {
        name: {
            "fa": 0,
            "det30": 0,
            "det50": 0,
            "calls": 0,
            "agree": 0,
            "first": 0,
            "listed": 0,
            "right": 0,
            "right30": 0,
            "right50": 0,
        }
        for name in ("any-fail, fixed 5", "pooled Fisher, fixed 5", "pooled Fisher, auto")
    }

    def history_runs(method: str, probs: list[float]) -> list[list[tuple[int, int]]]:
        runs: list[list[tuple[int, int]]] = []  # newest first
        for _ in range(args.history):
            if method == "fixed":
                run = run_fixed(rng, probs, 5)
            else:
                run = run_auto(rng, probs, runs, minimum, maximum, args.level, args.delta)
            runs.insert(0, run)
        return runs

    for _ in range(args.merges):
        for scenario, merge_p0 in (("fa", None), ("det30", 0.3), ("det50", 0.5)):
            now_probs = list(base)
            if merge_p0 is not None:
                now_probs[0] = merge_p0
            # fixed 5: one history, two rules
            hist = history_runs("fixed", base)
            now = run_fixed(rng, now_probs, 5)
            any_fail = flagged_any_fail(now, hist[0])
            pooled = flagged_pooled(now, hist, args.level)
            auto_hist = history_runs("auto", base)
            auto_now = run_auto(rng, now_probs, auto_hist, minimum, maximum, args.level, args.delta)
            auto_flags = flagged_pooled(auto_now, auto_hist, args.level)
            true_sets = truth(now_probs)
            fixed_sets = set_verdicts(now, per_case=True)
            auto_sets = set_verdicts(
                auto_now, per_case=True, auto=(minimum, maximum, args.level, args.delta)
            )
            judged = range(SETS) if merge_p0 is None else [0]  # set 0 holds the dropped case
            right_key = {"fa": "right", "det30": "right30", "det50": "right50"}[scenario]
            for name, (flags, listed), sets in (
                ("any-fail, fixed 5", any_fail, fixed_sets),
                ("pooled Fisher, fixed 5", pooled, fixed_sets),
                ("pooled Fisher, auto", auto_flags, auto_sets),
            ):
                hit = bool(flags) if scenario == "fa" else 0 in flags
                rows[name][scenario] += hit
                rows[name][right_key] += sum(sets[k] == true_sets[k] for k in judged) / len(judged)
                if scenario == "fa":
                    rows[name]["listed"] += listed
            if scenario == "fa":
                reference = set_verdicts(run_fixed(rng, base, 5), per_case=True)
                for name in ("any-fail, fixed 5", "pooled Fisher, fixed 5"):
                    rows[name]["calls"] += sum(n for _, n in now)
                    rows[name]["agree"] += agree(fixed_sets, reference)
                rows["pooled Fisher, auto"]["calls"] += sum(n for _, n in auto_now)
                rows["pooled Fisher, auto"]["first"] += sum(n for _, n in auto_hist[-1])
                rows["pooled Fisher, auto"]["agree"] += agree(auto_sets, reference)
    for row in rows.values():
        row["fa"] /= args.merges
        row["det30"] /= args.merges
        row["det50"] /= args.merges
        row["calls"] /= args.merges
        row["first"] /= args.merges
        row["listed"] /= args.merges
        for key in ("right", "right30", "right50"):
            row[key] /= args.merges
        row["agree"] /= args.merges * SETS
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--merges", type=int, default=200)
    parser.add_argument(
        "--history",
        default="5,10",
        help="runs of history before a merge (a comma list: one table each)",
    )
    parser.add_argument("--level", type=float, default=LEVEL)
    parser.add_argument("--delta", type=float, default=DELTA)
    parser.add_argument("--min", type=int, default=2)
    parser.add_argument("--max", type=int, default=10)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    for history in [int(h) for h in str(args.history).split(",")]:
        args.history = history
        table(args)
        print()


def table(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    rows = simulate(args)
    cases = SETS * PER_SET
    print(
        f"{args.merges} merges, {args.history} history runs before each, {cases} cases "
        f"({SETS} sets of {PER_SET}, threshold {THRESHOLD}), level {args.level}, "
        f"auto:{args.min}:{args.max}, delta {args.delta}"
    )
    head = (
        f"{'rule':<24} {'false alarms':>12} {'det 0.95→0.3':>13} {'det 0.95→0.5':>13} "
        f"{'calls/merge':>12} {'agree w/ fixed 5':>17} {'listed':>7} "
        f"{'right: unchanged':>17} {'right: →0.3':>12} {'right: →0.5':>12}"
    )
    print(head)
    for name, row in rows.items():
        print(
            f"{name:<24} {row['fa']:>12.1%} {row['det30']:>13.1%} {row['det50']:>13.1%} "
            f"{row['calls']:>12.1f} {row['agree']:>17.1%} {row['listed']:>7.1f} "
            f"{row['right']:>17.1%} {row['right30']:>12.1%} {row['right50']:>12.1%}"
        )
    fixed_calls = rows["pooled Fisher, fixed 5"]["calls"]
    auto_calls = rows["pooled Fisher, auto"]["calls"]
    print(
        f"auto used {auto_calls / fixed_calls:.0%} of fixed 5's model calls "
        f"({auto_calls / cases:.2f} trials per case); its first run, with no history, "
        f"{rows['pooled Fisher, auto']['first'] / cases:.2f} trials per case; "
        f"{time.perf_counter() - start:.1f} s"
    )
    print(
        "listed: cases an unchanged merge's diff lists for a reader, on average (any-fail: newly "
        "failing or fixed; pooled: newly failing, fixed or inconclusive)"
    )
    print(
        "right: set verdicts that match the truth (the mean of the set's true pass probabilities "
        f"against {THRESHOLD}): every set of an unchanged merge (all truly met), and the set "
        "holding the dropped case (truly short: 0.876 and 0.896)"
    )


if __name__ == "__main__":
    main()
