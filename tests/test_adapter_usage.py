"""The adapters report each framework response's own usage to the running trial (`usage.Meter`):
its tokens and model, once per response however often the trial converts it, nothing for a
response whose framework reported no usage (never zeros), and in place of what the plugin's
own client measured for the same calls."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from pytest_commerce_evals.adapters.core import ConversionError, report_usage
from pytest_commerce_evals.adapters.openai_chat import events_from_chat_messages
from pytest_commerce_evals.adapters.openai_responses import events_from_responses_items
from pytest_commerce_evals.events import Text, ToolCall
from pytest_commerce_evals.testing import FakeClient, FakeReply, text_reply
from pytest_commerce_evals.usage import Meter, metered


def spent(meter: Meter) -> list[tuple]:
    """(purpose, source, model, input, output, cached, turn) of each call the trial keeps."""
    return [
        (c.purpose, c.source, c.model, c.input_tokens, c.output_tokens, c.cached_tokens, c.turn)
        for c in meter.calls()
    ]


def in_trial(convert, *args, turn: int | None = 0, meter: Meter | None = None, **kwargs):
    """`convert(*args, **kwargs)` inside an agent's turn of a trial; (meter, events)."""
    meter = meter if meter is not None else Meter()
    meter.turn = turn
    with metered(meter, "agent"):
        events = convert(*args, **kwargs)
    return meter, events


# -- pydantic-ai ------------------------------------------------------------------------------


@pytest.fixture
def pai():
    pytest.importorskip("pydantic_ai", reason="pydantic-ai is in the [frameworks] extra")
    from pydantic_ai import messages, usage

    from pytest_commerce_evals.adapters import pydantic_ai

    return messages, usage, pydantic_ai


def test_pydantic_ai_reports_each_responses_usage_and_model(pai):
    messages, usage, adapter = pai
    turn = [
        messages.ModelRequest(parts=[messages.UserPromptPart("trail shoes")]),
        messages.ModelResponse(
            parts=[messages.ToolCallPart("search_products", {"query": "trail"}, tool_call_id="c1")],
            usage=usage.RequestUsage(input_tokens=120, output_tokens=30, cache_read_tokens=20),
            model_name="gpt-4.1-mini",
        ),
        messages.ModelRequest(
            parts=[messages.ToolReturnPart("search_products", '{"products": []}', "c1")]
        ),
        messages.ModelResponse(
            parts=[messages.TextPart("Nothing found.")],
            usage=usage.RequestUsage(input_tokens=180, output_tokens=12),
            model_name="gpt-4.1",
        ),
    ]
    meter, events = in_trial(adapter.events_from_pydantic_ai, turn, turn=2)
    assert spent(meter) == [
        ("agent", "agent", "gpt-4.1-mini", 120, 30, 20, 2),
        ("agent", "agent", "gpt-4.1", 180, 12, 0, 2),
    ]
    assert events[-1] == Text(text="Nothing found.")  # the events are what they were


def test_pydantic_ai_records_the_server_a_response_came_from(pai):
    messages, usage, adapter = pai
    response = messages.ModelResponse(
        parts=[messages.TextPart("Hi.")],
        usage=usage.RequestUsage(input_tokens=10, output_tokens=2),
        model_name="gpt-4.1",
    )
    if not hasattr(response, "provider_url"):
        pytest.skip("this pydantic-ai release does not say which server answered")
    response.provider_url = "https://api.openai.com/v1"
    meter, _ = in_trial(adapter.events_from_pydantic_ai, [response])
    [call] = meter.calls()
    assert call.server == "https://api.openai.com"  # priced as that provider's call
    bare = messages.ModelResponse(
        parts=[messages.TextPart("Hi.")],
        usage=usage.RequestUsage(input_tokens=10, output_tokens=2),
        model_name="gpt-4.1",
    )
    meter, _ = in_trial(adapter.events_from_pydantic_ai, [bare])
    assert meter.calls()[0].server is None  # not said: where the agent endpoint points


