"""Time rendering the HTML report for 100 and 1,000 synthetic trials (realistic event streams:
search, details, carousel, cart write or blocked gate, staged change, reply; a third judged).

    python benchmarks/bench_report.py

Prints milliseconds per trial and the 1,000/100 ratio (linear rendering gives about 10).
"""

from __future__ import annotations

import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from run_builders import run, synthetic_trials  # noqa: E402

from pytest_commerce_evals.reports.html import render_run_html  # noqa: E402
from pytest_commerce_evals.store.diff import diff_failing_sets  # noqa: E402


def best_of(n: int, count: int) -> tuple[float, int]:
    trials = synthetic_trials(count)
    before = run(synthetic_trials(count, seed=8), run_id="20250101-000000-000001")
    after = run(trials, run_id="20250102-000000-000002", started_at="2025-01-02T00:00:00.000+00:00")
    diff = diff_failing_sets(before, after)
    best, size = float("inf"), 0
    for _ in range(n):
        gc.collect()
        start = time.perf_counter()
        page = render_run_html(after, diff)
        best = min(best, time.perf_counter() - start)
        size = len(page.encode())
    return best, size


def main() -> None:
    small, small_size = best_of(5, 100)
    large, large_size = best_of(3, 1000)
    print(
        f"100 trials:   {small * 1000:8.1f} ms  ({small * 1e6 / 100:.0f} µs/trial, "
        f"{small_size / 1e6:.2f} MB)"
    )
    print(
        f"1000 trials:  {large * 1000:8.1f} ms  ({large * 1e6 / 1000:.0f} µs/trial, "
        f"{large_size / 1e6:.2f} MB)"
    )
    print(f"ratio 1000/100: {large / small:.1f} (10 = linear)")


if __name__ == "__main__":
    main()
