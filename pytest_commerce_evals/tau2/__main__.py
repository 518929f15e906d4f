"""`python -m pytest_commerce_evals.tau2 import PATH --domain retail --out cases/tau2-retail`:
one case file per task of a τ²-bench checkout at PATH (its data is not shipped here), a `_set.yaml`,
and a `conftest.py` that gives each trial a fresh τ² retail backend over the checkout's database.
Bring your agent with `pytest_commerce_evals_make_agent` (docs/tau2.md).

`python -m pytest_commerce_evals.tau2 import-results RESULTS --db DB --out run.json`: τ²'s
published simulations as a run record, for `--commerce-store-import` and `--commerce-regrade`."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import yaml

from ..errors import CheckoutSourceError
from .customer import customer_view, scenario_text
from .domains import DOMAINS
from .imported import AGENT_VIEW, CHECKOUT_ENV, CUSTOMER_VIEW
from .prompts import agent_view
from .tasks import TAU2_COMMIT, TaskError, case_of, ungraded_refusal

CONFTEST_FIRST = '"""Written by `python -m pytest_commerce_evals.tau2 import`'
CONFTEST = '''"""Written by `python -m pytest_commerce_evals.tau2 import`: a fresh τ²-bench
{domain} backend per trial, over the checkout's database, and this folder's cases collected
wherever it lies. The checkout is ${env} when set, else {relative!r} from this folder (where it
was when the cases were imported, from τ²-bench {commit})."""

from pytest_commerce_evals.tau2.imported import Checkout

CHECKOUT = Checkout(__file__, {relative!r}, domain={domain!r})


def pytest_collect_file(file_path, parent):
    return CHECKOUT.collect(file_path, parent)


def pytest_commerce_evals_make_user(config, case):
    """τ²'s simulated customer on the customer endpoint (_tau2_customer.yaml); None: the
    plugin's own plays the case's brief."""
    return CHECKOUT.customer(config, case)


def pytest_commerce_evals_make_backend(config, case):
    return CHECKOUT.backend()


def pytest_commerce_evals_make_agent(config, case, backend):
    """The plugin's τ² agent on the configured agent endpoint, shown what τ²'s agent is shown
    (_tau2_agent.yaml); replace it with yours."""
    from pytest_commerce_evals.models.clients import session_client

    client = session_client(config, "agent")
    return CHECKOUT.agent(client, client.endpoint.model)
'''


MARK = "# Written by python -m pytest_commerce_evals.tau2 import"
"""The first line of every file the importer writes: it writes over such files only."""
MAX_CASE_CHARS = 1_000_000
"""A converted task's case file at most: past it the task is skipped as unreadable."""


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # nested past Python's limit: not readable here
        raise ValueError(
            f"{path}: not JSON this importer can read ({type(exc).__name__})"
        ) from None
    except OSError as exc:
        raise ValueError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _out_folder(out: Path, flag: str = "--out") -> Path:
    """`out` (given as `flag`) as a folder to write into: made when missing; never a file or a
    link."""
    if out.is_symlink():
        raise ValueError(f"{flag} {out}: is a link; give a folder (the importer follows no link)")
    if out.exists() and not out.is_dir():
        raise ValueError(f"{flag} {out}: is a file; give a folder to write the cases into")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{flag} {out}: cannot be made ({exc.strerror or exc})") from None
    return out


def _dump(data: Any) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # the C writer: a large field is fast
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100)


def _checked(case: dict[str, Any], folder: Path) -> str:
    """The case file's text, once the plugin's own loader reads it back as a valid case."""
    from ..cases.loader import load_case_file

    text = f"{MARK}\n" + _dump(case)
    if len(text) > MAX_CASE_CHARS:
        raise TaskError(
            f"its case file would be {len(text):,} characters (at most {MAX_CASE_CHARS:,})"
        )
    probe = folder / "probe.yaml"
    probe.write_text(text, encoding="utf-8", errors="strict")
    loaded = load_case_file(probe)
    if loaded.problems or len(loaded.cases) != 1:
        first = loaded.problems[0] if loaded.problems else None
        why = f"{first.key}: {first.message}" if first else "no case"
        raise TaskError(f"its case does not load as a valid case ({why[:200]})")
    return text


def _write_own(out: Path, name: str, text: str) -> str | None:
    """Write `out/name` unless a file the importer did not write is there, or a link; the
    reason it was not written, else None."""
    target = out / name
    if target.is_symlink():
        return f"{target}: is a link; not followed, not written"
    if target.exists():
        if not target.is_file():  # a folder, a pipe (opening one to read waits for a writer)
            return f"{target}: not a file; not written over"
        try:
            with target.open(encoding="utf-8", errors="replace") as existing:
                first = existing.readline().strip()
        except OSError as exc:
            return f"{target}: cannot be read ({exc.strerror or exc}); not written"
        own = first == MARK or (name == "conftest.py" and first.startswith(CONFTEST_FIRST))
        if not own:
            return f"{target}: a file this importer did not write is there; not written over"
    try:
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        return f"{target}: cannot be written ({exc.strerror or exc})"
    return None