def test_pydantic_ai_responses_without_usage_record_nothing(pai):
    messages, usage, adapter = pai
    try:
        unmeasured = usage.RequestUsage(unmeasured_requests=1)
    except TypeError:  # a pydantic-ai before `unmeasured_requests`: a detail and no tokens
        unmeasured = usage.RequestUsage(details={"commerce_evals_not_reported": 1})
    turn = [
        messages.ModelResponse(parts=[messages.TextPart("a")], model_name="m"),  # RequestUsage()
        messages.ModelResponse(parts=[messages.TextPart("b")], usage=unmeasured, model_name="m"),
    ]
    meter, events = in_trial(adapter.events_from_pydantic_ai, turn)
    assert meter.calls() == []
    assert events == [Text(text="a"), Text(text="b")]


def test_pydantic_ai_history_converted_again_counts_each_response_once(pai):
    messages, usage, adapter = pai

    def response(text, tokens, second):
        return messages.ModelResponse(
            parts=[messages.TextPart(text)],
            usage=usage.RequestUsage(input_tokens=tokens, output_tokens=5),
            model_name="m",
            timestamp=datetime(2025, 5, 1, 12, 0, second, tzinfo=UTC),
        )

    first = [messages.ModelRequest(parts=[messages.UserPromptPart("hi")]), response("one", 50, 1)]
    # the same numbers from the same model: another response all the same
    second = [
        messages.ModelRequest(parts=[messages.UserPromptPart("more")]),
        response("one", 50, 2),
    ]
    meter, _ = in_trial(adapter.events_from_pydantic_ai, first, turn=0)
    in_trial(adapter.events_from_pydantic_ai, first + second, turn=1, meter=meter)  # all_messages
    # a copy of turn 1's response (the history saved and loaded again) is the same response
    copied = messages.ModelMessagesTypeAdapter.validate_python(
        messages.ModelMessagesTypeAdapter.dump_python(first)
    )
    assert copied[1] is not first[1]
    in_trial(adapter.events_from_pydantic_ai, copied, turn=2, meter=meter)
    assert spent(meter) == [
        ("agent", "agent", "m", 50, 5, 0, 0),
        ("agent", "agent", "m", 50, 5, 0, 1),
    ]
    # another trial counts its own calls
    other, _ = in_trial(adapter.events_from_pydantic_ai, first)
    assert [c.input_tokens for c in other.calls()] == [50]


def test_pydantic_ai_reports_replace_what_the_fake_client_measured(pai):
    _, _, adapter = pai
    from pydantic_ai import Agent

    client = FakeClient(
        [
            FakeReply(tool_calls=[("search_products", {"query": "trail"})], latency_s=0.25),
            text_reply("One trail runner.", usage={"input_tokens": 300, "output_tokens": 9}),
        ],
        usage={"input_tokens": 200, "output_tokens": 15, "cached_tokens": 64},
    )
    agent = Agent(adapter.pydantic_ai_model(client, model="shop-model"))

    @agent.tool_plain
    def search_products(query: str) -> dict:
        return {"products": [{"id": "shoe-001"}]}

    meter = Meter()
    meter.turn = 0
    with metered(meter, "agent"):
        result = asyncio.run(agent.run("trail shoes"))
    measured = meter.calls()
    assert [(c.source, c.model, c.input_tokens, c.output_tokens) for c in measured] == [
        ("client", "shop-model", 200, 15),
        ("client", "shop-model", 300, 9),
    ]
    with metered(meter, "agent"):
        adapter.events_from_pydantic_ai(result.new_messages())
    assert spent(meter) == [
        ("agent", "agent", "shop-model", 200, 15, 64, 0),
        ("agent", "agent", "shop-model", 300, 9, 0, 0),
    ]
    # the measured latency is kept where the framework reports none and the counts agree
    assert meter.calls()[0].latency_s == pytest.approx(0.25, abs=0.05)


def test_pydantic_ai_scripted_model_without_usage_invents_no_tokens(pai):
    _, _, adapter = pai
    from pydantic_ai import Agent

    agent = Agent(adapter.pydantic_ai_model(FakeClient(["Hello there, shopper."])))
    meter = Meter()
    with metered(meter, "agent"):
        result = asyncio.run(agent.run("hi"))
        adapter.events_from_pydantic_ai(result.new_messages())
    # pydantic-ai would estimate tokens for it; the call stays the client's, not reported
    assert spent(meter) == [("agent", "client", "scripted", None, None, None, None)]


