"""Production mode: the capture writer, redaction, the sample, bad lines, live runs, the trend."""

from __future__ import annotations

import json
import os
import random
import string
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from live_traffic import EMAIL, transcripts, write_traffic

from pytest_commerce_evals.judge import _plugin as _judge_plugin
from pytest_commerce_evals.judge.judge import Judge
from pytest_commerce_evals.judge.verdict_store import VerdictStore
from pytest_commerce_evals.live.capture import CAPTURE_MAX_DEPTH, CaptureWriter
from pytest_commerce_evals.live.reading import read_capture
from pytest_commerce_evals.live.redaction import _EMAIL, _EMAIL_SCAN, Redactor
from pytest_commerce_evals.live.sampling import is_sampled
from pytest_commerce_evals.live.trend import compute_trend, render_trend_svg
from pytest_commerce_evals.results import RubricVerdict
from pytest_commerce_evals.rubrics import STANDARD
from pytest_commerce_evals.stats import two_proportion_p, wilson_interval
from pytest_commerce_evals.store.run_store import RunStore
from pytest_commerce_evals.testing.fake import FakeClient

PASS = '{"reasoning": "every price matches the tool results", "verdict": "PASS"}'
FAIL = '{"reasoning": "the reply states a price no tool returned", "verdict": "FAIL"}'
IDENTIFIERS = (EMAIL, "415-555-0134", "4111 1111 1111 1111", "4111111111111111", "jane.doe")


def ids(n: int, prefix: str = "conv") -> list[str]:
    return [f"{prefix}-{i:05d}" for i in range(n)]


# -- the writer ---------------------------------------------------------------------------------


def test_writer_lines_round_trip_and_number_turns(tmp_path):
    path = tmp_path / "cap.jsonl"
    [(message, events)] = transcripts()[1]
    with CaptureWriter(path) as writer:
        writer.append_turn("c-1", "customer", message, events)
        writer.append_turn("c-1", "customer", "and cheaper?", [])
    capture = read_capture([path])
    [conv] = capture.conversations
    assert [t.turn for t in conv.turns] == [1, 2]
    assert conv.user_messages == [message, "and cheaper?"]
    assert [e.type for e in conv.turns[0].events] == [e.type for e in events]
    assert capture.problems == []


def test_writer_redacts_before_writing(tmp_path):
    path = tmp_path / "cap.jsonl"
    [first, second] = transcripts()[0]
    with CaptureWriter(path) as writer:
        writer.append_turn("c-1", "customer", first[0], first[1])
        writer.append_turn("c-1", "customer", second[0], second[1])
    text = path.read_text()
    assert not any(x in text for x in IDENTIFIERS)
    assert "[email]" in text and "[phone]" in text and "[card]" in text


def test_concurrent_writers_never_interleave_lines(tmp_path):
    path = tmp_path / "cap.jsonl"
    [(message, events)] = transcripts()[1]
    writer = CaptureWriter(path, redactor=None)

    def work(k: int) -> None:
        for i in range(60):
            writer.append_turn(f"t{k}-{i}", "customer", message, events, turn=1)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    second = CaptureWriter(path, redactor=None)  # another descriptor on the same file
    second.append_turn("other", "customer", message, events)
    writer.close(), second.close()
    capture = read_capture([path])
    assert capture.problems == []
    assert len(capture.conversations) == 8 * 60 + 1


# -- redaction ----------------------------------------------------------------------------------


