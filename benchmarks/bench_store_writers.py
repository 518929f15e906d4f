"""Many writers, nothing lost: N pytest processes record runs into one store at once.

    python benchmarks/bench_store_writers.py                       # SQLite and PostgreSQL
    python benchmarks/bench_store_writers.py --writers 1 4 --trials 10
    COMMERCE_TEST_POSTGRES=postgresql://user@host:5432/db python benchmarks/bench_store_writers.py

Each writer is a pytest process running a 50-case suite of the toy agent with `--commerce-trials`
(10 by default: 500 trials); every fourth writer runs under pytest-xdist (`-n 2`). For each
store (a fresh SQLite folder, and a fresh schema of the PostgreSQL server, dropped afterwards)
and each number of writers it checks that every trial is stored exactly once, that the run ids
are unique, and that each run's stored set results equal what its stored trials give; then it
prints the trials per second over the whole batch (pytest's own work included: the store is one
part of each trial's cost). A check that fails stops the benchmark with the reason.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from helpers import toy_conftest  # noqa: E402

from pytest_commerce_evals.store.aggregate import set_results  # noqa: E402
from pytest_commerce_evals.store.database import public_url  # noqa: E402
from pytest_commerce_evals.store.run_store import RunStore  # noqa: E402

CASES = 50
SERVER = os.environ.get("COMMERCE_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


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
            f"id: {case_id}\npriority: high\ndifficulty: easy\ntags: [{flow}]\n"
            'turns: ["Find me a trail running shoe and add it to my cart"]\n'
            "expected:\n  calls_tool: [add_to_cart]\n  cart_contains: [shoe-001]\n"
        )
        scripts[case_id] = (
            '[tool_reply("search_products", query="trail"), '
            f'tool_reply("add_to_cart", product_id="{pid}"), text_reply("Added it.")]'
        )
    source = "{" + ", ".join(f"{k!r}: {v}" for k, v in scripts.items()) + "}"
    (folder / "conftest.py").write_text(toy_conftest(source))


def batch(folder: Path, target: str, writers: int, trials: int) -> float:
    """Start `writers` pytest processes at once; seconds until the last one ended."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    procs = []
    start = time.perf_counter()
    for n in range(writers):
        args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "cases"]
        args += [f"--commerce-store={target}", f"--commerce-trials={trials}"]
        if n % 4 == 3:
            args += ["-n", "2", "-p", "no:benchmark"]
        procs.append(
            subprocess.Popen(
                args, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
        )
    outputs = [p.communicate()[0].decode() for p in procs]
    elapsed = time.perf_counter() - start
    for p, out in zip(procs, outputs, strict=True):
        if p.returncode not in (0, 1) or "recorded in" not in out:
            raise SystemExit(f"a writer failed (exit {p.returncode}):\n{out[-3000:]}")
    return elapsed


def check(store: RunStore, writers: int, trials: int) -> None:
    runs = store.runs()
    ids = [r.run_id for r in runs]
    if len(ids) != writers or len(set(ids)) != writers:
        raise SystemExit(f"{store.path}: {len(ids)} runs ({len(set(ids))} ids), not {writers}")
    for summary in runs:
        record = store.load_run(summary.run_id)
        keys = [(t.case_id, t.trial) for t in record.trials]
        if len(keys) != CASES * trials or len(set(keys)) != len(keys):
            raise SystemExit(
                f"run {record.run_id}: {len(keys)} trials stored, not {CASES * trials}"
            )
        if not record.complete or record.sets != set_results(record.trials):
            raise SystemExit(f"run {record.run_id}: set results differ from its trials")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--trials", type=int, default=10, help="trials per case (50 cases)")
    parser.add_argument("--only", choices=("sqlite", "postgresql"))
    opts = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        build(folder)
        for kind in ("sqlite", "postgresql"):
            if opts.only and kind != opts.only:
                continue
            for writers in opts.writers:
                schema = f"bench_{secrets.token_hex(4)}"
                target = (
                    str(folder / f"store-{writers}")
                    if kind == "sqlite"
                    else f"{SERVER}?schema={schema}"
                )
                try:
                    elapsed = batch(folder, target, writers, opts.trials)
                    store = RunStore(target, read_only=True)
                    check(store, writers, opts.trials)
                    store.close()
                finally:
                    if kind == "postgresql":
                        import psycopg

                        with psycopg.connect(SERVER, autocommit=True) as conn:
                            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
                total = writers * CASES * opts.trials
                rows.append((kind, writers, total, elapsed))
                print(
                    f"{kind:<10} {writers:>2} writer(s): {total:>5} trials stored once each in "
                    f"{elapsed:6.1f} s = {total / elapsed:6.1f} trials/s",
                    flush=True,
                )
    print(f"\nPostgreSQL server: {public_url(SERVER)}; {os.cpu_count()} CPU(s)")
    print("| store | writers | trials | seconds | trials/s |\n|---|---|---|---|---|")
    for kind, writers, total, elapsed in rows:
        print(f"| {kind} | {writers} | {total} | {elapsed:.1f} | {total / elapsed:.1f} |")


if __name__ == "__main__":
    main()
