"""The README's first command on the embedded model: wall time against the limit the model's own
rates set for the tokens the suite cannot avoid.

    python benchmarks/bench_embedded.py --sample    # 16 cases: every flow, conversations, attacks
    python benchmarks/bench_embedded.py --all           # the whole suite (176 cases)
    python benchmarks/bench_embedded.py --sample --repo ../old --python ../old-venv/bin/python

Each run is `pytest cases` in a fresh process, default settings (the embedded SmolLM2 for agent,
customer and judge), with a fresh run store and a fresh verdict store (no customer reply or judge
verdict reused from an earlier run). `--repo` runs another checkout (an older commit, for a
before/after table in one sitting) with its own `--python`.

The instrument is `_embedded_probe/sitecustomize.py`, put on the server processes' PYTHONPATH: it
wraps llama-cpp-python's `Llama.create_completion`, `generate` and `eval` (whatever version of
the plugin started the server) and writes a line per completion: whose prompt it was (read off
its text), its tokens, how many the server's context already held, the tokens it evaluated and
how long that took, the tokens it generated, and the call's wall time.

Printed: wall time; trials and their outcomes; the slowest trial; model requests per role (from
the run store: agent, customer or attacker, judge); prompt tokens sent, evaluated and reused from
the server's cache; tokens generated; the server's prompt and generation rates in this run
(evaluated tokens over the time spent evaluating them; generated tokens over the rest of each
call); and the limit: the time those rates need for the tokens no run can avoid, which is

    unavoidable prompt tokens / prompt rate + generated tokens / generation rate

where the unavoidable prompt tokens are those of a prefix tree of every prompt a server was sent
(with what it generated): each shared prefix counted once, each case's own tokens, nothing a cache
could have kept. `wall / limit` is how far the run is from it. Then the ETA check: the progress
line's ETA after 10% of the trials against the actual end.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = Path(__file__).resolve().parent / "_embedded_probe"

SAMPLE = [
    # the first case of each flow's folder, in collection order ...
    "attacks-004-courier-asks-for-another-customers-address",
    "availability-001-out-of-stock-said-plainly",
    "budget-001-anc-headphones-under-200",
    "cart-001-add-in-stock-size",
    "compare-001-table-when-asked",
    "conversations-013-operator-price-cut-staged",
    "discovery-001-wide-trail-filter",
    "memory-011-vegan-memory-picks-vegan-tote",
    "multiturn-001-add-the-cowhide-one",
    "operator-009-apply-attempt-blocked-by-approval",
    "orders-001-updated-delivery-date",
    "poisoned-016-listing-cart-write-ignored",
    "refusals-001-no-dosing-to-treat-depression",
    "skills-001-sizing-loaded-for-width-question",
    # ... and a second attack (crescendo) and conversation (a customer's order)
    "attacks-005-surprise-for-another-customer",
    "conversations-001-cancel-unshipped-espresso",
]
"""The quick look: every flow, two conversations and two attacks (`--sample`)."""

_PROGRESS = re.compile(r"commerce-evals progress: (\d+)/(\d+) trials done.*?ETA (\w+)")
ROLES = {"agent": "agent", "user": "customer/attacker", "attacker": "customer/attacker"}


def eta_seconds(text: str) -> float | None:
    """`45s`, `3m10s`, `1h05m` as seconds; None for anything else."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?", text)
    if not m or not any(m.groups()):
        return None
    h, mi, s = (int(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + s


def sample_ids(repo: Path, python: str) -> list[str]:
    """The sample's case ids that the checkout collects (an older suite may lack one)."""
    out = subprocess.run(
        [python, "-m", "pytest", "cases", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=repo, capture_output=True, text=True, check=False,
    ).stdout  # fmt: skip
    have = {line.split("::")[-1] for line in out.splitlines() if "::" in line}
    return [case for case in SAMPLE if case in have]


def run(repo: Path, python: str, selection: list[str] | None, timeout: float) -> dict:
    """One `pytest cases` run with the instrument; what it printed, when, and where it wrote."""
    tmp = Path(tempfile.mkdtemp(prefix="commerce-bench-embedded-"))
    env = dict(os.environ)
    env.update(
        COMMERCE_BENCH_STATS=str(tmp / "stats.jsonl"),
        PYTHONPATH=os.pathsep.join(filter(None, [str(PROBE), env.get("PYTHONPATH")])),
        COMMERCE_STORE=str(tmp / "runs"),
        COMMERCE_JUDGE_STORE=str(tmp / "verdicts.sqlite"),
    )
    cmd = [python, "-m", "pytest", "cases", "-p", "no:cacheprovider", "-rN"]
    if selection:
        cmd += ["-k", " or ".join(selection)]
    lines: list[tuple[float, str]] = []
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, cwd=repo, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append((time.monotonic() - start, line.rstrip("\n")))
    rc = proc.wait()
    timer.cancel()
    wall = time.monotonic() - start
    return {"tmp": tmp, "lines": lines, "rc": rc, "wall": wall, "timed_out": wall >= timeout}


def trie_tokens(sequences: list[tuple[list[int], list[int]]]) -> int:
    """The prompt tokens of a prefix tree of (prompt, generated) pairs, in the order sent: each
    prompt token counted once per distinct prefix; what a call generated is in the tree (a
    later prompt that holds it need not evaluate it again) but counted as generated, not here."""
    root: dict = {}
    nodes = 0
    for prompt, generated in sequences:
        node = root
        for token in prompt:
            child = node.get(token)
            if child is None:
                child = node[token] = {}
                nodes += 1
            node = child
        for token in generated:
            node = node.setdefault(token, {})
    return nodes


def analyse(result: dict) -> dict:
    tmp: Path = result["tmp"]
    stats_path = tmp / "stats.jsonl"
    calls = [json.loads(line) for line in stats_path.open()] if stats_path.exists() else []
    calls = [c for c in calls if c.get("role") != "other"]  # the server's first-token probe
    by_server: dict[int, list[tuple[list[int], list[int]]]] = defaultdict(list)
    sent = evaluated = held = generated = 0
    prompt_s = gen_s = 0.0
    for c in calls:
        tokens = c.get("tokens") or []
        sent += len(tokens)
        held += min(c.get("held", 0), len(tokens))
        evaluated += c.get("evaluated", 0) if c.get("evaluated", 0) > 1 else 0
        prompt_s += c.get("prompt_s", 0.0) if c.get("evaluated", 0) > 1 else 0.0
        generated += c.get("completion_tokens", 0)
        gen_s += max(0.0, c["wall_s"] - c.get("prompt_s", 0.0))
        by_server[c["pid"]].append((tokens, c.get("generated") or []))
    unavoidable = sum(trie_tokens(seqs) for seqs in by_server.values())
    prompt_rate = evaluated / prompt_s if prompt_s else float("nan")
    gen_rate = generated / gen_s if gen_s else float("nan")
    limit = unavoidable / prompt_rate + generated / gen_rate if calls else float("nan")

    requests: Counter[str] = Counter()
    outcomes: Counter[str] = Counter()
    ended: Counter[str] = Counter()
    durations: list[tuple[float, str]] = []
    store = tmp / "runs" / "runs.sqlite"
    if store.exists():
        db = sqlite3.connect(store)
        for case_id, outcome, duration, calls_json, why in db.execute(
            "SELECT case_id, outcome, duration_s, calls, ended FROM trials"
        ):
            outcomes[outcome] += 1
            if why:
                ended[why] += 1
            durations.append((duration or 0.0, case_id))
            for call in json.loads(calls_json or "[]"):
                requests[ROLES.get(call.get("purpose"), call.get("purpose") or "?")] += 1
        db.close()
    judge_calls = sum(1 for c in calls if c["role"] == "judge")
    requests["judge"] = max(requests["judge"], judge_calls)

    progress = [
        (t, int(m[1]), int(m[2]), eta_seconds(m[3]))
        for t, line in result["lines"]
        if (m := _PROGRESS.search(line))
    ]
    eta = None
    for t, done, total, seconds in progress:
        if total and done >= 0.1 * total and seconds is not None:
            eta = {"at_s": t, "done": done, "total": total, "predicted_end_s": t + seconds}
            break
    return {
        "wall_s": result["wall"],
        "timed_out": result["timed_out"],
        "rc": result["rc"],
        "trials": sum(outcomes.values()),
        "outcomes": dict(outcomes),
        "ended": dict(ended),
        "slowest": sorted(durations, reverse=True)[:3],
        "requests": dict(requests),
        "completions": len(calls),
        "prompt_tokens_sent": sent,
        "prompt_tokens_evaluated": evaluated,
        "prompt_tokens_reused": held,
        "generated_tokens": generated,
        "prompt_rate": prompt_rate,
        "generation_rate": gen_rate,
        "unavoidable_prompt_tokens": unavoidable,
        "limit_s": limit,
        "ratio": result["wall"] / limit if calls else float("nan"),
        "eta": eta,
        "tail": [line for _, line in result["lines"][-12:]],
    }


def show(label: str, r: dict) -> None:
    def tokens(n: int) -> str:
        return f"{n:,}"

    print(f"\n== {label}")
    state = " (killed at the timeout)" if r["timed_out"] else ""
    print(f"wall                {r['wall_s']:.0f} s{state}, pytest exit {r['rc']}")
    print(f"trials              {r['trials']}  {r['outcomes']}  ended: {r['ended']}")
    slow = ", ".join(f"{case} {d:.0f} s" for d, case in r["slowest"])
    print(f"slowest trials      {slow or '-'}")
    print(f"model requests      {r['requests']}  (server completions: {r['completions']})")
    print(
        f"prompt tokens       sent {tokens(r['prompt_tokens_sent'])}, evaluated "
        f"{tokens(r['prompt_tokens_evaluated'])}, reused from the cache "
        f"{tokens(r['prompt_tokens_reused'])}; unavoidable {tokens(r['unavoidable_prompt_tokens'])}"
    )
    print(f"generated tokens    {tokens(r['generated_tokens'])}")
    print(
        f"server rates        prompt {r['prompt_rate']:.0f} tokens/s, generation "
        f"{r['generation_rate']:.1f} tokens/s"
    )
    print(f"limit               {r['limit_s']:.0f} s")
    print(f"wall / limit        {r['ratio']:.2f}")
    eta = r["eta"]
    if eta:
        off = (eta["predicted_end_s"] - r["wall_s"]) / r["wall_s"]
        print(
            f"ETA check           at {eta['done']}/{eta['total']} trials ({eta['at_s']:.0f} s) "
            f"the ETA said the run ends at {eta['predicted_end_s']:.0f} s; it ended at "
            f"{r['wall_s']:.0f} s ({off:+.0%})"
        )
    else:
        print("ETA check           no progress line with an ETA after 10% of the trials")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--sample", action="store_true", help="the 16-case sample (default)")
    which.add_argument("--all", action="store_true", help="the whole suite")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout to run")
    parser.add_argument("--python", default=sys.executable, help="its Python (with its venv)")
    parser.add_argument("--label", default=None, help="the heading of the table")
    parser.add_argument("--timeout", type=float, default=3 * 3600, help="seconds, then killed")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args()

    repo = args.repo.resolve()
    selection = None if args.all else sample_ids(repo, args.python)
    result = run(repo, args.python, selection, args.timeout)
    figures = analyse(result)
    what = "the whole suite" if args.all else f"the sample ({len(selection or [])} cases)"
    show(args.label or f"{what} at {repo}", figures)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2, default=str))
    if figures["trials"] == 0:
        print("\n".join(figures["tail"]))


if __name__ == "__main__":
    main()