LETTERS = "abcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("write to jane.doe+shop@mail.example.co.uk now", "write to [email] now"),
        ("call +1 (415) 555-0134 today", "call [phone] today"),
        ("or 07700 900123", "or [phone]"),
        ("card 4111-1111-1111-1111 exp", "card [card] exp"),
        ("card 4111111111111111", "card [card]"),
        # IBANs, with and without their spaces (a spaced one read as a phone number before)
        ("pay to DE89370400440532013000 today", "pay to [iban] today"),
        ("IBAN GB82 WEST 1234 5698 7654 32, thanks", "IBAN [iban], thanks"),
        ("FR14 2004 1010 0505 0001 3M02 606", "[iban]"),
        # API keys and tokens of the common forms, made of parts (no key-shaped text in the
        # source: they are fakes, and secret scanners need not be told so)
        ("my key " + "sk-" + "proj-" + LETTERS + "123456", "my key [secret]"),
        ("sk-" + LETTERS + "0123", "[secret]"),
        ("stripe " + "sk_" + "live_" + "51HaBcDeFgHiJkLmNoP ok", "stripe [secret] ok"),
        ("aws " + "AKIA" + "IOSFODNN7EXAMPLE", "aws [secret]"),
        ("ghp" + "_" + LETTERS + "0123456789AB", "[secret]"),
        ("xoxb" + "-123456789012-abcdefABCDEF", "[secret]"),
        ("Authorization: Bearer abcdef0123456789abcdef", "Authorization: Bearer [secret]"),
        ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "[secret]"),
        # street addresses: a house number and a street, in English, French and German
        ("ship to 221B Baker Street, London", "ship to [address], London"),
        ("1600 Pennsylvania Ave NW", "[address]"),
        ("deliver to 12 Oak Street", "deliver to [address]"),
        ("at 5 Main St #4", "at [address] #4"),
        ("12 rue de la Paix, Paris", "[address], Paris"),
        ("Hauptstraße 5, 10115 Berlin", "[address], 10115 Berlin"),
    ],
)
def test_redactor_replaces_identifiers(text, expected):
    assert Redactor().text(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "arrives by 2025-06-04",
        "$1,299.00 or $169.99",
        "shoe-trail-005 and ord-1001",
        "EAN 4006381333931",
        "1234 5678 9012 3456",
        "2025-06-01T09:00:01Z",
        "12:30",
        "weight 340 g",
        "I want 3 Nike Air Max Street shoes",  # a product named like a street
        "2 Pack Trail runner, size 10",
        "SKU AB12 in stock",
        "DE89370400440532013001",  # an IBAN's shape failing its check digits
        "sk-trail-runner",  # a slug, not a key
        "order ORD-2025-0042 shipped",
    ],
)
def test_redactor_leaves_catalog_facts_alone(text):
    # a 16-digit number failing the Luhn check is not a card; a 13-digit EAN is not a phone
    assert Redactor().text(text) == text


def test_redactor_leaves_a_reference_transcript_without_identifiers_unchanged():
    redactor = Redactor()
    for conv in transcripts()[1:]:
        for message, events in conv:
            dumped = [e.model_dump(mode="json") for e in events]
            assert redactor.value(dumped) == dumped
            assert redactor.text(message) == message


def test_redaction_of_a_long_token_takes_linear_time():
    # the email pattern once scanned a run of letters and digits to its end from every position:
    # a 400 kB token hung the run for minutes
    rng = random.Random(5)
    token = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(400_000))
    redactor = Redactor()
    for text in (
        token,
        token[:200_000] + "@" + token[200_000:],
        "a@" * 200_000,
        "1 Aa " * 80_000,  # house numbers and capitals with no street
        "DE89 " * 80_000,  # IBAN starts with no IBAN
        "Ab" * 200_000,  # a street name that never ends
    ):
        started = time.perf_counter()
        assert redactor.text(text) == text  # nothing in them is an identifier
        assert time.perf_counter() - started < 2.0
    mail = token[:100_000] + " jane@example.com " + token[100_000:]
    assert redactor.text(mail) == token[:100_000] + " [email] " + token[100_000:]


@settings(max_examples=400, deadline=None, database=None)
@given(st.text(st.sampled_from("aZ9._%+-@ (x.co"), max_size=40))
def test_email_scan_finds_exactly_what_the_email_pattern_finds(text):
    # the linear scan redacts neither more nor less than the pattern itself
    assert _EMAIL_SCAN.sub(lambda m: "[email]", text) == _EMAIL.sub("[email]", text)


def test_custom_patterns_and_kinds():
    redactor = Redactor(kinds=("email",), patterns={"loyalty": r"LOY-\d{6}"})
    assert redactor.text("LOY-123456 / a@b.io / +1 415 555 0134") == (
        "[redacted:loyalty] / [email] / +1 415 555 0134"
    )
    assert redactor.value({"card": 4111111111111111}) == {"card": 4111111111111111}
    assert Redactor().value({"card": 4111111111111111}) == {"card": "[card]"}
    with pytest.raises(ValueError, match="unknown redaction kind"):
        Redactor(kinds=("ssn",))


