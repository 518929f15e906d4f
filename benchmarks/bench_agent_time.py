"""Agent time against concurrency: does a trial's recorded agent time measure the agent, or the
other trials in flight beside it?

    python benchmarks/bench_agent_time.py         # 48 trials, L=0.2 s, concurrency 1 and 16
    python benchmarks/bench_agent_time.py --trials 96 --latency 0.2 --concurrency 1 16 32

A pydantic-ai shop agent (the integration `PydanticAIAgent`, on pydantic-ai's own OpenAI model
and an `AsyncOpenAI` client; `--sync`: a sync agent looping over `openai.OpenAI`) runs against a
loopback mock OpenAI-compatible server in its own process that answers every call after L
seconds: search, add to cart, a text reply (three model calls a trial). Each configuration runs
`pytest` in a fresh process and reads the JSON record: the mean agent time per trial (the sum of
`turn_s`), the wall time, and the ratio of the agent time at each concurrency to that at
concurrency 1 (1.00 = the agent's own time, whatever runs beside it; the ideal is 3 x L).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CONFTEST = """
import os

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from pytest_commerce_evals import PydanticAIAgent, Snapshot

PROVIDER = OpenAIProvider(base_url=os.environ["BENCH_BASE_URL"], api_key="none")


class Shop:
    def load_state(self, state):
        self.cart = {}

    def snapshot(self):
        return Snapshot.from_data(cart=self.cart)


def pytest_commerce_evals_make_backend(config, case):
    return Shop()


def pytest_commerce_evals_make_agent(config, case, backend):
    agent = Agent(OpenAIChatModel("mock", provider=PROVIDER), instructions="Help.")

    @agent.tool_plain
    def search_products(query: str) -> list:
        return [{"id": "shoe-001", "title": query}]

    @agent.tool_plain
    def add_to_cart(product_id: str, quantity: int = 1) -> str:
        backend.cart[product_id] = backend.cart.get(product_id, 0) + quantity
        return "added"

    return PydanticAIAgent(agent)
"""

SYNC_CONFTEST = """
import os

import openai

from pytest_commerce_evals import Snapshot
from pytest_commerce_evals.adapters.core import framework_agent
from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages

CLIENT = openai.OpenAI(base_url=os.environ["BENCH_BASE_URL"], api_key="none")
TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("search_products", "add_to_cart")
]


class Shop:
    def load_state(self, state):
        self.cart = {}

    def snapshot(self):
        return Snapshot.from_data(cart=self.cart)


def pytest_commerce_evals_make_backend(config, case):
    return Shop()


def pytest_commerce_evals_make_agent(config, case, backend):
    def run(session, message):
        messages = [{"role": "user", "content": message}]
        while True:
            reply = CLIENT.chat.completions.create(model="mock", messages=messages, tools=TOOLS)
            said = reply.choices[0].message
            messages.append(said.model_dump(exclude_none=True))
            if not said.tool_calls:
                return messages[1:]
            for call in said.tool_calls:
                if call.function.name == "add_to_cart":
                    backend.cart["shoe-001"] = 1
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "ok"})

    return framework_agent(run, events_from_chat_messages)
"""

SCRIPT = [
    {"tool": "search_products", "arguments": {"query": "trail runner"}},
    {"tool": "add_to_cart", "arguments": {"product_id": "shoe-001", "quantity": 1}},
    {"text": "I added one trail runner to your cart."},
]


def cases(n: int) -> str:
    return "".join(
        textwrap.dedent(
            f"""\
            - id: cart-{i:03d}-add
              priority: low
              difficulty: easy
              turns: ["add one trail runner (shoe-001) to my cart"]
              expected:
                cart_contains: [shoe-001]
            """
        )
        for i in range(n)
    )


def run(folder: Path, base_url: str, concurrency: int) -> dict:
    record = folder / f"run-{concurrency}.json"
    env = {**os.environ, "BENCH_BASE_URL": base_url, "COMMERCE_CACHE_DIR": "off"}
    started = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "-q",
            "-p",
            "no:cacheprovider",
            f"--commerce-concurrency={concurrency}",
            f"--commerce-json={record}",
            "--commerce-store=off",
            "--commerce-no-judge",
        ],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"run failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr}")
    trials = json.loads(record.read_text())["trials"]
    agent = [sum(t["turn_s"]) for t in trials]
    return {"wall": wall, "agent": sum(agent) / len(agent), "trials": len(trials)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=48)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--rounds", type=int, default=2, help="alternate the configurations")
    parser.add_argument(
        "--sync", action="store_true", help="a sync agent (openai.OpenAI in its own loop)"
    )
    args = parser.parse_args()
    from pytest_commerce_evals.testing.mock_server import MockServer

    script = [{**step} for step in SCRIPT]
    with tempfile.TemporaryDirectory() as tmp, MockServer(script, latency_s=args.latency) as mock:
        folder = Path(tmp)
        (folder / "conftest.py").write_text(SYNC_CONFTEST if args.sync else CONFTEST)
        (folder / "cases").mkdir()
        (folder / "cases" / "a.yaml").write_text(cases(args.trials))
        (folder / "pytest.ini").write_text("[pytest]\ncommerce_case_dirs = cases\n")
        results: dict[int, list[dict]] = {c: [] for c in args.concurrency}
        for _ in range(args.rounds):
            for c in args.concurrency:
                results[c].append(run(folder, mock.base_url, c))
        base = min(r["agent"] for r in results[args.concurrency[0]])
        kind = "a sync agent on openai.OpenAI" if args.sync else "PydanticAIAgent, async"
        print(
            f"{kind}: {args.trials} trials, L={args.latency:g} s, 3 model calls a trial (ideal "
            f"agent time {3 * args.latency:.2f} s)"
        )
        for c, rows in results.items():
            agent = min(r["agent"] for r in rows)
            wall = min(r["wall"] for r in rows)
            print(
                f"  concurrency {c:>3}: agent time per trial {agent:.3f} s "
                f"(ratio to concurrency {args.concurrency[0]}: {agent / base:.2f}), "
                f"wall {wall:.1f} s"
            )


if __name__ == "__main__":
    main()
