"""Live traffic in other formats: OpenAI chat-completions logs and OpenTelemetry GenAI spans
(OTLP JSON), detected per file, read into the same conversations as the native capture."""

from __future__ import annotations

import json

import pytest

from pytest_commerce_evals.judge import _plugin as _judge_plugin
from pytest_commerce_evals.judge.judge import Judge
from pytest_commerce_evals.judge.verdict_store import VerdictStore
from pytest_commerce_evals.live._formats import detect_format
from pytest_commerce_evals.live.reading import read_capture
from pytest_commerce_evals.live.redaction import Redactor
from pytest_commerce_evals.live.sampling import is_sampled
from pytest_commerce_evals.store.run_store import RunStore
from pytest_commerce_evals.testing.fake import FakeClient

EMAIL = "jane.doe@example.com"
PHONE = "+1 415-555-0134"


def kinds(conversation) -> list[list[str]]:
    return [[e.type for e in turn] for turn in conversation.events]


# -- OpenAI chat-completions logs -------------------------------------------------------------


def chat_line(cid: str = "c-1", **changes) -> str:
    data = {
        "id": cid,
        "created": 1748768400,
        "metadata": {"app": "shop"},
        "messages": [
            {"role": "system", "content": "You are a shop assistant."},
            {"role": "user", "content": f"Trail shoes under $150? Mail me at {EMAIL}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "search_products",
                            "arguments": '{"query": "trail shoes"}',
                        },
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "check_stock", "arguments": '{"sku": "s-1"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": '{"results": [{"id": "s-1"}]}'},
            {"role": "tool", "tool_call_id": "call_2", "content": "timeout", "status": "error"},
            {"role": "assistant", "content": "The Trail Runner 2 is $129."},
            {"role": "user", "content": [{"type": "text", "text": f"Call me on {PHONE}"}]},
            {"role": "assistant", "content": "We cannot call, sorry."},
        ],
    }
    data.update(changes)
    return json.dumps(data)