# -- the sample ---------------------------------------------------------------------------------


def sampled(path: Path, rate: float, seed: str) -> list[str]:
    return sorted(
        c.conversation_id for c in read_capture([path], rate=rate, seed=seed).conversations
    )


def test_sample_is_deterministic_stable_under_more_traffic_and_seeded(tmp_path):
    first = write_traffic(tmp_path / "day1.jsonl", ids(400))
    a = sampled(first, 0.1, "s1")
    assert a == sampled(first, 0.1, "s1")
    assert 20 <= len(a) <= 65  # about 40 of 400
    assert a == sorted(i for i in ids(400) if is_sampled(i, 0.1, "s1"))
    # more traffic arrives: the conversations sampled before are still sampled
    more = write_traffic(tmp_path / "day2.jsonl", ids(400, "new"))
    both = sorted(
        c.conversation_id for c in read_capture([first, more], rate=0.1, seed="s1").conversations
    )
    assert set(a) <= set(both) and len(both) > len(a)
    # a different seed samples different conversations
    assert sampled(first, 0.1, "s2") != a
    # a higher rate keeps the lower rate's sample
    assert set(a) <= set(sampled(first, 0.3, "s1"))
    assert sampled(first, 0.0, "s1") == [] and len(sampled(first, 1.0, "s1")) == 400


# -- bad lines ----------------------------------------------------------------------------------


