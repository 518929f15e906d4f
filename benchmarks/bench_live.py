"""Throughput of production mode over 10,000 captured conversations.

The traffic reuses the reference agent's transcripts (scripted FakeClient over the reference
backend, captured through CaptureWriter) under 10,000 distinct conversation ids. Every
conversation is sampled (rate 1.0) and judged by a FakeClient judge that answers instantly, so
what is measured is the harness: reading, validating, redacting, rendering prompts, parsing
verdicts, storing them.

    .venv/bin/python benchmarks/bench_live.py [--conversations N] [--dimensions a,b]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from live_traffic import write_traffic  # noqa: E402

from pytest_commerce_evals.judge.judge import Judge  # noqa: E402
from pytest_commerce_evals.judge.verdict_store import VerdictStore  # noqa: E402
from pytest_commerce_evals.live import Redactor, read_capture  # noqa: E402
from pytest_commerce_evals.rubrics import STANDARD  # noqa: E402
from pytest_commerce_evals.testing.fake import FakeClient  # noqa: E402

PASS = '{"reasoning": "fine", "verdict": "PASS"}'


def timed(label: str, fn, n: int, results: dict[str, float]):
    start = time.perf_counter()
    out = fn()
    elapsed = time.perf_counter() - start
    results[label] = elapsed
    print(f"{label:<44} {elapsed:8.2f} s  {n / elapsed:10.0f} conversations/s")
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=10_000)
    parser.add_argument("--dimensions", default=",".join(STANDARD))
    parser.add_argument(
        "--verdict-store",
        action="store_true",
        help="also time judging through the SQLite verdict store",
    )
    args = parser.parse_args()
    n = args.conversations
    dims = {d: STANDARD[d].text for d in args.dimensions.split(",")}
    folder = Path(tempfile.mkdtemp(prefix="bench-live-"))
    path = folder / "traffic.jsonl"
    results: dict[str, float] = {}
    ids = [f"conv-{i:06d}" for i in range(n)]
    timed("capture (CaptureWriter, raw)", lambda: write_traffic(path, ids), n, results)
    lines = sum(1 for _ in path.open())
    print(f"  {lines} lines, {path.stat().st_size / 1e6:.1f} MB")
    timed("parse + validate (no redaction)", lambda: read_capture([path], rate=1.0), n, results)
    capture = timed(
        "parse + validate + redact",
        lambda: read_capture([path], rate=1.0, redactor=Redactor()),
        n,
        results,
    )
    assert len(capture.conversations) == n and not capture.problems

    def judge_all(store: VerdictStore | None) -> int:
        judge = Judge(FakeClient(lambda request: PASS), "bench-judge", store=store)
        count = 0
        for conv in capture.conversations:
            count += len(judge.grade_transcript(conv.user_messages, conv.events, dims))
        return count

    verdicts = timed(
        f"judge {len(dims)} dimensions, no verdict store", lambda: judge_all(None), n, results
    )
    if args.verdict_store:
        store = VerdictStore(folder / "verdicts.sqlite")
        timed(
            f"judge {len(dims)} dimensions, verdict store (cold)",
            lambda: judge_all(store),
            n,
            results,
        )
        timed(
            f"judge {len(dims)} dimensions, verdict store (reused)",
            lambda: judge_all(store),
            n,
            results,
        )
    parse = results["parse + validate + redact"]
    print(f"\n{verdicts} verdicts per pass ({verdicts / n:.0f} per conversation)")
    print("per-conversation cost relative to parse + validate + redact:")
    for label, seconds in results.items():
        print(f"  {label:<44} {seconds / parse:6.1f}x")


if __name__ == "__main__":
    main()