def test_an_openai_line_reads_as_turns_with_events_and_is_redacted(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(chat_line() + "\n")
    capture = read_capture([path], redactor=Redactor(), format="openai")
    assert capture.problems == []
    [conv] = capture.conversations
    assert conv.conversation_id == "c-1" and conv.role == "customer"
    assert conv.user_messages == [
        "Trail shoes under $150? Mail me at [email]",
        "Call me on [phone]",
    ]
    assert conv.started_at.isoformat() == "2025-06-01T09:00:00+00:00"  # from `created`
    assert kinds(conv) == [
        ["tool_call", "tool_call", "tool_result", "tool_result", "text", "turn_end"],
        ["text", "turn_end"],
    ]
    call, _, ok, failed, text, end = conv.events[0]
    assert call.name == "search_products" and call.arguments == {"query": "trail shoes"}
    assert (
        ok.status == "ok"
        and ok.name == "search_products"
        and ok.result == {"results": [{"id": "s-1"}]}
    )
    assert failed.status == "error" and failed.reason == "timeout" and failed.name == "check_stock"
    assert text.text == "The Trail Runner 2 is $129." and end.turn == 0


def test_an_openai_log_reads_a_failed_tool_by_the_converters_rule(tmp_path):
    """Live logs and `adapters.openai_chat` share one failure convention: a tool message whose
    content is {"error": ...} failed, though it says no status."""
    from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages

    messages = json.loads(chat_line())["messages"]
    messages[4] = {"role": "tool", "tool_call_id": "call_2", "content": '{"error": "no sku s-1"}'}
    path = tmp_path / "chat.jsonl"
    path.write_text(chat_line(messages=messages) + "\n")
    [conversation] = read_capture([path], format="openai").conversations
    failed = conversation.events[0][3]
    assert (failed.type, failed.status, failed.reason) == ("tool_result", "error", "no sku s-1")
    converted = events_from_chat_messages(messages[2:6])
    assert [e for e in converted if e.type == "tool_result"][1] == failed


def test_openai_lines_take_ids_times_and_roles_from_the_line(tmp_path):
    path = tmp_path / "chat.jsonl"
    lines = [
        chat_line(conversation_id="conv-a", timestamp="2025-06-02T10:00:00+02:00"),
        chat_line(cid=None, metadata={"conversation_id": "conv-b", "role": "operator"}),
        chat_line(cid=42),
    ]
    path.write_text("\n".join(lines) + "\n")
    capture = read_capture([path], format="auto")
    assert capture.problems == []
    by_id = {c.conversation_id: c for c in capture.conversations}
    assert sorted(by_id) == ["42", "conv-a", "conv-b"]
    assert by_id["conv-a"].started_at.isoformat() == "2025-06-02T10:00:00+02:00"
    assert by_id["conv-b"].role == "operator" and by_id["42"].role == "customer"
    assert capture.lines == 3 and capture.conversations_seen == 3


def test_bad_openai_lines_are_reported_by_file_and_line_and_the_rest_is_read(tmp_path):
    path = tmp_path / "chat.jsonl"
    messages = json.loads(chat_line())["messages"]
    lines = [
        chat_line("good-1"),
        "not json at all",
        "[1, 2]",
        json.dumps({"id": "x", "prompt": "hi"}),
        chat_line(cid=None),
        chat_line("bad-role", messages=[*messages, {"role": "robot", "content": "?"}]),
        chat_line("no-user", messages=[{"role": "assistant", "content": "Hello!"}]),
        chat_line("no-call-id", messages=[*messages[:3], {"role": "tool", "content": "x"}]),
        chat_line("bad-content", messages=[{"role": "user", "content": 7}]),
        chat_line("good-2"),
        chat_line("cut")[:40],
    ]
    path.write_text("\n".join(lines))
    capture = read_capture([path], format="openai", display=lambda p: p.name)
    assert [c.conversation_id for c in capture.conversations] == ["good-1", "good-2"]
    by_line = {p.line: p.message for p in capture.problems}
    assert sorted(by_line) == [2, 3, 4, 5, 6, 7, 8, 9, 11]
    assert by_line[2].startswith("not JSON")
    assert by_line[3] == "not a JSON object; line skipped"
    assert by_line[4].startswith("no messages array")
    assert by_line[5].startswith("no conversation id (conversation_id, id or metadata")
    assert by_line[6] == (
        "conversation 'bad-role': messages.8: unknown role 'robot'; "
        "the conversation is left out of the sample"
    )
    assert "conversation 'no-user': no user message" in by_line[7]
    assert "messages.3: a tool message without a tool_call_id" in by_line[8]
    assert "messages.0: content is int, not text or a list of parts" in by_line[9]
    assert by_line[11].startswith("truncated JSON")
    assert all(str(p).startswith("chat.jsonl:") for p in capture.problems)


def test_openai_lines_are_checked_like_native_ones_for_surrogates_and_depth(tmp_path):
    messages = json.loads(chat_line())["messages"]
    deep: object = "write to a@b.io"
    for _ in range(300):
        deep = [deep]
    lines = [
        chat_line("cut", messages=[{"role": "user", "content": "cut \ud83e emoji"}]),
        chat_line(
            "deep",
            messages=[*messages[:3], {"role": "tool", "tool_call_id": "call_1", "content": deep}],
        ),
    ]
    path = tmp_path / "chat.jsonl"
    path.write_text("\n".join(lines) + "\n")  # the surrogate is written as a JSON escape
    capture = read_capture([path], redactor=Redactor(), format="openai")
    problem, too_deep = capture.problems
    assert problem.line == 1
    assert problem.message.startswith("conversation 'cut': user: a lone surrogate \\ud83e")
    # the capture's limit holds whatever the format: a tool output nested 300 deep is a bad
    # conversation, as a native line nested that deep is a bad line
    assert too_deep.line == 2
    assert too_deep.message.startswith("conversation 'deep': turn 1 event ")
    assert "nested deeper than the capture's 200 levels" in too_deep.message
    assert "a@b.io" not in too_deep.message
    assert capture.conversations == []


def test_tool_arguments_nested_past_pythons_limit_leave_their_conversation_out(tmp_path):
    messages = json.loads(chat_line())["messages"]
    call = messages[2]["tool_calls"][0]
    call["function"]["arguments"] = "[" * 5000 + "]" * 5000
    bad = tmp_path / "bad.jsonl"
    bad.write_text(chat_line("deep", messages=messages) + "\n")
    good = tmp_path / "good.jsonl"
    good.write_text(chat_line() + "\n")
    capture = read_capture([bad, good], redactor=Redactor(), format="openai")
    assert [c.conversation_id for c in capture.conversations] == ["c-1"]  # the good one read
    (problem,) = capture.problems
    assert problem.message.startswith("conversation 'deep': ")


def test_openai_conversations_are_sampled_like_native_ones(tmp_path):
    path = tmp_path / "chat.jsonl"
    ids = [f"conv-{i:03d}" for i in range(80)]
    path.write_text("\n".join(chat_line(i) for i in ids) + "\n")
    # a broken conversation outside the sample is not even looked at
    outside = next(i for i in ids if not is_sampled(f"{i}-x", 0.3, "s"))
    path.write_text(path.read_text() + chat_line(f"{outside}-x", messages=[]) + "\n")
    capture = read_capture([path], rate=0.3, seed="s", format="auto")
    assert [c.conversation_id for c in capture.conversations] == sorted(
        i for i in ids if is_sampled(i, 0.3, "s")
    )
    assert capture.problems == [] and capture.conversations_seen == 81


# -- OpenTelemetry GenAI spans as OTLP JSON ------------------------------------------------------


def attr(key: str, value) -> dict:
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def span(name: str, start: int, attrs: dict, *, trace="t1", error=None, events=()) -> dict:
    out = {
        "traceId": trace,
        "spanId": f"{start:016x}",
        "name": name,
        "kind": 1,
        "startTimeUnixNano": str(1748768400_000000000 + start * 1_000_000),
        "endTimeUnixNano": str(1748768400_000000000 + start * 1_000_000 + 500),
        "attributes": [attr(k, v) for k, v in attrs.items()],
        "events": list(events),
        "status": {"code": 2, "message": error} if error else {},
    }
    return out


def user(text: str) -> dict:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def chat(cid: str | None, start: int, inputs: list, outputs: list, **kw) -> dict:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "shop-7b"}
    if cid:
        attrs["gen_ai.conversation.id"] = cid
    attrs["gen_ai.input.messages"] = json.dumps(inputs)
    attrs["gen_ai.output.messages"] = json.dumps(outputs)
    return span("chat shop-7b", start, attrs, **kw)


