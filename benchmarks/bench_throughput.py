"""Throughput of an eval run: wall time against the latency limit, harness CPU, collection.

    python benchmarks/bench_throughput.py                 # the three configurations + faults
    python benchmarks/bench_throughput.py --only 1000:0.2:64 --xdist 2   # 2 workers x 32

Each configuration N:L:C runs `pytest` in a fresh process on N generated cases (one trial each)
with this repository's conftest: the reference agent and backend, pointed at a loopback mock
OpenAI-compatible server (`pytest_commerce_evals.testing.mock_server`, its own process) that answers
every call after L seconds with a scripted reply: search, add to cart, a text reply (three model
calls a trial), after which the code graders check the calls, the cart and its size. C trials
are in flight at once (`--commerce-concurrency`).

Printed per run: the process's wall time, the ideal N x calls x L / C, their ratio, the mock's
call count, the pytest process's CPU per trial, and the outcomes. Then the time to collect
10,000 generated cases, and a run with every tenth response faulted (429 with Retry-After, 500,
a stall past the client timeout, a malformed body, in turn) with the outcomes and fault counts.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CALLS_PER_TRIAL = 3
PATTERN = r"add one (?P<title>.+) \((?P<pid>[a-z0-9-]+)\) to my cart"
SCRIPT = [
    {"tool": "search_products", "arguments": {"query": "{title}"}},
    {"tool": "add_to_cart", "arguments": {"product_id": "{pid}", "quantity": 1}},
    {"text": "I added one {title} to your cart."},
]
CONFIGS = ((200, 0.2, 16), (1000, 0.2, 64), (1000, 0.0, 16))
ALL_PLUGINS = False
STARTED_AT = ENDED_AT = 0.0
CACHE_DIR = ""


def products() -> list[tuple[str, str]]:
    """In-stock products without variants: a search by title finds them, a cart add needs no
    size."""
    from pytest_commerce_evals.reference.backend import ReferenceBackend

    backend = ReferenceBackend.fresh(poisoned=True)  # as the conftest loads it: the cache is warm
    return [
        (p.id, p.title)
        for p in backend.products.values()
        if p.availability.status == "in_stock" and not p.variants
    ]


def write_cases(folder: Path, n: int, per_file: int = 100) -> None:
    """`n` cases in files of `per_file`, cycling over the products."""
    pool = products()
    cases = folder / "cases" / "bench"
    cases.mkdir(parents=True)
    (cases / "_set.yaml").write_text("threshold: 0.5\n")
    for start in range(0, n, per_file):
        lines = []
        for i in range(start, min(n, start + per_file)):
            pid, title = pool[i % len(pool)]
            lines += [
                # three digits, then a suffix past 999: every id valid, none repeated
                f"- id: cart-{i % 1000:03d}-bench-add{f'-{i // 1000}' if i >= 1000 else ''}",
                "  priority: high",
                "  difficulty: easy",
                "  tags: [cart]",
                f"  turns: [{json.dumps(f'Please add one {title} ({pid}) to my cart.')}]",
                "  expected:",
                "    calls_tool: [search_products, add_to_cart]",
                f"    cart_contains: [{pid}]",
                "    cart_item_count: 1",
            ]
        (cases / f"bench-{start // per_file:04d}.yaml").write_text("\n".join(lines) + "\n")
    shutil.copy(ROOT / "conftest.py", folder / "conftest.py")
    (folder / "pytest.ini").write_text("[pytest]\n")


class Mock:
    """The mock server in its own process."""

    def __init__(self, latency: float, fault_every: int = 0, stall: float = 5.0) -> None:
        self.script = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump(SCRIPT, self.script)
        self.script.close()
        cmd = [
            sys.executable,
            "-m",
            "pytest_commerce_evals.testing.mock_server",
            "--latency",
            str(latency),
            "--fault-every",
            str(fault_every),
            "--stall",
            str(stall),
            "--script",
            self.script.name,
            "--pattern",
            PATTERN,
        ]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().split()
        self.base_url = line[1]

    def stats(self) -> dict[str, int]:
        return self._get("/stats")

    def times(self) -> dict[str, float | None]:
        return self._get("/times")

    def _get(self, path: str) -> dict:
        with urllib.request.urlopen(self.base_url + path, timeout=10) as r:
            return json.loads(r.read())

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.unlink(self.script.name)


PLUGINS = ["-p", "pytest_commerce_evals.plugin"]


def run_pytest(folder: Path, args: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Runs pytest in `folder`; returns (wall s, CPU s of the process and its children, output).

    Only this plugin (and xdist, when asked for) is loaded, as where commerce-evals is installed
    on its own: other plugins in the environment (hypothesis: 1.4 s, anyio: 0.9 s of start-up
    here) would be measured too. `--all-plugins` loads whatever is installed."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *PLUGINS, *args]
    if not ALL_PLUGINS:
        env = {**env, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    global STARTED_AT, ENDED_AT
    STARTED_AT = time.time()
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    ENDED_AT = time.time()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, out


def outcomes(output: str) -> str:
    tail = [ln for ln in output.splitlines() if re.search(r"\d+ (passed|failed)", ln)]
    return tail[-1].strip("= ") if tail else output[-400:]


def clean_env() -> dict[str, str]:
    """This environment without endpoint or plugin settings, but with the benchmark's own parse
    cache (`COMMERCE_CACHE_DIR`, see `main`)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "COMMERCE_"))}
    env["COMMERCE_CACHE_DIR"] = CACHE_DIR
    return env


