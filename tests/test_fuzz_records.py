"""Bad input never stops the suite: property tests over the capture reader, the run-record reader
and damaged run stores, and the worst inputs found so far kept as files under
tests/data/bad_inputs/captures/ and tests/data/bad_inputs/records/.

Whatever a capture file, a run record or a store holds, reading it ends as data or as problems
naming the file (and the line or the key), within a few seconds, and never raises anything else.
What is accepted goes on: a sampled conversation is recorded, stored and written like a trial, an
accepted record is stored, written, diffed and rendered.

The default run spends a bounded budget (`COMMERCE_FUZZ_EXAMPLES` examples per property, 200
unless set); docs/fuzzing.md says how to run a long campaign.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from run_builders import events, run, trial

from pytest_commerce_evals.errors import StoreError
from pytest_commerce_evals.live.capture import CapturedTurn
from pytest_commerce_evals.live.reading import read_capture
from pytest_commerce_evals.live.redaction import Redactor
from pytest_commerce_evals.reports.html import render_run_html
from pytest_commerce_evals.results import TrialRecord
from pytest_commerce_evals.runs import SCHEMA_VERSION, RunRecord
from pytest_commerce_evals.store.compare import compare_runs
from pytest_commerce_evals.store.diff import diff_failing_sets
from pytest_commerce_evals.store.record_file import (
    clean_trial,
    load_record,
    record_json,
    write_record,
)
from pytest_commerce_evals.store.run_store import RunStore
from pytest_commerce_evals.usage import ModelCall

DATA = Path(__file__).parent / "data" / "bad_inputs"
EXAMPLES = int(os.environ.get("COMMERCE_FUZZ_EXAMPLES", "200"))
SECONDS = 5.0
"""The most one read may take: the readers bound their work well inside it."""

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # nothing written into the checkout; a failure prints its reproduction
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# -- what generated captures and records are made of ----------------------------------------------

LINE_KEYS = list(CapturedTurn.model_fields)
EVENT_KEYS = [
    "type", "call_id", "name", "arguments", "status", "reason", "result", "component",
    "payload", "items", "changes", "text", "turn", "product_id", "quantity", "variant",
]  # fmt: skip
EVENT_TYPES = ["tool_call", "tool_result", "ui", "cart_update", "change_update", "text",
               "turn_end", "telemetry"]  # fmt: skip
RECORD_KEYS = list(RunRecord.model_fields)
TRIAL_KEYS = list(trial("x").model_dump())
SCALARS = [
    None, True, False, 0, 1, 2, -1, 2**31 - 1, 2**31, 2**63, 10**30, 1.5, float("nan"),
    float("inf"), "", "customer", "operator", "2025-06-01T12:00:03Z", "2025-06-01T12:00:03",
    "not a time", "\ud83e", "a\udd14b", "\ud83e\udd14", "c-8f3a", "ok", "blocked", "pass",
    "fail", "regression", "live", "jane@example.com", "+1 415-555-0134",
    "4111 1111 1111 1111", 4111111111111111, "x" * 300,
]  # fmt: skip

text = st.text(max_size=10)
surrogate_text = st.tuples(text, st.characters(categories=["Cs"]), text).map("".join)
scalar = st.one_of(
    st.sampled_from(SCALARS),
    text,
    surrogate_text,
    st.integers(),
    st.floats(),
    st.sampled_from(EVENT_TYPES),
)
key = st.one_of(st.sampled_from(LINE_KEYS + EVENT_KEYS + RECORD_KEYS + TRIAL_KEYS), text)
json_value = st.recursive(
    scalar,
    lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(key, c, max_size=4)),
    max_leaves=12,
)


def nest(depth: int, leaf=1):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


deep_value = st.integers(0, 700).map(nest)
GOOD_LINE = {
    "schema_version": 1,
    "conversation_id": "c-1",
    "timestamp": "2025-06-01T12:00:03Z",
    "role": "customer",
    "turn": 1,
    "user": "trail shoes under $120?",
    "events": events(),
}


@st.composite
def event(draw) -> dict:
    base = draw(st.sampled_from(GOOD_LINE["events"]))
    data = json.loads(json.dumps(base))
    for _ in range(draw(st.integers(0, 3))):
        data[draw(st.sampled_from([*EVENT_KEYS, "junk"]))] = draw(st.one_of(json_value, deep_value))
    return data


@st.composite
def capture_line(draw, cid: str) -> dict:
    data = json.loads(json.dumps(GOOD_LINE))
    data["conversation_id"] = cid
    data["turn"] = draw(st.integers(1, 3))
    data["events"] = draw(st.lists(event(), max_size=4))
    for _ in range(draw(st.integers(0, 3))):
        data[draw(st.sampled_from([*LINE_KEYS, "junk"]))] = draw(json_value)
    if draw(st.integers(0, 9)) == 0:
        del data[draw(st.sampled_from(LINE_KEYS))]
    return data


def serialise(data, ascii_only: bool) -> bytes:
    """JSON bytes as a careless writer makes them: escapes, or raw surrogates."""
    return json.dumps(data, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@st.composite
def damaged(draw, content: bytes) -> bytes:
    """Bytes cut short, with bytes put in, or lines repeated."""
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(content)))
        action = draw(st.sampled_from(["cut", "insert", "repeat"]))
        if action == "cut":
            content = content[:at]
        elif action == "insert":
            content = content[:at] + draw(st.binary(min_size=1, max_size=4)) + content[at:]
        else:
            content = content[:at] + content[at:][:200] + content[at:]
    return content


@st.composite
def capture_file(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.integers(0, 9))
        if kind == 0:
            lines.append(draw(st.binary(max_size=40)).replace(b"\n", b" "))
        elif kind == 1:
            depth = draw(st.integers(150, 60_000))
            lines.append(b"[" * depth + b"]" * draw(st.sampled_from([0, depth])))
        elif kind == 2:
            lines.append(serialise(draw(json_value), draw(st.booleans())))
        else:
            cid = draw(st.one_of(st.sampled_from(["c-1", "c-2", "c-3"]), surrogate_text, text))
            line = serialise(draw(capture_line(cid)), draw(st.booleans()))
            lines.append(draw(damaged(line)) if kind == 3 else line)
    content = b"\n".join(lines)
    return content + (b"\n" if draw(st.booleans()) else b"")


# -- the capture reader -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Iterator[Path]:
    # in memory where there is a tmpfs: the stores written here commit thousands of times
    if Path("/dev/shm").is_dir() and os.access("/dev/shm", os.W_OK):
        where = Path(tempfile.mkdtemp(prefix="commerce-fuzz-", dir="/dev/shm"))
        yield where
        shutil.rmtree(where, ignore_errors=True)
    else:
        yield tmp_path_factory.mktemp("fuzz-records")


@pytest.fixture(scope="module")
def store(folder) -> RunStore:
    return RunStore(folder / "runs")


def timed(call, *args, **kwargs):
    started = time.perf_counter()
    try:
        return call(*args, **kwargs)
    finally:
        took = time.perf_counter() - started
        assert took < SECONDS, f"{took:.1f} s in {call.__name__}"


def assert_round_trip(record: RunRecord, path: Path) -> None:
    """Written and read back, the record says the same (a number JSON cannot hold, NaN or an
    infinity, is written as null, as pydantic writes it)."""
    assert record_json(load_record(write_record(record, path))) == record_json(record)


def check_capture(path: Path, store: RunStore) -> None:
    lines = path.read_bytes().count(b"\n") + 1
    capture = timed(read_capture, [path], redactor=Redactor(), display=lambda p: p.name)
    for problem in capture.problems:
        assert str(problem).startswith(f"{path.name}:{problem.line}: ")
        assert 1 <= problem.line <= lines and problem.message
        str(problem).encode("utf-8")  # a terminal can print it
    # a sampled conversation goes on as a trial: recorded, stored and written
    trials = []
    for n, conversation in enumerate(capture.conversations):
        conversation.conversation_id.encode("utf-8")
        assert [t.turn for t in conversation.turns] == list(range(1, len(conversation.turns) + 1))
        # as live mode builds it: the conversation's events as the agent's turns
        record = TrialRecord.model_construct(
            case_id=f"{n}-{conversation.conversation_id}", trial=1, trials=1, set_name="live",
            threshold=0.0, priority="medium", difficulty="medium", tags=["live"],
            outcome="pass", file=conversation.path, line=conversation.line,
            turns=conversation.events,
        )  # fmt: skip
        trials.append(clean_trial(record.settle()))
    if trials:
        record = run(trials, run_id=f"live-{time.monotonic_ns()}", kind="live")
        store.import_record(record)
        assert_round_trip(record, path.with_suffix(".json"))


@FUZZ
@given(content=capture_file())
def test_any_capture_reads_to_conversations_and_located_problems(folder, store, content):
    path = folder / "capture.jsonl"
    path.write_bytes(content)
    check_capture(path, store)


@FUZZ
@given(content=st.binary(max_size=300))
def test_any_bytes_read_as_a_capture_to_located_problems(folder, store, content):
    path = folder / "bytes.jsonl"
    path.write_bytes(content)
    check_capture(path, store)


# -- the run-record reader ----------------------------------------------------------------------

GOOD_RECORD = json.loads(
    run(
        [trial("cart-001-a"), trial("cart-002-b", "fail"), trial("cart-003-c", "skipped")]
    ).model_dump_json()
)


@st.composite
def run_record(draw) -> dict:
    data = json.loads(json.dumps(GOOD_RECORD))
    places = [data, *data["trials"], *data["sets"], data["selection"]]
    for _ in range(draw(st.integers(0, 4))):
        place = draw(st.sampled_from(places))
        name = draw(st.one_of(st.sampled_from([*place, "junk"]), key))
        if draw(st.integers(0, 4)) == 0:
            place.pop(name, None)
        else:
            place[name] = draw(st.one_of(json_value, deep_value))
    if draw(st.booleans()):
        data["schema_version"] = draw(
            st.one_of(st.sampled_from([1, 2, 3, 0, -1, 2**31, 10**40, True, None, "2", 2.0]),
                      st.integers())
        )  # fmt: skip
    return data


@st.composite
def record_file(draw) -> bytes:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return draw(st.binary(max_size=200))
    if kind == 1:
        depth = draw(st.integers(300, 60_000))
        body = b'{"trials": ' + b"[" * depth + b"]" * depth + b"}"
        return body if draw(st.booleans()) else body[: draw(st.integers(0, len(body)))]
    if kind == 2:
        return serialise(draw(json_value), draw(st.booleans()))
    content = serialise(draw(run_record()), draw(st.booleans()))
    return draw(damaged(content)) if kind == 3 else content


def check_record(path: Path, store: RunStore) -> None:
    try:
        record = timed(load_record, path)
    except StoreError as exc:
        assert str(exc).startswith(f"{path}: ")
        str(exc).encode("utf-8")
        return
    # an accepted record goes on: stored, written, read back, diffed and rendered
    record = record.model_copy(update={"run_id": f"r-{time.monotonic_ns()}"})
    store.import_record(record)
    assert_round_trip(record, path.with_suffix(".out.json"))
    diff_failing_sets(record, record).lines()
    compare_runs(record, record).lines()
    render_run_html(record, None, "").encode("utf-8")


@FUZZ
@given(content=record_file())
def test_any_record_file_loads_or_is_an_error_naming_the_file(folder, store, content):
    path = folder / "record.json"
    path.write_bytes(content)
    check_record(path, store)


# -- damaged stores -------------------------------------------------------------------------------

TABLES = {
    "meta": ["key", "value"],
    "runs": ["run_id", "kind", "started_at", "complete", "selection", "signature", "options",
             "judge_fingerprints", "agent_model"],
    "trials": ["case_id", "trial", "outcome", "tags", "failures", "transcript", "verdicts",
               "grader_results", "messages", "snapshot", "threshold"],
    "set_results": ["set_name", "passed", "graded", "rate", "met", "other"],
}  # fmt: skip
SQL_VALUES = [None, "", "{", "[]", "{}", "null", "7", "x", "two", '"s"', "[[", 0, -1, 2**62, 1.5,
              b"\xff\xfe", '"\\ud83e"', "[" * 2000 + "]" * 2000]  # fmt: skip


@pytest.fixture(scope="module")
def template(folder) -> Path:
    """A store holding three runs, to copy and damage."""
    where = folder / "template"
    store = RunStore(where)
    for n in range(3):
        verdict = {"dimension": "grounded", "outcome": "fail", "judge_fingerprint": "j"}
        record = run(
            [trial("cart-001-a", verdicts=[verdict]), trial("cart-002-b", "fail")],
            run_id=f"2025010{n + 1}-000000-00000{n}",
            started_at=f"2025-01-0{n + 1}T00:00:00.000+00:00",
        )
        store.import_record(record)
    return where / "runs.sqlite"


@st.composite
def damage(draw) -> list:
    steps = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.integers(0, 5))
        if kind <= 2:
            table = draw(st.sampled_from(sorted(TABLES)))
            column = draw(st.sampled_from(TABLES[table]))
            steps.append(("sql", f"UPDATE {table} SET {column} = ? WHERE rowid % 2 = ?",
                          (draw(st.sampled_from(SQL_VALUES)), draw(st.integers(0, 1)))))  # fmt: skip
        elif kind == 3:
            steps.append(("sql", draw(st.sampled_from([
                "DELETE FROM meta", "DROP TABLE set_results", "DROP TABLE trials",
                "DROP TABLE meta", "ALTER TABLE meta RENAME COLUMN value TO v",
                "ALTER TABLE runs DROP COLUMN options", "DELETE FROM set_results",
            ])), ()))  # fmt: skip
        elif kind == 4:
            steps.append(("cut", draw(st.integers(0, 50_000)), None))
        else:
            steps.append(
                ("bytes", draw(st.integers(0, 50_000)), draw(st.binary(min_size=1, max_size=16)))
            )
    return steps


def damage_store(template: Path, into: Path, steps: list) -> None:
    into.mkdir()
    shutil.copyfile(template, into / "runs.sqlite")
    db = into / "runs.sqlite"
    for kind, what, extra in steps:
        if kind == "sql":
            try:
                with closing(sqlite3.connect(db)) as conn, conn:
                    conn.execute(what, extra)
            except (sqlite3.Error, UnicodeDecodeError):
                pass  # already damaged past what SQL can change: the bytes are the damage
        elif kind == "cut":
            db.write_bytes(db.read_bytes()[:what])
        else:
            raw = db.read_bytes()
            db.write_bytes(raw[:what] + extra + raw[what + len(extra) :])


def read_everything(folder: Path, read_only: bool) -> None:
    """Each call either returns or raises StoreError naming the database."""

    def guarded(call, *args, **kwargs):
        try:
            return timed(call, *args, **kwargs)
        except StoreError as exc:
            assert str(exc).startswith(f"{folder / 'runs.sqlite'}: ")
            return None

    store = guarded(RunStore, folder, read_only=read_only)
    if store is None:
        return
    for found in guarded(store.runs) or []:
        guarded(store.load_run, found.run_id)
        guarded(store.verdicts, found.run_id)
    guarded(store.previous_comparable, run([], started_at="2026-01-01"))
    guarded(store.find, "20250101")
    guarded(store.latest_for_model, "model-a")
    guarded(store.models)
    for note in store.damaged:
        assert note.startswith(f"{folder / 'runs.sqlite'}: ")
    if not read_only:  # a run recorded into it is stored or refused by name, never lost
        guarded(store.import_record, run([trial("cart-001-a")], run_id="20260101-000000-new"))


@settings(FUZZ, max_examples=max(EXAMPLES // 4, 10))
@given(steps=damage())
def test_a_damaged_store_reads_what_it_can_or_names_itself(folder, template, steps):
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        for read_only in (True, False):
            where = Path(tmp) / f"store-{read_only}"
            damage_store(template, where, steps)
            read_everything(where, read_only)


# -- a store left at an older schema, or half-way through a migration ---------------------------

LATER_COLUMNS = {"stopping": 4, "ended": 5, "calls": 6, "turn_s": 6, "cached": 7, "attack": 9}
"""Each trial column added after schema 3, and the schema that added it."""


@settings(FUZZ, max_examples=max(EXAMPLES // 4, 10))
@given(
    version=st.integers(3, SCHEMA_VERSION - 1),
    dropped=st.sets(st.sampled_from(sorted(LATER_COLUMNS))),
)
def test_a_store_at_any_older_schema_or_half_migrated_opens_at_the_current_one(
    folder, version, dropped
):
    # the store a version left: any of the later columns missing (all of those added after
    # it, or some of them, as a migration stopped half-way leaves it), its runs kept
    dropped = {c for c in dropped if LATER_COLUMNS[c] > version}
    old = run([trial("cart-001-a")], run_id="20250101-000000-000001")
    spent = trial("cart-001-b").model_copy(
        update={
            "calls": [ModelCall("agent", "m", 12, 3, 0, 0.25, turn=0)],
            "turn_s": [0.5],
            "ended": "customer",
            "messages": ["hi", "bye"],
            "cached": [1],
            "attack": "memory-poisoning",
        }
    )
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        where = Path(tmp) / "runs"
        RunStore(where).import_record(old)
        with closing(sqlite3.connect(where / "runs.sqlite")) as conn, conn:
            for column in sorted(dropped):
                conn.execute(f"ALTER TABLE trials DROP COLUMN {column}")
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (version,))
        store = RunStore(where)
        assert store.load_run(old.run_id).trials == old.trials  # kept, read as before
        store.import_record(run([spent], run_id="20250101-000000-000002"))
        assert store.load_run("20250101-000000-000002").trials == [spent]  # nothing lost
        store.close()
        with closing(sqlite3.connect(where / "runs.sqlite")) as conn:
            columns = {row[1] for row in conn.execute("PRAGMA table_info(trials)")}
            stored = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'")
            assert stored.fetchone() == (str(SCHEMA_VERSION),)
        assert set(LATER_COLUMNS) <= columns


# -- the worst inputs found, kept ------------------------------------------------------------------

CAPTURES = {
    # file: (conversations judged, {line: what its problem says})
    "lone-surrogate-id.jsonl": (["c-ok"], {2: "conversation_id holds a lone surrogate"}),
    "lone-surrogate-text.jsonl": (["c-ok"], {2: "events.0.text: a lone surrogate \\ud83e"}),
    "raw-surrogate-bytes.jsonl": (
        ["c-ok"],
        {2: "not JSON: not UTF-8 text (byte 129: invalid continuation byte)"},
    ),
    "nested-256.jsonl": (["c-ok"], {2: "nested deeper than 200 levels; the conversation is"}),
    "nested-5000.jsonl": (["c-ok"], {2: "nested deeper than 200 levels; line skipped"}),
    "turn-2147483648.jsonl": (["c-ok"], {2: "turn: Input should be less than or equal to"}),
    "turn-2147483647-alone.jsonl": (["c-ok"], {2: "turn(s) 1, 2, 3, 4, 5 (2147483646 in all)"}),
    "schema-version-unknown.jsonl": (
        ["c-ok"],
        {
            2: "unknown capture schema_version 2; this plugin reads 1",
            3: "schema_version: Value error, expected an integer; found str",
            4: "schema_version: Value error, expected an integer; found bool",
            5: f"unknown capture schema_version 1{'0' * 29}… (41 characters)",
            6: "unknown capture schema_version 0; this plugin reads 1",
        },
    ),
    "not-json.jsonl": (
        ["c-ok"],
        {2: "not JSON: Expecting value", 3: "not JSON: Expecting value", 4: "not JSON: Extra"},
    ),
    "truncated.jsonl": (["c-ok"], {2: "truncated JSON: Expecting ':' delimiter"}),
    "truncated-in-a-character.jsonl": (["c-ok"], {2: "(and a character cut short)"}),
    "redaction-400kb-token.jsonl": (["c-ok", "c-token"], {}),
    "card-shaped-quantity.jsonl": (["c-ok"], {2: "redacting it leaves an invalid event"}),
}


@pytest.mark.parametrize("name", sorted(CAPTURES))
def test_a_kept_bad_capture_reads_as_it_should(folder, store, name):
    path = DATA / "captures" / name
    conversations, problems = CAPTURES[name]
    capture = timed(read_capture, [path], redactor=Redactor(), display=lambda p: p.name)
    assert sorted(c.conversation_id for c in capture.conversations) == conversations
    assert {p.line: p.message for p in capture.problems}.keys() == problems.keys()
    for problem in capture.problems:
        assert problems[problem.line] in problem.message, problem
    copy = folder / name
    shutil.copyfile(path, copy)
    check_capture(copy, store)


RECORDS = {
    # file: what the error says, or None for a record that loads
    "nested-3000.json": "key trials.0.0.0.0.0.… 392 more ….0.0: nested deeper than 400 levels",
    "nested-3000-unclosed.json": "key trials.0.0.0.0.0.… 392 more ….0.0: nested deeper than",
    "nested-500-options.json": "key options.a.a.a.a.a.… 392 more ….a.a: nested deeper than 400",
    "schema-version-string.json": "key schema_version: expected an integer from 1 to 9; found '2'",
    "schema-version-float.json": "key schema_version: expected an integer from 1 to 9; found 2.0",
    "schema-version-bool.json": "key schema_version: expected an integer from 1 to 9; found True",
    "schema-version-zero.json": "key schema_version: expected an integer from 1 to 9; found 0",
    "schema-version-huge.json": f"schema_version 1{'0' * 29}… (41 characters) is newer",
    "schema-version-10.json": "schema_version 10 is newer than this plugin's 9",
    "wrong-types.json": "key trials: Input should be a valid list (found dict)",
    "missing-keys.json": "key run_id: Field required; key started_at: Field required",
    "trial-missing-keys.json": "key trials.0.outcome: Field required",
    "trial-wrong-types.json": "key trials.0.trial: Input should be a valid integer",
    "not-utf8.json": "cannot read a run record: not UTF-8 text (byte 30: invalid start byte)",
    "not-json.json": "cannot read a run record: Expecting value: line 1 column 1 (char 0)",
    "truncated.json": "cannot read a run record: Unterminated string starting at",
    "huge-integer.json": "cannot read a run record: Exceeds the limit (4300 digits)",
    "lone-surrogates.json": None,
    "nested-300-result.json": None,
    "bom.json": None,
}


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_kept_bad_record_reads_as_it_should(folder, store, name):
    path = DATA / "records" / name
    expected = RECORDS[name]
    if expected is None:
        record = timed(load_record, path)
        assert record.trials
    else:
        with pytest.raises(StoreError) as info:
            timed(load_record, path)
        assert str(info.value).startswith(f"{path}: ") and expected in str(info.value)
    copy = folder / name
    shutil.copyfile(path, copy)
    check_record(copy, store)


def test_the_kept_records_that_load_keep_what_they_hold():
    odd = load_record(DATA / "records" / "lone-surrogates.json")
    assert odd.trials[0].turns[0][-2].text == "cut \\ud83e here"
    assert odd.agent_model == "model-\\udd14"
    deep = load_record(DATA / "records" / "nested-300-result.json")
    assert deep.trials[0].turns[0][1].result == nest(300, "x")