def tool(name: str, call_id: str, start: int, result=None, **kw) -> dict:
    attrs = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
    }
    if result is not None:
        attrs["gen_ai.tool.call.result"] = json.dumps(result)
    return span(f"execute_tool {name}", start, attrs, **kw)


def reply(*parts: dict) -> list:
    return [{"role": "assistant", "parts": list(parts), "finish_reason": "stop"}]


def call_part(call_id: str, name: str, **arguments) -> dict:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}


def otlp(*spans: dict) -> dict:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [attr("service.name", "shop-agent")]},
                "scopeSpans": [{"scope": {"name": "shop"}, "spans": list(spans)}],
            }
        ]
    }


def two_turns(cid: str = "conv-1", trace: str = "t1") -> list[dict]:
    first = [user(f"Trail shoes? I am {EMAIL}")]
    called = [*first, reply(call_part("c1", "search_products", query="trail"))[0]]
    return [
        span(
            "invoke_agent shop",
            0,
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": cid},
            trace=trace,
        ),
        chat(
            cid,
            1,
            first,
            reply(
                call_part("c1", "search_products", query="trail"),
                call_part("c2", "check_stock", sku="s-1"),
            ),
            trace=trace,
        ),
        tool("search_products", "c1", 2, {"results": [{"id": "s-1"}]}, trace=trace),
        tool("check_stock", "c2", 3, trace=trace, error="TimeoutError: inventory down"),
        chat(
            cid, 4, called, reply({"type": "text", "content": "Trail Runner 2, $129."}), trace=trace
        ),
        chat(
            cid,
            10,
            [*called, user("Lighter one?")],
            reply({"type": "text", "content": "The Featherlite."}),
            trace=trace + "b",
        ),
    ]


def test_otlp_spans_group_into_a_conversation_with_tool_results(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(*two_turns()), indent=2))  # one pretty-printed document
    capture = read_capture([path], redactor=Redactor(), format="auto")
    assert capture.problems == []
    [conv] = capture.conversations
    assert conv.conversation_id == "conv-1"
    assert conv.user_messages == ["Trail shoes? I am [email]", "Lighter one?"]
    assert kinds(conv) == [
        ["tool_call", "tool_call", "tool_result", "tool_result", "text", "turn_end"],
        ["text", "turn_end"],
    ]
    _, _, ok, failed, text, _ = conv.events[0]
    assert ok.status == "ok" and ok.result == {"results": [{"id": "s-1"}]}
    assert failed.status == "error" and failed.reason == "TimeoutError: inventory down"
    assert failed.name == "check_stock" and text.text == "Trail Runner 2, $129."
    assert conv.started_at.isoformat() == "2025-06-01T09:00:00.001000+00:00"


def test_spans_in_jsonl_documents_across_files_make_one_conversation(tmp_path):
    spans = two_turns()
    (tmp_path / "a.jsonl").write_text(
        json.dumps(otlp(*spans[:3])) + "\n" + json.dumps(otlp(spans[3])) + "\n"
    )
    (tmp_path / "b.jsonl").write_text(json.dumps(otlp(*spans[3:][::-1])) + "\n")
    capture = read_capture([tmp_path], format="auto", display=lambda p: p.name)
    [conv] = capture.conversations
    assert (conv.path, conv.line) == ("a.jsonl", 1)
    assert kinds(conv)[0] == [
        "tool_call",
        "tool_call",
        "tool_result",
        "tool_result",
        "text",
        "turn_end",
    ]


