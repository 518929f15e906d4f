"""The run store: schema and migration, concurrent writers, and runs recorded through pytest
(repeated runs, xdist, interruption, a corrupt store, JSON records, JUnit properties)."""

from __future__ import annotations

import json
import multiprocessing
import sqlite3
import subprocess
import xml.etree.ElementTree as ET
from contextlib import closing
from pathlib import Path

import pytest
from run_builders import make_suite, run, trial

from pytest_commerce_evals.errors import StoreError
from pytest_commerce_evals.events import Text
from pytest_commerce_evals.jsonsafe import MAX_DEPTH, clean_json
from pytest_commerce_evals.runs import SCHEMA_VERSION
from pytest_commerce_evals.store.database import lasting
from pytest_commerce_evals.store.identity import GitStateLater, git_state, public_base_url
from pytest_commerce_evals.store.record_file import load_record, write_record
from pytest_commerce_evals.store.run_store import RunStore
from pytest_commerce_evals.usage import ModelCall

HERE = Path(__file__).parent


@pytest.fixture
def suite(pytester: pytest.Pytester):
    write = make_suite(pytester, (HERE / "helpers.py").read_text())
    return pytester, write


def runs_in(folder: Path) -> list[dict]:
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY started_at")]


def trial_rows(folder: Path, run_id: str) -> list[dict]:
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn:
        conn.row_factory = sqlite3.Row
        return [
            dict(r)
            for r in conn.execute(
                "SELECT * FROM trials WHERE run_id = ? ORDER BY case_id, trial", (run_id,)
            )
        ]


# -- the store itself -------------------------------------------------------------------------