def test_a_conversion_outside_a_trial_or_that_fails_records_nothing(pai):
    messages, usage, adapter = pai
    answered = messages.ModelResponse(
        parts=[messages.TextPart("ok")],
        usage=usage.RequestUsage(input_tokens=10, output_tokens=2),
        model_name="m",
    )
    assert adapter.events_from_pydantic_ai([answered]) == [Text(text="ok")]  # no trial: fine
    stray = messages.ModelRequest(
        parts=[messages.ToolReturnPart("search_products", "{}", tool_call_id=None)]
    )
    meter = Meter()
    with metered(meter, "agent"), pytest.raises(ConversionError):
        adapter.events_from_pydantic_ai([answered, stray])
    assert meter.calls() == []  # neither the failed conversion nor its re-reading counted it
    in_trial(adapter.events_from_pydantic_ai, [answered], meter=meter)
    assert [c.input_tokens for c in meter.calls()] == [10]  # and it is counted when it succeeds


# -- OpenAI Agents SDK ------------------------------------------------------------------------


@pytest.fixture
def sdk():
    pytest.importorskip("agents", reason="openai-agents is in the [frameworks] extra")
    from agents.items import ModelResponse
    from agents.usage import Usage
    from openai.types.completion_usage import PromptTokensDetails

    from pytest_commerce_evals.adapters import openai_agents

    def response(response_id, inp=0, out=0, cached=None):
        details = (
            {}
            if cached is None
            else {"input_tokens_details": PromptTokensDetails(cached_tokens=cached)}
        )
        usage = Usage(
            requests=1, input_tokens=inp, output_tokens=out, total_tokens=inp + out, **details
        )
        return ModelResponse(output=[], usage=usage, response_id=response_id)

    return response, openai_agents


def test_agents_sdk_reports_each_raw_response(sdk):
    response, adapter = sdk
    responses = [response("resp_1", 400, 40, cached=256), response("resp_2", 460, 25)]
    meter, events = in_trial(
        adapter.events_from_agents_items, [], responses=responses, model="gpt-4.1-mini", turn=1
    )
    assert spent(meter) == [
        ("agent", "agent", "gpt-4.1-mini", 400, 40, 256, 1),
        ("agent", "agent", "gpt-4.1-mini", 460, 25, 0, 1),
    ]
    assert events == []
    # without a model the calls have none (the SDK's responses do not name it)
    unnamed, _ = in_trial(adapter.events_from_agents_items, [], responses=responses[:1])
    assert [c.model for c in unnamed.calls()] == [None]


def test_agents_sdk_response_without_usage_records_nothing(sdk):
    response, adapter = sdk
    meter, _ = in_trial(
        adapter.events_from_agents_items, [], responses=[response("resp_1"), response(None)]
    )
    assert meter.calls() == []


def test_agents_sdk_resumed_run_does_not_count_the_earlier_responses_again(sdk):
    response, adapter = sdk
    before = response("resp_1", 100, 10)
    meter, _ = in_trial(adapter.events_from_agents_items, [], responses=[before], turn=0)
    # a run resumed after an approval repeats the first run's responses in its raw_responses,
    # in memory (the same objects) or from a saved RunState (copies with the same ids)
    copy = response("resp_1", 100, 10)
    unnamed = response(None, 70, 7)
    resumed = [before, copy, response("resp_2", 130, 12), unnamed]
    in_trial(adapter.events_from_agents_items, [], responses=resumed, turn=1, meter=meter)
    in_trial(adapter.events_from_agents_items, [], responses=[unnamed], turn=2, meter=meter)
    assert [(c.input_tokens, c.turn) for c in meter.calls()] == [(100, 0), (130, 1), (70, 1)]


