"""The τ² command line under damaged input: a task or simulation it cannot read is skipped with a
line naming it while the rest are written; what it writes always loads as a valid case; it never
writes over a file it did not make nor follows a link out of --out; it exits non-zero when it
skipped anything, and 2 (with a sentence, no traceback) when it cannot start."""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path

import pytest
from tau2_checkout import make_checkout, within

from pytest_commerce_evals.cases.loader import load_case_file
from pytest_commerce_evals.tau2.__main__ import MARK
from pytest_commerce_evals.tau2.__main__ import main as tau2_main

DATA = Path(__file__).parent / "data" / "tau2"
GOOD = json.loads((DATA / "tasks.json").read_text())


def checkout(tmp_path: Path, tasks: list) -> Path:
    # the tasks written with `json.dumps`: a lone surrogate as \\ud800
    return make_checkout(tmp_path / "tau2-bench", files=("db.json", "policy.md"), tasks=tasks)


def with_task(**changes):
    task = copy.deepcopy(GOOD[0])
    for path, value in changes.items():
        where = task
        keys = path.split("__")
        for key in keys[:-1]:
            where = where[key]
        where[keys[-1]] = value
    return task


def deep(n: int) -> dict:
    value: dict = {}
    for _ in range(n):
        value = {"a": value}
    return value


BAD_TASKS = {
    "not-a-mapping": 5,
    "action-without-name": with_task(evaluation_criteria__actions=[{"arguments": {}}]),
    "arguments-a-list": with_task(
        evaluation_criteria__actions=[{"name": "get_order_details", "arguments": [1, 2]}]
    ),
    "reward-basis-a-number": with_task(evaluation_criteria__reward_basis=5),
    "info-a-string": with_task(evaluation_criteria__communicate_info="refund"),
    "name-null": with_task(evaluation_criteria__actions=[{"name": None, "arguments": {}}]),
    "unknown-tool": with_task(
        evaluation_criteria__actions=[{"name": "launch_rocket", "arguments": {}}]
    ),
    "nan-argument": with_task(
        evaluation_criteria__actions=[
            {"name": "get_order_details", "arguments": {"order_id": float("nan")}}
        ]
    ),
    "huge-number": with_task(
        evaluation_criteria__actions=[
            {"name": "get_order_details", "arguments": {"order_id": int("9" * 1200)}}
        ]
    ),
    "arguments-300-deep": with_task(
        evaluation_criteria__actions=[{"name": "get_order_details", "arguments": deep(300)}]
    ),
    "lone-surrogate": with_task(
        user_scenario__instructions__reason_for_call="You want \ud800 a refund."
    ),
    "large-field": with_task(user_scenario__instructions__reason_for_call="x" * 2_000_000),
}