def import_tasks(checkout: Path, domain: str, out: Path) -> tuple[int, list[str]]:
    """Write the cases; returns how many and what was skipped (a task that does not convert to
    a valid case, a file it would not write). A `ValueError` names what is missing or
    unreadable; nothing is written then."""
    folder = _domain_folder(checkout, domain)
    tasks_path = folder / "tasks.json"
    tasks = _load_json(tasks_path)
    if not isinstance(tasks, list):
        raise ValueError(f"{tasks_path}: expected a list of tasks")
    commit = checkout_commit(checkout)
    return write_cases(tasks, checkout, domain, out, commit=commit, source=None)


def _domain_folder(checkout: Path, domain: str) -> Path:
    """The domain's folder of a τ²-bench checkout, once its tasks, database and policy are
    there (a `ValueError` names the first missing)."""
    folder = checkout / "data" / "tau2" / "domains" / domain
    for name in ("tasks.json", "db.json", "policy.md"):
        if not (folder / name).is_file():
            raise ValueError(f"{folder / name}: not found; give the root of a τ²-bench checkout")
    return folder


def write_cases(
    tasks: list[Any],
    checkout: Path,
    domain: str,
    out: Path,
    *,
    commit: str | None,
    source: str | None,
) -> tuple[int, list[str]]:
    """Write `tasks` as case files in `out`, with the `_set.yaml` and the `conftest.py` that runs
    them against `checkout`; `commit` is the τ²-bench commit the tasks are from, `source` the
    results file that carried them (None: the checkout's own). Returns the cases written and
    what was skipped. A task whose reward basis lists a check no case grades (`ACTION`,
    `ENV_ASSERTION`) refuses the whole import, by name, before anything is written."""
    import tempfile

    from .domains import domain_tools

    tools = domain_tools(domain)
    refusal = ungraded_refusal(tasks, domain)
    if refusal is not None:
        raise ValueError(f"{refusal}; nothing written")
    out = _out_folder(out)
    problems: list[str] = []
    files: dict[str, str] = {}
    taken: set[str] = set()
    scenarios: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for n, task in enumerate(tasks, 1):
            try:
                case = case_of(task, domain=domain, commit=commit)
                unknown = sorted(
                    {a["tool"] for a in case["expected"].get("same_state_as") or []} - set(tools)
                )
                if unknown:
                    raise TaskError(
                        f"its gold actions name tools the {domain} backend does not have: "
                        f"{', '.join(unknown)[:200]}"
                    )
                if source is not None:
                    case["notes"] += f" The tasks {source} carries."
                case["id"] = _unique(case["id"], taken)
                files[case["id"].split("-", 1)[1] + ".yaml"] = _checked(case, Path(scratch))
                try:
                    scenarios[case["id"]] = scenario_text(task.get("user_scenario"))
                except ValueError:
                    pass  # the built-in customer plays the case's brief
            except (TaskError, UnicodeError, OSError, RecursionError, ValueError) as exc:
                problems.append(f"task {n} skipped: {str(exc)[:300]}")
    origin = f"the tasks {source} carries" if source else f"τ²-bench {domain} tasks"
    files["_set.yaml"] = f"{MARK}\n" + _dump(
        {
            "threshold": 0.0,
            "description": f"{origin}, from commit {commit or 'unknown'} (the converter was "
            f"written against {TAU2_COMMIT[:7]}); the threshold is yours to set.",
        }
    )
    try:
        view = agent_view(checkout, domain)
    except CheckoutSourceError as exc:
        problems.append(
            f"{AGENT_VIEW} not written: {str(exc)[:300]}; the agent gets this backend's own "
            "tool schemas and the policy alone"
        )
    else:
        files[AGENT_VIEW] = f"{MARK}\n" + _dump(view)
    try:
        files[CUSTOMER_VIEW] = f"{MARK}\n" + _dump(
            {**customer_view(checkout), "scenarios": scenarios}
        )
    except CheckoutSourceError as exc:
        problems.append(
            f"{CUSTOMER_VIEW} not written: {str(exc)[:300]}; the plugin's own simulated "
            "customer plays each case's brief"
        )
    files["conftest.py"] = CONFTEST.format(
        domain=domain,
        relative=_relative(checkout, out),
        env=CHECKOUT_ENV,
        commit=commit or "an unknown commit",
    )
    written = 0
    for name, text in files.items():
        why = _write_own(out, name, text)
        if why is not None:
            problems.append(why)
        elif name.endswith(".yaml") and not name.startswith("_"):
            written += 1
    return written, problems