def test_bad_lines_are_reported_with_file_and_line_and_the_rest_is_read(tmp_path):
    path = write_traffic(tmp_path / "cap.jsonl", ["good-1", "bad-event", "good-2"])
    lines = path.read_text().splitlines()
    bad_event = json.loads(lines[2])  # bad-event, turn 1
    bad_event["events"][0] = {"type": "telemetry", "x": 1}
    lines[2] = json.dumps(bad_event)
    no_id = json.loads(lines[0])
    del no_id["conversation_id"]
    lines.insert(1, json.dumps(no_id))
    lines.append(lines[-1][: len(lines[-1]) // 2])  # a truncated last write
    path.write_text("\n".join(lines))
    capture = read_capture([path], display=lambda p: p.name)
    assert [c.conversation_id for c in capture.conversations] == ["good-1", "good-2"]
    found = {(p.line, p.message.split(";")[0].split(":")[0]) for p in capture.problems}
    assert (2, "no conversation_id") in found
    assert any(
        p.line == 4 and "unknown event type 'telemetry'" in p.message and "bad-event" in p.message
        for p in capture.problems
    )
    assert any(
        p.line == len(lines) and p.message.startswith("truncated JSON") for p in capture.problems
    )
    assert all(str(p).startswith("cap.jsonl:") for p in capture.problems)


GOOD_LINE = {
    "schema_version": 1,
    "conversation_id": "c-good",
    "timestamp": "2025-06-01T12:00:03Z",
    "role": "customer",
    "turn": 1,
    "user": "trail shoes under $120?",
    "events": [{"type": "text", "text": "Here are three."}, {"type": "turn_end", "turn": 0}],
}


def nest(depth: int, leaf=1):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


def capture_line(**changes) -> str:
    return json.dumps({**GOOD_LINE, **changes})


def test_nasty_lines_are_reported_by_file_and_line_and_the_rest_is_judged(tmp_path):
    deep_result = [{"type": "tool_result", "call_id": "c1", "result": nest(256)}]
    lines = [
        capture_line(),
        capture_line(conversation_id="c-\ud83e"),  # a lone surrogate in the id
        capture_line(conversation_id="c-text", user="cut \ud83e emoji"),
        capture_line(
            conversation_id="c-key",
            events=[{"type": "ui", "component": "x", "payload": {"\udd14": 1}}],
        ),
        capture_line(conversation_id="c-deep", events=deep_result),
        capture_line(conversation_id="c-turn", turn=2147483648),
        capture_line(conversation_id="c-v2", schema_version=2),
        capture_line(conversation_id="c-vstr", schema_version="1"),
        capture_line(conversation_id="c-huge", schema_version=10**50),
        "[" * 50_000 + "]" * 50_000,  # too deep for Python's JSON reader
        capture_line(conversation_id="c-ok2"),
    ]
    path = tmp_path / "cap.jsonl"
    # the surrogates are written as JSON escapes, as a JSON writer that does not check does
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capture = read_capture([path], redactor=Redactor(), display=lambda p: p.name)
    assert [c.conversation_id for c in capture.conversations] == ["c-good", "c-ok2"]
    by_line = {p.line: p.message for p in capture.problems}
    assert sorted(by_line) == list(range(2, 11))
    assert by_line[2] == (
        "conversation_id holds a lone surrogate (half of a UTF-16 pair; not valid Unicode); "
        "line skipped"
    )
    assert by_line[3].startswith("conversation 'c-text': user: a lone surrogate \\ud83e")
    assert by_line[4].startswith("conversation 'c-key': events.0.payload.\\udd14: the key holds")
    assert by_line[5].startswith("conversation 'c-deep': events.0.result.0.0.0")
    assert "nested deeper than 200 levels" in by_line[5]
    assert "turn: Input should be less than or equal to 2147483647" in by_line[6]
    assert "unknown capture schema_version 2; this plugin reads 1" in by_line[7]
    assert "schema_version: Value error, expected an integer; found str" in by_line[8]
    assert f"unknown capture schema_version 1{'0' * 29}… (51 characters);" in by_line[9]
    assert by_line[10].endswith("nested deeper than 200 levels; line skipped")
    assert all(str(p).startswith("cap.jsonl:") for p in capture.problems)
    assert all(
        p.message.endswith(("line skipped", "left out of the sample")) for p in capture.problems
    )


def test_a_line_that_is_not_json_is_not_called_truncated(tmp_path):
    whole = capture_line(user='caf\u00e9 \U0001f600 \\ "quoted"')
    path = tmp_path / "cap.jsonl"
    lines = [
        b"hello world",
        b"<html><body>",
        b"\x00\x01\x02",
        b"}{",
        b'{"a": 1} trailing',
        b"\xff\xfe not utf-8",
        whole.encode()[:-9],
        whole.encode()[:37],
    ]
    path.write_bytes(b"\n".join(lines))  # the last line has no newline: a write cut short
    capture = read_capture([path])
    labels = [p.message.split(":")[0] for p in capture.problems]
    assert labels == ["not JSON"] * 6 + ["truncated JSON"] * 2
    assert "not UTF-8 text (byte 0: invalid start byte)" in capture.problems[5].message
    # every cut of a real line, at any byte, is JSON cut short, never "not JSON"
    raw = whole.encode()
    for end in range(1, len(raw)):
        path.write_bytes(raw[:end])
        [problem] = read_capture([path]).problems
        assert problem.message.startswith("truncated JSON"), (end, raw[:end])


def test_a_huge_turn_number_is_a_missing_turn_not_a_hang(tmp_path):
    path = tmp_path / "cap.jsonl"
    path.write_text(capture_line(turn=2**31 - 1) + "\n" + capture_line(turn=3) + "\n")
    started = time.perf_counter()
    [problem] = read_capture([path]).problems
    assert time.perf_counter() - started < 2.0
    assert problem.message == (
        "conversation 'c-good': turn(s) 1, 2, 4, 5, 6 (2147483645 in all) missing from the "
        "capture; the conversation is left out"
    )


def test_a_card_shaped_quantity_leaves_its_conversation_out_instead_of_failing(tmp_path):
    cart = [{"type": "cart_update", "items": [{"product_id": "p-1", "quantity": 4111111111111111}]}]
    path = tmp_path / "cap.jsonl"
    path.write_text(capture_line(events=cart) + "\n" + capture_line(conversation_id="c-2") + "\n")
    capture = read_capture([path], redactor=Redactor())
    assert [c.conversation_id for c in capture.conversations] == ["c-2"]
    [problem] = capture.problems
    assert "redacting it leaves an invalid event (cart_update.items.0.quantity" in problem.message


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_a_capture_path_that_is_not_a_file_is_reported_not_read(tmp_path):
    os.mkfifo(tmp_path / "pipe.jsonl")  # opening it for reading would block for ever
    capture = read_capture([tmp_path / "pipe.jsonl"], display=lambda p: p.name)
    assert [str(p) for p in capture.problems] == ["pipe.jsonl:0: cannot read: not a regular file"]


def test_the_writer_escapes_lone_surrogates_and_keeps_deep_values_readable(tmp_path):
    path = tmp_path / "cap.jsonl"
    events = [
        {"type": "tool_call", "call_id": "c1", "name": "lookup", "arguments": {"q": "a\ud83e"}},
        {"type": "tool_result", "call_id": "c1", "result": nest(300, "write to a@b.io")},
        {"type": "text", "text": "cut \ud83e here"},
    ]
    with CaptureWriter(path) as writer:
        writer.append_turn("c-1", "customer", "hello \udd14", events)
    text = path.read_text(encoding="utf-8")  # valid UTF-8: the surrogates are escaped
    [conv] = read_capture([path]).conversations
    assert conv.user_messages == ["hello \\udd14"]
    call, result, reply = conv.turns[0].events
    assert call.arguments == {"q": "a\\ud83e"} and reply.text == "cut \\ud83e here"
    # the levels past 200 are kept as their JSON text, redacted like any other text
    assert "a@b.io" not in text and "[email]" in text
    value, levels = result.result, 0
    while isinstance(value, list):
        value, levels = value[0], levels + 1
    assert levels + 3 == CAPTURE_MAX_DEPTH  # the line, its events, the event, then the result
    assert json.loads(value) == nest(300 - levels, "write to [email]")


def test_a_repeated_turn_leaves_the_conversation_out(tmp_path):
    path = write_traffic(tmp_path / "cap.jsonl", ["c-a"])
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[0], lines[1]]) + "\n")
    capture = read_capture([path])
    assert capture.conversations == []
    [problem] = capture.problems
    assert problem.line == 2 and "turn 1 appears twice" in problem.message


