"""Where a trial's CPU goes: one run of `bench_throughput.py`'s loop under a thread-aware profiler,
its own time per function summed into the parts of the harness.

    pip install yappi                                   # the profiler; not a dependency
    python benchmarks/profile_trial.py                  # 1000 trials, L=0 and L=0.2, C=16
    python benchmarks/profile_trial.py --only 1000:0.2:64 --top 25

Each configuration N:L:C runs pytest in a fresh process on N generated cases against the loopback
mock (the same cases, conftest, reference agent and backend as `bench_throughput.py`), with yappi
measuring CPU time in every thread (`clock_type="cpu"`). Each function's own time (not its
callees') goes to the part its file belongs to: pytest's item protocol, the runner, the reference
agent, the reference backend, the HTTP client, JSON, events and converters, grading, recording,
pydantic, threads and waiting, collection, and the rest. Printed: milliseconds per trial per part
under the profiler (which slows every call, so read them as shares) and the share of the whole;
with `--top`, the functions that cost most.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_throughput as bench  # noqa: E402

# (part, path fragments): the first part whose fragment is in a function's file takes its time
PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("reference agent", ("pytest_commerce_evals/reference/agent.py",)),
    ("reference backend", ("pytest_commerce_evals/reference/",)),
    ("HTTP client", ("pytest_commerce_evals/models/", "/http/", "/socket.py", "/email/", "httpx")),
    ("JSON", ("/json/",)),
    ("events, converters", ("pytest_commerce_evals/events.py", "pytest_commerce_evals/adapters/")),
    ("grading", ("pytest_commerce_evals/graders/", "pytest_commerce_evals/judge/")),
    (
        "recording",
        (
            "pytest_commerce_evals/results.py",
            "pytest_commerce_evals/runs.py",
            "pytest_commerce_evals/rates.py",
            "pytest_commerce_evals/costs.py",
            "pytest_commerce_evals/usage.py",
            "pytest_commerce_evals/prices.py",
            "pytest_commerce_evals/jsonsafe.py",
            "pytest_commerce_evals/store/",
            "/sqlite3/",
        ),
    ),
    ("runner (items, trial loop, scheduler)", ("pytest_commerce_evals/runner/",)),
    ("collection", ("pytest_commerce_evals/cases/", "/yaml/")),
    ("pydantic", ("/pydantic/", "pydantic_core")),
    ("threads, waiting", ("/threading.py", "/queue.py", "/selectors.py", "/concurrent/")),
    ("pytest item protocol", ("/_pytest/", "/pluggy/")),
    ("the plugin, other", ("pytest_commerce_evals/",)),
]


def part_of(path: str) -> str:
    for part, fragments in PARTS:
        if any(f in path for f in fragments):
            return part
    return "other (stdlib, builtins)"


CHILD = """
import json, sys, yappi, pytest
yappi.set_clock_type("cpu")
yappi.start(builtins=False, profile_threads=True)
code = pytest.main(sys.argv[2:])
yappi.stop()
rows = [(s.module, s.name, s.lineno, s.tsub, s.ncall) for s in yappi.get_func_stats()]
json.dump({"code": int(code), "rows": rows}, open(sys.argv[1], "w"))
"""


def profile(n: int, latency: float, c: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bench.write_cases(folder, n)
        mock = bench.Mock(latency)
        out = folder / "profile.json"
        try:
            env = {**bench.env_for(mock), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
            args = ["-q", "-p", "no:cacheprovider", *bench.PLUGINS, "cases"]
            args.append(f"--commerce-concurrency={c}")
            proc = subprocess.run(
                [sys.executable, "-c", CHILD, str(out), *args],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
            )
        finally:
            mock.close()
        if not out.exists():
            raise SystemExit(proc.stdout[-2000:] + proc.stderr[-2000:])
        data = json.loads(out.read_text())
    parts: dict[str, float] = {}
    for module, _name, _line, tsub, _calls in data["rows"]:
        parts[part_of(module)] = parts.get(part_of(module), 0.0) + tsub
    return {"n": n, "latency": latency, "c": c, "parts": parts, "rows": data["rows"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="one configuration N:L:C, e.g. 1000:0.2:16")
    parser.add_argument("--top", type=int, default=0, help="also list the N costliest functions")
    args = parser.parse_args()
    # as bench_throughput.py runs: its own parse cache, filled with the fixtures before the first
    # configuration (`write_cases`), and the package byte-compiled
    bench.CACHE_DIR = os.environ["COMMERCE_CACHE_DIR"] = tempfile.mkdtemp(prefix="commerce-prof-")
    compileall.compile_dir(bench.ROOT / "pytest_commerce_evals", quiet=1)
    configs = [(1000, 0.0, 16), (1000, 0.2, 16)]
    if args.only:
        n, lat, c = args.only.split(":")
        configs = [(int(n), float(lat), int(c))]
    results = [profile(*config) for config in configs]
    names = [part for part, _ in PARTS] + ["other (stdlib, builtins)"]
    head = " | ".join(f"N={r['n']} L={r['latency']:g} C={r['c']}" for r in results)
    print(f"| part (ms of CPU a trial, under the profiler; share) | {head} |")
    print("|---|" + "---|" * len(results))
    for name in names:
        cells = []
        for r in results:
            total = sum(r["parts"].values())
            ms = r["parts"].get(name, 0.0) * 1000 / r["n"]
            cells.append(f"{ms:.2f} ({r['parts'].get(name, 0.0) / total:.0%})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    totals = [f"{sum(r['parts'].values()) * 1000 / r['n']:.2f}" for r in results]
    print("| **total** | " + " | ".join(totals) + " |")
    if args.top:
        for r in results:
            print(f"\nN={r['n']} L={r['latency']:g} C={r['c']}: own CPU, ms a trial")
            rows = sorted(r["rows"], key=lambda row: -row[3])[: args.top]
            for module, name, line, tsub, calls in rows:
                where = module.split("site-packages/")[-1].split("/work/main/")[-1]
                print(f"  {tsub * 1000 / r['n']:7.3f}  {calls:>8}  {name}  {where}:{line}")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
