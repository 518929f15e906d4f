"""The verdict store: keyed by three fingerprints, errors never cached, safe for several writers."""

from __future__ import annotations

import multiprocessing
import sqlite3
import warnings
from contextlib import closing
from pathlib import Path

import pytest

from pytest_commerce_evals.judge.verdict_store import SCHEMA_VERSION, VerdictStore
from pytest_commerce_evals.results import RubricVerdict


def verdict(n: int = 0, outcome: str = "pass", **changes) -> RubricVerdict:
    fields = dict(
        dimension="price_accurate",
        rubric="PASS if a. FAIL if b.",
        outcome=outcome,
        verdict={"pass": "PASS", "fail": "FAIL"}.get(outcome),
        reasoning=f"reason {n}",
        judge_model="judge-m",
        judge_fingerprint="j" * 64,
        rubric_fingerprint="r" * 64,
        transcript_hash=f"{n:064d}",
        truncated_chars=7,
        truncated_turns=1,
    )
    fields.update(changes)
    return RubricVerdict(**fields)


def test_a_stored_verdict_comes_back_marked_reused(tmp_path):
    store = VerdictStore(tmp_path / "v.sqlite")
    assert store.put(verdict(1, "fail"))
    got = store.get(f"{1:064d}", "j" * 64, "r" * 64)
    assert got is not None
    back = got.to_verdict()
    assert back.reused is True
    assert (back.outcome, back.verdict, back.reasoning) == ("fail", "FAIL", "reason 1")
    assert (back.truncated_chars, back.truncated_turns, back.judge_model) == (7, 1, "judge-m")


@pytest.mark.parametrize(
    "key",
    [
        (f"{2:064d}", "j" * 64, "r" * 64),  # another transcript
        (f"{1:064d}", "k" * 64, "r" * 64),  # another judge
        (f"{1:064d}", "j" * 64, "s" * 64),  # another rubric
    ],
)
def test_a_lookup_hits_only_when_all_three_hashes_match(tmp_path, key):
    store = VerdictStore(tmp_path / "v.sqlite")
    store.put(verdict(1))
    assert store.get(*key) is None


@pytest.mark.parametrize("outcome", ["judge_error", "infra_error"])
def test_errors_are_never_stored(tmp_path, outcome):
    store = VerdictStore(tmp_path / "v.sqlite")
    assert store.put(verdict(1, outcome, error="boom")) is False
    assert store.count() == 0


def test_the_database_is_in_wal_mode_with_a_schema_version(tmp_path):
    path = tmp_path / "deep" / "v.sqlite"
    VerdictStore(path)
    with closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
    assert int(row[0]) == SCHEMA_VERSION


def test_a_store_written_by_a_newer_plugin_is_refused(tmp_path):
    path = tmp_path / "v.sqlite"
    VerdictStore(path)
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    with pytest.raises(ValueError, match="schema_version 99 is newer"):
        VerdictStore(path)


def test_all_lists_one_dimension_oldest_first(tmp_path):
    store = VerdictStore(tmp_path / "v.sqlite")
    store.put(verdict(1))
    store.put(verdict(2, dimension="budget_respected"))
    store.put(verdict(3))
    assert [v.transcript_hash for v in store.all("price_accurate")] == [f"{1:064d}", f"{3:064d}"]
    assert len(store.all()) == 3


def _write_many(path: str, worker: int, count: int) -> None:
    store = VerdictStore(Path(path))
    for i in range(count):
        store.put(verdict(worker * 100_000 + i))


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    path = str(tmp_path / "v.sqlite")
    VerdictStore(path)
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_many, args=(path, w, 150)) for w in (1, 2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=120)
    assert [p.exitcode for p in workers] == [0, 0]
    for p in workers:
        p.close()
    store = VerdictStore(path)
    assert store.count() == 300
    hashes = {v.transcript_hash for v in store.all()}
    assert f"{100_000 + 149:064d}" in hashes and f"{200_000:064d}" in hashes


def _write_from_forked_child(store: VerdictStore, start: int) -> None:
    for i in range(50):
        store.put(verdict(start + i))


def test_a_forked_child_and_threads_use_connections_of_their_own(tmp_path):
    import threading

    store = VerdictStore(tmp_path / "v.sqlite")
    store.put(verdict(1))  # the parent's connection is open before the fork
    ctx = multiprocessing.get_context("fork")
    child = ctx.Process(target=_write_from_forked_child, args=(store, 1_000))
    with warnings.catch_warnings():  # Python 3.12+ warns about fork in a threaded process
        warnings.simplefilter("ignore", DeprecationWarning)
        child.start()
    threads = [
        threading.Thread(target=lambda n=n: [store.put(verdict(n + i)) for i in range(50)])
        for n in (2_000, 3_000)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    child.join(timeout=120)
    assert child.exitcode == 0
    child.close()
    assert store.count() == 1 + 50 + 100
    assert len(store._open) == 3  # this thread and the two others; the child's stayed there
    store.close()
    assert store._open == []
    assert store.get(f"{1_049:064d}", "j" * 64, "r" * 64) is not None  # reopens after close


def test_the_store_closes_as_a_context_manager(tmp_path):
    with VerdictStore(tmp_path / "v.sqlite") as store:
        store.put(verdict(1))
        (conn,) = [c for _, c in store._open]
    with pytest.raises(sqlite3.ProgrammingError, match="closed"):
        conn.execute("SELECT 1")


def test_under_xdist_the_workers_verdict_store_outages_make_one_summary_line():
    from types import SimpleNamespace

    from pytest_commerce_evals.judge import _plugin as judge_plugin

    config = SimpleNamespace(stash={})
    outage = {"outage": "lost the connection", "missed": 3, "unstored": 2, "reconnected": 1}
    for away in (False, True):
        node = SimpleNamespace(
            config=config, workeroutput={judge_plugin.WORKER_KEY: {**outage, "away": away}}
        )
        judge_plugin.pytest_testnodedown(node, None)
    judge_plugin.pytest_testnodedown(SimpleNamespace(config=config, workeroutput={}), None)
    (line,) = judge_plugin.verdict_store_lines(config)
    assert line == (
        "verdict store: lost the connection (on 2 workers); 6 verdict(s) asked of the judge "
        "instead of looked up, 4 not stored; still away on 1 worker(s), reconnected 2 time(s)"
    )


def test_a_worker_hands_its_verdict_store_outage_to_the_controller():
    from types import SimpleNamespace

    from pytest_commerce_evals.judge import _plugin as judge_plugin

    store = SimpleNamespace(outage="lost", missed=1, unstored=0, reconnected=0, unavailable="x")
    config = SimpleNamespace(
        stash={judge_plugin.JUDGE: SimpleNamespace(store=store)}, workeroutput={}
    )
    judge_plugin.pytest_sessionfinish(SimpleNamespace(config=config))
    assert config.workeroutput[judge_plugin.WORKER_KEY] == {
        "outage": "lost",
        "missed": 1,
        "unstored": 0,
        "reconnected": 0,
        "away": True,
    }