# -- live runs through pytest ----------------------------------------------------------------------


@pytest.fixture
def fake_judge(monkeypatch):
    """The built-in judge hook on a FakeClient; the verdict store is the configured one."""
    clients: list[FakeClient] = []

    def build(config, *, with_store=True):
        client = FakeClient(
            lambda request: (
                FAIL
                if "price_accurate" in request["messages"][1]["content"].split("\n")[0]
                else PASS
            )
        )
        clients.append(client)
        path = _judge_plugin.store_path(config)
        return Judge(client, "judge-7b", store=VerdictStore(path) if path else None)

    monkeypatch.setattr(_judge_plugin, "build_judge", build)
    return clients


def live_args(pytester, *extra: str) -> list[str]:
    return [
        "-p",
        "no:cacheprovider",
        f"--commerce-store={pytester.path / 'runs'}",
        f"--commerce-judge-store={pytester.path / 'verdicts.sqlite'}",
        *extra,
    ]


def test_a_live_run_is_judged_redacted_and_stored_as_kind_live(pytester, fake_judge):
    write_traffic(pytester.path / "traffic.jsonl", ["cust-1", "cust-2", "cust-3"])
    result = pytester.runpytest(
        *live_args(
            pytester,
            "--commerce-live=traffic.jsonl",
            "--commerce-sample-rate=1",
            "--commerce-live-dimensions=price_accurate,budget_respected",
        )
    )
    result.stdout.fnmatch_lines(["*3 of 3 conversations sampled (rate 1, seed '0')*"])
    result.assert_outcomes(failed=3)  # price_accurate FAILs everywhere in this script
    assert result.ret == 0  # the live set reports a trend; it does not gate
    [client] = fake_judge
    assert len(client.requests) == 6
    sent = json.dumps(client.requests)
    assert not any(x in sent for x in IDENTIFIERS)
    assert "[email]" in sent and "[phone]" in sent and "[card]" in sent
    store = RunStore(pytester.path / "runs")
    [run] = store.runs(kind="live")
    record = store.load_run(run.run_id)
    assert record.kind == "live" and record.options["live"]["conversations_sampled"] == 3
    stored = record.model_dump_json()
    assert not any(x in stored for x in IDENTIFIERS)
    verdict = record.trials[0].verdicts[0]
    assert verdict.rubric == STANDARD[verdict.dimension].text
    assert verdict.rubric_fingerprint == STANDARD[verdict.dimension].fingerprint


