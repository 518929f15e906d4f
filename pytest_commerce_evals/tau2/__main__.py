"""`python -m pytest_commerce_evals.tau2 import PATH --domain retail --out cases/tau2-retail`:
one case file per task of a τ²-bench checkout at PATH (its data is not shipped here), a `_set.yaml`,
and a `conftest.py` that gives each trial a fresh τ² retail backend over the checkout's database.
Bring your agent with `pytest_commerce_evals_make_agent` (docs/tau2.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from .tasks import TAU2_COMMIT, TaskError, case_of

CONFTEST = '''"""Written by `python -m pytest_commerce_evals.tau2 import`: a fresh τ²-bench
{domain} backend per trial, over the checkout's database."""

from pytest_commerce_evals.tau2.retail import RetailBackend

DB = {db!r}


def pytest_commerce_evals_make_backend(config, case):
    return RetailBackend.load(DB)
'''


def import_tasks(checkout: Path, domain: str, out: Path) -> int:
    """Write the cases; returns how many. A `ValueError` names what is missing or unreadable."""
    folder = checkout / "data" / "tau2" / "domains" / domain
    tasks_path, db_path = folder / "tasks.json", folder / "db.json"
    for path in (tasks_path, db_path):
        if not path.is_file():
            raise ValueError(f"{path}: not found; give the root of a τ²-bench checkout")
    try:
        tasks = json.loads(tasks_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{tasks_path}: not JSON ({exc})") from None
    if not isinstance(tasks, list):
        raise ValueError(f"{tasks_path}: expected a list of tasks")
    out.mkdir(parents=True, exist_ok=True)
    problems = []
    written = 0
    for task in tasks:
        try:
            case = case_of(task, domain=domain)
        except TaskError as exc:
            problems.append(str(exc))
            continue
        name = case["id"].split("-", 1)[1] + ".yaml"
        (out / name).write_text(
            yaml.safe_dump(case, sort_keys=False, allow_unicode=True, width=100), encoding="utf-8"
        )
        written += 1
    (out / "_set.yaml").write_text(
        yaml.safe_dump(
            {
                "threshold": 0.0,
                "description": f"τ²-bench {domain} tasks (converted against τ²-bench "
                f"{TAU2_COMMIT[:7]}); the threshold is yours to set.",
            },
            sort_keys=False,
            allow_unicode=True,
        ),
        encoding="utf-8",
    )
    (out / "conftest.py").write_text(
        CONFTEST.format(domain=domain, db=str(db_path.resolve())), encoding="utf-8"
    )
    for problem in problems:
        print(f"skipped: {problem}", file=sys.stderr)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_commerce_evals.tau2")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("import", help="τ² tasks as case files")
    command.add_argument("path", type=Path, help="the root of a τ²-bench checkout")
    command.add_argument("--domain", default="retail", choices=["retail"])
    command.add_argument("--out", type=Path, required=True, help="the folder to write")
    args = parser.parse_args(argv)
    try:
        n = import_tasks(args.path, args.domain, args.out)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {n} case(s) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
