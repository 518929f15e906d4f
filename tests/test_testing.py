import asyncio

import openai
import pytest

from pytest_commerce_evals.testing.fake import (
    AsyncFakeClient,
    FakeClient,
    FakeClientExhausted,
    text_reply,
    tool_reply,
)


def test_queue_replies_shaped_like_completions_and_records_requests():
    client = FakeClient(
        [tool_reply("search_products", query="trail").also("search_products", query="road"), "done"]
    )
    first = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}], tools=[{"x": 1}]
    )
    calls = first.choices[0].message.tool_calls
    assert [c.function.name for c in calls] == ["search_products", "search_products"]
    assert calls[1].function.arguments == '{"query": "road"}'
    assert first.choices[0].finish_reason == "tool_calls"
    second = client.chat.completions.create(model="m", messages=[])
    assert second.choices[0].message.content == "done"
    assert client.requests[0] == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"x": 1}],
    }
    with pytest.raises(FakeClientExhausted, match="request 3 was not scripted"):
        client.chat.completions.create(model="m", messages=[])


def test_function_script_sees_the_request():
    client = FakeClient(lambda req: text_reply(f"you said {req['messages'][-1]['content']}"))
    out = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hello"}])
    assert out.choices[0].message.content == "you said hello"


def test_exceptions_are_raised_and_mappings_accepted():
    from pytest_commerce_evals.models.http_client import http_library

    err = openai.APIConnectionError(
        request=http_library().Request("POST", "http://127.0.0.1/v1/chat/completions")
    )
    client = FakeClient(
        [
            err,
            {
                "content": None,
                "tool_calls": [{"name": "get_order", "arguments": {"order_id": "o1"}}],
            },
        ]
    )
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=[])
    msg = client.chat.completions.create(model="m", messages=[]).choices[0].message
    assert msg.tool_calls[0].function.name == "get_order"


def test_async_client():
    client = AsyncFakeClient(["hi"])
    out = asyncio.run(client.chat.completions.create(model="m", messages=[]))
    assert out.choices[0].message.content == "hi"
    assert len(client.requests) == 1


def test_replies_are_the_type_the_default_client_returns():
    from pytest_commerce_evals.models.http_client import HTTPChatClient
    from pytest_commerce_evals.models.replies import Record
    from pytest_commerce_evals.testing.mock_server import MockServer

    script = [{"tool": "search_products", "arguments": {"query": "x"}}, {"text": "hi"}]
    user = {"role": "user", "content": "x"}
    assistant = {"role": "assistant", "content": None}
    with MockServer(script) as server, HTTPChatClient(server.base_url) as real:
        live_tool = real.chat.completions.create(model="m", messages=[user])
        live_text = real.chat.completions.create(model="m", messages=[user, assistant])
    fake = FakeClient([tool_reply("search_products", query="x"), "hi"])
    fake_tool = fake.chat.completions.create(model="m", messages=[user])
    fake_text = fake.chat.completions.create(model="m", messages=[user, assistant])
    assert type(fake_tool) is type(live_tool) is Record
    assert type(fake_text) is type(live_text) is Record
    live_call, fake_call = (r.choices[0].message.tool_calls[0] for r in (live_tool, fake_tool))
    assert type(fake_call) is type(live_call)
    assert (fake_call.function.name, fake_call.function.arguments) == (
        live_call.function.name,
        live_call.function.arguments,
    )
    assert fake_text.choices[0].message.content == live_text.choices[0].message.content == "hi"
    assert fake_text.choices[0].finish_reason == live_text.choices[0].finish_reason == "stop"