def env_for(mock: Mock) -> dict[str, str]:
    env = clean_env()
    env["OPENAI_BASE_URL"] = mock.base_url
    env["OPENAI_MODEL"] = "mock"
    env["PYTHONPATH"] = str(ROOT)
    return env


def one(n: int, latency: float, c: int, extra: list[str], fault_every: int = 0) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_cases(folder, n)
        mock = Mock(latency, fault_every=fault_every, stall=3.0)
        try:
            workers = int(extra[1]) if extra[:1] == ["-n"] else 1
            # C is the total in flight: under xdist each worker keeps C / workers
            args = ["cases", f"--commerce-concurrency={max(1, c // workers)}", *extra]
            if fault_every:
                args += ["-o", "commerce_request_timeout=1", "-o", "commerce_retry_wait_max=0.5"]
            wall, cpu, out = run_pytest(folder, args, env_for(mock))
            stats = mock.stats()
            times = mock.times()
        finally:
            mock.close()
    ideal = n * CALLS_PER_TRIAL * latency / c
    return {
        "n": n,
        "latency": latency,
        "c": c,
        "wall": wall,
        "ideal": ideal,
        "ratio": wall / ideal if ideal else None,
        "calls": stats.pop("requests"),
        "max_in_flight": stats.pop("max_in_flight"),
        "stats": stats,
        "cpu_ms_per_trial": cpu / n * 1000,
        "to_first_call": (times["first_request"] or ENDED_AT) - STARTED_AT,
        "after_last_reply": ENDED_AT - (times["last_reply"] or ENDED_AT),
        "outcomes": outcomes(out),
        "output": out,
    }


def show(r: dict) -> None:
    head = f"N={r['n']:<5} L={r['latency'] * 1000:>4.0f} ms  C={r['c']:<3}"
    ratio = f"ratio {r['ratio']:.3f}x" if r["ratio"] else "ratio -"
    print(
        f"{head} wall {r['wall']:7.3f} s  ideal {r['ideal']:6.2f} s  {ratio}  "
        f"calls {r['calls']} (at most {r['max_in_flight']} at once)  "
        f"CPU {r['cpu_ms_per_trial']:.2f} ms/trial  [{r['outcomes']}]\n"
        f"{'':32}start to first call {r['to_first_call']:.3f} s, "
        f"last reply to exit {r['after_last_reply']:.3f} s",
        flush=True,
    )


def collection(n: int = 10_000) -> None:
    """Collects n cases twice: the first time every file is parsed, the second time the files
    are unchanged and their parsed form comes from the cache."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        write_cases(folder, n)
        for label in ("parsed", "cached"):
            wall, cpu, out = run_pytest(folder, ["cases", "--collect-only"], clean_env())
            found = re.search(r"(\d+) tests? collected", out)
            print(
                f"collect {n} cases ({label}): wall {wall:.2f} s, CPU {cpu:.2f} s, "
                f"{found.group(1) if found else '?'} items  [{out.splitlines()[-1].strip('= ')}]",
                flush=True,
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", help="one configuration N:L:C, e.g. 200:0.2:16")
    parser.add_argument("--xdist", type=int, default=0, help="also spread over N xdist workers")
    parser.add_argument("--no-faults", action="store_true")
    parser.add_argument("--no-collect", action="store_true")
    parser.add_argument("-v", action="store_true", help="print pytest's output on failure")
    parser.add_argument(
        "--all-plugins", action="store_true", help="load every installed pytest plugin"
    )
    args = parser.parse_args()
    # A parse cache of the benchmark's own, so what it measures does not depend on what earlier
    # runs on this machine left; the fixtures are parsed into it once below (`products()`), as
    # any run after the first on a machine finds them.
    global CACHE_DIR
    cache = tempfile.TemporaryDirectory(prefix="commerce-bench-cache-")
    CACHE_DIR = os.environ["COMMERCE_CACHE_DIR"] = cache.name
    global ALL_PLUGINS
    ALL_PLUGINS = args.all_plugins
    if args.all_plugins:
        PLUGINS.clear()
    elif args.xdist:
        PLUGINS.extend(["-p", "xdist.plugin"])
    configs = CONFIGS
    if args.only:
        n, lat, c = args.only.split(":")
        configs = ((int(n), float(lat), int(c)),)
    extra = ["-n", str(args.xdist)] if args.xdist else []
    # Byte-compiled as an installed package is: where PYTHONDONTWRITEBYTECODE is set and the
    # package is a source checkout, every run would otherwise compile it from source again.
    compileall.compile_dir(ROOT / "pytest_commerce_evals", quiet=1)
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, xdist workers: {args.xdist}, "
        f"plugins: {'all installed' if ALL_PLUGINS else 'commerce-evals only'}"
    )
    bad = False
    for n, lat, c in configs:
        r = one(n, lat, c, extra)
        show(r)
        if "failed" in r["outcomes"] or "error" in r["outcomes"]:
            bad = True
            if args.v:
                print(r["output"][-3000:])
    if not args.only and not args.no_collect:
        collection()
    if not args.only and not args.no_faults:
        r = one(200, 0.05, 16, extra, fault_every=10)
        show(r)
        print(f"  faults injected: {r['stats']}")
        if args.v:
            print(r["output"][-3000:])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
