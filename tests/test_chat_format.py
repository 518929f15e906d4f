"""The embedded server's chat format: every message reaches the prompt, every completion is capped."""

from __future__ import annotations

import json

import pytest

from pytest_commerce_evals.models import _chat_format

SEARCH = {
    "type": "function",
    "function": {
        "name": "search_products",
        "description": "Search the catalog.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
}
CART = {
    "type": "function",
    "function": {
        "name": "add_to_cart",
        "description": "Add a product.",
        "parameters": {
            "type": "object",
            "properties": {"product_id": {"type": "string"}},
            "required": ["product_id"],
        },
    },
}
CONVERSATION = [
    {"role": "system", "content": "You are a shopping assistant."},
    {"role": "user", "content": "Trail shoes under $120?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "search_products", "arguments": '{"query": "trail"}'},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_7",
        "content": '[{"id": "SHOE-1042", "price": "109.00"}]',
    },
]


def test_tool_results_reach_the_prompt():
    prompt = _chat_format.render(CONVERSATION, [SEARCH])
    assert (
        "<|im_start|>tool\nfunctions.search_products returned:\n"
        '[{"id": "SHOE-1042", "price": "109.00"}]<|im_end|>\n'
    ) in prompt
    assert (
        '<|im_start|>assistant\nfunctions.search_products:\n{"query": "trail"}<|im_end|>' in prompt
    )
    # the tools first, in a turn of their own: the same for every request with these tools;
    # how to call them after the caller's system prompt
    assert prompt.startswith("<|im_start|>system\nYou can call these functions:\n")
    assert (
        "<|im_end|>\n<|im_start|>system\nYou are a shopping assistant.\n\n"
        + _chat_format.TOOL_USAGE
        + "<|im_end|>\n<|im_start|>user\nTrail shoes under $120?"
    ) in prompt
    assert prompt.count("Or call one function with:") == 1
    assert "functions.search_products: Search the catalog." in prompt
    assert prompt.endswith("<|im_end|>\n<|im_start|>assistant\n")


def test_the_tools_turn_is_the_same_whatever_the_system_prompt():
    one = _chat_format.render(CONVERSATION, [SEARCH, CART])
    other = _chat_format.render(
        [{"role": "system", "content": "You are the operators' assistant."}, *CONVERSATION[1:]],
        [SEARCH, CART],
    )
    tools_turn = _chat_format._block("system", _chat_format.tool_list([SEARCH, CART]))
    assert one.startswith(tools_turn) and other.startswith(tools_turn)
    assert one[len(tools_turn) :] != other[len(tools_turn) :]


def test_without_a_system_prompt_the_usage_follows_the_tools():
    prompt = _chat_format.render(CONVERSATION[1:], [SEARCH])
    assert prompt.startswith(
        _chat_format._block("system", _chat_format.tool_list([SEARCH]))
        + _chat_format._block("system", _chat_format.TOOL_USAGE)
        + "<|im_start|>user\n"
    )


def test_without_tools_the_prompt_is_plain_chatml():
    prompt = _chat_format.render(
        [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello"}], None
    )
    assert prompt == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_text_content_parts_are_joined():
    prompt = _chat_format.render(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            }
        ],
        None,
    )
    assert "<|im_start|>user\nab<|im_end|>" in prompt


def test_an_unknown_role_is_an_error():
    with pytest.raises(ValueError, match="unsupported message role 'narrator'"):
        _chat_format.render([{"role": "narrator", "content": "x"}], None)