def _relative(checkout: Path, out: Path) -> str:
    """The checkout as the conftest finds it: relative to the folder written (absolute where no
    relative path joins them, as across drives)."""
    try:
        return Path(os.path.relpath(checkout.resolve(), out.resolve())).as_posix()
    except ValueError:
        return checkout.resolve().as_posix()


def checkout_commit(checkout: Path) -> str | None:
    """The commit a τ²-bench checkout is at, read from its `.git` (no git needed); None when
    it is not a git checkout or the commit cannot be told."""
    git = checkout / ".git"
    try:
        if git.is_file():  # a worktree or submodule: `gitdir: <path>`
            text = git.read_text(encoding="utf-8").strip()
            if not text.startswith("gitdir:"):
                return None
            git = (checkout / text.removeprefix("gitdir:").strip()).resolve()
        head = (git / "HEAD").read_text(encoding="utf-8").strip()
        if not head.startswith("ref:"):
            return head if _is_sha(head) else None
        ref = head.removeprefix("ref:").strip()
        loose = git / ref
        if loose.is_file():
            sha = loose.read_text(encoding="utf-8").strip()
            return sha if _is_sha(sha) else None
        packed = git / "packed-refs"
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref and _is_sha(sha):
                return sha
    except (OSError, UnicodeError):
        return None
    return None


def _is_sha(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)


def _unique(case_id: str, taken: set[str]) -> str:
    """`case_id`, or with `-2`, `-3`... when an earlier task's id reads the same (ids `a b`,
    `a-b` and `A_B` all read `a-b`): each task its own case and file."""
    found, n = case_id, 1
    while found in taken:
        n += 1
        found = f"{case_id}-{n}"
    taken.add(found)
    return found


def _reward(simulation: dict[str, Any]) -> float | None:
    """τ²'s reward for a simulation: a number, or None when it has none; anything else is not
    a reward (`ValueError`)."""
    info = simulation.get("reward_info") or {}
    if not isinstance(info, dict):
        raise ValueError(f"reward_info is {type(info).__name__}, not a mapping")
    reward = info.get("reward")
    if reward is None:
        return None
    if isinstance(reward, bool) or not isinstance(reward, int | float):
        raise ValueError(f"reward is {str(reward)[:40]!r}, not a number")
    return float(reward)


def results_tasks(path: Path, db: Path, cases: Path) -> tuple[int, list[str], str]:
    """Write the tasks a results file was graded with as cases in `cases`: the tasks the file
    carries, else (a file with none) those of the checkout `db` belongs to. Returns the cases
    written, what was skipped, and which tasks they are, in words."""
    from .domains import check_domain
    from .simulations import load_results

    checkout = db.resolve().parents[4] if len(db.resolve().parents) > 4 else db.parent
    domain_folder = db.resolve().parent
    results = load_results(path)
    check_domain(results.domain, path)
    refusal = ungraded_refusal(results.tasks.values(), results.domain)
    if refusal is not None:
        raise ValueError(f"{path}: {refusal}; nothing written")
    try:
        _domain_folder(checkout, domain_folder.name)
    except ValueError as exc:
        raise ValueError(
            f"--cases needs --db to be the db.json of a τ²-bench checkout (its tasks.json and "
            f"policy.md beside it): {exc}"
        ) from None
    _out_folder(cases, "--cases")  # refused as what it was given as
    if results.tasks:
        info_commit = results.info.get("git_commit")
        commit = str(info_commit) if info_commit else None
        n, problems = write_cases(
            list(results.tasks.values()),
            checkout,
            results.domain,
            cases,
            commit=commit,
            source=path.name,
        )
        return n, problems, f"the {len(results.tasks)} tasks {path.name} carries"
    tasks = _load_json(domain_folder / "tasks.json")
    if not isinstance(tasks, list):
        raise ValueError(f"{domain_folder / 'tasks.json'}: expected a list of tasks")
    commit = checkout_commit(checkout)
    n, problems = write_cases(tasks, checkout, results.domain, cases, commit=commit, source=None)
    return (
        n,
        problems,
        (
            f"{path.name} carries no tasks: the checkout's {len(tasks)} "
            f"({domain_folder / 'tasks.json'}, commit {commit or 'unknown'})"
        ),
    )