def test_agent_spans_stand_in_when_no_model_call_records_messages(tmp_path):
    asked = [user("Espresso machine under $300")]
    called = [*asked, reply(call_part("e1", "search_products"), call_part("e2", "check_stock"))[0]]
    answered = [
        *called,
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "e1", "response": "[]"}]},
    ]
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.conversation.id": "ag-1"}
    failed = tool("check_stock", "e2", 2)
    failed["status"] = {"code": "STATUS_CODE_ERROR"}  # protobuf's JSON mapping names enums
    failed["attributes"].append(attr("error.type", "TimeoutError"))
    # a span without gen_ai.operation.name is a tool span by its gen_ai.tool.call.id
    failed["attributes"] = [a for a in failed["attributes"] if a["key"] != "gen_ai.operation.name"]
    spans = [
        span("chat shop-7b", 0, {"gen_ai.operation.name": "chat"}),  # no messages recorded
        span(
            "invoke_agent shop",
            1,
            {
                **agent,
                "gen_ai.input.messages": json.dumps(asked),
                "gen_ai.output.messages": json.dumps(
                    reply(call_part("e1", "search_products"), call_part("e2", "check_stock"))
                ),
            },
        ),
        failed,
        span(
            "invoke_agent shop",
            3,
            {
                **agent,
                "gen_ai.input.messages": json.dumps(answered),
                "gen_ai.output.messages": json.dumps(reply({"type": "text", "content": "None."})),
            },
        ),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(*spans)))
    capture = read_capture([path], format="otel")
    assert capture.problems == []
    [conv] = capture.conversations
    results = [(e.call_id, e.status, e.reason) for e in conv.events[0] if e.type == "tool_result"]
    # e2 from its failed tool span, e1 from the tool message the model was sent next
    assert results == [("e2", "error", "TimeoutError"), ("e1", "ok", None)]


def test_the_older_per_message_span_events_are_read(tmp_path):
    events_chat = span(
        "chat shop-7b",
        1,
        {"gen_ai.conversation.id": "old-1"},  # a model call by its message events
        events=[
            {"name": "gen_ai.system.message", "attributes": [attr("content", "be kind")]},
            {"name": "gen_ai.user.message", "attributes": [attr("content", "espresso machine")]},
            {
                "name": "gen_ai.choice",
                "attributes": [
                    attr(
                        "message",
                        json.dumps(
                            {
                                "content": "Two fit.",
                                "tool_calls": [
                                    {
                                        "id": "k1",
                                        "function": {
                                            "name": "search_products",
                                            "arguments": '{"query": "espresso"}',
                                        },
                                    }
                                ],
                            }
                        ),
                    )
                ],
            },
        ],
    )
    file = tmp_path / "old.json"
    file.write_text(json.dumps(otlp(events_chat)))
    [conv] = read_capture([file], format="otel").conversations
    assert conv.user_messages == ["espresso machine"]
    assert kinds(conv) == [["text", "tool_call", "turn_end"]]


def test_bad_spans_are_reported_with_file_and_span_and_the_rest_is_read(tmp_path):
    good = two_turns("good", "tg")
    broken_json = chat("broken", 1, [user("hi")], [])
    broken_json["attributes"][-2] = attr("gen_ai.input.messages", "{not json")
    no_start = dict(chat("x", 2, [user("hi")], []))
    del no_start["startTimeUnixNano"]
    orphan = chat(None, 3, [user("who am I?")], [], trace="lonely")
    late_tool = tool("search_products", "z1", 1, trace="tz")
    late_tool["attributes"].append(attr("gen_ai.conversation.id", "tool-first"))
    http = span("GET /catalog", 5, {"http.request.method": "GET"}, trace="lonely")
    doc = otlp(*good, broken_json, no_start, orphan, late_tool, http, "not a span")
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(doc) + "\n" + json.dumps({"hello": 1}) + "\n{\n")
    capture = read_capture([path], format="otel", display=lambda p: p.name)
    assert [c.conversation_id for c in capture.conversations] == ["good"]
    messages = sorted(str(p) for p in capture.problems)
    assert messages == [
        "trace.json:1: conversation 'broken': span 6 'chat shop-7b': gen_ai.input.messages is "
        "not a JSON array of messages; the conversation is left out of the sample",
        "trace.json:1: conversation 'tool-first': span 9 'execute_tool search_products': a tool "
        "ran before the conversation's first user message; the conversation is left out of the "
        "sample",
        "trace.json:1: span 11: not an object; span skipped",
        "trace.json:1: span 7 'chat shop-7b': startTimeUnixNano is missing or not a time in "
        "nanoseconds; span skipped",
        "trace.json:1: span 8 'chat shop-7b': no gen_ai.conversation.id on the span or in its "
        "trace; span skipped",
        "trace.json:2: not an OTLP JSON trace export (no resourceSpans array); skipped",
        "trace.json:3: truncated JSON: Expecting property name enclosed in double quotes: line 1 "
        "column 2 (char 1)",
    ]


def test_a_cut_pretty_printed_document_is_one_problem(tmp_path):
    path = tmp_path / "trace.json"
    text = json.dumps(otlp(*two_turns()), indent=2)
    path.write_text(text[: len(text) // 2])
    capture = read_capture([path], format="otel", display=lambda p: p.name)
    [problem] = capture.problems
    assert problem.line == 1 and problem.message.startswith("truncated JSON")
    assert problem.message.endswith("file skipped")


# -- detection and the option -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"schema_version": 1, "conversation_id": "c"}\n', "native"),
        (chat_line() + "\n", "openai"),
        ("garbage\n" + chat_line() + "\n", "openai"),
        (json.dumps(otlp()) + "\n", "otel"),
        (json.dumps(otlp(), indent=2), "otel"),
        ("not json\n", "native"),
        ("", "native"),
        ('{"messages": "not a list"}\n', "native"),
    ],
)
def test_the_format_is_detected_from_the_content(tmp_path, content, expected):
    path = tmp_path / "traffic.jsonl"
    path.write_text(content)
    with path.open("rb") as fh:
        assert detect_format(fh) == expected
        assert fh.tell() == 0


