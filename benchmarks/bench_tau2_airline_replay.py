"""Replay of τ² airline results files on `AirlineBackend`: each simulation's tool calls run, in
order, on a fresh backend over the airline database, each result compared with the text τ²'s
environment recorded (a failed call as its `Error: ` text, with its error flag). No model is called.

    python benchmarks/bench_tau2_airline_replay.py --db TAU2/.../airline/db.json FILE...

A tool call is paired with its result by id, as `tau2.simulations` pairs them. Per file it
prints the calls replayed, how many came back identical, how many differ, and the first few
differences (tool, arguments, ours, τ²'s). The database must be the one the file was run on
(τ²-bench's `data/tau2/domains/airline/db.json` at the file's commit).

Measured on: tests/data/tau2/airline/results.json (140 of 140 identical), and on the tool calls
of four published airline results files (branch feature/gym's src/experiments/ gpt-4.1, its
fine-tune and qwen2.5:7b runs; branch dev/tau3's ToolOrchestra gpt-5 submission), each answered
by τ²'s own code over the test database: 1220 of 1220 identical. τ²'s airline db.json is absent
from the mirrored checkouts; rebuilt from τ-bench's airline data (benchmarks/tau2_airline_db.py),
the published files themselves replay 1214 of 1220 identical, the 6 others the same text without
the error flag ToolOrchestra's file omits (docs/tau2.md, "The airline domain").

A file that is not τ²'s airline domain (retail: bench_tau2_replay.py) is refused in one line
before any file is replayed, with exit status 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_commerce_evals.errors import RetailError  # noqa: E402
from pytest_commerce_evals.tau2.airline import AirlineBackend  # noqa: E402
from pytest_commerce_evals.tau2.simulations import load_results  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tau2_parity import refused  # noqa: E402


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def _flagged(message: dict[str, Any]) -> bool:
    flag = message.get("error")
    return flag is True or str(flag).lower() == "true"


def replay_file(path: str, db: str) -> tuple[int, int, list[str]]:
    """(calls, identical, differences described) for one results file."""
    results = load_results(path)
    calls = identical = 0
    diffs: list[str] = []
    for simulation in results.simulations:
        backend = AirlineBackend.load(db)
        pending: dict[str, dict[str, Any]] = {}
        for message in simulation.get("messages") or []:
            if message.get("role") == "assistant":
                for call in message.get("tool_calls") or []:
                    pending[str(call.get("id"))] = call
            elif message.get("role") == "tool":
                call = pending.get(str(message.get("id")))
                if call is None:
                    continue
                calls += 1
                arguments = _arguments(call.get("arguments"))
                try:
                    found = backend.call_tool(str(call.get("name")), arguments)
                    ours = (found if isinstance(found, str) else json.dumps(found)), False
                except RetailError as exc:
                    ours = f"Error: {exc}", True
                theirs = str(message.get("content")), _flagged(message)
                if ours == theirs:
                    identical += 1
                else:
                    diffs.append(
                        f"{simulation.get('id')} {call.get('name')}"
                        f"({json.dumps(arguments)[:160]})\n      ours:  {ours[0][:300]!r}"
                        f" error={ours[1]}\n      τ²'s: {theirs[0][:300]!r} error={theirs[1]}"
                    )
    return calls, identical, diffs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="τ²-bench's data/tau2/domains/airline/db.json")
    parser.add_argument("--show", type=int, default=5, help="differences shown per file")
    parser.add_argument("files", nargs="+", help="τ² airline results files")
    args = parser.parse_args(argv)
    lines = refused(args.files, ("airline",))
    if lines:
        print("\n".join(lines), file=sys.stderr)
        return 2
    print(f"{'file':<70} {'calls':>6} {'identical':>9} {'differing':>9}")
    differing = 0
    for path in args.files:
        calls, identical, diffs = replay_file(path, args.db)
        differing += len(diffs)
        print(f"{Path(path).name[-70:]:<70} {calls:>6} {identical:>9} {len(diffs):>9}")
        for diff in diffs[: args.show]:
            print(f"    {diff}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
