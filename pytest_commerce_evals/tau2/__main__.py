"""`python -m pytest_commerce_evals.tau2 import PATH --domain retail --out cases/tau2-retail`:
one case file per task of a τ²-bench checkout at PATH (its data is not shipped here), a `_set.yaml`,
and a `conftest.py` that gives each trial a fresh τ² retail backend over the checkout's database.
Bring your agent with `pytest_commerce_evals_make_agent` (docs/tau2.md).

`python -m pytest_commerce_evals.tau2 import-results RESULTS --db DB --out run.json`: τ²'s
published simulations as a run record, for `--commerce-store-import` and `--commerce-regrade`."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from .tasks import TAU2_COMMIT, TaskError, case_of

CONFTEST = '''"""Written by `python -m pytest_commerce_evals.tau2 import`: a fresh τ²-bench
{domain} backend per trial, over the checkout's database."""

from pathlib import Path

from pytest_commerce_evals.tau2.retail import RetailBackend

DB = {db!r}
POLICY = {policy!r}


def pytest_commerce_evals_make_backend(config, case):
    return RetailBackend.load(DB)


def pytest_commerce_evals_make_agent(config, case, backend):
    """The plugin's τ² agent on the configured agent endpoint; replace it with yours."""
    from pytest_commerce_evals.models.endpoint import session_client
    from pytest_commerce_evals.tau2.agent import Tau2Agent

    client = session_client(config, "agent")
    policy = Path(POLICY).read_text(encoding="utf-8") if Path(POLICY).is_file() else ""
    return Tau2Agent(client, client.endpoint.model, policy=policy)
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
        CONFTEST.format(
            domain=domain,
            db=str(db_path.resolve()),
            policy=str((folder / "policy.md").resolve()),
        ),
        encoding="utf-8",
    )
    for problem in problems:
        print(f"skipped: {problem}", file=sys.stderr)
    return written


def import_results(path: Path, db: Path, out: Path, set_name: str) -> tuple[int, list[str]]:
    """Write τ²'s results file at `path` as a run record (`--commerce-store-import` stores it):
    one trial per simulation, its outcome τ²'s reward, its final state the replay of its tool
    calls on the database at `db`. Returns the trials written and the data defects found."""
    from ..store.aggregate import set_results
    from ..store.record_file import write_record
    from ..store.records import RunRecord, Selection
    from .retail import RetailBackend
    from .simulations import load_results, trial_of

    results = load_results(path)
    trials = []
    defects: list[str] = []
    seen: dict[str, int] = {}
    for simulation in results.simulations:
        trial, found = trial_of(results, simulation, lambda: RetailBackend.load(db))
        defects += [f"{d.kind}: simulation {d.simulation}: {d.evidence}" for d in found]
        seen[trial.case_id] = seen.get(trial.case_id, 0) + 1
        reward = (simulation.get("reward_info") or {}).get("reward")
        trial.trial = seen[trial.case_id]
        trial.set_name = set_name
        trial.outcome = "pass" if reward is not None and float(reward) >= 1.0 else "fail"
        trials.append(trial)
    for t in trials:
        t.trials = seen[t.case_id]
    started = str(json.loads(path.read_text(encoding="utf-8")).get("timestamp") or "")
    stem = "".join(c if c.isalnum() else "-" for c in path.stem)[:60]
    record = RunRecord(
        run_id=f"tau2-{stem}",
        started_at=started or "1970-01-01T00:00:00",
        ended_at=started or None,
        complete=True,
        exit_status=0,
        agent_model=str(((results.info.get("agent_info") or {}).get("llm")) or "") or None,
        selection=Selection(args=[set_name], trials=max(seen.values(), default=1)),
        sets=set_results(trials),
        trials=trials,
    )
    write_record(record, out)
    return len(trials), defects


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_commerce_evals.tau2")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("import", help="τ² tasks as case files")
    command.add_argument("path", type=Path, help="the root of a τ²-bench checkout")
    command.add_argument("--domain", default="retail", choices=["retail"])
    command.add_argument("--out", type=Path, required=True, help="the folder to write")
    runs = commands.add_parser(
        "import-results", help="τ²'s published simulations as a run record to store and regrade"
    )
    runs.add_argument("results", type=Path, help="a τ² results file (simulations with rewards)")
    runs.add_argument("--db", type=Path, required=True, help="the domain's db.json")
    runs.add_argument("--out", type=Path, required=True, help="the run record to write (JSON)")
    runs.add_argument("--set", default="cases/tau2-retail", help="the cases' folder (its set)")
    args = parser.parse_args(argv)
    try:
        if args.command == "import":
            n = import_tasks(args.path, args.domain, args.out)
            print(f"wrote {n} case(s) to {args.out}")
            return 0
        n, defects = import_results(args.results, args.db, args.out, args.set)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    for defect in defects:
        print(f"data defect: {defect}", file=sys.stderr)
    print(
        f"wrote {n} trial(s) to {args.out} ({len(defects)} data defect(s)); store it with "
        f"pytest --commerce-store-import={args.out}, then regrade with "
        f"pytest {args.set} --commerce-regrade=<its run id>"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