def test_a_second_live_run_reuses_stored_verdicts(pytester, fake_judge):
    write_traffic(pytester.path / "traffic.jsonl", ["cust-1", "cust-2"])
    args = live_args(
        pytester, "--commerce-live=traffic.jsonl", "--commerce-live-dimensions=budget_respected"
    )
    pytester.runpytest(*args).assert_outcomes(passed=2)
    pytester.runpytest(*args).assert_outcomes(passed=2)
    assert [len(c.requests) for c in fake_judge] == [2, 0]


def test_bad_lines_show_in_the_live_summary_and_do_not_stop_the_run(pytester, fake_judge):
    path = write_traffic(pytester.path / "traffic.jsonl", ["cust-1", "cust-2"])
    path.write_text(path.read_text() + '{"conversation_id": "cust-9", "turn": \n')
    result = pytester.runpytest(
        *live_args(
            pytester, "--commerce-live=traffic.jsonl", "--commerce-live-dimensions=budget_respected"
        )
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        ["*1 unusable line(s) skipped:*", "*traffic.jsonl:4: truncated JSON*"]
    )


def test_options_are_checked(pytester):
    write_traffic(pytester.path / "traffic.jsonl", ["cust-1"])
    result = pytester.runpytest("--commerce-live=traffic.jsonl", "--commerce-live-dimensions=tone")
    result.stderr.fnmatch_lines(["*tone not standard dimension(s)*budget_respected*"])
    result = pytester.runpytest("--commerce-live=traffic.jsonl", "--commerce-sample-rate=2")
    result.stderr.fnmatch_lines(["*--commerce-sample-rate: expected 0..1; found 2.0*"])
    result = pytester.runpytest("--commerce-live=missing.jsonl")
    result.stderr.fnmatch_lines(["*--commerce-live: no such file or folder*missing.jsonl*"])


def test_the_sample_rate_and_seed_select_items(pytester, fake_judge):
    write_traffic(pytester.path / "traffic.jsonl", ids(60))
    expected = sorted(i for i in ids(60) if is_sampled(i, 0.25, "7"))
    result = pytester.runpytest(
        *live_args(
            pytester,
            "--commerce-live=traffic.jsonl",
            "--commerce-sample-rate=0.25",
            "--commerce-sample-seed=7",
            "--collect-only",
            "-q",
        )
    )
    collected = sorted(line.rsplit("::", 1)[1] for line in result.outlines if "::" in line)
    assert collected == expected and 0 < len(expected) < 60


def test_trend_after_live_runs_prints_and_draws(pytester, fake_judge):
    write_traffic(pytester.path / "traffic.jsonl", ids(6))
    args = live_args(
        pytester,
        "--commerce-live=traffic.jsonl",
        "--commerce-live-dimensions=price_accurate,budget_respected",
    )
    pytester.runpytest(*args)
    result = pytester.runpytest(*args, "--commerce-trend", "--commerce-trend-svg=trend.svg")
    result.stdout.fnmatch_lines(
        [
            "*live trend*",
            "budget_respected",
            "*100.0%*n=6*",
            "price_accurate",
            "*0.0%*n=6*",
        ]
    )
    svg = (pytester.path / "trend.svg").read_text()
    assert svg.startswith("<svg") and "budget_respected" in svg and svg.count("<circle") == 6
    alone = pytester.runpytest(f"--commerce-store={pytester.path / 'runs'}", "--commerce-trend")
    assert alone.ret == 0
    alone.stdout.fnmatch_lines(["*over 2 live run(s)*", "overall", "*50.0%*n=12*"])