def test_agents_sdk_run_on_the_fake_client_reports_in_place_of_the_measured_calls(sdk):
    _, adapter = sdk
    from agents import Agent, RunConfig, Runner, function_tool

    @function_tool
    def search_products(query: str) -> dict:
        """Search the catalog."""
        return {"products": [{"id": "shoe-001"}]}

    client = FakeClient(
        [FakeReply(tool_calls=[("search_products", {"query": "trail"})]), "Found one."],
        usage={"prompt_tokens": 210, "completion_tokens": 14, "cached_tokens": 128},
    )
    agent = Agent(name="shop", tools=[search_products], model=adapter.agents_model(client))
    meter = Meter()
    with metered(meter, "agent"):
        result = asyncio.run(
            Runner.run(agent, "trail shoes", run_config=RunConfig(tracing_disabled=True))
        )
        assert [c.source for c in meter.calls()] == ["client", "client"]
        adapter.events_from_agents_items(
            result.new_items, responses=result.raw_responses, model="scripted"
        )
    assert spent(meter) == [
        ("agent", "agent", "scripted", 210, 14, 128, None),
        ("agent", "agent", "scripted", 210, 14, 128, None),
    ]


# -- LangChain / LangGraph --------------------------------------------------------------------


@pytest.fixture
def lc():
    pytest.importorskip("langchain_core", reason="langchain-core is in the [frameworks] extra")
    from langchain_core import messages

    from pytest_commerce_evals.adapters import langchain

    return messages, langchain


def test_langchain_reports_each_ai_messages_usage_metadata(lc):
    messages, adapter = lc
    turn = [
        messages.HumanMessage("trail shoes"),
        messages.AIMessage(
            content="",
            tool_calls=[{"id": "c1", "name": "search_products", "args": {"query": "trail"}}],
            usage_metadata={
                "input_tokens": 150,
                "output_tokens": 20,
                "total_tokens": 170,
                "input_token_details": {"cache_read": 100},
            },
            response_metadata={"model_name": "gpt-4o-mini-2024-07-18"},
            id="run-1",
        ),
        messages.ToolMessage('{"products": []}', tool_call_id="c1"),
        messages.AIMessage(  # a provider naming its model `model` (Ollama)
            content="None in stock.",
            usage_metadata={"input_tokens": 190, "output_tokens": 6, "total_tokens": 196},
            response_metadata={"model": "llama3.1"},
            id="run-2",
        ),
        messages.AIMessage(content="Anything else?"),  # no usage_metadata: not reported
    ]
    meter, events = in_trial(adapter.events_from_langchain, turn, turn=0)
    assert spent(meter) == [
        ("agent", "agent", "gpt-4o-mini-2024-07-18", 150, 20, 100, 0),
        ("agent", "agent", "llama3.1", 190, 6, None, 0),
    ]
    assert isinstance(events[0], ToolCall)
    # the dict form reads the same, and is the same responses when converted again
    from langchain_core.messages import messages_to_dict

    in_trial(adapter.events_from_langchain, messages_to_dict(turn), turn=1, meter=meter)
    assert len(meter.calls()) == 2
    fresh, _ = in_trial(adapter.events_from_langchain, messages_to_dict(turn))
    assert spent(fresh) == spent(meter)


def test_langchain_messages_without_usage_record_nothing(lc):
    messages, adapter = lc
    turn = [messages.AIMessage(content="hi"), messages.AIMessage(content="again", id="x")]
    meter, _ = in_trial(adapter.events_from_langchain, turn)
    assert meter.calls() == []


def test_langchain_whole_history_each_turn_counts_only_the_new_messages(lc):
    messages, adapter = lc

    def ai(text, tokens):  # no id: hand-built, the message itself names the response
        return messages.AIMessage(
            content=text,
            usage_metadata={"input_tokens": tokens, "output_tokens": 3, "total_tokens": tokens + 3},
        )

    history = [messages.HumanMessage("hi"), ai("Hello.", 40)]
    meter, _ = in_trial(adapter.events_from_langchain, history, turn=0)
    history += [messages.HumanMessage("shoes?"), ai("Hello.", 40)]  # the same words, a new call
    in_trial(adapter.events_from_langchain, history, turn=1, meter=meter)
    assert [(c.input_tokens, c.turn) for c in meter.calls()] == [(40, 0), (40, 1)]