class FakeLlama:
    """Answers `create_completion` from a queue and records every call."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.calls: list[dict] = []
        self.seeds: list[int] = []

    def set_seed(self, seed: int) -> None:
        self.seeds.append(seed)

    def create_completion(self, **kwargs):
        self.calls.append(kwargs)
        return {
            "choices": [{"text": self.texts.pop(0), "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 5},
        }


@pytest.fixture
def grammar_support():
    pytest.importorskip(
        "llama_cpp", reason="llama-cpp-python not installed: pip install -e '.[local]'"
    )


def test_a_tool_call_is_chosen_then_its_arguments_completed(grammar_support):
    llama = FakeLlama("functions.add_to_cart:", '{"product_id": "SHOE-1042"}')
    out = _chat_format.handler(
        llama=llama, messages=CONVERSATION, tools=[SEARCH, CART], tool_choice="auto",
        temperature=0, seed=7,
    )  # fmt: skip
    (call,) = out["choices"][0]["message"]["tool_calls"]
    assert call["function"] == {"name": "add_to_cart", "arguments": '{"product_id": "SHOE-1042"}'}
    assert out["choices"][0]["finish_reason"] == "tool_calls"
    choose, arguments = llama.calls
    prompt = _chat_format.render(CONVERSATION, [SEARCH, CART])
    assert choose["prompt"] == prompt
    assert arguments["prompt"] == prompt + "functions.add_to_cart:\n"  # the same prefix: cached
    assert choose["max_tokens"] == _chat_format.CHOICE_CAP
    assert arguments["max_tokens"] == _chat_format.ARGUMENTS_CAP
    assert llama.seeds == [7]
    assert out["usage"] == {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}


def test_a_message_is_completed_as_text_within_max_tokens(grammar_support):
    llama = FakeLlama("message:", " SHOE-1042 costs $109.00. ")
    out = _chat_format.handler(
        llama=llama, messages=CONVERSATION, tools=[SEARCH], tool_choice="auto", max_tokens=64
    )
    message = out["choices"][0]["message"]
    assert message == {"role": "assistant", "content": "SHOE-1042 costs $109.00."}
    assert llama.calls[1]["prompt"].endswith("<|im_start|>assistant\nmessage:\n")
    assert llama.calls[1]["max_tokens"] == 64
    assert "<|im_end|>" in llama.calls[1]["stop"]


def test_a_named_tool_choice_skips_the_choice(grammar_support):
    llama = FakeLlama('{"query": "trail"}')
    out = _chat_format.handler(
        llama=llama,
        messages=CONVERSATION[:2],
        tools=[SEARCH],
        tool_choice={"type": "function", "function": {"name": "search_products"}},
    )
    assert len(llama.calls) == 1
    assert out["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "search_products"
    with pytest.raises(ValueError, match="tool_choice names 'nope'"):
        _chat_format.handler(
            llama=FakeLlama(), messages=CONVERSATION[:2], tools=[SEARCH],
            tool_choice={"type": "function", "function": {"name": "nope"}},
        )  # fmt: skip


def test_json_response_format_without_tools_uses_a_grammar_and_a_cap(grammar_support):
    llama = FakeLlama('{"verdict": "PASS", "reasoning": "ok"}')
    schema = {"type": "object", "properties": {"verdict": {"enum": ["PASS", "FAIL"]}}}
    out = _chat_format.handler(
        llama=llama,
        messages=[{"role": "user", "content": "grade"}],
        response_format={"type": "json_object", "schema": schema},
    )
    assert json.loads(out["choices"][0]["message"]["content"])["verdict"] == "PASS"
    (call,) = llama.calls
    assert call["grammar"] is not None
    assert call["max_tokens"] == _chat_format.TEXT_CAP


def test_streaming_is_refused_with_a_reason():
    with pytest.raises(ValueError, match="does not stream"):
        _chat_format.handler(llama=FakeLlama(), messages=[], stream=True)


def test_tool_arguments_may_hold_only_the_declared_keys(grammar_support, monkeypatch):
    schemas = []
    real = _chat_format._grammar
    monkeypatch.setattr(_chat_format, "_grammar", lambda s: schemas.append(s) or real(s))
    _chat_format.handler(
        llama=FakeLlama("functions.search_products:", '{"query": "trail"}'),
        messages=CONVERSATION[:2], tools=[SEARCH], tool_choice="auto",
    )  # fmt: skip
    bounded_query = {"type": "string", "maxLength": _chat_format.STRING_CAP}
    assert schemas == [
        {
            **SEARCH["function"]["parameters"],
            "properties": {"query": bounded_query},
            "additionalProperties": False,
        }
    ]


def test_bounded_caps_strings_and_arrays_that_set_no_bound_of_their_own():
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "note": {"type": ["string", "null"]},
            "ids": {"type": "array", "items": {"type": "string"}},
            "kind": {"type": "string", "enum": ["a", "b"]},
            "sku": {"type": "string", "pattern": "^[A-Z]+$"},
            "short": {"type": "string", "maxLength": 8},
            "long": {"type": "string", "minLength": 500},
            "pair": {"type": "array", "maxItems": 2},
            "many": {"type": "array", "minItems": 50},
            "count": {"type": "integer"},
        },
    }
    out = _chat_format.bounded(schema)["properties"]
    cap, items = _chat_format.STRING_CAP, _chat_format.ITEMS_CAP
    assert out["id"]["maxLength"] == cap and out["note"]["maxLength"] == cap
    assert out["ids"]["maxItems"] == items and out["ids"]["items"]["maxLength"] == cap
    for kept in ("kind", "sku", "long", "count"):  # an enum, a pattern, a minimum past the cap
        assert "maxLength" not in out[kept], kept
    assert out["short"]["maxLength"] == 8 and out["pair"]["maxItems"] == 2
    assert "maxItems" not in out["many"]
    assert "maxLength" not in schema["properties"]["id"]  # the caller's schema is untouched


def test_a_bounded_string_closes_the_arguments_within_the_cap(grammar_support):
    """The grammar built from a bounded schema lets a string end no later than its cap."""
    bounded = _chat_format._grammar(_chat_format.bounded({"type": "string"}))._grammar
    free = _chat_format._grammar({"type": "string"})._grammar
    assert bounded.count("(char") == _chat_format.STRING_CAP  # one optional char each
    assert "(char" not in free  # char* : any length
    # a string of single-character tokens, its quotes and a key still fit the arguments' cap
    assert _chat_format.STRING_CAP + 20 <= _chat_format.ARGUMENTS_CAP


def test_closed_keeps_what_a_schema_says_and_closes_nested_objects():
    schema = {
        "type": "object",
        "properties": {
            "lines": {"type": "array", "items": {"type": "object", "properties": {"id": {}}}},
            "extra": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }
    out = _chat_format.closed(schema)
    assert out["additionalProperties"] is False
    assert out["properties"]["lines"]["items"]["additionalProperties"] is False
    assert out["properties"]["extra"]["additionalProperties"] is True  # said so: kept
    assert "additionalProperties" not in schema  # the caller's schema is untouched


def test_every_reference_tool_gets_a_grammar_of_its_own_schema(grammar_support):
    """llama.cpp's converter rejects pydantic's Decimal pattern (a lookahead); the grammar is then
    built without patterns rather than falling back to any JSON at all."""
    from llama_cpp import llama_grammar

    from pytest_commerce_evals.reference.tools import TOOLS

    generic = llama_grammar.LlamaGrammar.from_string(llama_grammar.JSON_GBNF, verbose=False)
    for name, tool in TOOLS.items():
        grammar = _chat_format._grammar(_chat_format.closed(tool.schema["function"]["parameters"]))
        assert grammar._grammar != generic._grammar, name


def test_without_patterns_drops_regexes_only():
    schema = {"type": "object", "properties": {"pattern": {"type": "string", "pattern": "^(?!x)"}}}
    assert _chat_format.without_patterns(schema) == {
        "type": "object",
        "properties": {"pattern": {"type": "string"}},  # a parameter named pattern stays
    }