def test_live_run_report_carries_the_trend_chart(pytester, fake_judge):
    write_traffic(pytester.path / "traffic.jsonl", ids(4))
    args = live_args(
        pytester,
        "--commerce-live=traffic.jsonl",
        "--commerce-live-dimensions=price_accurate,budget_respected",
    )
    pytester.runpytest(*args)
    pytester.runpytest(*args, "--commerce-html=report.html")
    page = (pytester.path / "report.html").read_text()
    assert "<svg" in page and "budget_respected" in page
    assert page.count("<circle") == 6  # two dimensions and overall, two live runs each


# -- the trend ------------------------------------------------------------------------------------


def verdicts(dimension: str, passed: int, n: int, judge: str = "j1") -> list[RubricVerdict]:
    fp = STANDARD[dimension].fingerprint
    return [
        RubricVerdict(
            dimension=dimension,
            rubric=STANDARD[dimension].text,
            outcome="pass" if i < passed else "fail",
            rubric_fingerprint=fp,
            judge_fingerprint=judge,
        )
        for i in range(n)
    ]


def test_wilson_interval_and_two_proportion_test():
    low, high = wilson_interval(8, 10)
    assert (round(low, 3), round(high, 3)) == (0.49, 0.943)
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert round(two_proportion_p(80, 100, 60, 100), 4) == 0.002
    assert two_proportion_p(80, 100, 81, 100) > 0.5


def test_trend_flags_moves_beyond_the_noise_only():
    runs = [
        (
            "r1",
            "2025-06-01T00:00:00",
            verdicts("price_accurate", 800, 1000) + verdicts("budget_respected", 90, 100),
        ),
        (
            "r2",
            "2025-06-02T00:00:00",
            verdicts("price_accurate", 808, 1000) + verdicts("budget_respected", 84, 100),
        ),
        (
            "r3",
            "2025-06-03T00:00:00",
            verdicts("price_accurate", 700, 1000) + verdicts("budget_respected", 50, 100),
        ),
        (
            "r4",
            "2025-06-04T00:00:00",
            verdicts("price_accurate", 700, 1000, judge="j2")
            + verdicts("budget_respected", 50, 100),
        ),
    ]
    trend = compute_trend(runs)
    flags = {d.dimension: [p.flag for p in d.points] for d in trend.dimensions}
    assert flags["price_accurate"] == ["", "", "down", "changed"]  # +0.8 point is noise
    assert flags["budget_respected"] == ["", "", "down", ""]  # -6 points at n=100: p=0.21, noise
    point = trend.dimensions[0].points[0]
    assert (point.passed, point.graded) == (90, 100)  # standard order: budget first
    text = "\n".join(trend.lines())
    assert "▼ DOWN" in text and "not comparable" in text
    svg = render_trend_svg(trend)
    assert svg.count('fill="#cf222e"') == 3  # two dimensions and overall went down at r3


def test_judge_errors_are_not_counted_as_fails():
    runs = [
        (
            "r1",
            "2025-06-01",
            verdicts("price_accurate", 5, 10)
            + [RubricVerdict(dimension="price_accurate", rubric="", outcome="judge_error")],
        )
    ]
    [dim] = compute_trend(runs).dimensions
    assert (dim.points[0].passed, dim.points[0].graded, dim.points[0].errors) == (5, 10, 1)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"turn": True}, "turn: Input should be a valid integer"),
        ({"turn": "2"}, "turn: Input should be a valid integer"),
        ({"turn": 1.0}, "turn: Input should be a valid integer"),
        ({"timestamp": 1700000000}, "timestamp: Value error, expected an ISO 8601 time as text"),
        ({"timestamp": "yesterday"}, "timestamp: Value error, not an ISO 8601 time: 'yesterday'"),
        (
            {"events": [{"type": "cart_update", "items": [{"product_id": "a", "quantity": "2"}]}]},
            "quantity: Input should be a valid integer",
        ),
    ],
)
def test_capture_values_are_read_strictly(tmp_path, changes, message):
    path = tmp_path / "cap.jsonl"
    path.write_text(capture_line(conversation_id="c-bad", **changes) + "\n" + capture_line() + "\n")
    capture = read_capture([path], redactor=Redactor(), display=lambda p: p.name)
    assert [c.conversation_id for c in capture.conversations] == ["c-good"]
    [problem] = capture.problems
    assert problem.line == 1 and message in problem.message, problem.message