def test_langchain_scripted_model_reports_in_place_of_the_measured_call(lc):
    messages, adapter = lc
    client = FakeClient(["Hi!"], model="fake", usage={"input_tokens": 33, "output_tokens": 4})
    model = adapter.langchain_chat_model(client, model="shop-model")
    meter = Meter()
    with metered(meter, "agent"):
        reply = model.invoke([messages.HumanMessage("hello")])
        assert [c.source for c in meter.calls()] == ["client"]
        adapter.events_from_langchain([messages.HumanMessage("hello"), reply])
    assert spent(meter) == [("agent", "agent", "shop-model", 33, 4, None, None)]


# -- OpenAI chat completions and the Responses API --------------------------------------------


def completion(completion_id, usage, content="Here you go.", model="gpt-4.1-mini"):
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": usage,
    }


def test_chat_completions_report_their_usage_and_bare_messages_nothing():
    usage = {
        "prompt_tokens": 500,
        "completion_tokens": 50,
        "prompt_tokens_details": {"cached_tokens": 384},
    }
    turn = [
        {"role": "user", "content": "hi"},
        completion("chatcmpl-1", usage),
        completion("chatcmpl-2", None),  # no usage: not reported
        completion("chatcmpl-3", {"prompt_tokens": 0, "completion_tokens": 0}),  # reported as 0
        {"role": "assistant", "content": "A bare message has no usage."},
    ]
    meter, events = in_trial(events_from_chat_messages, turn)
    assert spent(meter) == [
        ("agent", "agent", "gpt-4.1-mini", 500, 50, 384, 0),
        ("agent", "agent", "gpt-4.1-mini", 0, 0, None, 0),
    ]
    assert len(events) == 4
    in_trial(events_from_chat_messages, turn, meter=meter)  # the same history again
    assert len(meter.calls()) == 2
    bare, _ = in_trial(events_from_chat_messages, [{"role": "assistant", "content": "x"}])
    assert bare.calls() == []


def test_a_fake_client_completion_converted_replaces_its_measured_call():
    client = FakeClient(["Sure."], usage={"input_tokens": 12, "output_tokens": 3})
    meter = Meter()
    with metered(meter, "agent"):
        reply = client.chat.completions.create(model="m", messages=[])
        assert [c.source for c in meter.calls()] == ["client"]
        events_from_chat_messages([reply])
    assert spent(meter) == [("agent", "agent", "m", 12, 3, None, None)]


def test_the_sdks_chat_completion_object_reports_its_usage():
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletion

    sdk = ChatCompletion.model_validate(
        completion("chatcmpl-9", {"prompt_tokens": 70, "completion_tokens": 8, "total_tokens": 78})
    )
    meter, _ = in_trial(events_from_chat_messages, [sdk])
    assert spent(meter) == [("agent", "agent", "gpt-4.1-mini", 70, 8, None, 0)]


def test_a_responses_api_response_reports_its_usage():
    output = [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Done."}],
        }
    ]
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1_700_000_000,
        "model": "gpt-4.1",
        "output": output,
        "usage": {
            "input_tokens": 900,
            "output_tokens": 60,
            "input_tokens_details": {"cached_tokens": 512},
        },
    }
    meter, events = in_trial(events_from_responses_items, [response])
    assert spent(meter) == [("agent", "agent", "gpt-4.1", 900, 60, 512, 0)]
    assert events == [Text(text="Done.")]
    unreported = {**response, "id": "resp_2", "usage": None}
    meter, _ = in_trial(events_from_responses_items, [unreported, *output])  # items: no usage
    assert meter.calls() == []


def test_report_usage_outside_a_converter_records_at_once_and_only_in_a_trial():
    assert report_usage(object(), input_tokens=5, output_tokens=1) is True  # no trial: not kept
    meter = Meter()
    with metered(meter, "agent"):
        assert report_usage(object(), usage={}) is False  # a usage saying no tokens
        assert report_usage("r", model="m", input_tokens=5, output_tokens=1, key="id-1") is True
        report_usage("r-copy", model="m", input_tokens=5, output_tokens=1, key="id-1")
        report_usage("r-other", model="m", input_tokens=6, output_tokens=1, key="id-1")
    assert [(c.model, c.input_tokens) for c in meter.calls()] == [("m", 5), ("m", 6)]