def test_a_format_forced_on_other_content_reports_it(tmp_path):
    path = tmp_path / "traffic.jsonl"
    path.write_text('{"schema_version": 1, "conversation_id": "c"}\n')
    [problem] = read_capture([path], format="otel").problems
    assert "not an OTLP JSON trace export" in problem.message
    with pytest.raises(ValueError, match="unknown live traffic format 'csv'; known: auto, native"):
        read_capture([path], format="csv")


# -- through pytest ----------------------------------------------------------------------------

PASS = '{"reasoning": "grounded in the tool results", "verdict": "PASS"}'


@pytest.fixture
def fake_judge(monkeypatch):
    """The built-in judge hook on a scripted FakeClient that passes every dimension."""
    clients: list[FakeClient] = []

    def build(config, *, with_store=True):
        client = FakeClient(lambda request: PASS)
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
        "--commerce-live-dimensions=budget_respected",
        *extra,
    ]


def test_the_format_option_is_checked(pytester):
    (pytester.path / "chat.jsonl").write_text(chat_line() + "\n")
    result = pytester.runpytest("--commerce-live=chat.jsonl", "--commerce-live-format=csv")
    result.stderr.fnmatch_lines(["*--commerce-live-format*csv*auto*native*openai*otel*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_openai_logs_are_judged_through_pytest(pytester, fake_judge):
    (pytester.path / "chat.jsonl").write_text(chat_line("c-1") + "\n" + chat_line("c-2") + "\n")
    pytester.makeini("[pytest]\ncommerce_live_format = openai\n")
    result = pytester.runpytest(*live_args(pytester, "--commerce-live=chat.jsonl"))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*2 of 2 conversations sampled*"])
    sent = json.dumps(fake_judge[0].requests)
    assert EMAIL not in sent and "[email]" in sent


def test_a_folder_of_otlp_json_files_is_collected_with_the_otel_format(pytester, fake_judge):
    folder = pytester.path / "traces"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(otlp(*two_turns("conv-a", "ta"))))
    (folder / "b.json").write_text(json.dumps(otlp(*two_turns("conv-b", "tb"))))
    args = live_args(pytester, "--commerce-live=traces")
    assert pytester.runpytest(*args).ret == pytest.ExitCode.NO_TESTS_COLLECTED  # *.jsonl only
    result = pytester.runpytest(*args, "--commerce-live-format=otel")
    result.assert_outcomes(passed=2)


def otlp_json(spans) -> dict:
    """The SDK's finished spans as an OTLP JSON trace export.

    `opentelemetry-exporter-otlp-proto-common` encodes them when it is installed (protobuf's
    JSON mapping: ids in base64, enums by name); without it the OTLP JSON mapping is written
    here from the `ReadableSpan`s (ids in hex, enums as numbers), as the collector writes it.
    """
    try:
        from google.protobuf.json_format import MessageToDict
        from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    except ImportError:
        pass
    else:
        return MessageToDict(encode_spans(spans))

    def value(v):
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        if isinstance(v, (list, tuple)):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"stringValue": str(v)}

    def attributes(items):
        return [{"key": k, "value": value(v)} for k, v in (items or {}).items()]

    out = []
    for s in spans:
        ctx = s.get_span_context()
        out.append(
            {
                "traceId": format(ctx.trace_id, "032x"),
                "spanId": format(ctx.span_id, "016x"),
                "parentSpanId": format(s.parent.span_id, "016x") if s.parent else "",
                "name": s.name,
                "kind": s.kind.value + 1,  # the SDK counts from 0, OTLP from 1 (INTERNAL)
                "startTimeUnixNano": str(s.start_time),
                "endTimeUnixNano": str(s.end_time),
                "attributes": attributes(s.attributes),
                "events": [
                    {
                        "timeUnixNano": str(e.timestamp),
                        "name": e.name,
                        "attributes": attributes(e.attributes),
                    }
                    for e in s.events
                ],
                "status": {
                    "code": s.status.status_code.value,
                    **({"message": s.status.description} if s.status.description else {}),
                },
            }
        )
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes(spans[0].resource.attributes)},
                "scopeSpans": [{"scope": {"name": "shop-agent"}, "spans": out}],
            }
        ]
    }


