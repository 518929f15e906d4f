"""The loopback mock server: scripted tool-calling steps, injected faults, counts."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

import openai
import pytest

from pytest_commerce_evals.models.clients import RetryingClient
from pytest_commerce_evals.models.http_client import HTTPChatClient, http_library
from pytest_commerce_evals.models.retry import RetryPolicy, is_retryable
from pytest_commerce_evals.testing.mock_server import MockServer

SCRIPT = [
    {"tool": "search_products", "arguments": {"query": "{title}"}},
    {"tool": "add_to_cart", "arguments": {"product_id": "{pid}", "quantity": 1}},
    {"text": "Added {pid}."},
]
PATTERN = r"add (?P<title>.+) \((?P<pid>[\w-]+)\)"
USER = {"role": "user", "content": "Please add the Trail Runner (shoe-001)"}


def _assistant() -> dict:
    return {"role": "assistant", "content": None}


def test_the_step_is_the_number_of_assistant_messages_since_the_user_spoke():
    with MockServer(SCRIPT, pattern=PATTERN) as server, HTTPChatClient(server.base_url) as client:
        first = client.chat.completions.create(model="m", messages=[USER])
        call = first.choices[0].message.tool_calls[0]
        assert (call.function.name, json.loads(call.function.arguments)) == (
            "search_products",
            {"query": "the Trail Runner"},
        )
        assert first.choices[0].finish_reason == "tool_calls"
        second = client.chat.completions.create(model="m", messages=[USER, _assistant()])
        args = json.loads(second.choices[0].message.tool_calls[0].function.arguments)
        assert args == {"product_id": "shoe-001", "quantity": 1}
        history = [USER, _assistant(), _assistant()]
        third = client.chat.completions.create(model="m", messages=history)
        assert third.choices[0].message.content == "Added shoe-001."
        assert third.choices[0].message.tool_calls is None
        # past the end the last step repeats; a new user message starts again at step 0
        again = client.chat.completions.create(model="m", messages=[*history, _assistant()])
        assert again.choices[0].message.content == "Added shoe-001."
        restart = client.chat.completions.create(model="m", messages=[*history, USER])
        assert restart.choices[0].message.tool_calls[0].function.name == "search_products"
        assert server.stats() == {"requests": 5, "replies": 5, "max_in_flight": 1}


def test_faults_come_every_nth_request_in_turn():
    faults = ("429", "500", "malformed", "stall")
    with (
        MockServer(SCRIPT, fault_every=2, faults=faults, stall_s=1.0, retry_after_s=0.25) as server,
        HTTPChatClient(server.base_url, timeout=0.3) as client,
    ):
        seen = []
        for _ in range(8):
            try:
                client.chat.completions.create(model="m", messages=[USER])
                seen.append("ok")
            except openai.APIStatusError as exc:
                seen.append(str(exc.status_code))
                if exc.status_code == 429:
                    assert exc.response.headers["retry-after"] == "0.25"
            except openai.APIResponseValidationError:
                seen.append("malformed")
            except openai.APITimeoutError:
                seen.append("stall")
        assert seen == ["ok", "429", "ok", "500", "ok", "malformed", "ok", "stall"]
        stats = server.stats()
        assert {k: stats[k] for k in faults} == dict.fromkeys(faults, 1)
        assert stats["requests"] == 8


def test_every_injected_fault_is_retryable_and_a_retrying_client_gets_through():
    with (
        MockServer(SCRIPT, fault_every=2, stall_s=1.0, retry_after_s=0.0) as server,
        HTTPChatClient(server.base_url, timeout=0.3) as raw,
    ):
        client = RetryingClient(raw, RetryPolicy(attempts=3, wait_initial=0.0, wait_max=0.0))
        for _ in range(8):
            reply = client.chat.completions.create(model="m", messages=[USER])
            assert reply.choices[0].message.tool_calls[0].function.name == "search_products"
        stats = server.stats()
        # every second request is a fault, retries included: each call after the first meets
        # one and gets through on its retry
        assert [stats[k] for k in ("429", "500", "stall", "malformed")] == [2, 2, 2, 1]
        assert stats["requests"] == 15


def _response(status: int):
    http = http_library()
    request = http.Request("POST", "http://127.0.0.1/v1/chat/completions")
    return http.Response(status, request=request)


def test_a_fault_is_classified_as_the_endpoints_not_the_callers():
    def status(cls, code):
        return cls(f"HTTP {code}", response=_response(code), body=None)

    assert is_retryable(status(openai.RateLimitError, 429))
    assert is_retryable(status(openai.InternalServerError, 503))
    assert is_retryable(openai.APIResponseValidationError(_response(200), b"{", message="not json"))
    assert is_retryable(openai.APITimeoutError(request=_response(200).request))
    assert not is_retryable(status(openai.BadRequestError, 400))
    assert not is_retryable(ValueError("the agent's own bug"))


def test_bad_settings_are_refused_with_the_allowed_values():
    with pytest.raises(ValueError, match=r"unknown fault kinds \['teapot'\]"):
        MockServer(SCRIPT, faults=("teapot",))
    with pytest.raises(ValueError, match="script step 0: expected a 'tool', 'tools' or 'text'"):
        MockServer([{"say": "hi"}])


def test_the_command_line_server_reports_its_address_and_counts():
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_commerce_evals.testing.mock_server", "--fault-every", "2"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        word, url = proc.stdout.readline().split()
        assert word == "ready" and url.startswith("http://127.0.0.1:")
        with HTTPChatClient(url) as client:
            assert client.chat.completions.create(model="m", messages=[USER]).choices
        with urllib.request.urlopen(url + "/stats", timeout=5) as response:
            stats = json.loads(response.read())
        assert stats["requests"] == 1 and stats["replies"] == 1
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def _raw_post(server: MockServer, body: bytes) -> bytes:
    """One request on a fresh connection; the whole reply, read to its declared length."""
    import socket

    host, port = server.base_url.split("//")[1].split("/")[0].split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
        )
        data = b""
        while b"\r\n\r\n" not in data:
            data += sock.recv(65536)
        head, _, rest = data.partition(b"\r\n\r\n")
        length = int(
            next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(
                b":"
            )[1]
        )
        while len(rest) < length:
            rest += sock.recv(65536)
        return head + b"\r\n\r\n" + rest


def test_a_reply_is_a_whole_http_response_with_the_status_its_headers_and_the_body():
    request = json.dumps({"model": "m", "messages": [USER]}).encode()
    with MockServer(SCRIPT, pattern=PATTERN) as server:
        head, _, body = _raw_post(server, request).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 200 OK"
    fields = dict(line.split(": ", 1) for line in lines[1:])
    assert fields == {"content-type": "application/json", "content-length": str(len(body))}
    assert json.loads(body)["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == (
        "search_products"
    )
    with MockServer(SCRIPT, fault_every=1, faults=("429",), retry_after_s=0.25) as server:
        head, _, body = _raw_post(server, request).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0] == "HTTP/1.1 429 Too Many Requests"
    assert "retry-after: 0.25" in lines and f"content-length: {len(body)}" in lines
    assert json.loads(body)["error"]["type"] == "rate_limit"