@pytest.mark.parametrize("bad", sorted(BAD_TASKS))
def test_a_task_it_cannot_read_is_skipped_and_the_rest_are_written(bad, tmp_path, capsys):
    root = checkout(tmp_path, [GOOD[1], BAD_TASKS[bad], GOOD[2]])
    out = tmp_path / "cases" / "tau2-retail"
    assert tau2_main(["import", str(root), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "task 2 skipped" in err and "Traceback" not in err
    written = sorted(p.name for p in out.glob("0*.yaml"))
    assert written == ["001-task-1.yaml", "002-task-2.yaml"]
    for path in out.glob("0*.yaml"):
        assert not load_case_file(path).problems, path
    assert (out / "conftest.py").is_file() and (out / "_set.yaml").is_file()


def test_colliding_ids_get_files_and_ids_of_their_own(tmp_path, capsys):
    tasks = [with_task(id=i) for i in ("a b", "a-b", "A_B", "²")]
    root = checkout(tmp_path, tasks)
    out = tmp_path / "out"
    assert tau2_main(["import", str(root), "--out", str(out)]) == 0
    files = sorted(p.name for p in out.glob("0*.yaml"))
    assert files == [
        "000-task-a-b-2.yaml",
        "000-task-a-b-3.yaml",
        "000-task-a-b.yaml",
        "000-task-x.yaml",  # `²`: no digit or letter the id pattern takes
    ]
    ids = {load_case_file(p).cases[0].case.id for p in out.glob("0*.yaml")}
    assert len(ids) == 4
    assert "wrote 4 case(s)" in capsys.readouterr().out


def test_a_long_id_is_cut_to_a_file_name_the_file_system_takes(tmp_path):
    root = checkout(tmp_path, [with_task(id="x" * 300)])
    out = tmp_path / "out"
    assert tau2_main(["import", str(root), "--out", str(out)]) == 0
    [path] = out.glob("0*.yaml")
    assert len(path.name) < 100


def test_it_never_writes_over_a_file_it_did_not_make_nor_follows_a_link(tmp_path, capsys):
    root = checkout(tmp_path, GOOD)
    out = tmp_path / "out"
    out.mkdir()
    (out / "conftest.py").write_text("# the team's own conftest\n")
    outside = tmp_path / "outside.yaml"
    outside.write_text("kept\n")
    (out / "001-task-1.yaml").symlink_to(outside)
    assert tau2_main(["import", str(root), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "a file this importer did not write is there; not written over" in err
    assert "is a link; not followed" in err
    assert (out / "conftest.py").read_text() == "# the team's own conftest\n"
    assert outside.read_text() == "kept\n"
    # its own files it writes again
    assert (out / "000-task-0.yaml").read_text().startswith(MARK)
    (out / "001-task-1.yaml").unlink()
    (out / "conftest.py").unlink()
    assert tau2_main(["import", str(root), "--out", str(out)]) == 0
    assert tau2_main(["import", str(root), "--out", str(out)]) == 0  # and again: its own


@pytest.mark.parametrize("kind", ["file", "link"])
def test_an_out_that_is_a_file_or_a_link_is_refused_with_rc_2(tmp_path, capsys, kind):
    root = checkout(tmp_path, GOOD)
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("x")
    else:
        (tmp_path / "elsewhere").mkdir()
        out.symlink_to(tmp_path / "elsewhere")
    assert tau2_main(["import", str(root), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --out") and "Traceback" not in err


def test_tasks_nested_past_pythons_limit_are_refused_with_rc_2(tmp_path, capsys):
    root = checkout(tmp_path, [])
    (root / "data/tau2/domains/retail/tasks.json").write_text("[" * 100_000 + "]" * 100_000)
    assert tau2_main(["import", str(root), "--out", str(tmp_path / "out")]) == 2
    assert "not JSON this importer can read (RecursionError)" in capsys.readouterr().err


def results(tmp_path: Path, **changes) -> Path:
    data = json.loads((DATA / "results.json").read_text())
    data.update(changes)
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    ("changes", "skips"),
    [
        ({"simulations": [1]}, 1),
        ({"info": "a string"}, 0),
        ({"tasks": ["x", 3]}, 0),
    ],
    ids=["simulation-a-number", "info-a-string", "tasks-not-mappings"],
)
def test_import_results_skips_what_it_cannot_read(tmp_path, capsys, changes, skips):
    path = results(tmp_path, **changes)
    out = tmp_path / "run.json"
    rc = tau2_main(["import-results", str(path), "--db", str(DATA / "db.json"), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == (1 if skips else 0) and "Traceback" not in err
    assert err.count("skipped:") == skips
    assert json.loads(out.read_text())["run_id"].startswith("tau2-")


def test_a_reward_that_is_not_a_number_skips_its_simulation(tmp_path, capsys):
    data = json.loads((DATA / "results.json").read_text())
    data["simulations"][0]["reward_info"] = {"reward": {"value": 1}}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    out = tmp_path / "run.json"
    assert (
        tau2_main(["import-results", str(path), "--db", str(DATA / "db.json"), "--out", str(out)])
        == 1
    )
    assert "simulation 1 skipped: ValueError: reward is" in capsys.readouterr().err
    assert len(json.loads(out.read_text())["trials"]) == len(data["simulations"]) - 1


def test_import_results_refuses_an_out_folder_and_follows_no_planted_link(tmp_path, capsys):
    args = ["import-results", str(DATA / "results.json"), "--db", str(DATA / "db.json")]
    folder = tmp_path / "adir"
    folder.mkdir()
    assert tau2_main([*args, "--out", str(folder)]) == 2
    assert not (tmp_path / "adir.tmp").exists()
    assert "is a folder or a link" in capsys.readouterr().err
    target = tmp_path / "victim.txt"
    target.write_text("kept")
    out = tmp_path / "run.json"
    (tmp_path / "run.json.tmp").symlink_to(target)
    assert tau2_main([*args, "--out", str(out)]) == 0
    assert target.read_text() == "kept" and json.loads(out.read_text())["trials"]
    assert not (tmp_path / "run.json.tmp").exists()


def test_the_checkouts_commit_is_read_from_its_git_folder(tmp_path):
    from pytest_commerce_evals.tau2.__main__ import checkout_commit

    sha = "0123456789abcdef" * 2 + "01234567"
    root = tmp_path / "co"
    git = root / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    assert checkout_commit(root) is None  # no HEAD
    (git / "HEAD").write_text(sha + "\n")  # detached
    assert checkout_commit(root) == sha
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    (git / "packed-refs").write_text(
        f"# pack-refs\n{'f' * 40} refs/heads/other\n{sha} refs/heads/main\n"
    )
    assert checkout_commit(root) == sha  # from the packed refs
    (git / "refs" / "heads" / "main").write_text("a" * 40 + "\n")
    assert checkout_commit(root) == "a" * 40  # a loose ref wins
    (git / "refs" / "heads" / "main").write_text("not a commit\n")
    assert checkout_commit(root) is None
    linked = tmp_path / "worktree"
    linked.mkdir()
    (linked / ".git").write_text(f"gitdir: {git}\n")  # a worktree or a submodule
    (git / "HEAD").write_text(sha + "\n")
    assert checkout_commit(linked) == sha
    assert checkout_commit(tmp_path / "nowhere") is None


def test_cases_from_a_results_file_need_a_database_inside_a_checkout(tmp_path, capsys):
    args = ["import-results", str(DATA / "results.json"), "--db", str(DATA / "db.json")]
    rc = tau2_main([*args, "--out", str(tmp_path / "run.json"), "--cases", str(tmp_path / "c")])
    assert rc == 2
    err = capsys.readouterr().err
    assert "--cases needs --db to be the db.json of a τ²-bench checkout" in err
    assert "Traceback" not in err and not (tmp_path / "c").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_pipe_where_a_case_goes_is_named_not_opened(tmp_path, capsys):
    root = checkout(tmp_path, GOOD)
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "000-task-0.yaml")  # opened to read, it would wait for a writer for ever
    with within(10):
        assert tau2_main(["import", str(root), "--out", str(out)]) == 1
    assert "000-task-0.yaml: not a file; not written over" in capsys.readouterr().err
    assert stat.S_ISFIFO((out / "000-task-0.yaml").lstat().st_mode)


def test_a_cases_folder_it_cannot_use_is_named_as_cases(tmp_path, capsys):
    root = checkout(tmp_path, GOOD)
    cases = tmp_path / "cases"
    cases.write_text("x")
    db = root / "data" / "tau2" / "domains" / "retail" / "db.json"
    args = ["import-results", str(DATA / "results.json"), "--db", str(db)]
    assert tau2_main([*args, "--out", str(tmp_path / "run.json"), "--cases", str(cases)]) == 2
    assert (
        capsys.readouterr().err
        == f"error: --cases {cases}: is a file; give a folder to write the cases into\n"
    )


# -- domains and reward bases no case grades ------------------------------------------------------

GRADED = "which this does not grade (it grades DB, COMMUNICATE, NL_ASSERTION)"


@pytest.mark.parametrize(
    "basis", [["ENV_ASSERTION"], ["ENV_ASSERTION", "ACTION"], ["DB", "ACTION"]]
)
def test_a_task_of_a_reward_basis_not_graded_is_refused_by_name_at_import(tmp_path, capsys, basis):
    # telecom's tasks are graded on ENV_ASSERTION and ACTION: as a case they would have nothing
    # (or not all) of τ²'s reward to grade, and pass whatever the agent did
    from pytest_commerce_evals.tau2.tasks import UngradedTask, case_of

    task = with_task(id="telecom_1", evaluation_criteria__reward_basis=basis)
    with pytest.raises(UngradedTask, match="task 'telecom_1'"):
        case_of(task, domain="retail")
    root = checkout(tmp_path, [*GOOD, task, {**task, "id": "telecom_2"}])
    out = tmp_path / "out"
    assert tau2_main(["import", str(root), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith(f"error: τ²-bench retail task 'telecom_1': its reward_basis {basis}")
    assert GRADED in err and "so do 1 more task(s): 'telecom_2'" in err
    assert err.rstrip().endswith("nothing written") and not out.exists()


def test_import_results_refuses_a_domain_or_reward_basis_it_does_not_grade(tmp_path, capsys):
    db = checkout(tmp_path, GOOD) / "data" / "tau2" / "domains" / "retail" / "db.json"
    telecom = results(tmp_path, info={"environment_info": {"domain_name": "telecom"}})
    out, cases = tmp_path / "run.json", tmp_path / "cases"
    args = ["import-results", str(telecom), "--db", str(db), "--out", str(out)]
    for extra in ([], ["--cases", str(cases)]):
        assert tau2_main([*args, *extra]) == 2
        assert capsys.readouterr().err == (
            f"error: {telecom}: a τ²-bench 'telecom' results file; this grades retail and "
            "airline only\n"
        )
        assert not out.exists() and not cases.exists()
    data = json.loads((DATA / "results.json").read_text())
    data["tasks"][2]["evaluation_criteria"]["reward_basis"] = ["ENV_ASSERTION"]
    carried = results(tmp_path, tasks=data["tasks"])
    args = ["import-results", str(carried), "--db", str(db), "--out", str(out)]
    for extra in ([], ["--cases", str(cases)]):
        assert tau2_main([*args, *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: {carried}: τ²-bench retail task '2': its reward_basis")
        assert GRADED in err and not out.exists() and not cases.exists()


def test_every_tau2_benchmark_checks_the_domain_first_and_says_so_in_one_line(tmp_path, capsys):
    import sys

    from pytest_commerce_evals.tau2.parity import parity

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_tau2_airline_replay import main as airline_replay
    from bench_tau2_parity import main as parity_bench
    from bench_tau2_replay import main as retail_replay

    telecom = results(tmp_path, info={"environment_info": {"domain_name": "telecom"}})
    retail = DATA / "results.json"
    db = str(DATA / "db.json")
    with pytest.raises(ValueError, match="a τ²-bench 'telecom' results file; this grades"):
        parity(telecom, db)
    for bench, files, says in [
        (
            parity_bench,
            [retail, telecom],
            f"{telecom}: a τ²-bench 'telecom' results file; this grades retail and airline only",
        ),
        (
            retail_replay,
            [retail, telecom],
            f"{telecom}: a τ²-bench 'telecom' results file; this replays retail only",
        ),
        (
            airline_replay,
            [retail],
            f"{retail}: a τ²-bench 'retail' results file; this replays airline only",
        ),
    ]:
        assert bench(["--db", db, *map(str, files)]) == 2
        out, err = capsys.readouterr()
        assert (out, err) == ("", f"error: {says}\n")  # nothing graded or replayed
    data = json.loads(retail.read_text())
    data["tasks"][0]["evaluation_criteria"]["reward_basis"] = ["DB", "ACTION"]
    acting = results(tmp_path, tasks=data["tasks"])
    assert parity_bench(["--db", db, str(acting)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "task '0': its reward_basis ['DB', 'ACTION']" in err
