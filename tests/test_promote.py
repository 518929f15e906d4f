"""From a flagged production conversation to a regression case: the precondition read from the
earlier turns, the proposed expectations beside the evidence, the skip the lint reports until a
person reviews it, and the whole loop on each capture format — promoted, reviewed, run against
the reference agent with a scripted model, failing the way production failed and passing once
the agent behaves."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from datetime import UTC, datetime

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_commerce_evals.cases.case import PROMOTED_SKIP, Case
from pytest_commerce_evals.cases.loader import load_case_file
from pytest_commerce_evals.events import CartLine
from pytest_commerce_evals.live import promote
from pytest_commerce_evals.live.capture import CapturedTurn
from pytest_commerce_evals.live.conversations import Conversation
from pytest_commerce_evals.live.promote import (
    evidence,
    is_read,
    next_case_id,
    precondition,
    promote_command,
    promoted_yaml,
    selected_ids,
    shell_word,
    terminal_text,
    write_promoted,
)
from pytest_commerce_evals.live.reading import read_capture
from pytest_commerce_evals.results import RubricVerdict

SEARCH = {"products": [{"id": "shoe-trail-001", "title": "Ridgeback Trail 3", "price": "$139"},
                       {"id": "shoe-trail-002", "title": "Ridgeback Trail 3 Lite"}]}  # fmt: skip
FIRST = "Trail shoes under $150?"
LAST = "When would the Ridgeback Trail 3 Lite arrive if I order today?"
WRONG = "It arrives tomorrow! I also put it in your cart for you."


def turn(
    n: int, user: str, events: list[dict], role: str = "customer", cid: str = "c-8f3a"
) -> CapturedTurn:
    return CapturedTurn.model_validate(
        {
            "schema_version": 1,
            "conversation_id": cid,
            "timestamp": datetime(2025, 6, 1, 12, 0, n, tzinfo=UTC).isoformat(),
            "role": role,
            "turn": n,
            "user": user,
            "events": events,
        }
    )


def call(cid: str, name: str, result=None, status="ok", **arguments) -> list[dict]:
    return [
        {"type": "tool_call", "call_id": cid, "name": name, "arguments": arguments},
        {"type": "tool_result", "call_id": cid, "name": name, "status": status, "result": result},
    ]


ADDED = {"product_id": "shoe-trail-002", "quantity": 1}


def production(
    cid: str = "c-8f3a", last: str = LAST, replied: str = WRONG, added: dict | None = None
) -> Conversation:
    first = turn(1, FIRST, [*call("1", "search_products", SEARCH, query="trail shoes"),
                            {"type": "text", "text": "Here are two."}], cid=cid)  # fmt: skip
    second = turn(
        2,
        last,
        [
            *call("2", "add_to_cart", {"status": "ok"}, **(added or ADDED)),
            {"type": "text", "text": replied},
        ],
        cid=cid,
    )
    return Conversation(cid, "customer", [first, second], "traffic/a.jsonl", 1)


FAILED = RubricVerdict(
    dimension="delivery_date_accurate",
    rubric="standard",
    outcome="fail",
    verdict="FAIL",
    reasoning="It promised tomorrow; the listing says 5 days.",
)


# -- the pieces ------------------------------------------------------------------------------


def test_the_earlier_turns_become_the_precondition():
    memory = call("m", "save_memory", {"status": "stored"}, fact="prefers wide fit")
    forgot = call("f", "forget_memory", {"status": "ok"}, fact="old fact")
    cart = {"type": "cart_update", "items": [{"product_id": "bag-002", "quantity": 2}]}
    staged = {"type": "change_update", "changes": [
        {"change_id": "chg-1", "kind": "price_change", "product_id": "bag-002", "status": "staged"},
        {"change_id": "chg-2", "kind": "delist", "product_id": "bag-003", "status": "applied"}]}  # fmt: skip
    shown = {"type": "ui", "component": "product_cards", "payload": {"product_ids": ["bag-004"]}}
    refused = call("x", "get_product_details", {"id": "bag-009", "title": "x"}, status="error")
    conversation = Conversation(
        "c-1",
        "customer",
        [
            turn(1, "a", [*call("s", "search_products", SEARCH), shown, *memory, *refused]),
            turn(2, "b", [cart, staged, *forgot, *call("n", "save_memory", None, fact="old fact")]),
            turn(3, "c", [{"type": "cart_update", "items": []}]),  # the graded turn: not state
        ],
        "a.jsonl",
        1,
    )
    state = precondition(conversation)
    assert state.seen_products == ["shoe-trail-001", "shoe-trail-002", "bag-004"]
    assert [(line.product_id, line.quantity) for line in state.cart] == [("bag-002", 2)]
    assert state.memory == ["prefers wide fit", "old fact"]  # forgotten, then saved again
    assert [c.change_id for c in state.staged_changes] == ["chg-1"]  # applied ones are history
    assert precondition(conversation, upto=1).memory == ["prefers wide fit"]


def test_the_graded_turn_is_the_evidence_and_reads_are_told_from_writes():
    found = evidence(production())
    assert [(c.name, status) for c, status in found.writes] == [("add_to_cart", "ok")]
    assert found.reads == [] and found.replied == WRONG
    assert is_read("get_order") and is_read("lookup_invoice") and not is_read("issue_refund")


def test_the_case_file_proposes_keys_beside_the_evidence_and_waits_for_review(tmp_path):
    folder = tmp_path / "cases" / "promoted"
    folder.mkdir(parents=True)
    conversation = production()
    text = promoted_yaml(
        conversation,
        next_case_id(folder, FAILED.dimension),
        state=precondition(conversation),
        failed=[FAILED],
        known_ids={"shoe-trail-001"},
    )
    assert "# in production the agent called add_to_cart {product_id: shoe-trail-002" in text
    assert "# the live judge: FAIL — It promised tomorrow; the listing says 5 days." in text
    assert "IDs that are not fixture IDs (map each to a fixture, or the case cannot run): " \
           "shoe-trail-002" in text  # fmt: skip
    (folder / "a.yaml").write_text(text)
    [entry] = load_case_file(folder / "a.yaml").cases
    case = entry.case
    assert case.id == "promoted-001-delivery-date-accurate" and case.skip == PROMOTED_SKIP
    assert case.turns == [LAST] and case.state.seen_products == ["shoe-trail-001", "shoe-trail-002"]
    assert case.expected.never_calls_with[0].tool == "add_to_cart"
    assert case.expected.never_calls_with[0].arguments == {"product_id": "shoe-trail-002",
                                                           "quantity": 1}  # fmt: skip
    assert case.expected.rubric == {"delivery_date_accurate": "standard"}
    # the conversation id only as a note, never in the case's id or tags
    assert "c-8f3a" in case.notes and "c-8f3a" not in case.id + " ".join(case.tags)
    assert next_case_id(folder, "x") == "promoted-002-x"  # numbered after what is there


def test_a_customer_can_be_a_simulated_one_told_what_was_said_before():
    conversation = production()
    text = promoted_yaml(conversation, "promoted-001-x", state=precondition(conversation),
                         customer="user", dimensions=["delivery_date_accurate"])  # fmt: skip
    case = Case.model_validate(yaml.safe_load(text)[0])
    assert case.user is not None and case.user.opening == LAST and not case.turns
    assert json.dumps(FIRST) in (case.user.instructions or "")
    assert json.dumps(LAST) not in (case.user.instructions or "")  # what it said before only
    assert "No fixture index" in text  # no index: every ID is for the author to check
    assert case.expected.rubric == {"delivery_date_accurate": "standard"}  # nothing failed


def test_the_memory_is_what_the_reference_tools_left_after_saving_and_forgetting():
    from pytest_commerce_evals.reference import ReferenceBackend

    backend, events = ReferenceBackend.fresh(), []
    steps = [("save_memory", "prefers wide fit shoes"), ("save_memory", "only buys vegan leather"),
             ("save_memory", "only buys vegan leather"), ("save_memory", "likes red"),
             ("forget_memory", "prefers wide fit shoes in size 10"), ("forget_memory", " Likes Red "),
             ("save_memory", "  avoids suede ")]  # fmt: skip
    for n, (name, fact) in enumerate(steps):
        events += call(str(n), name, backend.call_tool(name, {"fact": fact}), fact=fact)
    conversation = Conversation("c-1", "customer", [turn(1, "a", events), turn(2, "b", [])], "a", 1)
    assert precondition(conversation).memory == backend.memory
    assert backend.memory == ["only buys vegan leather", "avoids suede"]


def test_an_order_is_no_product_a_product_shown_twice_is_seen_once_and_approved_changes_stay():
    order = {"id": "ord-1001", "status": "placed", "items": [{"product_id": "bag-002"}]}
    queue = {"type": "change_update", "changes": [
        {"change_id": f"chg-{s}", "kind": "delist", "product_id": "bag-003", "status": s}
        for s in ("staged", "approved", "applied", "rejected")]}  # fmt: skip
    conversation = Conversation(
        "c-1",
        "customer",
        [
            turn(
                1,
                "a",
                [
                    *call("o", "get_order", order, order_id="ord-1001"),
                    *call("s", "search_products", SEARCH),
                ],
            ),
            turn(2, "b", [*call("t", "search_products", SEARCH), queue]),
            turn(3, "c", []),
        ],  # fmt: skip
        "a.jsonl",
        1,
    )
    state = precondition(conversation)
    assert state.seen_products == ["bag-002", "shoe-trail-001", "shoe-trail-002"]
    assert [c.change_id for c in state.staged_changes] == ["chg-staged", "chg-approved"]


def test_the_case_number_follows_the_highest_taken_and_a_flow_starts_with_a_letter(tmp_path):
    folder = tmp_path / "orders"
    folder.mkdir()
    (folder / "a.yaml").write_text("- id: orders-001-a\n- id: orders-003-c\n")
    assert next_case_id(folder, "Late parcel") == "orders-004-late-parcel"
    assert next_case_id(tmp_path / "2024", "x") == "promoted-001-x"


def test_an_operator_conversation_is_tagged_so_and_a_customers_is_not():
    customer = production()
    operator = Conversation("c-9", "operator", customer.turns, "a.jsonl", 1)
    for conversation, tags in ((customer, ["promoted"]), (operator, ["promoted", "operator"])):
        text = promoted_yaml(conversation, "promoted-001-x", state=precondition(conversation))
        assert yaml.safe_load(text)[0]["tags"] == tags


def test_only_failed_verdicts_become_the_rubric_and_nothing_to_expect_leaves_expected_out():
    conversation = production()
    passed = RubricVerdict(dimension="tone", rubric="standard", outcome="pass", verdict="PASS")
    text = promoted_yaml(conversation, "promoted-001-x", state=precondition(conversation),
                         failed=[passed, FAILED])  # fmt: skip
    assert yaml.safe_load(text)[0]["expected"]["rubric"] == {"delivery_date_accurate": "standard"}
    quiet = Conversation("c-2", "customer", [turn(1, "a", []), turn(2, LAST, [])], "a.jsonl", 1)
    text = promoted_yaml(quiet, "promoted-001-x", state=precondition(quiet), failed=[passed])
    assert "expected" not in yaml.safe_load(text)[0]
    assert Case.model_validate(yaml.safe_load(text)[0]).expected.rubric is None


def test_the_command_names_the_capture_and_the_folder():
    assert promote_command(["traffic/a.jsonl", "traffic/b"], "c-1", "cases/promoted") == (
        "pytest --commerce-live=traffic/a.jsonl --commerce-live=traffic/b "
        "--commerce-promote=c-1 --commerce-promote-to=cases/promoted"
    )


# -- the loop, on each capture format --------------------------------------------------------


def native_capture(
    cid: str = "c-8f3a", last: str = LAST, replied: str = WRONG, added: dict | None = None
) -> str:
    turns = production(cid, last, replied, added).turns
    return "".join(json.dumps(t.model_dump(mode="json"), ensure_ascii=False) + "\n" for t in turns)


def openai_capture(
    cid: str = "c-8f3a", last: str = LAST, replied: str = WRONG, added: dict | None = None
) -> str:
    messages = [
        {"role": "user", "content": FIRST},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "type": "function",
         "function": {"name": "search_products", "arguments": '{"query": "trail shoes"}'}}]},
        {"role": "tool", "tool_call_id": "1", "content": json.dumps(SEARCH)},
        {"role": "assistant", "content": "Here are two."},
        {"role": "user", "content": last},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "2", "type": "function",
         "function": {"name": "add_to_cart",
                      "arguments": json.dumps(added or ADDED, ensure_ascii=False)}}]},
        {"role": "tool", "tool_call_id": "2", "content": '{"status": "ok"}'},
        {"role": "assistant", "content": replied},
    ]  # fmt: skip
    line = {"id": cid, "created": 1748768400, "messages": messages}
    return json.dumps(line, ensure_ascii=False) + "\n"


def otel_capture(
    cid: str = "c-8f3a", last: str = LAST, replied: str = WRONG, added: dict | None = None
) -> str:
    from test_live_formats import call_part, chat, otlp, reply, span, tool, user

    said = [user(FIRST)]
    searched = [*said, reply(call_part("1", "search_products", query="trail shoes"))[0]]
    answered = [*searched, reply({"type": "text", "content": "Here are two."})[0]]
    asked = [*answered, user(last)]
    adding = reply(call_part("2", "add_to_cart", **(added or ADDED)))
    spans = [
        span(
            "invoke_agent shop",
            0,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": cid},
        ),  # fmt: skip
        chat(cid, 1, said, reply(call_part("1", "search_products", query="trail shoes"))),
        tool("search_products", "1", 2, SEARCH),
        chat(cid, 3, searched, reply({"type": "text", "content": "Here are two."})),
        chat(cid, 10, asked, adding, trace="t1b"),
        tool("add_to_cart", "2", 11, {"status": "ok"}, trace="t1b"),
        chat(
            cid, 12, [*asked, adding[0]], reply({"type": "text", "content": replied}), trace="t1b"
        ),  # fmt: skip
    ]
    return json.dumps(otlp(*spans), ensure_ascii=False) + "\n"


CAPTURES = {"native": native_capture, "openai": openai_capture, "otel": otel_capture}


CONFTEST = """
import pytest
from pytest_commerce_evals import RubricVerdict
from pytest_commerce_evals.reference import ReferenceAgent, ReferenceBackend
from pytest_commerce_evals.reference.index import fixture_index
from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply


def pytest_addoption(parser):
    parser.addoption("--model-behaves", action="store_true")


def pytest_commerce_evals_grade_rubric(config, case, result):
    # a judge that knows the listing: five days, never tomorrow
    said = " ".join(e.text for turn in result.turns for e in turn if e.type == "text")
    invented = "tomorrow" in said
    return [RubricVerdict(d, "standard", "fail", verdict="FAIL", reasoning="invented a date")
            if d == "delivery_date_accurate" and invented
            else RubricVerdict(d, "standard", "pass", verdict="PASS")
            for d in case.expected.rubric]


def pytest_commerce_evals_fixture_index(config):
    return fixture_index()


def pytest_commerce_evals_make_backend(config, case):
    return ReferenceBackend.fresh()


def pytest_commerce_evals_make_agent(config, case, backend):
    if config.getoption("--model-behaves"):
        script = [tool_reply("get_product_details", product_id="shoe-trail-002"),
                  text_reply("Ordered today, it arrives in about five days.")]
    else:  # what production did
        script = [tool_reply("add_to_cart", product_id="shoe-trail-002", quantity=1),
                  text_reply("It arrives tomorrow! I also put it in your cart for you.")]
    return ReferenceAgent(FakeClient(script), "scripted")
"""


@pytest.mark.parametrize(
    ("name", "capture"),
    [("a.jsonl", native_capture), ("openai.jsonl", openai_capture), ("spans.jsonl", otel_capture)],
    ids=["native", "openai", "otel"],
)
def test_a_flagged_conversation_is_promoted_reviewed_and_pinned(pytester, name, capture):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "traffic").mkdir()
    (pytester.path / "traffic" / name).write_text(capture())
    flagged = pytester.runpytest("-p", "no:cacheprovider", "--commerce-live=traffic",
                                 "--commerce-store=none")  # fmt: skip
    flagged.stdout.fnmatch_lines(
        [
            "1 flagged conversation(s); promote one to a case for review:",
            "  c-8f3a: pytest --commerce-live=traffic --commerce-promote=c-8f3a "
            "--commerce-promote-to=cases/promoted",
        ]
    )
    promoted = pytester.runpytest(
        "-p", "no:cacheprovider", "--commerce-live=traffic", "--commerce-promote=c-8f3a",
        "--commerce-promote-to=cases/promoted", "--commerce-store=none",
    )  # fmt: skip
    path = pytester.path / "cases" / "promoted" / "promoted-001-delivery-date-accurate.yaml"
    promoted.stdout.fnmatch_lines(
        [f"promoted c-8f3a to cases/promoted/{path.name} (skipped until reviewed)"]
    )
    text = path.read_text()
    assert "IDs that are not fixture IDs" not in text  # the reference fixtures know them all
    # not reviewed yet: skipped, and the lint says so
    unreviewed = pytester.runpytest("-p", "no:cacheprovider", "--commerce-lint", "cases")
    unreviewed.stdout.fnmatch_lines(["*[[]promoted-unreviewed[]] promoted-001-*"])
    # a person reviews it: the skip goes, the read the answer needs is added
    reviewed = text.replace(f'  skip: "{PROMOTED_SKIP}"\n', "")
    reviewed = re.sub(r"(  expected:\n)", r"\1    calls_tool: [get_product_details]\n", reviewed)
    path.write_text(reviewed)
    run = ["-p", "no:cacheprovider", "cases", "--commerce-store=none"]
    as_in_production = pytester.runpytest(*run)
    assert as_in_production.ret == 1
    as_in_production.stdout.fnmatch_lines(["*never_calls_with*add_to_cart*"])
    behaving = pytester.runpytest(*run, "--model-behaves")
    assert behaving.ret == 0, behaving.stdout.str()[-3000:]


def test_the_html_live_report_links_each_flagged_conversation_with_its_command(pytester):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "traffic").mkdir()
    (pytester.path / "traffic" / "a.jsonl").write_text(native_capture())
    pytester.runpytest("-p", "no:cacheprovider", "--commerce-live=traffic",
                       "--commerce-store=none", "--commerce-html=live.html")  # fmt: skip
    page = (pytester.path / "live.html").read_text()
    assert "<h2>Flagged conversations (1)</h2>" in page
    assert '<a href="#case-c-8f3a">c-8f3a</a>' in page
    assert "pytest --commerce-live=traffic --commerce-promote=c-8f3a" in page
    assert 'id="case-c-8f3a"' in page  # the link lands on the conversation's trial


def test_promoting_needs_a_capture_and_names_what_it_cannot_find(pytester):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "traffic").mkdir()
    (pytester.path / "traffic" / "a.jsonl").write_text(native_capture())
    alone = pytester.runpytest("-p", "no:cacheprovider", "--commerce-promote=c-8f3a")
    assert alone.ret == pytest.ExitCode.USAGE_ERROR
    alone.stderr.fnmatch_lines(["*--commerce-promote names conversations of captured traffic*"])
    missing = pytester.runpytest("-p", "no:cacheprovider", "--commerce-live=traffic",
                                 "--commerce-promote=c-8f3a,c-nope", "--commerce-store=none",
                                 "--commerce-promote-customer=user",
                                 "--commerce-sample-rate=0")  # named: promoted, sampled or not  # fmt: skip
    missing.stdout.fnmatch_lines(
        [
            "--commerce-promote: no conversation 'c-nope' in the capture",
            "promoted c-8f3a to cases/promoted/promoted-001-delivery-date-accurate.yaml*",
        ]
    )
    written = (
        pytester.path / "cases/promoted/promoted-001-delivery-date-accurate.yaml"
    ).read_text()
    assert "  user:\n" in written and "  turns:" not in written


def test_a_promoted_case_is_redacted_as_the_live_run_reads_it(pytester):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "traffic").mkdir()
    leaky = native_capture().replace("if I order today?", "? Mail me at jane.doe@example.com")
    (pytester.path / "traffic" / "a.jsonl").write_text(leaky)
    pytester.runpytest("-p", "no:cacheprovider", "--commerce-live=traffic",
                       "--commerce-promote=c-8f3a", "--commerce-store=none")  # fmt: skip
    [written] = (pytester.path / "cases" / "promoted").glob("*.yaml")
    text = written.read_text()
    assert "jane.doe@example.com" not in text and "Mail me at [email]" in text


def test_a_folder_that_cannot_be_written_is_said_and_an_odd_id_is_quoted(pytester):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "traffic").mkdir()
    (pytester.path / "traffic" / "a.jsonl").write_text(native_capture().replace("c-8f3a", "c 8f3a"))
    (pytester.path / "blocked").write_text("a file where the folder would go")
    flagged = pytester.runpytest("-p", "no:cacheprovider", "--commerce-live=traffic",
                                 "--commerce-store=none")  # fmt: skip
    flagged.stdout.fnmatch_lines(
        ["  c 8f3a: pytest --commerce-live=traffic '--commerce-promote=c 8f3a' *"]
    )
    blocked = pytester.runpytest("-p", "no:cacheprovider", "--commerce-live=traffic",
                                 "--commerce-promote=c 8f3a", "--commerce-promote-to=blocked",
                                 "--commerce-store=none")  # fmt: skip
    blocked.stdout.fnmatch_lines(["--commerce-promote: cannot write to *blocked*"])
    assert "INTERNALERROR" not in blocked.stdout.str() + blocked.stderr.str()


# -- hostile text, folders and ids -------------------------------------------------------------

HOSTILE = ("\x00\x07\x08\t\n\r\x0b\x0c\x1b\x7f\x80\x85\x9b\x9f\xa0\u2028\u2029\u202e"
           "\u200b\ufeff\ufffe\uffff\U0001f600\U000e0001'\"\\#:&*!|>%@`{}[],-? ")  # fmt: skip
TEXT = st.text(st.one_of(st.sampled_from(HOSTILE), st.characters(exclude_categories=("Cs",))))


@pytest.mark.parametrize("fmt", list(CAPTURES))
@settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    cid=TEXT.filter(lambda t: t.strip() == t and t),
    last=TEXT.filter(str.strip),
    replied=TEXT.filter(str.strip),
    key=TEXT.filter(lambda k: k not in ("product_id", "quantity")),
    value=TEXT,
    customer=st.sampled_from(["turns", "user"]),
)
def test_any_text_in_a_reply_an_argument_or_an_id_is_escaped_and_the_case_loads(
    tmp_path, fmt, cid, last, replied, key, value, customer
):
    # DEL, C1 controls, ESC, line breaks YAML knows (NEL, U+2028), a BOM, YAML's own marks: in
    # every capture format, whatever the reply, the arguments and the id hold, the file loads
    # and says what production said
    added = {"product_id": value, key: value, "quantity": 1}
    capture = tmp_path / f"{fmt}.jsonl"
    capture.write_text(CAPTURES[fmt](cid, last, replied, added), encoding="utf-8")
    read = read_capture([capture], format=fmt)
    assert not read.problems, read.problems
    [conversation] = read.conversations
    assert conversation.conversation_id == cid and conversation.user_messages[-1] == last
    [(write, _)] = evidence(conversation).writes
    assert write.arguments == added and evidence(conversation).replied == replied.strip()
    judged = RubricVerdict("delivery_date_accurate", "standard", "fail", "FAIL", replied)
    text = promoted_yaml(conversation, "promoted-001-x", state=precondition(conversation),
                         failed=[judged], customer=customer, known_ids={value})  # fmt: skip
    written = tmp_path / "promoted-001-x.yaml"
    written.write_text(text, encoding="utf-8")
    loaded = load_case_file(written)
    assert not loaded.problems, (loaded.problems, text)
    [entry] = loaded.cases
    case = entry.case
    assert case.id == "promoted-001-x" and case.skip == PROMOTED_SKIP
    assert (case.user.opening if case.user else case.turns[-1]) == last
    assert case.expected.never_calls_with[0].arguments == added
    assert (
        case.notes == f"Promoted from live conversation {cid}; 1 earlier turn(s) folded into state."
    )
    assert case.expected.rubric == {"delivery_date_accurate": "standard"}
    for line in text.splitlines():  # no control character a YAML file or a terminal refuses
        assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff]", line), line


def test_a_lone_surrogate_and_an_odd_rubric_name_are_written_so_that_the_case_loads(tmp_path):
    # a hook's state or a turn built in code can hold what no capture line passes
    base = production(added={"product_id": "\udc80"})
    last = base.turns[1]
    events = [e.model_copy(update={"text": "cut \ud83e"}) if e.type == "text" else e
              for e in last.events]  # fmt: skip
    turns = [base.turns[0], last.model_copy(update={"events": events, "user": "a \ud83e"})]
    conversation = Conversation("c-\ud83e", "customer", turns, "traffic/\udcff.jsonl", 1)
    odd = RubricVerdict("tone: \x85 #x", "standard", "fail", "FAIL", "why \x9b")
    text = promoted_yaml(conversation, "promoted-001-x", state=precondition(conversation),
                         failed=[odd])  # fmt: skip
    (tmp_path / "a.yaml").write_bytes(text.encode("utf-8"))
    [entry] = load_case_file(tmp_path / "a.yaml").cases
    assert entry.case.expected.never_calls_with[0].arguments == {"product_id": "\\udc80"}
    assert entry.case.expected.rubric == {"tone: \x85 #x": "standard"}
    assert entry.case.turns == ["a \\ud83e"] and entry.case.notes.startswith(
        "Promoted from live conversation c-\\ud83e;"
    )


def test_a_case_file_that_would_not_load_is_not_written_and_is_said(tmp_path, monkeypatch):
    folder = tmp_path / "promoted"
    monkeypatch.setattr(promote, "promoted_yaml", lambda *a, **k: "- id: [unclosed\n")
    [done] = write_promoted([production()], {}, folder, dimensions=["tone"], customer="turns",
                            known_ids=None, state_of=precondition)  # fmt: skip
    assert done.path is None and "does not load as case promoted-001-conversation" in done.problem
    assert "malformed YAML" in done.problem and list(folder.iterdir()) == []
    other = promoted_yaml(production(), "promoted-009-other", state=precondition(production()))
    monkeypatch.setattr(promote, "promoted_yaml", lambda *a, **k: other)
    [done] = write_promoted([production()], {}, folder, dimensions=["tone"], customer="turns",
                            known_ids=None, state_of=precondition)  # fmt: skip
    assert done.path is None and "(1 case(s) read)" in done.problem  # another case: not kept
    assert list(folder.iterdir()) == []


def test_a_link_or_a_file_where_the_case_goes_is_never_written_through_or_over(
    tmp_path, monkeypatch
):
    folder, outside = tmp_path / "promoted", tmp_path / "outside.txt"
    folder.mkdir()
    outside.write_text("keep me")
    # a link under a name the numbering passes over: the next number, the target untouched
    (folder / "promoted-001-tone.yaml").symlink_to(outside)
    args = dict(dimensions=["tone"], customer="turns", known_ids=None, state_of=precondition)
    [done] = write_promoted([production()], {}, folder, **args)
    assert done.path == folder / "promoted-002-conversation.yaml" and done.problem is None
    # a link (dangling or not) or a file exactly where the case goes: refused, said, untouched
    planted = {"promoted-003-conversation": outside, "promoted-004-conversation": tmp_path / "no"}
    for case_id, target in planted.items():
        monkeypatch.setattr(promote, "next_case_id", lambda *a, _id=case_id: _id)
        (folder / f"{case_id}.yaml").symlink_to(target)
        [done] = write_promoted([production()], {}, folder, **args)
        assert done.path is None
        assert done.problem.startswith(f"{folder / case_id}.yaml already exists (a symbolic link "
                                       f"to {target}); nothing was written")  # fmt: skip
    assert outside.read_text() == "keep me" and not (tmp_path / "no").exists()
    monkeypatch.setattr(promote, "next_case_id", lambda *a: "promoted-002-conversation")
    [done] = write_promoted([production()], {}, folder, **args)
    assert "already exists (a file)" in done.problem
    assert yaml.safe_load((folder / "promoted-002-conversation.yaml").read_text())[0]["id"] == (
        "promoted-002-conversation"
    )
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]  # no temporary left


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_named_pipe_among_the_case_files_is_never_opened_and_is_named(tmp_path):
    folder = tmp_path / "promoted"
    folder.mkdir()
    os.mkfifo(folder / "a.yaml")
    os.mkfifo(folder / "promoted-007-x.yaml")
    (folder / "b.yaml").mkdir()
    (folder / "c.yaml").write_text("- id: promoted-002-y\n")
    found: list = []
    passed_over: list = []
    numbering = threading.Thread(
        target=lambda: found.append(next_case_id(folder, "tone", passed_over)), daemon=True
    )
    numbering.start()
    numbering.join(timeout=20)
    assert not numbering.is_alive(), "numbering the case opened a named pipe and waits for it"
    assert found == ["promoted-008-tone"]  # the pipe's name is taken, its content never read
    assert passed_over == [(folder / "a.yaml", "a named pipe"), (folder / "b.yaml", "a folder"),
                           (folder / "promoted-007-x.yaml", "a named pipe")]  # fmt: skip


def test_cart_ids_are_listed_among_the_ids_that_are_not_fixture_ids():
    conversation = production()
    state = precondition(conversation).model_copy(
        update={"cart": [CartLine(product_id="bag-777", quantity=1)]}
    )
    text = promoted_yaml(conversation, "promoted-001-x", state=state,
                         known_ids={"shoe-trail-001", "shoe-trail-002"})  # fmt: skip
    assert "IDs that are not fixture IDs (map each to a fixture, or the case cannot run): " \
           "bag-777\n" in text  # fmt: skip
    unindexed = promoted_yaml(conversation, "promoted-001-x", state=state)
    said = " ".join(line[2:] for line in unindexed.splitlines() if line.startswith("# "))
    assert said.endswith("fixture ID: shoe-trail-001, shoe-trail-002, bag-777")


def test_text_for_a_terminal_or_a_shell_shows_no_control_character_and_runs_as_it_reads():
    hostile = "c\x1b]0;owned\x07,\x9b31m\x7f\n\u202e 'x' \\ é😀"
    assert terminal_text(hostile) == "c\\x1b]0;owned\\x07,\\x9b31m\\x7f\\n\\u202e 'x' \\ é😀"
    assert terminal_text("plain ünïcode, spaces") == "plain ünïcode, spaces"
    assert shell_word("a b") == "'a b'" and shell_word("a,b") == "a,b"
    quoted = shell_word(hostile)
    assert quoted.isprintable() and quoted.startswith("$'")
    # the shell gives the word back as it was
    said = subprocess.run(["bash", "-c", f"printf %s {quoted}"], capture_output=True,
                          env={**os.environ, "LC_ALL": "C.UTF-8"}, check=True).stdout  # fmt: skip
    assert said.decode("utf-8") == hostile


def test_a_value_that_is_an_id_as_a_whole_names_it_else_a_comma_separates_ids():
    ids = ["a,b", "a", "b", "c"]
    assert selected_ids(["a,b"], ids) == (["a,b"], [])
    assert selected_ids(["a, c ,", "x,b"], ids) == (["a", "c", "b"], ["x"])
    assert selected_ids(["c,a,b", "c"], ["c", "a,b"]) == (["c"], ["a", "b"])


def test_an_id_with_controls_and_a_comma_is_escaped_on_the_terminal_and_its_command_works(
    pytester,
):
    cid = "c\x1b]0;owned\x07,\x9b2J"
    pytester.makeconftest(CONFTEST)
    (pytester.path / "traffic").mkdir()
    (pytester.path / "traffic" / "a.jsonl").write_text(native_capture(cid), encoding="utf-8")
    (pytester.path / "traffic" / "b\x1b[2J.jsonl").write_text("not json\n")
    flagged = pytester.runpytest("-p", "no:cacheprovider", "--commerce-live=traffic",
                                 "--commerce-store=none", "--commerce-html=live.html")  # fmt: skip
    page = (pytester.path / "live.html").read_text()
    assert "$&#x27;--commerce-promote=c\\x1b]0;owned\\x07,\\u009b2J&#x27;" in page
    out = flagged.stdout.str()
    assert not re.search("[\x07\x1b\x9b]", out), out  # nothing the terminal would act on
    assert "traffic/b\\x1b[2J.jsonl:1: not JSON" in out
    assert "FAILED traffic/a.jsonl::c\\x1b]0;owned\\x07,\\x9b2J" in out
    [line] = [x for x in out.splitlines() if x.startswith("  c\\x1b") and ": pytest " in x]
    shown, command = line.split(": ", 1)
    assert shown == "  c\\x1b]0;owned\\x07,\\x9b2J"
    # the command shown is a command that works: the shell passes the id as it is
    words = subprocess.run(["bash", "-c", f"printf '%s\\0' {command}"], capture_output=True,
                           env={**os.environ, "LC_ALL": "C.UTF-8"}, check=True).stdout  # fmt: skip
    args = words.decode("utf-8").split("\0")[1:-1]
    assert f"--commerce-promote={cid}" in args
    promoted = pytester.runpytest("-p", "no:cacheprovider", "--commerce-store=none", *args)
    written = pytester.path / "cases" / "promoted" / "promoted-001-delivery-date-accurate.yaml"
    promoted.stdout.fnmatch_lines(
        [f"promoted c\\x1b]0;owned\\x07,\\x9b2J to cases/promoted/{written.name} *"]
    )
    assert not re.search("[\x07\x1b\x9b]", promoted.stdout.str())
    [entry] = load_case_file(written).cases
    assert entry.case.notes.startswith(f"Promoted from live conversation {cid};")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_run_that_promotes_into_a_folder_with_a_pipe_and_a_planted_link_ends_and_says_so(
    pytester,
):
    pytester.makeconftest(CONFTEST)
    (pytester.path / "traffic").mkdir()
    (pytester.path / "traffic" / "a.jsonl").write_text(native_capture())
    folder = pytester.path / "cases" / "promoted"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "queue.yaml")
    outside = pytester.path / "outside.txt"
    outside.write_text("keep me")
    (folder / "promoted-001-delivery-date-accurate.yaml").symlink_to(outside)
    # in a process of its own: a run that waits on the pipe fails the test instead of hanging it
    run = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--commerce-live=traffic",
                                        "--commerce-promote=c-8f3a", "--commerce-store=none",
                                        timeout=120)  # fmt: skip
    run.stdout.fnmatch_lines(
        [
            "--commerce-promote: cases/promoted/queue.yaml: a named pipe; not read as a case "
            "file when numbering the case",
            "promoted c-8f3a to cases/promoted/promoted-002-delivery-date-accurate.yaml *",
        ]
    )
    assert outside.read_text() == "keep me"