def sdk_spans() -> list:
    """A shop agent's two-turn conversation as the OpenTelemetry SDK records it: an agent span
    per turn, model calls with gen_ai input/output messages, and the tool spans (one fails)."""
    pytest.importorskip(
        "opentelemetry.sdk", reason="opentelemetry-sdk is in the [frameworks] extra"
    )
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Status, StatusCode

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("shop-agent")

    def model_call(cid, history, output):
        with tracer.start_as_current_span("chat shop-7b") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.conversation.id", cid)
            span.set_attribute("gen_ai.input.messages", json.dumps(history))
            span.set_attribute("gen_ai.output.messages", json.dumps(output))
        return [*history, *output]

    def run_tool(name, call_id, result=None, error=None):
        # no conversation id on the tool span: it is taken from its trace
        with tracer.start_as_current_span(f"execute_tool {name}") as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", name)
            span.set_attribute("gen_ai.tool.call.id", call_id)
            if error:
                span.set_attribute("error.type", "TimeoutError")
                span.set_status(Status(StatusCode.ERROR, error))
            else:
                span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        tool_part = {"type": "tool_call_response", "id": call_id, "response": result or error}
        return [{"role": "tool", "parts": [tool_part]}]

    for cid, email, budget in (("conv-otel-1", EMAIL, 150), ("conv-otel-2", "sam@x.org", 140)):
        history: list = []
        with tracer.start_as_current_span("invoke_agent shop") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            agent.set_attribute("gen_ai.conversation.id", cid)
            history = model_call(
                cid,
                [user(f"Trail shoes under ${budget}, mail {email}")],
                reply(
                    call_part("c1", "search_products", query="trail shoes", max_price=150),
                    call_part("c2", "check_stock", sku="shoe-trail-005"),
                ),
            )
            history += run_tool("search_products", "c1", {"results": [{"id": "shoe-trail-005"}]})
            history += run_tool("check_stock", "c2", error="inventory service timed out")
            history = model_call(
                cid, history, reply({"type": "text", "content": "Trail Runner 2 at $129."})
            )
        with tracer.start_as_current_span("invoke_agent shop") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            agent.set_attribute("gen_ai.conversation.id", cid)
            model_call(
                cid,
                [*history, user("Is it under $150?")],
                reply({"type": "text", "content": "Yes, $129."}),
            )
    provider.shutdown()
    return list(exporter.get_finished_spans())


def test_sdk_spans_exported_as_otlp_json_are_read_redacted_judged_and_trended(pytester, fake_judge):
    spans = sdk_spans()
    (pytester.path / "spans.json").write_text(json.dumps(otlp_json(spans)))
    args = live_args(pytester, "--commerce-live=spans.json", "--commerce-trend")
    result = pytester.runpytest(*args)  # the format is detected
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*2 of 2 conversations sampled (rate 1, seed '0')*",
            "*live trend*",
            "budget_respected",
            "*100.0%*n=2*",
        ]
    )
    assert "unusable" not in result.stdout.str()
    [client] = fake_judge
    assert len(client.requests) == 2
    sent = json.dumps(client.requests)
    assert EMAIL not in sent and "sam@x.org" not in sent and "[email]" in sent
    store = RunStore(pytester.path / "runs")
    [run] = store.runs(kind="live")
    record = store.load_run(run.run_id)
    assert record.options["live"]["conversations_sampled"] == 2
    assert EMAIL not in record.model_dump_json()
    trial = next(t for t in record.trials if t.case_id == "conv-otel-1")
    first, second = trial.turns
    results = [(e.name, e.status, e.reason) for e in first if e.type == "tool_result"]
    assert results == [
        ("search_products", "ok", None),
        ("check_stock", "error", "inventory service timed out"),
    ]
    assert [e.text for e in second if e.type == "text"] == ["Yes, $129."]


# -- review fixes: failures read alike, bad values reported, good lines kept ----------------------


def test_a_log_tool_error_in_text_parts_fails_as_the_converter_reads_it(tmp_path):
    from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages

    messages = json.loads(chat_line())["messages"]
    content = [{"type": "text", "text": '{"error": "x"}'}]
    messages[4] = {"role": "tool", "tool_call_id": "call_2", "content": content}
    path = tmp_path / "chat.jsonl"
    path.write_text(chat_line(messages=messages) + "\n")
    [conversation] = read_capture([path], format="openai").conversations
    failed = conversation.events[0][3]
    assert (failed.status, failed.reason) == ("error", "x")
    assert [e for e in events_from_chat_messages(messages[2:6]) if e.type == "tool_result"][
        1
    ] == failed


def test_a_span_tool_result_sent_to_the_model_reads_its_error(tmp_path):
    cid = "conv-err"
    first = [user("Trail shoes?")]
    called = [*first, reply(call_part("c1", "search_products", query="trail"))[0]]
    answered = [
        *called,
        {
            "role": "tool",
            "parts": [
                {
                    "type": "tool_call_response",
                    "id": "c1",
                    "response": {"error": "ValueError: boom"},
                }
            ],
        },
    ]
    spans = [
        chat(cid, 1, first, reply(call_part("c1", "search_products", query="trail"))),
        chat(cid, 2, answered, reply({"type": "text", "content": "Sorry."})),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(*spans)))
    [conversation] = read_capture([path], format="otel").conversations
    [result] = [e for e in conversation.events[0] if e.type == "tool_result"]
    assert (result.status, result.reason) == ("error", "ValueError: boom")


