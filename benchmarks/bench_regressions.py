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
calls per merge run (one call per trial), and how often each set's verdict agrees with an
independent fixed-5 run of the same agent (the set rate under `auto` taken both ways: pooled
trials, and the mean of the per-case rates, which is what the plugin uses).

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

from pytest_commerce_evals.results import meets_threshold  # noqa: E402
from pytest_commerce_evals.runner.adaptive import DELTA, LEVEL, decide  # noqa: E402
from pytest_commerce_evals.stats import pool_baseline  # noqa: E402
from pytest_commerce_evals.store.history import classify  # noqa: E402

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
        while True:
            passed += rng.random() < p
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
        out.append((passed, ran))
    return out


def flagged_pooled(
    now: list[tuple[int, int]], history: list[list[tuple[int, int]]], level: float
) -> tuple[set[int], int]:
    """The cases the failing-set diff's own rule (`store.history.classify`) reports newly
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


def set_verdicts(counts: list[tuple[int, int]], per_case: bool) -> list[bool]:
    """Each set's verdict (met or not); pooled trials, or the mean of the per-case rates."""
    out = []
    for s in range(SETS):
        part = counts[s * PER_SET : (s + 1) * PER_SET]
        if per_case:
            mean = sum(Fraction(p, n) for p, n in part) / len(part)
            out.append(meets_threshold(mean.numerator, mean.denominator, THRESHOLD))
        else:
            out.append(meets_threshold(sum(p for p, _ in part), sum(n for _, n in part), THRESHOLD))
    return out


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
            "agree_pooled": 0,
            "first": 0,
            "listed": 0,
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
            for name, (flags, listed) in (
                ("any-fail, fixed 5", any_fail),
                ("pooled Fisher, fixed 5", pooled),
                ("pooled Fisher, auto", auto_flags),
            ):
                hit = bool(flags) if scenario == "fa" else 0 in flags
                rows[name][scenario] += hit
                if scenario == "fa":
                    rows[name]["listed"] += listed
            if scenario == "fa":
                reference = set_verdicts(run_fixed(rng, base, 5), per_case=True)
                fixed_sets = set_verdicts(now, per_case=True)
                for name in ("any-fail, fixed 5", "pooled Fisher, fixed 5"):
                    rows[name]["calls"] += sum(n for _, n in now)
                    rows[name]["agree"] += agree(fixed_sets, reference)
                    rows[name]["agree_pooled"] += agree(fixed_sets, reference)
                rows["pooled Fisher, auto"]["calls"] += sum(n for _, n in auto_now)
                rows["pooled Fisher, auto"]["first"] += sum(n for _, n in auto_hist[-1])
                rows["pooled Fisher, auto"]["agree"] += agree(
                    set_verdicts(auto_now, per_case=True), reference
                )
                rows["pooled Fisher, auto"]["agree_pooled"] += agree(
                    set_verdicts(auto_now, per_case=False), reference
                )
    for row in rows.values():
        row["fa"] /= args.merges
        row["det30"] /= args.merges
        row["det50"] /= args.merges
        row["calls"] /= args.merges
        row["first"] /= args.merges
        row["listed"] /= args.merges
        row["agree"] /= args.merges * SETS
        row["agree_pooled"] /= args.merges * SETS
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
        f"{'calls/merge':>12} {'sets agree w/ fixed 5':>22} {'listed':>7}"
    )
    print(head)
    for name, row in rows.items():
        agreement = f"{row['agree']:.1%}"
        if name.endswith("auto"):
            agreement += f" (pooled {row['agree_pooled']:.1%})"
        print(
            f"{name:<24} {row['fa']:>12.1%} {row['det30']:>13.1%} {row['det50']:>13.1%} "
            f"{row['calls']:>12.1f} {agreement:>22} {row['listed']:>7.1f}"
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


if __name__ == "__main__":
    main()
