"""How exactly the τ² retail backend answers as τ²'s own tools do: every tool call of τ²'s
published retail results files replayed on `RetailBackend` (each simulation on a fresh one, reads
and refused calls included), each result's text beside the one τ² recorded. No model is called.

    python benchmarks/bench_tau2_replay.py --db TAU2/data/tau2/domains/retail/db.json FILE...

It prints a table, one row per file: the calls replayed, how many give τ²'s text exactly, how many
differ, and the first few differences (tool, arguments, τ²'s text, ours). The exit status is 1
when any call differs; a file that is not τ²'s retail domain (airline: bench_tau2_airline_replay.py)
is refused in one line before any file is replayed, with exit status 2.

The files this was measured on are the ones `bench_tau2_parity.py` names (τ²-bench at commit
a2c0247 for db.json; results files from its branches feature/gym and dev/tau3).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_commerce_evals.tau2.replay import CallCheck, replay_calls  # noqa: E402
from pytest_commerce_evals.tau2.retail import RetailBackend  # noqa: E402
from pytest_commerce_evals.tau2.simulations import load_results  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_tau2_parity import refused  # noqa: E402


def _cut(text: str, n: int = 160) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _difference(check: CallCheck) -> str:
    """Where the two texts part, with a little before it."""
    at = next(
        (i for i, (a, b) in enumerate(zip(check.recorded, check.ours, strict=False)) if a != b),
        min(len(check.recorded), len(check.ours)),
    )
    start = max(0, at - 40)
    return (
        f"{check.simulation[:12]} {check.name}({_cut(json.dumps(check.arguments), 80)}) "
        f"from char {at}: τ² {_cut(check.recorded[start:])!r} / ours {_cut(check.ours[start:])!r}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="τ²-bench's data/tau2/domains/retail/db.json")
    parser.add_argument("files", nargs="+", help="τ² results files (simulations with tool calls)")
    parser.add_argument("--show", type=int, default=5, help="differences shown per file")
    args = parser.parse_args(argv)
    lines = refused(args.files, ("retail",))
    if lines:
        print("\n".join(lines), file=sys.stderr)
        return 2
    rows = []
    for path in args.files:
        checks = replay_calls(load_results(path), lambda: RetailBackend.load(args.db))
        rows.append((Path(path).name, checks))
    width = max(len("file"), *(len(name) for name, _ in rows))
    print(f"{'file':<{width}}  {'calls':>6}  {'identical':>9}  {'differing':>9}")
    for name, checks in rows:
        differing = [c for c in checks if not c.same]
        print(
            f"{name:<{width}}  {len(checks):>6}  {len(checks) - len(differing):>9}  "
            f"{len(differing):>9}"
        )
        for check in differing[: args.show]:
            print(f"    {_difference(check)}")
    calls = sum(len(c) for _, c in rows)
    same = sum(c.same for _, checks in rows for c in checks)
    print(f"{'all':<{width}}  {calls:>6}  {same:>9}  {calls - same:>9}")
    return 0 if same == calls else 1


if __name__ == "__main__":
    raise SystemExit(main())