def test_bad_otlp_values_are_reported_by_span_and_do_not_stop_the_run(tmp_path):
    good = two_turns("conv-good", trace="g1")
    far = two_turns("conv-far", trace="f1")
    far[1]["startTimeUnixNano"] = "99999999999999999999999"
    odd = two_turns("conv-odd", trace="o1")
    odd[1]["attributes"].append({"key": "x", "value": {"arrayValue": "not an object"}})
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(*good, *far, *odd)))
    capture = read_capture([path], format="otel", display=lambda p: p.name)
    assert [c.conversation_id for c in capture.conversations] == ["conv-good"]
    messages = " ".join(p.message for p in capture.problems)
    assert "not a time in nanoseconds since 1970" in messages
    assert "arrayValue without a values list" in messages


def test_a_corrupt_first_line_of_otlp_json_lines_loses_only_that_line(tmp_path):
    path = tmp_path / "spans.jsonl"
    good = json.dumps(otlp(*two_turns("conv-1", trace="t1")))
    path.write_text('{"resourceSpans": [{"scopeSp\n' + good + "\n")
    capture = read_capture([path], format="otel", display=lambda p: p.name)
    assert [c.conversation_id for c in capture.conversations] == ["conv-1"]
    assert [(p.line, "file skipped" in p.message) for p in capture.problems] == [(1, False)]


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"created": "1748768400"}, "created is str, not a Unix time (a number of seconds)"),
        ({"created": True}, "created is bool, not a Unix time"),
        ({"timestamp": 1748768400}, "timestamp is int, not an ISO 8601 time (text)"),
        ({"metadata": {"role": "admin"}}, "metadata.role is 'admin'; a conversation is a "
         "customer's or an operator's"),
    ],
)  # fmt: skip
def test_an_openai_line_whose_time_or_role_is_not_one_is_left_out_saying_why(
    tmp_path, changes, says
):
    path = tmp_path / "chat.jsonl"
    path.write_text(chat_line("odd", **changes) + "\n" + chat_line() + "\n")
    capture = read_capture([path], redactor=Redactor(), format="openai")
    (problem,) = capture.problems
    assert problem.line == 1
    assert problem.message.startswith(f"conversation 'odd': {says}"), problem.message
    assert [c.conversation_id for c in capture.conversations] == ["c-1"]


def test_an_otlp_document_whose_arrays_are_not_arrays_says_where(tmp_path):
    good = otlp(*two_turns())
    bad = [
        {"resourceSpans": [{"resource": {}}]},  # no scopeSpans
        {"resourceSpans": [{"scopeSpans": {"spans": []}}]},  # an object, not an array
        {"resourceSpans": [{"scopeSpans": [{"spans": {"name": "x"}}]}]},  # spans an object
    ]
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in [*bad, good]) + "\n")
    capture = read_capture([path], redactor=Redactor(), format="otel")
    assert [(p.line, p.message) for p in capture.problems] == [
        (1, "resourceSpans[0]: no scopeSpans array; skipped"),
        (2, "resourceSpans[0]: scopeSpans is an object, not an array; skipped"),
        (3, "resourceSpans[0].scopeSpans[0]: spans is an object, not an array; skipped"),
    ]
    assert [c.conversation_id for c in capture.conversations] == ["conv-1"]


def test_an_otlp_status_given_as_its_name_alone_reads_as_that_status(tmp_path):
    spans = two_turns()
    spans[3]["status"] = "ERROR"  # the check_stock tool span, as some exporters write it
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(*spans)))
    [conv] = read_capture([path], redactor=Redactor(), format="otel").conversations
    failed = next(e for e in conv.events[0] if e.type == "tool_result" and e.call_id == "c2")
    assert failed.status == "error"


def test_a_spoiled_conversation_is_named_by_its_redacted_id(tmp_path):
    path = tmp_path / "chat.jsonl"
    path.write_text(chat_line("jane.doe@example.com", metadata={"role": "admin"}) + "\n")
    (problem,) = read_capture([path], redactor=Redactor(), format="openai").problems
    assert problem.message.startswith("conversation '[email]': metadata.role is 'admin'")
    assert "jane.doe" not in problem.message