def test_round_trip_keeps_every_field(tmp_path):
    store = RunStore(tmp_path / "runs")
    record = run([trial("cart-001-a", "pass"), trial("cart-002-b", "fail", priority="critical")])
    store.begin_run(record.model_copy(update={"trials": [], "complete": False}))
    store.add_trials(record.run_id, record.trials)
    finished = store.finish_run(record.run_id, complete=True, exit_status=1)
    assert finished.complete and finished.exit_status == 1
    assert finished.trials == record.trials  # transcripts, graders, messages, failures intact
    assert [(s.name, s.passed, s.graded, s.met) for s in finished.sets] == [
        ("cases/cart", 1, 2, False)
    ]
    with closing(sqlite3.connect(store.path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[
            0
        ] == str(SCHEMA_VERSION)


def test_writes_commit_without_waiting_for_the_disk_only_in_wal_mode(tmp_path, monkeypatch):
    """A writer's connections commit with `synchronous = NORMAL` (1) once the file is in WAL
    mode; a store whose file could not be put in WAL mode keeps SQLite's FULL (2), and a
    read-only store never sets it."""
    store = RunStore(tmp_path / "runs")
    with store._connect() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 1
    store.begin_run(run([]).model_copy(update={"complete": False}))
    with RunStore(tmp_path / "runs", read_only=True)._connect() as conn:
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2

    real = sqlite3.Connection.execute

    class NoWal(sqlite3.Connection):
        def execute(self, sql, *args):  # a file system where WAL cannot be set
            if sql.startswith("PRAGMA journal_mode=WAL"):
                return real(self, "PRAGMA journal_mode")
            return real(self, sql, *args)

    connect = sqlite3.connect
    monkeypatch.setattr(sqlite3, "connect", lambda *a, **k: connect(*a, factory=NoWal, **k))
    other = RunStore(tmp_path / "other")
    with other._connect() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert conn.execute("PRAGMA synchronous").fetchone()[0] == 2


def test_trials_are_stored_from_the_rows_the_caller_made(tmp_path):
    """`add_trials(..., rows)` writes the rows it is given (the recorder makes each as its
    trial arrives); rows that do not match the trials in number are made again."""
    from pytest_commerce_evals.store.rows import trial_row

    store = RunStore(tmp_path / "runs")
    record = run([trial("cart-001-a", "pass"), trial("cart-002-b", "fail")])
    store.begin_run(record.model_copy(update={"trials": [], "complete": False}))
    made = [trial_row(record.run_id, t) for t in record.trials]
    made[0] = (*made[0][:9], json.dumps(["made by the caller"]), *made[0][10:])
    store.add_trials(record.run_id, record.trials, made)
    store.add_trials(record.run_id, record.trials[1:], made)  # one trial, two rows: made again
    stored = store.load_run(record.run_id).trials
    assert [t.failures for t in stored] == [["made by the caller"], record.trials[1].failures]


def test_finishing_with_the_callers_trials_matches_the_stored_ones(tmp_path):
    store = RunStore(tmp_path / "runs")
    first = trial("cart-002-b", "pass")
    record = run([trial("cart-001-a", "pass"), first, trial("cart-003-c", "fail")])
    again = trial("cart-002-b", "fail")  # the same case and trial recorded again: it replaces
    for use_callers in (False, True):
        r = record.model_copy(update={"run_id": f"{record.run_id}{int(use_callers)}"})
        store.begin_run(r.model_copy(update={"trials": [], "complete": False}))
        store.add_trials(r.run_id, [*reversed(r.trials), again])  # in another order
        given = [*reversed(r.trials), again] if use_callers else None
        finished = store.finish_run(r.run_id, complete=True, exit_status=1, trials=given)
        assert [(s.name, s.passed, s.graded) for s in finished.sets] == [("cases/cart", 1, 3)]
        assert len(finished.trials) == 3
        # what it returns is the run as stored, the caller's trials or not
        assert finished == store.load_run(r.run_id)


def test_base_url_loses_credentials_and_query():
    assert (
        public_base_url("https://user:sk-secret@api.example.com:8443/v1?key=sk-x#f")
        == "https://api.example.com:8443/v1"
    )
    assert public_base_url(None) is None


V1_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs (run_id TEXT PRIMARY KEY, started_at TEXT NOT NULL, ended_at TEXT,
    complete INTEGER NOT NULL DEFAULT 0, git_commit TEXT, git_dirty INTEGER, agent_model TEXT,
    agent_base_url TEXT, judge_model TEXT, selection TEXT NOT NULL, signature TEXT NOT NULL);
CREATE TABLE trials (run_id TEXT NOT NULL, case_id TEXT NOT NULL, trial INTEGER NOT NULL,
    set_name TEXT NOT NULL, threshold REAL NOT NULL, priority TEXT NOT NULL,
    difficulty TEXT NOT NULL, tags TEXT NOT NULL, outcome TEXT NOT NULL, failures TEXT NOT NULL,
    transcript TEXT NOT NULL, verdicts TEXT NOT NULL, PRIMARY KEY (run_id, case_id, trial));
INSERT INTO meta VALUES ('schema_version', '1');
"""


def test_a_version_1_store_is_migrated_when_opened(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    verdict = {
        "dimension": "grounded",
        "outcome": "fail",
        "verdict": "FAIL",
        "reasoning": "invented",
        "judge_model": "judge-m",
        "judge_fingerprint": "jf1",
        "rubric_fingerprint": "rf1",
    }
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        conn.executescript(V1_SCHEMA)
        conn.execute(
            "INSERT INTO runs VALUES ('20240101-000000-000001', '2024-01-01T00:00:00', "
            "'2024-01-01T00:01:00', 1, 'abc', 0, 'old-model', NULL, 'judge-m', ?, ?)",
            (
                json.dumps({"args": ["cases"], "keyword": None, "markexpr": None, "trials": 2}),
                "sig",
            ),
        )
        for n, outcome in ((1, "pass"), (2, "fail")):
            conn.execute(
                "INSERT INTO trials VALUES ('20240101-000000-000001', 'cart-001-a', ?, "
                "'cases/cart', 0.9, 'high', 'easy', '[\"cart\"]', ?, '[]', '[[]]', ?)",
                (n, outcome, json.dumps([verdict] if outcome == "fail" else [])),
            )
    store = RunStore(folder)
    old = store.load_run("20240101-000000-000001")
    assert old.kind == "regression" and old.complete and old.agent_model == "old-model"
    assert old.judge_fingerprints == ["jf1"]  # backfilled from the verdicts
    assert [(s.passed, s.graded, s.rate, s.met) for s in old.sets] == [(1, 2, 0.5, False)]
    assert [t.outcome for t in old.trials] == ["pass", "fail"] and old.trials[
        0
    ].grader_results == []
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[
            0
        ] == str(SCHEMA_VERSION)
    # the migrated store takes new runs
    store.import_record(run([trial("cart-001-a")], run_id="20250101-000000-000002"))
    assert [r.run_id for r in store.runs()] == ["20250101-000000-000002", "20240101-000000-000001"]


def test_a_schema_2_store_migrates_to_3_keeping_its_runs_and_admits_a_regrade(tmp_path):
    folder = tmp_path / "runs"
    store = RunStore(folder)
    store.import_record(run([trial("cart-001-a"), trial("cart-002-b", "fail")]))
    store.close()
    # turn it back into a schema-2 store: the runs table's check admitted two kinds
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        ddl = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
        conn.execute("ALTER TABLE runs RENAME TO runs_old")
        conn.execute(ddl.replace(", 'regrade'", ""))
        conn.execute("INSERT INTO runs SELECT * FROM runs_old")
        conn.execute("DROP TABLE runs_old")
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
        with pytest.raises(sqlite3.IntegrityError, match="CHECK"):
            conn.execute("UPDATE runs SET kind = 'regrade'")
    store = RunStore(folder)
    before = run([trial("cart-001-a"), trial("cart-002-b", "fail")])
    assert store.load_run(before.run_id).trials == before.trials
    store.import_record(
        before.model_copy(update={"run_id": "20250101-000000-000009", "kind": "regrade"})
    )
    assert store.load_run("20250101-000000-000009").kind == "regrade"
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        indexes = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        assert {"runs_comparable", "runs_by_model"} <= indexes
    with pytest.raises(StoreError):  # a kind outside the three is still refused
        store.import_record(before.model_copy(update={"kind": "nightly"}))


def test_a_newer_store_is_refused_by_name(tmp_path):
    folder = tmp_path / "runs"
    RunStore(folder)
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(
        StoreError, match=r"runs\.sqlite: run store schema_version 99 is newer than this plugin's 9"
    ):
        RunStore(folder)


def test_a_corrupt_store_is_an_error_naming_the_file(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "runs.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError) as info:
        RunStore(folder)
    assert str(info.value) == f"{folder / 'runs.sqlite'}: run store error: file is not a database"


def test_json_record_round_trip_and_v1_migration(tmp_path):
    record = run([trial("cart-001-a", "fail")])
    path = write_record(record, tmp_path / "out" / "run.json")
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    assert load_record(path) == record
    old = json.loads(path.read_text())
    for key in ("kind", "judge_fingerprints", "sets"):
        old.pop(key)
    old["schema_version"] = 1
    path.write_text(json.dumps(old))
    migrated = load_record(path)
    assert migrated.kind == "regression" and migrated.sets == record.sets
    path.write_text("[]")
    with pytest.raises(StoreError, match="run.json: a run record is a JSON object; found list"):
        load_record(path)


def _write_runs(folder: str, tag: str, runs: int, trials: int) -> None:
    store = RunStore(folder)
    for r in range(runs):
        record = run([], run_id=f"2025-{tag}-{r:03d}", started_at=f"2025-01-01T00:00:{r:02d}")
        store.begin_run(record)
        batch = []
        for n in range(trials):
            batch.append(trial(f"case-{n:03d}-x", "pass" if n % 4 else "fail"))
            if len(batch) == 3:
                store.add_trials(record.run_id, batch)
                batch = []
        store.add_trials(record.run_id, batch)
        store.finish_run(record.run_id, complete=True, exit_status=0)


def _git(where, *args):
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=where,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def test_git_state_is_the_commit_and_whether_tracked_files_differ(tmp_path):
    assert git_state(tmp_path) == (None, None)  # not a checkout
    _git(tmp_path, "init", "-q")
    assert git_state(tmp_path) == (None, None)  # a checkout with no commit yet
    (tmp_path / "a.txt").write_text("one\n")
    _git(tmp_path, "add", "a.txt")
    _git(tmp_path, "commit", "-q", "-m", "one")
    head = _git(tmp_path, "rev-parse", "HEAD")
    (tmp_path / "untracked.txt").write_text("x\n")
    assert git_state(tmp_path) == (head, False)  # untracked files do not count
    (tmp_path / "a.txt").write_text("two\n")
    assert git_state(tmp_path) == (head, True)
    asked = GitStateLater(tmp_path)  # the same answer, asked on a thread
    assert asked.result() == (head, True) and asked.result() == (head, True)


def test_two_processes_writing_one_store_lose_nothing(tmp_path):
    folder = str(tmp_path / "runs")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_write_runs, args=(folder, tag, 5, 30)) for tag in ("a", "b")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0, 0]
    store = RunStore(folder)
    runs = store.runs()
    assert len(runs) == 10 and all(r.complete for r in runs)
    for r in runs:
        loaded = store.load_run(r.run_id)
        assert len(loaded.trials) == 30
        assert loaded.sets[0].passed == 22 and loaded.sets[0].graded == 30


# -- runs recorded through pytest -------------------------------------------------------------


def test_a_run_in_a_git_checkout_records_its_commit_and_whether_it_was_dirty(suite, tmp_path):
    """git is asked on a thread as the run starts; the stored run holds its answer."""
    p, write = suite
    write()
    store = tmp_path / "store"
    _git(p.path, "init", "-q")
    _git(p.path, "add", "cases")
    _git(p.path, "commit", "-q", "-m", "cases")
    head = _git(p.path, "rev-parse", "HEAD")
    p.runpytest("cases", f"--commerce-store={store}", "-k", "cart-001")
    case = next((p.path / "cases").rglob("*.yaml"))
    case.write_text(case.read_text() + "\n")
    p.runpytest("cases", f"--commerce-store={store}", "-k", "cart-001")
    runs = runs_in(store)
    assert [(r["git_commit"], r["git_dirty"]) for r in runs] == [(head, 0), (head, 1)]


def test_every_run_is_recorded_with_its_trials(suite, tmp_path):
    p, write = suite
    store = tmp_path / "store"
    write(cart_002_checkout_total="shoe-002")
    for _ in range(3):
        result = p.runpytest(
            "cases",
            f"--commerce-store={store}",
            "--commerce-trials=2",
            "-k",
            "cart",
            "--commerce-model=model-a",
            "--commerce-base-url=http://user:pw@localhost:9/v1",
        )
        result.assert_outcomes(passed=4, failed=2)
    runs = runs_in(store)
    assert len(runs) == 3 and all(r["complete"] == 1 and r["kind"] == "regression" for r in runs)
    first = runs[0]
    assert first["agent_model"] == "model-a"
    assert first["agent_base_url"] == "http://localhost:9/v1"  # credentials dropped
    assert first["git_commit"] is None and first["git_dirty"] is None  # not a git checkout
    assert json.loads(first["selection"]) == {
        "args": ["cases"],
        "keyword": "cart",
        "markexpr": None,
        "trials": 2,
    }
    assert first["exit_status"] == 1
    rows = trial_rows(store, first["run_id"])
    assert [(r["case_id"], r["trial"], r["outcome"]) for r in rows] == [
        ("cart-001-add-single", 1, "pass"),
        ("cart-001-add-single", 2, "pass"),
        ("cart-002-checkout-total", 1, "fail"),
        ("cart-002-checkout-total", 2, "fail"),
        ("cart-003-vegan-tote", 1, "pass"),
        ("cart-003-vegan-tote", 2, "pass"),
    ]
    failed = rows[2]
    assert json.loads(failed["failures"]) == [
        "cart_contains: expected shoe-001 in the cart; final cart: shoe-002 ×1"
    ]
    assert failed["priority"] == "critical" and json.loads(failed["tags"]) == ["cart", "checkout"]
    assert failed["set_name"] == "cases/cart" and failed["threshold"] == 0.8
    assert json.loads(failed["messages"]) == ["Add the trail runner to my cart"]
    assert [e["type"] for e in json.loads(failed["transcript"])[0]] == [
        "tool_call",
        "tool_result",
        "cart_update",
        "text",
        "turn_end",
    ]
    sets = RunStore(store).load_run(first["run_id"]).sets
    assert [(s.name, s.passed, s.graded, s.met) for s in sets] == [("cases/cart", 4, 6, False)]


def test_no_store_is_written_when_no_case_runs(pytester, tmp_path):
    pytester.makepyfile("def test_plain():\n    assert True\n")
    pytester.runpytest().assert_outcomes(passed=1)
    assert not (pytester.path / ".commerce").exists()


def test_store_none_records_nothing(suite):
    p, _ = suite
    result = p.runpytest("cases", "--commerce-store=none")
    result.stdout.fnmatch_lines(["*not stored (--commerce-store=none): 3 trials, complete"])
    assert not (p.path / ".commerce").exists()


def test_default_store_lives_under_the_rootdir(suite):
    p, _ = suite
    p.runpytest("cases").assert_outcomes(passed=3)
    assert len(runs_in(p.path / ".commerce" / "runs")) == 1


def test_xdist_run_lands_as_one_run_with_every_trial(suite, tmp_path):
    pytest.importorskip("xdist")
    p, _ = suite
    store = tmp_path / "store"
    # pytest-benchmark, where installed, warns when xdist is active; the outer
    # run turns warnings into errors, so the inner run leaves that plugin out.
    result = p.runpytest(
        "cases", "-n", "2", f"--commerce-store={store}", "--commerce-trials=3", "-p", "no:benchmark"
    )
    result.assert_outcomes(passed=9)
    runs = runs_in(store)
    assert len(runs) == 1 and runs[0]["complete"] == 1
    assert json.loads(runs[0]["options"])["xdist_workers"] == 2
    rows = trial_rows(store, runs[0]["run_id"])
    assert sorted((r["case_id"], r["trial"]) for r in rows) == sorted(
        (c, n)
        for c in ("cart-001-add-single", "cart-002-checkout-total", "cart-003-vegan-tote")
        for n in (1, 2, 3)
    )
    assert all(json.loads(r["messages"]) for r in rows)  # the messages travelled from the workers


INTERRUPTING = """
from helpers import ToyAgent, ToyBackend
from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply

def pytest_commerce_evals_make_backend(config, case):
    return ToyBackend()

class Interrupt:
    def run_turn(self, session, message):
        raise KeyboardInterrupt

def pytest_commerce_evals_make_agent(config, case, backend):
    if case.id == "cart-003-vegan-tote":
        return Interrupt()
    return ToyAgent(FakeClient([tool_reply("add_to_cart", product_id="shoe-001"), text_reply("ok")]), backend)
"""


def test_an_interrupted_run_keeps_what_finished_and_is_incomplete(suite, tmp_path):
    p, _ = suite
    store = tmp_path / "store"
    p.makeconftest(INTERRUPTING)
    result = p.runpytest_inprocess("cases", f"--commerce-store={store}", no_reraise_ctrlc=True)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*recorded in *runs.sqlite: 2 trials, INCOMPLETE (interrupted*"])
    runs = runs_in(store)
    assert len(runs) == 1 and runs[0]["complete"] == 0 and runs[0]["ended_at"] is not None
    assert [r["case_id"] for r in trial_rows(store, runs[0]["run_id"])] == [
        "cart-001-add-single",
        "cart-002-checkout-total",
    ]
    # an incomplete run is never a baseline: the next run finds no comparable run
    p.makeconftest(INTERRUPTING.replace('"cart-003-vegan-tote"', '"none"'))
    again = p.runpytest("cases", f"--commerce-store={store}")
    again.stdout.fnmatch_lines(["*no previous comparable run*"])


COUNTING = """
import sqlite3, json, os
from contextlib import closing
from helpers import ToyAgent, ToyBackend
from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply

def pytest_commerce_evals_make_backend(config, case):
    return ToyBackend()

def pytest_commerce_evals_make_agent(config, case, backend):
    return ToyAgent(FakeClient([tool_reply("add_to_cart", product_id="shoe-001"), text_reply("ok")]), backend)

def pytest_commerce_evals_trial_done(config, result):
    path = os.path.join(os.environ["STORE_UNDER_TEST"], "runs.sqlite")
    with closing(sqlite3.connect(path)) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM trials").fetchone()[0]
    with open(os.environ["STORE_UNDER_TEST"] + ".seen", "a") as out:
        out.write(json.dumps(stored) + "\\n")
"""


@pytest.mark.parametrize(
    ("every", "every_s", "seen"), [(2, 3600.0, [0, 0, 2]), (100, 0.0, [0, 1, 2])]
)
def test_trials_are_committed_in_batches_of_a_count_or_a_time(
    suite, tmp_path, monkeypatch, every, every_s, seen
):
    """Stored while the run goes on: a batch is written at its count or once its time is up
    (what the trial hook sees is the store before its own trial is added)."""
    from pytest_commerce_evals.store import recorder

    p, _ = suite
    store = tmp_path / "store"
    monkeypatch.setenv("STORE_UNDER_TEST", str(store))
    monkeypatch.setattr(recorder, "FLUSH_EVERY_TRIALS", every)
    monkeypatch.setattr(recorder, "FLUSH_EVERY_S", every_s)
    p.makeconftest(COUNTING)
    result = p.runpytest_inprocess("cases", f"--commerce-store={store}")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # one case of the suite fails its set
    assert [json.loads(x) for x in Path(f"{store}.seen").read_text().split()] == seen
    assert len(trial_rows(store, runs_in(store)[0]["run_id"])) == 3  # the rest at the end


def test_the_recorder_writes_while_the_run_waits_at_most_every_quarter_second(
    suite, tmp_path, monkeypatch
):
    """`flush_while_waiting` (the runner calls it before waiting for a trial still running)
    writes the trials reported so far once `FLUSH_WHILE_WAITING_S` has passed since the last
    write; sooner, or with nothing reported, it writes nothing. A concurrent run's store then
    holds every trial."""
    from pytest_commerce_evals.store import recorder

    p, write = suite
    write()
    store = tmp_path / "store"
    seen: list[tuple[int, int]] = []
    flush = recorder.RunRecorder.flush

    def counting(self):
        seen.append((len(self.pending), len(self.trials)))
        flush(self)

    monkeypatch.setattr(recorder.RunRecorder, "flush", counting)
    # two in flight; the cases' trials take 0.1, 0.3 and 0.5 s, so the main thread waits for
    # the second and the third with the ones before them reported
    slow = "\n\nimport time\nimport pytest\n\n@pytest.hookimpl(wrapper=True)\n"
    slow += "def pytest_commerce_evals_make_agent(config, case, backend):\n"
    slow += "    time.sleep({'cart-001-add-single': 0.1, 'cart-002-checkout-total': 0.3}"
    slow += ".get(case.id, 0.5))\n    return (yield)\n"
    conftest = p.path / "conftest.py"
    conftest.write_text(conftest.read_text() + slow)
    args = ("cases", f"--commerce-store={store}", "--commerce-concurrency=2")
    monkeypatch.setattr(recorder, "FLUSH_WHILE_WAITING_S", 3600.0)
    p.runpytest_inprocess(*args)
    assert seen == [(3, 3)]  # only the flush at the end
    seen.clear()
    monkeypatch.setattr(recorder, "FLUSH_WHILE_WAITING_S", 0.0)
    p.runpytest_inprocess(*args)
    assert seen == [(1, 1), (1, 2), (1, 3)]  # each while the next was running, the last at the end
    assert len(trial_rows(store, runs_in(store)[1]["run_id"])) == 3
    seen.clear()
    rec = recorder.RunRecorder.__new__(recorder.RunRecorder)
    rec.pending, rec.trials, rec.last_flush = [], [], 0.0
    rec.flush_while_waiting()
    assert seen == []  # nothing reported yet
    rec.pending = rec.trials = ["t"]
    monkeypatch.setattr(recorder, "FLUSH_WHILE_WAITING_S", 0.25)
    rec.last_flush = recorder.time.monotonic()
    rec.flush_while_waiting()
    assert seen == []  # the last write was just now
    rec.last_flush -= 0.3
    rec.pending_rows, rec.store = [], None
    rec.flush_while_waiting()
    assert seen == [(1, 1)] and rec.pending == []


def test_a_trial_whose_row_cannot_be_made_as_it_arrives_is_stored_at_the_flush(
    suite, tmp_path, monkeypatch
):
    """The recorder makes each trial's row as it arrives; where that fails, the batch's rows
    are made when it is written, and every trial is stored."""
    from pytest_commerce_evals.store import recorder

    calls = []

    def failing(run_id, t):
        calls.append(t.case_id)
        raise RecursionError("too deep")

    p, write = suite
    write()
    store = tmp_path / "store"
    monkeypatch.setattr(recorder, "trial_row", failing)
    p.runpytest_inprocess("cases", f"--commerce-store={store}")
    assert calls  # the recorder did try to make the rows
    runs = runs_in(store)
    assert len(runs) == 1 and len(trial_rows(store, runs[0]["run_id"])) == 3


def test_a_terminated_run_keeps_what_finished_and_is_incomplete(suite, tmp_path):
    p, _ = suite
    store = tmp_path / "store"
    p.makeconftest(
        INTERRUPTING.replace(
            "raise KeyboardInterrupt", "os.kill(os.getpid(), signal.SIGTERM)"
        ).replace("from helpers", "import os, signal, time\nfrom helpers")
        + "\n"
    )
    # one trial at a time, so that the SIGTERM comes after the first two finished
    result = p.runpytest_subprocess(
        "cases", f"--commerce-store={store}", "--commerce-concurrency=1", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*recorded in *runs.sqlite: 2 trials, INCOMPLETE (interrupted*"])
    runs = runs_in(store)
    assert len(runs) == 1 and runs[0]["complete"] == 0 and runs[0]["ended_at"] is not None
    assert len(trial_rows(store, runs[0]["run_id"])) == 2


def test_a_corrupt_store_stops_the_run_before_any_trial_and_is_never_written(suite, tmp_path):
    p, _ = suite
    store = tmp_path / "store"
    store.mkdir()
    (store / "runs.sqlite").write_bytes(b"garbage" * 1000)
    result = p.runpytest("cases", f"--commerce-store={store}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --commerce-store: the run store cannot be opened: {store / 'runs.sqlite'}: "
            "run store error: file is not a database; fix it, or record nothing with "
            "--commerce-store=none"
        ]
    )
    assert "passed" not in result.stdout.str()  # no trial ran into a store it cannot keep
    assert not list(store.glob("unsaved-*.json"))
    assert (store / "runs.sqlite").read_bytes() == b"garbage" * 1000  # never overwritten
    # once the store is repaired (moved aside) the run records there
    (store / "runs.sqlite").unlink()
    p.runpytest("cases", f"--commerce-store={store}").assert_outcomes(passed=3)
    assert len(runs_in(store)) == 1


def test_json_record_is_written_for_ci(suite, tmp_path):
    p, write = suite
    write(cart_003_vegan_tote="shoe-001")
    out = tmp_path / "artifacts" / "run.json"
    p.runpytest("cases", f"--commerce-store={tmp_path / 's'}", f"--commerce-json={out}")
    data = json.loads(out.read_text())
    assert data["schema_version"] == SCHEMA_VERSION and data["complete"] is True
    assert [(t["case_id"], t["outcome"]) for t in data["trials"]] == [
        ("cart-001-add-single", "pass"),
        ("cart-002-checkout-total", "pass"),
        ("cart-003-vegan-tote", "fail"),
    ]
    assert data["sets"][0] | {"other": {}} == {
        "name": "cases/cart",
        "passed": 2,
        "graded": 3,
        "rate": 2 / 3,
        "threshold": 0.8,
        "met": False,
        "other": {},
    }


def test_junit_xml_carries_case_properties(suite, tmp_path):
    p, _ = suite
    xml = tmp_path / "junit.xml"
    p.runpytest(
        "cases", "--commerce-trials=2", f"--junitxml={xml}", f"--commerce-store={tmp_path / 's'}"
    )
    cases = ET.parse(xml).getroot().iter("testcase")
    props = {
        c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")} for c in cases
    }
    assert props["cart-002-checkout-total[trial-2]"] == {
        "case_id": "cart-002-checkout-total",
        "priority": "critical",
        "difficulty": "medium",
        "trial": "2/2",
        "outcome": "pass",
    }
    assert len(props) == 6


def test_collect_only_records_nothing(suite, tmp_path):
    p, _ = suite
    p.runpytest("cases", "--collect-only", f"--commerce-store={tmp_path / 's'}")
    assert not (tmp_path / "s").exists()


# -- whatever a trial holds is written ----------------------------------------------------------


def nest(depth: int, leaf="x"):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def depth_of(value) -> int:
    levels = 0
    while isinstance(value, list):
        value, levels = value[0], levels + 1
    return levels


def nasty_trial():
    t = trial("cart-001-a", "fail", reply="cut \ud83e here")
    t.turns[0][1].result = {"deep": nest(300), "s": "a\udd14b", "\ud83e": 1}
    t.grader_results[0].observed = nest(3000)
    return t


def test_lone_surrogates_and_deep_values_are_stored_and_written_escaped(tmp_path):
    record = run([nasty_trial(), trial("cart-002-b")])
    store = RunStore(tmp_path / "runs")
    store.import_record(record)
    path = write_record(record, tmp_path / "run.json")
    json.loads(path.read_bytes().decode("utf-8"))  # strict UTF-8: it is valid JSON text
    for loaded in (store.load_run(record.run_id), load_record(path)):
        first = loaded.trials[0]
        assert first.turns[0][-2] == Text(text="cut \\ud83e here")
        result = first.turns[0][1].result
        assert result["s"] == "a\\udd14b" and result["\\ud83e"] == 1  # the rest is kept
        assert result["deep"] == nest(300)  # 300 levels are kept as they are
        # past MAX_DEPTH (the record, trials, a trial, observed…) the rest is its JSON text
        observed = first.grader_results[0].observed
        assert depth_of(observed) == MAX_DEPTH - 5
        rest = 3000 - (MAX_DEPTH - 5)
        assert depth_of_leaf(observed) == "[" * rest + '"x"' + "]" * rest
        assert loaded.trials[1] == record.trials[1]  # a clean trial is untouched


def depth_of_leaf(value):
    while isinstance(value, list):
        value = value[0]
    return value


def test_clean_json_returns_clean_values_themselves():
    value = {"a": [1, "é", {"b": None}], "c": "\U0001f600"}
    assert clean_json(value) is value
    assert clean_json({"a": "\ud83e"}) == {"a": "\\ud83e"}


# -- run records that are not right ----------------------------------------------------------------


def good_record() -> dict:
    return json.loads(run([trial("cart-001-a")]).model_dump_json())


TRIAL = good_record()["trials"][0]


def changed(**keys) -> dict:
    data = good_record()
    for key, value in keys.items():
        if value is ...:
            data.pop(key)
        else:
            data[key] = value
    return data


RULE = {"minimum": 2, "maximum": 10, "baseline": [9, 10], "level": 0.01, "delta": 0.1}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (changed(schema_version="2"), "key schema_version: expected an integer from 1 to 9; found '2'"),
        (changed(schema_version=2.0), "key schema_version: expected an integer from 1 to 9; found 2.0"),
        (changed(schema_version=True), "key schema_version: expected an integer from 1 to 9; found True"),
        (changed(schema_version=0), "key schema_version: expected an integer from 1 to 9; found 0"),
        (changed(schema_version=-3), "key schema_version: expected an integer from 1 to 9; found -3"),
        (changed(schema_version=2**31), "schema_version 2147483648 is newer than this plugin's 9"),
        (changed(schema_version=10**60), f"schema_version 1{'0' * 29}… (61 characters) is newer"),
        (changed(schema_version=None), "key schema_version: expected an integer from 1 to 9; found None"),
        (changed(run_id=...), "not a commerce-evals run record: key run_id: Field required"),
        (changed(trials={"a": 1}), "key trials: Input should be a valid list (found dict)"),
        (changed(trials=5), "key trials: Input should be a valid list (found int)"),
        (changed(trials=[{"case_id": 1}]), "key trials.0.case_id: Input should be a valid string (found int)"),
        (changed(sets=[[]]), "key sets.0: Input should be a valid dictionary or instance of SetResult"),
        (changed(selection="cases"), "key selection: Input should be a valid dictionary"),
        (changed(surprise=1), "key surprise: Extra inputs are not permitted"),
        (changed(kind="nightly"), "key kind: Input should be 'regression', 'live' or 'regrade'"),
        # no lax coercion: what a hand-edited record says must be what it means
        (changed(complete="yes"), "key complete: Input should be a valid boolean (found str)"),
        (changed(exit_status="0"), "key exit_status: Input should be a valid integer"),
        (changed(trials=[{**TRIAL, "trial": "1"}]), "key trials.0.trial: Input should be a valid integer"),
        (changed(trials=[{**TRIAL, "trial": 1.0}]), "key trials.0.trial: Input should be a valid integer"),
        (changed(trials=[{**TRIAL, "threshold": "0.9"}]), "key trials.0.threshold: Input should be a valid number"),
        (changed(trials=[{**TRIAL, "threshold": float("nan")}]), "key trials.0.threshold: Input should be a finite number"),
        (changed(trials=[{**TRIAL, "stopping": {**RULE, "baseline": [5, 3]}}]), "key trials.0.stopping.baseline: Value error, a baseline is (passed, graded)"),
        (changed(trials=[{**TRIAL, "stopping": {**RULE, "maximum": 1}}]), "key trials.0.stopping.maximum: Value error, maximum is at least minimum"),
        (changed(trials=[{**TRIAL, "stopping": {**RULE, "level": 0}}]), "key trials.0.stopping.level: Input should be greater than 0"),
        (changed(trials=[{**TRIAL, "stopping": {**RULE, "extra": 1}}]), "key trials.0.stopping.extra: Extra inputs are not permitted"),
    ],
)  # fmt: skip
def test_a_bad_run_record_names_the_file_and_the_key(tmp_path, data, message):
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data))
    with pytest.raises(StoreError) as info:
        load_record(path)
    assert str(info.value).startswith(f"{path}: ")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b'{"trials": ' + b"[" * 3000 + b"]" * 3000 + b"}", "key trials.0.0.0.0.0.… "),
        (b"[" * 3000 + b"]" * 3000, "key 0.0.0.0.0.0.… "),
        (b'{"options": ' + b'{"a": ' * 500 + b"1" + b"}" * 501, "key options.a.a.a.a.a.… "),
        (b"\xff\xfe{}", "cannot read a run record: not UTF-8 text (byte 0: invalid start byte)"),
        (b'{"run_id": "x", ', "cannot read a run record: Expecting property name"),
        (b"", "cannot read a run record: Expecting value"),
        (b"1" * 5000, "cannot read a run record: Exceeds the limit (4300 digits)"),
    ],
)
def test_a_record_that_is_not_a_record_is_an_error_not_a_crash(tmp_path, raw, message):
    path = tmp_path / "run.json"
    path.write_bytes(raw)
    with pytest.raises(StoreError) as info:
        load_record(path)
    assert str(info.value).startswith(f"{path}: ") and message in str(info.value)
    if "key" in message:
        assert f"nested deeper than {MAX_DEPTH} levels" in str(info.value)


def test_a_record_path_that_is_a_folder_or_missing_is_an_error(tmp_path):
    with pytest.raises(StoreError, match="run.json: cannot read a run record: not a regular file"):
        (tmp_path / "run.json").mkdir() or load_record(tmp_path / "run.json")
    with pytest.raises(StoreError, match="cannot read a run record: No such file or directory"):
        load_record(tmp_path / "none.json")


def test_a_bad_baseline_record_is_a_usage_error_naming_file_and_key(suite, tmp_path):
    p, _ = suite
    bad = tmp_path / "base.json"
    bad.write_text(json.dumps(changed(trials=[{"case_id": "x"}])))
    result = p.runpytest(
        "cases", f"--commerce-store={tmp_path / 's'}", f"--commerce-baseline={bad}"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(
        [
            f"*--commerce-baseline: {bad}: not a commerce-evals run record: key trials.0.trial: Field required*"
        ]
    )
    bad.write_bytes(b"[" * 3000 + b"]" * 3000)
    deep = p.runpytest("--commerce-store=none", f"--commerce-compare={bad},{bad}")
    assert deep.ret == pytest.ExitCode.USAGE_ERROR
    deep.stdout.fnmatch_lines(
        [f"*commerce-evals: {bad}: key 0.0.0.0.0.0.* nested deeper than {MAX_DEPTH} levels*"]
    )


# -- damaged stores ---------------------------------------------------------------------------


def stored_runs(folder: Path, *ids: str) -> RunStore:
    store = RunStore(folder)
    for n, run_id in enumerate(ids):
        store.import_record(
            run(
                [trial("cart-001-a"), trial("cart-002-b", "fail")],
                run_id=run_id,
                started_at=f"2025-01-0{n + 1}T00:00:00.000+00:00",
            )
        )
    return store


def sql(folder: Path, statement: str, *args) -> None:
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        conn.execute(statement, args)


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (
            "UPDATE meta SET value = 'two' WHERE key = 'schema_version'",
            "run store damaged: meta.schema_version is 'two', not a schema version (1 to 9)",
        ),
        (
            "UPDATE meta SET value = '-1' WHERE key = 'schema_version'",
            "run store damaged: meta.schema_version is '-1', not a schema version (1 to 9)",
        ),
        (
            "DELETE FROM meta",
            "run store damaged: the meta table has no schema_version row",
        ),
        (
            "ALTER TABLE meta RENAME COLUMN value TO v",
            "run store damaged: the meta table cannot be read (no such column: value)",
        ),
        ("DROP TABLE set_results", "run store damaged: table(s) set_results missing"),
        (
            "DROP TABLE meta",
            "not a commerce-evals run store (tables: runs, set_results, shard_plans, shards, trials)",
        ),
    ],
)
def test_a_damaged_meta_table_names_the_store_and_the_damage(tmp_path, damage, message):
    folder = tmp_path / "runs"
    stored_runs(folder, "20250101-000000-000001")
    sql(folder, damage)
    for read_only in (False, True):
        with pytest.raises(StoreError) as info:
            RunStore(folder, read_only=read_only)
        assert str(info.value).startswith(f"{folder / 'runs.sqlite'}: {message}")
    if "damaged" in message:
        assert "move the file aside" in str(info.value)


def test_a_schema_byte_that_is_not_utf8_is_named_not_raised(tmp_path):
    # SQLite's message then quotes the damaged byte, which Python cannot decode
    folder = tmp_path / "runs"
    stored_runs(folder, "r-1")
    db = folder / "runs.sqlite"
    raw = db.read_bytes()
    at = raw.index(b"ON runs (kind") + len(b"ON runs (")
    db.write_bytes(raw[:at] + b"\x80" + raw[at + 1 :])
    for read_only in (False, True):
        with pytest.raises(StoreError) as info:
            RunStore(folder, read_only=read_only)
        assert str(info.value).startswith(
            f"{db}: run store error: the database's schema is damaged (SQLite reported bytes "
            "that are not UTF-8: invalid start byte); move the file aside"
        )


def test_damaged_json_columns_leave_out_their_run_and_the_others_stay_readable(tmp_path):
    folder = tmp_path / "runs"
    stored_runs(folder, "r-1", "r-2", "r-3", "r-4", "r-5")
    sql(folder, "UPDATE trials SET error = CAST(X'6f6bff21' AS TEXT) WHERE run_id = 'r-1'")
    sql(folder, "UPDATE runs SET selection = '{not json' WHERE run_id = 'r-2'")
    sql(folder, "UPDATE set_results SET other = '7' WHERE run_id = 'r-3'")
    sql(
        folder,
        "UPDATE trials SET transcript = '[[' WHERE run_id = 'r-4' AND case_id = 'cart-001-a'",
    )
    sql(folder, "UPDATE trials SET verdicts = '{}' WHERE run_id = 'r-5' AND case_id = 'cart-002-b'")
    store = RunStore(folder)
    assert [r.run_id for r in store.runs()] == ["r-5", "r-4", "r-1"]
    assert store.damaged == [
        f"{store.path}: run r-3: damaged: key sets.0.other: Input should be a valid "
        "dictionary (found int)",
        f"{store.path}: run r-2: column runs.selection is not JSON (Expecting property name "
        "enclosed in double quotes: line 1 column 2 (char 1))",
    ]
    with pytest.raises(StoreError) as info:
        store.load_run("r-4")
    assert str(info.value) == (
        f"{store.path}: run r-4, case 'cart-001-a' trial 1: column trials.transcript is not "
        "JSON (Expecting value: line 1 column 3 (char 2))"
    )
    # the latest comparable run that reads is the baseline; bad UTF-8 comes back escaped
    base = store.previous_comparable(run([], run_id="r-9", started_at="2025-02-01T00:00:00"))
    assert base.run_id == "r-1" and base.trials[0].error == "ok\\xff!"
    assert store.damaged[-2].startswith(f"{store.path}: run r-5, case 'cart-002-b' trial 1: ")
    assert "key verdicts: Input should be a valid list (found dict)" in store.damaged[-2]
    assert len(store.verdicts("r-5")) == 0 and "is not a list of verdicts" in store.damaged[-1]


def test_a_damaged_store_stops_the_run_before_any_trial_saying_what_to_do(suite, tmp_path):
    p, _ = suite
    store = tmp_path / "store"
    stored_runs(store, "20250101-000000-000001")
    sql(store, "UPDATE meta SET value = 'x' WHERE key = 'schema_version'")
    result = p.runpytest("cases", f"--commerce-store={store}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stderr.fnmatch_lines(
        [
            f"ERROR: --commerce-store: the run store cannot be opened: {store / 'runs.sqlite'}: "
            "run store damaged: meta.schema_version is 'x', not a schema version (1 to 9); move "
            "the file aside*"
        ]
    )
    assert not list(store.glob("unsaved-*.json"))


def test_a_damaged_earlier_run_is_passed_over_and_the_run_is_stored(suite, tmp_path):
    p, write = suite
    store = tmp_path / "store"
    args = ("cases", f"--commerce-store={store}")
    write(cart_001_add_single="shoe-002")
    p.runpytest(*args)
    write()
    p.runpytest(*args)
    first, second = [r["run_id"] for r in runs_in(store)]
    sql(store, "UPDATE trials SET verdicts = 'nope' WHERE run_id = ?", second)
    result = p.runpytest(*args)
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*recorded in *runs.sqlite: 3 trials, complete",
            "*run store *runs.sqlite: 1 damaged run(s) or trial(s) left out; the other runs were read",
            f"*run {second}, case 'cart-001-add-single' trial 1: column trials.verdicts is not JSON*",
            f"baseline: run {first} *",
        ]
    )
    assert len(runs_in(store)) == 3 and not list(store.glob("unsaved-*"))


def test_compare_only_reads_and_works_on_a_read_only_store(suite, tmp_path):
    p, write = suite
    store = tmp_path / "store"
    endpoint = "--commerce-base-url=http://localhost:9/v1"
    p.runpytest("cases", f"--commerce-store={store}", endpoint, "--commerce-model=model-a")
    write(cart_001_add_single="shoe-002")
    p.runpytest("cases", f"--commerce-store={store}", endpoint, "--commerce-model=model-b")
    before = {f.name: f.read_bytes() for f in store.iterdir()}
    (store / "runs.sqlite").chmod(0o444)
    store.chmod(0o555)
    try:
        result = p.runpytest(f"--commerce-store={store}", "--commerce-compare=model-a,model-b")
        assert result.ret == 0
        result.stdout.fnmatch_lines(["failing only under B (model-b) (1):"])
        # nothing written, not even SQLite's shared-memory file
        assert {f.name: f.read_bytes() for f in store.iterdir()} == before
    finally:
        store.chmod(0o755)
        (store / "runs.sqlite").chmod(0o644)
    missing = p.runpytest(f"--commerce-store={tmp_path / 'none'}", "--commerce-compare=a,b")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stdout.fnmatch_lines(
        ["*none/runs.sqlite: no run store here (no run has been recorded)"]
    )
    assert not (tmp_path / "none").exists()


def test_a_run_with_nasty_content_is_stored_and_written_through_pytest(suite, tmp_path):
    p, _ = suite
    p.makeconftest(
        "from helpers import ToyBackend\n"
        "from pytest_commerce_evals import Text, ToolCall, ToolResult, TurnEnd\n"
        "class Nasty:\n"
        "    def run_turn(self, session, message):\n"
        "        deep = 'x'\n"
        "        for _ in range(200):\n"
        "            deep = [deep]\n"
        "        yield ToolCall(call_id='c1', name='add_to_cart', arguments={'q': 'a\\ud83e'})\n"
        "        yield ToolResult(call_id='c1', name='add_to_cart', result={'d': deep, 'k': 'b\\udd14'})\n"
        "        yield Text(text='cut \\ud83e here')\n"
        "        yield TurnEnd(turn=0)\n"
        "def pytest_commerce_evals_make_backend(config, case):\n    return ToyBackend()\n"
        "def pytest_commerce_evals_make_agent(config, case, backend):\n    return Nasty()\n"
    )
    out = tmp_path / "run.json"
    html = tmp_path / "run.html"
    store = tmp_path / "s"
    result = p.runpytest(
        "cases", f"--commerce-store={store}", f"--commerce-json={out}", f"--commerce-html={html}"
    )
    assert "INTERNALERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*recorded in *: 3 trials, complete", "JSON run record written*"])
    (stored,) = RunStore(store).runs()
    for record in (RunStore(store).load_run(stored.run_id), load_record(out)):
        events = record.trials[0].turns[0]
        assert events[0].arguments == {"q": "a\\ud83e"} and events[2].text == "cut \\ud83e here"
        assert events[1].result["k"] == "b\\udd14" and depth_of(events[1].result["d"]) == 200
    assert "cut \\ud83e here" in html.read_text(encoding="utf-8")


# -- the verdict store beside it ------------------------------------------------------------------


def a_verdict(n: int = 1, **changes):
    from pytest_commerce_evals.results import RubricVerdict

    fields = dict(
        dimension="price_accurate",
        rubric="PASS if a. FAIL if b.",
        outcome="fail",
        verdict="FAIL",
        reasoning="the reply says \ud83e",
        judge_model="judge-m",
        judge_fingerprint="j" * 64,
        rubric_fingerprint="r" * 64,
        transcript_hash=f"{n:064d}",
    )
    return RubricVerdict(**(fields | changes))


def test_the_verdict_store_keeps_a_judges_lone_surrogate_escaped(tmp_path):
    from pytest_commerce_evals.judge.verdict_store import VerdictStore

    store = VerdictStore(tmp_path / "v.sqlite")
    assert store.put(a_verdict())
    got = store.get(f"{1:064d}", "j" * 64, "r" * 64)
    assert got is not None and got.reasoning == "the reply says \\ud83e"


def test_a_damaged_verdict_row_is_a_miss_and_a_damaged_meta_is_named(tmp_path):
    from pytest_commerce_evals.judge.verdict_store import VerdictStore

    path = tmp_path / "v.sqlite"
    store = VerdictStore(path)
    store.put(a_verdict(1, reasoning="ok"))
    store.put(a_verdict(2, reasoning="ok"))
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "UPDATE verdicts SET truncated_chars = 'many' WHERE transcript_hash = ?", (f"{1:064d}",)
        )
    assert store.get(f"{1:064d}", "j" * 64, "r" * 64) is None  # asked again, then written over
    assert [v.transcript_hash for v in store.all()] == [f"{2:064d}"]
    store.put(a_verdict(1, reasoning="again"))
    assert store.get(f"{1:064d}", "j" * 64, "r" * 64).reasoning == "again"
    store.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE meta SET value = 'one' WHERE key = 'schema_version'")
    with pytest.raises(ValueError) as info:
        VerdictStore(path)
    assert str(info.value).startswith(
        f"{path}: verdict store damaged: meta.schema_version is 'one', not a schema version"
    )
    path.write_bytes(b"not a database" * 300)
    with pytest.raises(
        ValueError, match="verdict store damaged or unreadable .file is not a database"
    ):
        VerdictStore(path)


BREAKING = """
import os
from pytest_commerce_evals.reports import html as _html_report
from pytest_commerce_evals.store import recorder
from pytest_commerce_evals.store import run_store as store

def broken(*args, **kwargs):
    raise RuntimeError("boom")

if os.environ.get("BREAK") == "store":
    store.RunStore.add_trials = broken
if os.environ.get("BREAK") == "report":
    _html_report.render_run_html = broken
if os.environ.get("BREAK") == "summary":
    recorder.RunRecorder.summary_lines = broken
"""


@pytest.mark.parametrize(
    ("where", "expected"),
    [
        (
            "store",
            [
                "*run store error: RuntimeError: boom",
                "*its full record was written to *unsaved-*.json instead*",
            ],
        ),
        ("report", ["*could not write the HTML report to *run.html: RuntimeError: boom"]),
        ("summary", ["*commerce-evals: the run history summary failed: RuntimeError: boom"]),
    ],
)
def test_nothing_a_store_report_or_summary_throws_costs_the_run(
    suite, tmp_path, monkeypatch, where, expected
):
    p, _ = suite
    (p.path / "conftest.py").write_text((p.path / "conftest.py").read_text() + BREAKING)
    monkeypatch.setenv("BREAK", where)
    store = tmp_path / "store"
    result = p.runpytest_subprocess(
        "cases", f"--commerce-store={store}", f"--commerce-html={tmp_path / 'run.html'}"
    )
    result.assert_outcomes(passed=3)
    assert result.ret == 0 and "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(expected)
    if where == "store":
        (kept,) = store.glob("unsaved-*.json")
        assert len(load_record(kept).trials) == 3
    else:
        assert len(runs_in(store)) == 1


NASTY_CONFTEST = """
from helpers import ToyBackend
from pytest_commerce_evals import Text, ToolCall, ToolResult

def _deep(levels):
    root = node = []
    for _ in range(levels):
        child = []
        node.append(child)
        node = child
    return root

def pytest_commerce_evals_make_backend(config, case):
    return ToyBackend()

def pytest_commerce_evals_make_agent(config, case, backend):
    def run_turn(session, message):
        return [
            ToolCall(call_id="c1", name="search_products", arguments={"query": "\\ud83e"}),
            ToolResult(call_id="c1", result={"deep": _deep(300)}),
            Text(text="half an emoji: \\ud83e"),
        ]
    return run_turn
"""


def _run_one_case(pytester, tmp_path, conftest: str, case_yaml: str):
    """One case run against `conftest` (with tests/helpers.py importable), stored and written
    as a JSON record: (pytest's result, the store folder, the record's path)."""
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(conftest)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(case_yaml)
    out = tmp_path / "run.json"
    store = tmp_path / "store"
    result = pytester.runpytest("cases", f"--commerce-store={store}", f"--commerce-json={out}")
    return result, store, out


def test_a_trial_with_lone_surrogates_and_deep_results_is_stored_and_written(pytester, tmp_path):
    result, store, out = _run_one_case(
        pytester,
        tmp_path,
        NASTY_CONFTEST,
        "id: chat-001-nasty\npriority: low\ndifficulty: easy\nturns: [hi]\n"
        'expected: {reply_includes: ["half an emoji"]}\n',
    )
    assert result.ret == 0, result.stdout.str()
    assert "INTERNALERROR" not in result.stdout.str()
    [trial] = json.loads(out.read_text(encoding="utf-8"))["trials"]
    assert trial["outcome"] == "pass"
    events = trial["turns"][0]
    assert events[2]["text"] == "half an emoji: \\ud83e"
    assert events[0]["arguments"] == {"query": "\\ud83e"}
    [run] = runs_in(store)
    assert run["complete"] == 1
    assert [r["case_id"] for r in trial_rows(store, run["run_id"])] == ["chat-001-nasty"]


ODD_VALUES_CONFTEST = """
import datetime, decimal
from helpers import ToyBackend
from pytest_commerce_evals import Text, ToolCall, ToolResult

def pytest_commerce_evals_make_backend(config, case):
    return ToyBackend()

def pytest_commerce_evals_make_agent(config, case, backend):
    def run_turn(session, message):
        return [
            ToolCall(call_id="c1", name="search_products", arguments={"query": "order"}),
            ToolResult(call_id="c1", result={
                "placed": datetime.datetime(2026, 11, 30, 9, 15),
                "total": decimal.Decimal("89.90"),
                "tags": {"gift"},
            }),
            Text(text="Your order is on its way."),
        ]
    return run_turn
"""


def test_a_trial_whose_events_hold_values_plain_json_has_no_type_for_is_stored(pytester, tmp_path):
    """A datetime, a Decimal or a set in an event (an agent's tool returned one) is stored as
    the JSON record writes it, not lost with its batch."""
    result, store, out = _run_one_case(
        pytester,
        tmp_path,
        ODD_VALUES_CONFTEST,
        "id: order-001-odd\npriority: low\ndifficulty: easy\nturns: [where is it?]\n"
        'expected: {reply_includes: ["on its way"]}\n',
    )
    assert result.ret == 0, result.stdout.str()
    assert "run store error" not in result.stdout.str(), result.stdout.str()
    written = {"placed": "2026-11-30T09:15:00", "total": "89.90", "tags": ["gift"]}
    [trial] = json.loads(out.read_text(encoding="utf-8"))["trials"]
    assert trial["turns"][0][1]["result"] == written
    [run] = runs_in(store)
    [row] = trial_rows(store, run["run_id"])
    assert json.loads(row["transcript"])[0][1]["result"] == written
    [stored] = RunStore(store).load_run(run["run_id"]).trials
    assert stored.turns[0][1].result == written


def test_an_unsaved_record_is_imported_by_a_command_once_and_a_bad_one_stores_nothing(
    suite, tmp_path
):
    p, _ = suite
    store = tmp_path / "store"
    aside = tmp_path / "aside.json"
    p.runpytest("cases", "--commerce-store=none", f"--commerce-json={aside}")
    record = load_record(aside)
    broken = tmp_path / "broken.json"
    broken.write_text('{"run_id": ""}')
    bad = p.runpytest(
        f"--commerce-store={store}", f"--commerce-store-import={aside}",
        f"--commerce-store-import={broken}",
    )  # fmt: skip
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stdout.fnmatch_lines([f"commerce-evals: {broken}: *"])
    assert not RunStore.exists(store) or runs_in(store) == []  # the good one waited for it
    for _ in range(2):  # twice: the same rows written over
        result = p.runpytest(f"--commerce-store={store}", f"--commerce-store-import={aside}")
        assert result.ret == pytest.ExitCode.OK
        result.stdout.fnmatch_lines(
            [f"imported run {record.run_id} (3 trials, complete) from {aside} into *runs.sqlite"]
        )
        assert "passed" not in result.stdout.str()  # no test ran
    assert [r["run_id"] for r in runs_in(store)] == [record.run_id]
    assert RunStore(store).load_run(record.run_id).trials == record.trials


FAILS_ONCE = """
from pytest_commerce_evals.store import run_store

_add = run_store.RunStore.add_trials
_failed = []


def _flaky(self, run_id, trials, rows=None):
    if not _failed:
        _failed.append(run_id)
        raise run_store.StoreError("database is locked for a moment")
    return _add(self, run_id, trials, rows)


run_store.RunStore.add_trials = _flaky
"""


def test_a_store_that_failed_during_the_run_is_tried_again_at_its_end(suite, tmp_path):
    p, _ = suite
    p.makeconftest((p.path / "conftest.py").read_text() + FAILS_ONCE)
    store = tmp_path / "store"
    result = p.runpytest("cases", f"--commerce-store={store}")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*the store failed during the run (database is locked for a moment); tried again at "
            "the end of the run, it took the whole record*"
        ]
    )
    assert "NOT stored" not in result.stdout.str()
    assert not list(store.glob("unsaved-*.json"))
    (run,) = runs_in(store)
    assert RunStore(store).load_run(run["run_id"]).complete
    assert len(RunStore(store).load_run(run["run_id"]).trials) == 3


def test_a_lasting_connection_error_is_not_waited_on():
    class Refused(Exception):
        pass

    assert lasting(Refused('FATAL:  database "nope" does not exist'))
    assert lasting(Refused('password authentication failed for user "ci"'))
    wrapped = StoreError("run store unreachable")
    wrapped.__cause__ = Refused("no pg_hba.conf entry for host")
    assert lasting(wrapped)
    assert not lasting(Refused("connection refused (the server went away)"))
    assert not lasting(Refused("server closed the connection unexpectedly"))


def test_under_xdist_a_store_that_cannot_be_opened_stops_the_run_before_any_trial(suite, tmp_path):
    pytest.importorskip("xdist")
    p, _ = suite
    store = tmp_path / "store"
    stored_runs(store, "20250101-000000-000001")
    sql(store, "UPDATE meta SET value = 'x' WHERE key = 'schema_version'")
    marker = tmp_path / "trials-ran"
    p.makeconftest(
        (p.path / "conftest.py").read_text()
        + f"""

def pytest_runtest_setup(item):
    open({str(marker)!r}, "a").write("x")
"""
    )
    result = p.runpytest("cases", "-n", "2", f"--commerce-store={store}")
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert "--commerce-store: the run store cannot be opened" in out
    assert "meta.schema_version is 'x'" in out
    assert not marker.exists()  # no trial ran
    assert not list(store.glob("unsaved-*.json"))


def test_a_store_whose_tables_do_not_migrate_is_damaged_naming_the_step(tmp_path):
    from pytest_commerce_evals.store.run_store import DB_NAME

    folder = tmp_path / "runs"
    folder.mkdir()
    with closing(sqlite3.connect(folder / DB_NAME)) as conn:
        conn.executescript(
            "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
            "INSERT INTO meta VALUES ('schema_version', '3');"
            "CREATE TABLE runs (run_id TEXT PRIMARY KEY);"  # no trials table to add a column to
        )
        conn.commit()
    with pytest.raises(
        StoreError,
        match=r"schema_version is 3 but the trials table does not "
        r"migrate to 4 \(no such table: trials\); move the file aside",
    ):
        RunStore(folder).runs()


def test_a_schema_4_store_migrates_to_5_and_records_why_a_conversation_ended(tmp_path):
    folder = tmp_path / "runs"
    old = run([trial("cart-001-a")], run_id="20250101-000000-000001")
    store = RunStore(folder)
    store.import_record(old)
    store.close()
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        conn.execute("ALTER TABLE trials DROP COLUMN ended")
        conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")
    store = RunStore(folder)
    assert store.load_run(old.run_id).trials == old.trials  # kept, read as before
    talk = trial("orders-001-a").model_copy(update={"ended": "customer"})
    store.import_record(run([talk], run_id="20250101-000000-000002"))
    assert store.load_run("20250101-000000-000002").trials[0].ended == "customer"
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )
        assert "ended" in {r[1] for r in conn.execute("PRAGMA table_info(trials)")}


def test_a_schema_5_store_migrates_to_6_and_records_a_trials_model_calls(tmp_path):
    folder = tmp_path / "runs"
    old = run([trial("cart-001-a")], run_id="20250101-000000-000001")
    store = RunStore(folder)
    store.import_record(old)
    store.close()
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        conn.execute("ALTER TABLE trials DROP COLUMN calls")
        conn.execute("ALTER TABLE trials DROP COLUMN turn_s")
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    store = RunStore(folder)
    assert store.load_run(old.run_id).trials == old.trials  # kept, read as before: no calls
    spent = trial("cart-001-b").model_copy(
        update={
            "calls": [ModelCall("agent", "m", 120, 30, 0, 0.25, turn=0), ModelCall("judge", "j")],
            "turn_s": [0.5],
        }
    )
    store.import_record(run([spent], run_id="20250101-000000-000002"))
    again = store.load_run("20250101-000000-000002").trials[0]
    assert again.calls == spent.calls and again.turn_s == [0.5]
    assert again.calls[1].input_tokens is None  # not reported stays not reported
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            str(SCHEMA_VERSION),
        )


def test_a_schema_8_store_migrates_to_9_and_records_an_attacks_category(tmp_path):
    # a trial stored before schema 9 carries no category (its tags are anyone's to write): it
    # reads back as no attack; an attack case's trial stored after keeps its category
    folder = tmp_path / "runs"
    store = RunStore(folder)
    tagged = trial("attacks-001-a").model_copy(
        update={"tags": ["attack", "attack:policy-override"]}
    )
    old = run([tagged])
    store.import_record(old)
    store.close()
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        conn.execute("ALTER TABLE trials DROP COLUMN attack")
        conn.execute("UPDATE meta SET value = '8' WHERE key = 'schema_version'")
    store = RunStore(folder)
    [kept] = store.load_run(old.run_id).trials
    assert kept.attack is None and kept.tags == ["attack", "attack:policy-override"]
    attack = trial("attacks-001-b").model_copy(update={"attack": "approval-bypass"})
    store.import_record(run([attack], run_id="20250101-000000-000002"))
    assert store.load_run("20250101-000000-000002").trials[0].attack == "approval-bypass"
    assert trial_rows(folder, "20250101-000000-000002")[0]["attack"] == "approval-bypass"


def test_a_schema_5_store_left_half_way_gets_the_missing_column_too(tmp_path):
    # a store at 5 that has `calls` but not `turn_s` (a migration stopped between the two)
    folder = tmp_path / "runs"
    store = RunStore(folder)
    store.import_record(run([trial("cart-001-a")], run_id="20250101-000000-000001"))
    store.close()
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn, conn:
        conn.execute("ALTER TABLE trials DROP COLUMN turn_s")
        conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    store = RunStore(folder)
    spent = trial("cart-001-b").model_copy(update={"turn_s": [0.5]})
    store.import_record(run([spent], run_id="20250101-000000-000002"))
    assert store.load_run("20250101-000000-000002").trials[0].turn_s == [0.5]
    with closing(sqlite3.connect(folder / "runs.sqlite")) as conn:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
    assert {"calls", "turn_s"} <= columns
