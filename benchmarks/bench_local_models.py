"""Which embedded model: five customer messages, each sent twice, to each packaged GGUF.

Each model is served exactly as the plugin serves it (`_local_model.LocalServer`: the
`commerce-chatml-tools` chat format, n_ctx 8192, every CPU thread) and called through the
openai SDK at temperature 0 with `tool_choice="auto"` and three tools. A call is *valid* when it
names a real tool with JSON arguments holding the required keys, *sensible* when it is the
right tool with the right key argument. Message 3 follows a search whose result (in a `tool`
message) names the product to add, so it checks that the model reads tool results.

    python benchmarks/bench_local_models.py [--models smollm2-135m,gemma3-270m] [--repeats 2]

Prints a row per model: valid and sensible calls, median and range of the latency per call,
and the start-up time. A model whose package is not installed is reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openai import OpenAI  # noqa: E402

from pytest_commerce_evals.models import embedded as _local_model  # noqa: E402


def tool(name: str, description: str, props: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


TOOLS = [
    tool(
        "search_products",
        "Search the catalog by text; returns products with id, title and price.",
        {"query": {"type": "string"}, "max_price": {"type": "number"}},
        ["query"],
    ),
    tool(
        "add_to_cart",
        "Add a product to the cart by its id.",
        {"product_id": {"type": "string"}, "quantity": {"type": "integer"}},
        ["product_id"],
    ),
    tool(
        "get_order",
        "Look up an order by its id.",
        {"order_id": {"type": "string"}},
        ["order_id"],
    ),
]
SYSTEM = {"role": "system", "content": "You are a shopping assistant. Use the tools."}
SEARCHED = [
    {"role": "user", "content": "Find me trail running shoes under $120."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search_products", "arguments": '{"query": "trail shoes"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": json.dumps(
            [
                {"id": "SHOE-1042", "title": "Ridgeline Trail 3", "price": "109.00"},
                {"id": "SHOE-2210", "title": "Canyon Runner", "price": "94.50"},
            ]
        ),
    },
    {
        "role": "assistant",
        "content": "I found Ridgeline Trail 3 ($109) and Canyon Runner ($94.50).",
    },
]


def sensible_search(word: str):
    def check(name: str, args: dict) -> bool:
        return name == "search_products" and word in str(args.get("query", "")).lower()

    return check


PROBES = [
    ([{"role": "user", "content": "Find me trail running shoes under $120."}],
     sensible_search("trail")),
    ([{"role": "user", "content": "Show me waterproof hiking jackets."}],
     sensible_search("jacket")),
    ([*SEARCHED, {"role": "user", "content": "Add the first one to my cart."}],
     lambda name, args: name == "add_to_cart" and args.get("product_id") == "SHOE-1042"),
    ([{"role": "user", "content": "Where is my order A-5521?"}],
     lambda name, args: name == "get_order" and args.get("order_id") == "A-5521"),
    ([{"role": "user", "content": "I need a vegan leather tote bag for under 80 dollars."}],
     sensible_search("tote")),
]  # fmt: skip
REQUIRED = {t["function"]["name"]: t["function"]["parameters"]["required"] for t in TOOLS}


def measure(name: str, repeats: int) -> str:
    model = _local_model.PACKAGED_MODELS[name]
    try:
        gguf = model.locate()
    except _local_model.LocalModelUnavailable as exc:
        return f"{name:<14} skipped: {exc}"
    server = _local_model.LocalServer(gguf, model_alias=model.model_id)
    start = time.perf_counter()
    server.start()
    startup = time.perf_counter() - start
    client = OpenAI(base_url=server.base_url, api_key="none", max_retries=0)
    valid = sensible = 0
    latencies: list[float] = []
    try:
        for _ in range(repeats):
            for messages, is_sensible in PROBES:
                t0 = time.perf_counter()
                reply = client.chat.completions.create(
                    model=model.model_id, messages=[SYSTEM, *messages], tools=TOOLS,
                    tool_choice="auto", temperature=0, max_tokens=128,
                )  # fmt: skip
                latencies.append(time.perf_counter() - t0)
                calls = reply.choices[0].message.tool_calls or []
                if not calls:
                    continue
                fn = calls[0].function
                try:
                    args = json.loads(fn.arguments)
                except ValueError:
                    continue
                if fn.name in REQUIRED and all(k in args for k in REQUIRED[fn.name]):
                    valid += 1
                    sensible += bool(is_sensible(fn.name, args))
    finally:
        client.close()
        server.stop()
    n = repeats * len(PROBES)
    return (
        f"{name:<14} valid {valid}/{n}  sensible {sensible}/{n}  "
        f"median {statistics.median(latencies):.2f} s  "
        f"range {min(latencies):.2f}-{max(latencies):.2f} s  start-up {startup:.1f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default=",".join(_local_model.PACKAGED_MODELS))
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    for name in args.models.split(","):
        print(measure(name, args.repeats), flush=True)


if __name__ == "__main__":
    main()
