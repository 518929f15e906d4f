"""Parity with τ²-bench: every simulation of τ²'s published retail results files graded by this
plugin's code graders (its task as a case, its trajectory as a trial, its final state replayed on
the τ² retail backend), beside the reward τ² gave it. No model is called.

    python benchmarks/bench_tau2_parity.py --db TAU2/data/tau2/domains/retail/db.json FILE...

Each file is graded against the tasks it carries (τ²'s tasks change between commits; `--tasks`
names a checkout's tasks.json for a file that carries none), and says which. Per file it prints how
often our verdict equals τ²'s reward as the simulations are labelled, the data defects it found
(simulations labelled with another task's id; failed tool results without τ²'s error flag), the
agreement once each mislabelled simulation is graded against the task τ² actually graded it against
(its `action_checks` name it), and each remaining disagreement, classified (ours wrong, theirs
wrong with the evidence, data defect).

Every file's domain is checked before any is graded: a file of a domain this does not grade
(telecom), or whose tasks' reward basis lists a check no case grades (`ACTION`, `ENV_ASSERTION`),
is refused in one line naming the file, and the exit status is 2.

The files this was measured on (τ²-bench at commit a2c0247 for db.json and tasks.json; results
files from its branches, by blob): gpt-4.1 and its fine-tune on 40 retail tasks
(src/experiments/model_training/results/, branch feature/gym) and ToolOrchestra's gpt-5 run on
114 tasks (web/leaderboard/public/submissions/toolorchestra_nvidia_2025-12-02/, branch
dev/tau3).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_commerce_evals.tau2.domains import check_domain  # noqa: E402
from pytest_commerce_evals.tau2.parity import parity  # noqa: E402
from pytest_commerce_evals.tau2.simulations import load_results  # noqa: E402


def refused(paths: list[str], domains: tuple[str, ...] | None = None) -> list[str]:
    """One line per file that cannot be run: not a τ² results file, or of a domain other than
    `domains` (default: the ones graded)."""
    lines = []
    for path in paths:
        try:
            results = load_results(path)
            if domains is None:
                check_domain(results.domain, path)
            else:
                check_domain(results.domain, path, runs=domains, doing="replays")
        except ValueError as exc:
            lines.append(f"error: {exc}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="τ²-bench's data/tau2/domains/retail/db.json")
    parser.add_argument(
        "--tasks",
        help="a checkout's tasks.json, for a results file that carries no tasks (a file that "
        "carries its tasks is graded against them: τ²'s tasks change between commits)",
    )
    parser.add_argument("files", nargs="+", help="τ² results files (simulations with rewards)")
    args = parser.parse_args(argv)
    lines = refused(args.files)
    if lines:
        print("\n".join(lines), file=sys.stderr)
        return 2
    worst = 1.0
    for path in args.files:
        try:
            found = parity(path, args.db, args.tasks)
        except (ValueError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        n = len(found.verdicts)
        mislabelled = [v for v in found.verdicts if any(d.kind == "task-id" for d in v.defects)]
        unflagged = [
            v for v in found.verdicts if any(d.kind == "unflagged-error" for d in v.defects)
        ]
        # each simulation's verdict against the task τ² graded it against
        settled = [
            (v.relabelled if v.relabelled is not None else v.ours) == v.theirs
            for v in found.verdicts
        ]
        rate = sum(settled) / n if n else 0.0
        worst = min(worst, rate)
        print(f"{Path(path).name}")
        print(f"  graded against {found.tasks}")
        print(f"  simulations {n}, τ² reward 1.0 on {sum(v.theirs for v in found.verdicts)}")
        print(f"  as labelled: ours = τ²'s on {found.agree}/{n} ({found.rate:.1%})")
        print(
            f"  data defects: {len(mislabelled)} labelled with another task's id, "
            f"{len(unflagged)} with a failed tool result not flagged as an error"
        )
        print(
            f"  graded against the task τ² graded: ours = τ²'s on {sum(settled)}/{n} ({rate:.1%})"
        )
        left = [v for v, ok in zip(found.verdicts, settled, strict=True) if not ok]
        kinds = Counter(v.kind or "ours" for v in left)
        print(f"  disagreements left: {len(left)} {dict(kinds) if kinds else ''}")
        for v in left:
            print(
                f"    task {v.task} sim {v.simulation[:8]}: ours {v.ours}, τ² {v.theirs}: "
                f"{v.kind}: {v.evidence[:300]}"
            )
    print(f"worst file: {worst:.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
