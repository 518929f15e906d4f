"""One run split into shards (`--commerce-shard=K/N`) and merged: wall time, merge cost, verdict.

    python benchmarks/bench_shards.py                          # N=400, L=0.2, C=32; 1, 2, 4 shards
    python benchmarks/bench_shards.py --n 120 --shards 1,2     # quick
    python benchmarks/bench_shards.py --store sqlite           # a SQLite folder store instead

The suite is bench_throughput's mix (its case writer and mock server are imported from it): N
generated cases, one trial each, this repository's reference agent and backend pointed at a
loopback mock OpenAI-compatible server (its own process) that answers every call after L seconds
(search, add to cart, a text reply: three model calls a trial); the code graders check the calls
and the cart. Every pytest process keeps C trials in flight (`--commerce-concurrency`), each
shard as much as the single run: a shard stands for a CI runner of its own.

The suite is run first as one ordinary run recording into the store, then, for each S in
`--shards`, as S shards of one run (`--commerce-run-id`), launched at once as concurrent
subprocesses (as separate CI runners would be), followed by `pytest --commerce-merge=RUN`. The
store is the PostgreSQL server at `--pg-url` (trust auth), in a schema of this invocation's own
(`?schema=NAME`, dropped at the end), or a SQLite folder (`--store sqlite`).

Printed per configuration: the shards' wall time (launch to the last shard's exit), the merge
step's, their total, the ideal (bench_throughput's latency limit, trials x calls x L / C, for the
largest slice), the ratio of the total to it, the mock's call count, and whether the merged
verdict (exit status and the JSON record's `sets`) is the single run's.

On one 2-core machine the shards compete for the same cores (each a Python process with its own
start-up and collection), so wall-time gains beyond 2 shards are not expected here: the figures
that matter are the merge step's overhead and that the verdict is identical. The exit status is
1 when any merged verdict differs from the single run's.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_throughput as bt  # noqa: E402

ROOT = bt.ROOT
PG_URL = "postgresql://postgres@127.0.0.1:5432/test"


def command(args: list[str]) -> list[str]:
    """pytest with only this plugin loaded, as bench_throughput runs it."""
    return [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *bt.PLUGINS, *args]


def environment(mock: bt.Mock) -> dict[str, str]:
    """bench_throughput's environment: the mock's endpoint, PYTHONPATH at the repository root,
    no other plugin loaded."""
    return {**bt.env_for(mock), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def launch(folder: Path, runs: list[list[str]], env: dict[str, str]) -> tuple[float, list[dict]]:
    """Starts every run at once; returns (wall s from the launch to the last exit, per run:
    its exit status, wall s and output)."""
    results: list[dict] = [{} for _ in runs]
    started = time.perf_counter()

    def one(i: int, args: list[str]) -> None:
        with tempfile.TemporaryFile("w+") as out:
            proc = subprocess.Popen(
                command(args), cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, text=True
            )
            rc = proc.wait()
            wall = time.perf_counter() - started
            out.seek(0)
            results[i] = {"rc": rc, "wall": wall, "output": out.read()}

    threads = [threading.Thread(target=one, args=(i, a)) for i, a in enumerate(runs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - started, results


def verdict_line(output: str) -> str:
    found = [ln for ln in output.splitlines() if ln.startswith("verdict:")]
    return found[-1] if found else "(no verdict line)"


def read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def single(folder: Path, store: str, n: int, c: int, latency: float, mock: bt.Mock) -> dict:
    record = folder / "single.json"
    args = ["cases", f"--commerce-concurrency={c}", f"--commerce-store={store}"]
    calls = mock.stats()["requests"]
    wall, (r,) = launch(folder, [[*args, f"--commerce-json={record}"]], environment(mock))
    return {
        "label": "single run",
        "shards": 0,
        "shard_wall": wall,
        "merge_wall": 0.0,
        "ideal": n * bt.CALLS_PER_TRIAL * latency / c,
        "slices": [n],
        "calls": mock.stats()["requests"] - calls,
        "rc": r["rc"],
        "record": read_json(record),
        "verdict": verdict_line(r["output"]),
        "outcomes": bt.outcomes(r["output"]),
        "outputs": [r["output"]],
    }


def sharded(
    folder: Path, store: str, total: int, n: int, c: int, latency: float, mock: bt.Mock, tag: str
) -> dict:
    run_id = f"bench-{tag}-{total}"
    env = environment(mock)
    calls = mock.stats()["requests"]
    shard_wall, shards = launch(
        folder,
        [
            [
                "cases",
                f"--commerce-concurrency={c}",
                f"--commerce-store={store}",
                f"--commerce-shard={k}/{total}",
                f"--commerce-run-id={run_id}",
            ]
            for k in range(1, total + 1)
        ],
        env,
    )
    calls = mock.stats()["requests"] - calls
    record = folder / f"{run_id}.json"
    merge_wall, (merged,) = launch(
        folder,
        [[f"--commerce-merge={run_id}", f"--commerce-store={store}", f"--commerce-json={record}"]],
        env,
    )
    # the slice sizes as the merge step read them from the store: "  shard 2/4: 100 trials, ..."
    slices = [
        int(m.group(1))
        for m in re.finditer(r"^\s+shard \d+/\d+: (\d+) trials", merged["output"], re.M)
    ]
    largest = max(slices) if slices else -(-n // total)
    return {
        "label": f"{total} shard{'s' if total > 1 else ''}",
        "shards": total,
        "shard_wall": shard_wall,
        "shard_walls": [s["wall"] for s in shards],
        "shard_rcs": [s["rc"] for s in shards],
        "merge_wall": merge_wall,
        "ideal": largest * bt.CALLS_PER_TRIAL * latency / c,
        "slices": slices,
        "calls": calls,
        "rc": merged["rc"],
        "record": read_json(record),
        "verdict": verdict_line(merged["output"]),
        "outcomes": bt.outcomes(merged["output"]),
        "outputs": [s["output"] for s in shards] + [merged["output"]],
    }


def same_verdict(r: dict, base: dict) -> bool:
    return (
        r["record"] is not None
        and base["record"] is not None
        and r["rc"] == base["rc"]
        and r["record"].get("exit_status") == base["record"].get("exit_status")
        and r["record"].get("sets") == base["record"].get("sets")
    )


def table(rows: list[dict], base: dict) -> None:
    head = (
        f"{'configuration':<14} {'slices':<16} {'shards s':>9} {'merge s':>8} {'total s':>8} "
        f"{'ideal s':>8} {'ratio':>7} {'calls':>6} {'exit':>5}  same verdict"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        total = r["shard_wall"] + r["merge_wall"]
        ratio = f"{total / r['ideal']:.2f}x" if r["ideal"] else "-"
        merge = f"{r['merge_wall']:8.2f}" if r["shards"] else f"{'-':>8}"
        same = "(reference)" if r is base else ("yes" if same_verdict(r, base) else "NO")
        print(
            f"{r['label']:<14} {'+'.join(map(str, r['slices'])):<16} {r['shard_wall']:9.2f} "
            f"{merge} {total:8.2f} {r['ideal']:8.2f} {ratio:>7} {r['calls']:>6} {r['rc']:>5}  "
            f"{same}"
        )


def pg_store(url: str) -> tuple[str, str]:
    """(the store URL with a fresh schema, the schema's name)."""
    name = f"bench_shards_{os.getpid()}_{int(time.time())}"
    return f"{url}{'&' if '?' in url else '?'}schema={name}", name


def drop_schema(url: str, name: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(url.split("?")[0], autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(name)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=400, help="cases (one trial each)")
    parser.add_argument("--latency", type=float, default=0.2, help="the mock's seconds a call")
    parser.add_argument("--concurrency", type=int, default=32, help="trials in flight a process")
    parser.add_argument("--shards", default="1,2,4", help="shard counts, e.g. 1,2,4")
    parser.add_argument("--store", choices=("pg", "sqlite"), default="pg")
    parser.add_argument("--pg-url", default=PG_URL, help="PostgreSQL database (trust auth)")
    parser.add_argument("-v", action="store_true", help="print every process's output")
    args = parser.parse_args()
    counts = [int(s) for s in args.shards.split(",") if s.strip()]
    n, latency, c = args.n, args.latency, args.concurrency

    # bench_throughput's own parse cache, fixtures parsed into it once (`products()` in
    # write_cases), and the package byte-compiled, as there
    cache = tempfile.TemporaryDirectory(prefix="commerce-bench-cache-")
    bt.CACHE_DIR = os.environ["COMMERCE_CACHE_DIR"] = cache.name
    compileall.compile_dir(ROOT / "pytest_commerce_evals", quiet=1)

    tmp = tempfile.TemporaryDirectory(prefix="commerce-bench-shards-")
    folder = Path(tmp.name)
    bt.write_cases(folder, n)
    schema = None
    if args.store == "pg":
        store, schema = pg_store(args.pg_url)
    else:
        store = str(folder / "store")
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; N={n} L={latency * 1000:.0f} ms "
        f"C={c} a process; store: {store}",
        flush=True,
    )
    mock = bt.Mock(latency)
    rows: list[dict] = []
    try:
        base = single(folder, store, n, c, latency, mock)
        rows.append(base)
        print(f"single run: {base['verdict']}  [{base['outcomes']}]", flush=True)
        for total in counts:
            r = sharded(folder, store, total, n, c, latency, mock, str(os.getpid()))
            rows.append(r)
            walls = ", ".join(f"{w:.2f}" for w in r["shard_walls"])
            print(
                f"{r['label']}: shard exits {r['shard_rcs']} after {walls} s; merge: "
                f"{r['verdict']}",
                flush=True,
            )
    finally:
        mock.close()
        if schema is not None:
            drop_schema(args.pg_url, schema)
        tmp.cleanup()
        cache.cleanup()
    print()
    table(rows, base)
    bad = [r for r in rows[1:] if not same_verdict(r, base)]
    for r in rows:
        if args.v or (r in bad) or any(r.get("shard_rcs", [])):
            for out in r["outputs"]:
                print(f"--- {r['label']} ---\n{out[-3000:]}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