def test_a_span_without_a_conversation_id_joins_its_traces_only_conversation_never_one_of_two(
    tmp_path,
):
    one = two_turns("conv-a")
    loose = tool("check_stock", "c9", 5, {"in_stock": True})  # trace t1, no conversation id
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(*one, loose)))
    capture = read_capture([path], redactor=Redactor(), format="otel")
    assert capture.problems == []  # one conversation in the trace: the span is its
    other = chat("conv-b", 6, [user("Hi")], reply({"type": "text", "content": "Hello."}))
    path.write_text(json.dumps(otlp(*one, other, loose)))
    capture = read_capture([path], redactor=Redactor(), format="otel")
    # every tool span of the trace is now ambiguous: conv-a's two and the loose one
    assert len(capture.problems) == 3
    for problem in capture.problems:
        assert problem.message.endswith(
            "no gen_ai.conversation.id on the span, and its trace holds 2 conversations (which "
            "one it belongs to is not said); span skipped"
        )
    for conv in capture.conversations:  # attached to neither
        assert all(getattr(e, "call_id", None) != "c9" for turn in conv.events for e in turn)


# -- call ids in OTLP spans (the converters' rules, docs/adapters.md "Call ids") -------------


def calls_and_results(conv) -> list[tuple[str, str, str | None]]:
    return [
        (e.type, e.call_id, e.name)
        for e in conv.turns[0].events
        if e.type in ("tool_call", "tool_result")
    ]


def test_a_tool_span_without_a_call_id_answers_the_open_call_of_its_tool(tmp_path):
    asked = [user("Trail shoes?")]
    no_id = tool("search_products", "", 2, {"results": []})
    no_id["attributes"] = [a for a in no_id["attributes"] if a["key"] != "gen_ai.tool.call.id"]
    path = tmp_path / "trace.json"
    path.write_text(
        json.dumps(otlp(chat("cv", 1, asked, reply(call_part("k1", "search_products"))), no_id))
    )
    capture = read_capture([path], format="otel")
    assert capture.problems == []
    [conv] = capture.conversations
    # one call, answered: not a second, invented call beside a call that reads unanswered
    assert calls_and_results(conv) == [
        ("tool_call", "k1", "search_products"),
        ("tool_result", "k1", "search_products"),
    ]


def test_spans_of_two_calls_sharing_an_id_keep_both_calls(tmp_path):
    asked = [user("Trail shoes?")]
    first = reply(call_part("call_0", "search_products"))
    second = reply(call_part("call_0", "add_to_cart", product_id="s-1"))
    spans = [
        chat("cv", 1, asked, first),
        tool("search_products", "call_0", 2, {"results": [{"id": "s-1"}]}),
        chat("cv", 3, [*asked, *first], second),
        tool("add_to_cart", "call_0", 4, {"ok": True}),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(*spans)))
    [conv] = read_capture([path], format="otel").conversations
    assert calls_and_results(conv) == [
        ("tool_call", "call_0", "search_products"),
        ("tool_result", "call_0", "search_products"),
        ("tool_call", "call_0#2", "add_to_cart"),
        ("tool_result", "call_0#2", "add_to_cart"),
    ]


def test_a_tool_result_in_a_model_input_that_answers_no_call_leaves_the_conversation_out(
    tmp_path,
):
    asked = [user("Trail shoes?")]
    first = reply(call_part("k1", "search_products"))
    answer = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "zz", "response": 1}]}
    spans = [
        chat("cv", 1, asked, first),
        chat("cv", 2, [*asked, *first, answer], reply({"type": "text", "content": "Done."})),
    ]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(*spans)))
    capture = read_capture([path], format="otel")
    assert capture.conversations == []
    [problem] = capture.problems
    assert "'zz', which no call of the turn has" in str(problem)


def test_a_span_whose_events_are_not_a_list_is_skipped_and_said(tmp_path):
    bad = chat("cv", 1, [user("hi")], reply({"type": "text", "content": "Hello."}))
    bad["events"] = True
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(otlp(bad)))
    capture = read_capture([path], format="otel")
    assert capture.conversations == []
    [problem] = capture.problems
    assert "events is bool, not a list; span skipped" in str(problem)


def test_an_openai_log_reads_as_the_chat_converter_reads_a_live_agents_messages(tmp_path):
    """One converter: a refusal is text the judge sees, a custom tool's call is a call, and the
    events equal `events_from_chat_messages` over the turn's messages."""
    from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages

    turn = [
        {
            "role": "assistant",
            "content": None,
            "refusal": "I can't share another customer's order.",
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "k1", "type": "custom", "custom": {"name": "lookup", "input": "ord-7"}}
            ],
        },
        {"role": "tool", "tool_call_id": "k1", "content": '{"status": "shipped"}'},
        {"role": "assistant", "content": "It has shipped."},
    ]
    line = {
        "conversation_id": "c-9",
        "messages": [{"role": "user", "content": "Where is ord-7?"}, *turn],
    }
    path = tmp_path / "log.jsonl"
    path.write_text(json.dumps(line) + "\n")
    capture = read_capture([path], format="openai")
    assert capture.problems == []
    [conv] = capture.conversations
    events = [e for e in conv.turns[0].events if e.type != "turn_end"]
    assert events == events_from_chat_messages(turn)
    assert events[0].type == "text" and "another customer" in events[0].text
    assert (events[1].type, events[1].name, events[1].arguments) == (
        "tool_call",
        "lookup",
        {"_raw": "ord-7"},
    )
