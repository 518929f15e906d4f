"""Measure the run store after ten runs of a suite: 36 cases x 3 trials, run by pytest with the
toy agent of the plugin's tests (each trial's transcript is a search, a cart write, a reply).

    python benchmarks/bench_store.py

Prints the database size (with its WAL file) after each run and per stored trial.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers import toy_conftest  # noqa: E402

CASES, TRIALS, RUNS = 36, 3, 10


def build(folder: Path) -> None:
    (folder / "helpers.py").write_text((ROOT / "tests" / "helpers.py").read_text())
    scripts = {}
    for n in range(CASES):
        flow = ("cart", "search", "memory", "orders")[n % 4]
        case_dir = folder / "cases" / flow
        case_dir.mkdir(parents=True, exist_ok=True)
        pid = "shoe-001" if n % 5 else "shoe-002"  # one case in five fails
        case_id = f"{flow}-{n:03d}-behaviour"
        (case_dir / f"{case_id}.yaml").write_text(
            f"id: {case_id}\npriority: {('critical', 'high', 'medium', 'low')[n % 4]}\n"
            f"difficulty: {('easy', 'medium', 'hard')[n % 3]}\ntags: [{flow}]\n"
            'turns: ["Find me a trail running shoe under 120 and add it to my cart"]\n'
            "expected:\n  calls_tool: [add_to_cart]\n  cart_contains: [shoe-001]\n"
        )
        scripts[case_id] = (
            '[tool_reply("search_products", query="trail"), '
            f'tool_reply("add_to_cart", product_id="{pid}"), '
            'text_reply("I found the Trail runner (89.00, in stock, delivered Thursday) and '
            'added it.")]'
        )
    source = "{" + ", ".join(f"{k!r}: {v}" for k, v in scripts.items()) + "}"
    (folder / "conftest.py").write_text(toy_conftest(source))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder)
        store = folder / "store"
        for n in range(1, RUNS + 1):
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pytest",
                    "cases",
                    "-q",
                    "-p",
                    "no:cacheprovider",
                    f"--commerce-trials={TRIALS}",
                    f"--commerce-store={store}",
                ],
                cwd=folder,
                capture_output=True,
                check=False,
            )
            size = sum(p.stat().st_size for p in store.glob("runs.sqlite*"))
            print(
                f"after run {n:2d}: {size / 1024:8.0f} KiB  ({time.perf_counter() - start:.1f} s)"
            )
        trials = RUNS * CASES * TRIALS
        print(
            f"{RUNS} runs x {CASES} cases x {TRIALS} trials = {trials} trials: "
            f"{size / 1024:.0f} KiB, {size / trials:.0f} bytes per trial"
        )


if __name__ == "__main__":
    main()