def import_results(
    path: Path, db: Path, out: Path, set_name: str, skipped: list[str] | None = None
) -> tuple[int, list[str]]:
    """Write τ²'s results file at `path` as a run record (`--commerce-store-import` stores it):
    one trial per simulation, its outcome τ²'s reward, its final state the replay of its tool
    calls on the database at `db`. Returns the trials written and the data defects found; a
    simulation that cannot be read is skipped, with a line in `skipped`."""
    skipped = [] if skipped is None else skipped
    if out.is_dir() or out.is_symlink():
        raise ValueError(f"--out {out}: is a folder or a link; give the path of a JSON file")
    from ..runs import RunRecord, Selection
    from ..store.aggregate import set_results
    from ..store.record_file import write_record
    from .domains import backend_class, check_domain
    from .simulations import load_results, trial_of

    results = load_results(path)
    check_domain(results.domain, path)
    refusal = ungraded_refusal(results.tasks.values(), results.domain)
    if refusal is not None:
        raise ValueError(f"{path}: {refusal}; nothing written")
    backend = backend_class(results.domain)
    trials = []
    defects: list[str] = []
    seen: dict[str, int] = {}
    for n, simulation in enumerate(results.simulations, 1):
        try:
            if not isinstance(simulation, dict):
                raise TypeError(f"a simulation is {type(simulation).__name__}, not a mapping")
            reward = _reward(simulation)
            trial, found = trial_of(results, simulation, lambda: backend.load(db))
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as exc:
            skipped.append(f"simulation {n} skipped: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        defects += [f"{d.kind}: simulation {d.simulation}: {d.evidence}" for d in found]
        seen[trial.case_id] = seen.get(trial.case_id, 0) + 1
        trial.trial = seen[trial.case_id]
        trial.set_name = set_name
        trial.outcome = "pass" if reward is not None and reward >= 1.0 else "fail"
        trials.append(trial)
    for t in trials:
        t.trials = seen[t.case_id]
    started = str(_load_json(path).get("timestamp") or "")
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


def _tasks_hint(path: Path) -> str:
    """Which tasks a regrade of the record would use, when `--cases` wrote none."""
    from .simulations import load_results

    carried = len(load_results(path).tasks)
    if carried:
        return (
            f"{path.name} carries the {carried} tasks it was graded with: give --cases DIR to "
            "write them as cases and regrade against them (the cases you imported are from "
            "your checkout's tasks, which may differ)"
        )
    return f"{path.name} carries no tasks: a regrade uses the cases you imported from a checkout"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_commerce_evals.tau2")
    commands = parser.add_subparsers(dest="command", required=True)
    command = commands.add_parser("import", help="τ² tasks as case files")
    command.add_argument("path", type=Path, help="the root of a τ²-bench checkout")
    command.add_argument("--domain", default="retail", choices=list(DOMAINS))
    command.add_argument("--out", type=Path, required=True, help="the folder to write")
    runs = commands.add_parser(
        "import-results", help="τ²'s published simulations as a run record to store and regrade"
    )
    runs.add_argument("results", type=Path, help="a τ² results file (simulations with rewards)")
    runs.add_argument("--db", type=Path, required=True, help="the domain's db.json")
    runs.add_argument("--out", type=Path, required=True, help="the run record to write (JSON)")
    runs.add_argument(
        "--set",
        default=None,
        help="the cases' folder (its set; default: --cases, else cases/tau2-retail)",
    )
    runs.add_argument(
        "--cases",
        type=Path,
        default=None,
        help="also write the tasks the file was graded with as cases here (the file's own "
        "tasks; a checkout's when it carries none), to regrade against them",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "import":
            n, problems = import_tasks(args.path, args.domain, args.out)
            for problem in problems:
                print(problem, file=sys.stderr)
            print(
                f"wrote {n} case(s) to {args.out}"
                + (f"; {len(problems)} skipped" if problems else "")
            )
            return 1 if problems else 0
        skipped: list[str] = []
        set_name = args.set or (args.cases.as_posix() if args.cases else "cases/tau2-retail")
        tasks_note = None
        if args.cases is not None:
            written, problems, tasks_note = results_tasks(args.results, args.db, args.cases)
            skipped += problems
        n, defects = import_results(args.results, args.db, args.out, set_name, skipped)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the record could not be written
        print(f"error: {args.out}: cannot be written ({exc.strerror or exc})", file=sys.stderr)
        return 2
    for line in skipped:
        print(line, file=sys.stderr)
    for defect in defects:
        print(f"data defect: {defect}", file=sys.stderr)
    if tasks_note is not None:
        print(f"graded with {tasks_note}: wrote {written} case(s) to {args.cases}")
    else:
        print(_tasks_hint(args.results))
    print(
        f"wrote {n} trial(s) to {args.out} ({len(defects)} data defect(s)); store it with "
        f"pytest --commerce-store-import={args.out}, then regrade with "
        f"pytest {set_name} --commerce-regrade=<its run id>"
        + (f"; {len(skipped)} skipped" if skipped else "")
    )
    return 1 if skipped else 0


if __name__ == "__main__":
    raise SystemExit(main())
