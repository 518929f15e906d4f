"""The default chat client (the openai SDK's transport, its low-level path): requests, replies,
errors, connections, threads; and its async twin, which must send, reply and fail alike."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest

from pytest_commerce_evals.models.http_client import (
    AsyncHTTPChatClient,
    HTTPChatClient,
    http_library,
)
from pytest_commerce_evals.models.replies import Record
from pytest_commerce_evals.testing.fake import AsyncFakeClient
from pytest_commerce_evals.testing.mock_server import MockServer

httpx = http_library()  # the HTTP library the installed openai SDK is built on


class _Echo:
    """A loopback server that records each request and answers from a queue of
    (status, body, close) tuples, then with a plain completion."""

    def __init__(self, answers=()):
        self.requests: list[tuple[str, dict, dict]] = []
        self.answers = list(answers)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                owner.requests.append(
                    (self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                status, payload, close = (
                    owner.answers.pop(0)
                    if owner.answers
                    else (
                        200,
                        {"choices": [{"message": {"role": "assistant", "content": "hi"}}]},
                        False,
                    )
                )
                raw = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-length", str(len(raw)))
                if close:  # "silent": closes the kept-alive connection without saying so
                    if close != "silent":
                        self.send_header("connection", "close")
                    self.close_connection = True
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(params=["sync", "sync-library", "async"])
def create(request):
    """`create(base_url, client options..., **call)`: one `chat.completions.create` on a fresh
    `HTTPChatClient` (on its loopback connections, or, in the `sync-library` run, on the HTTP
    library as for any other server), or on a fresh `AsyncHTTPChatClient` (awaited, then
    closed) in the async run of the test: what holds for one client holds for the others."""
    if request.param.startswith("sync"):
        direct = request.param == "sync"

        def call_sync(url, *, client=None, **kwargs):
            with HTTPChatClient(url, **(client or {}), direct_loopback=direct) as c:
                assert (c._loopback is not None) is direct
                return c.chat.completions.create(**kwargs)

        return call_sync

    def call_async(url, *, client=None, **kwargs):
        async def main():
            async with AsyncHTTPChatClient(url, **(client or {})) as c:
                return await c.chat.completions.create(**kwargs)

        return asyncio.run(main())

    return call_async


@pytest.fixture
def echo():
    servers = []

    def make(answers=()):
        servers.append(_Echo(answers))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def test_a_request_carries_the_body_the_key_and_extra_body(echo, create):
    server = echo()
    reply = create(
        server.url,
        client={"api_key": "sk-test-123"},
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        temperature=None,  # unset fields are not sent
        max_tokens=Decimal("64"),
        extra_body={"seed": 7},
        extra_headers={"x-trace": "t1"},
        timeout=5,
    )
    path, headers, body = server.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["authorization"] == "Bearer sk-test-123"
    assert headers["x-trace"] == "t1"
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": "64",
        "seed": 7,
    }
    assert reply.choices[0].message.content == "hi"
    assert type(reply) is Record


def test_no_key_sends_a_placeholder_never_the_environments(echo, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    server = echo()
    with HTTPChatClient(server.url) as client:
        client.chat.completions.create(model="m", messages=[])
    assert server.requests[0][1]["authorization"] == "Bearer no-key-required"


def test_a_reply_reads_like_the_sdks_even_with_fields_left_out(echo):
    full = {
        "id": "c-1",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "search", "arguments": '{"q": "x"}'},
                        }
                    ],
                },
            }
        ],
    }
    sparse = {"choices": [{"message": {"content": "x", "tool_calls": [{"id": "c1"}]}}]}
    server = echo([(200, full, False), (200, sparse, False)])
    with HTTPChatClient(server.url) as client:
        whole = client.chat.completions.create(model="m", messages=[])
        partial = client.chat.completions.create(model="m", messages=[])
    assert type(whole) is Record and type(partial) is Record
    call = whole.choices[0].message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == ("c1", "search", '{"q": "x"}')
    assert whole.model_dump() == full
    message = partial.choices[0].message
    assert message.content == "x"
    assert message.tool_calls[0].id == "c1"
    assert message.refusal is None  # a field the server left out
    assert partial.choices[0].finish_reason is None
    assert partial.model_dump() == sparse


def test_a_message_from_a_reply_can_go_back_into_the_history(echo):
    from openai.types.chat import ChatCompletionMessage

    server = echo()
    sdk_message = ChatCompletionMessage.model_validate({"role": "assistant", "content": "sdk"})
    with HTTPChatClient(server.url) as client:
        first = client.chat.completions.create(model="m", messages=[])
        history = [{"role": "user", "content": "hi"}, first.choices[0].message, sdk_message]
        client.chat.completions.create(model="m", messages=history)
    # as the server sent them: the fields it left out are not sent back as nulls
    assert server.requests[1][2]["messages"][1:] == [
        {"role": "assistant", "content": "hi"},
        {"role": "assistant", "content": "sdk"},
    ]


@pytest.mark.parametrize(
    "status, cls",
    [
        (400, openai.BadRequestError),
        (401, openai.AuthenticationError),
        (403, openai.PermissionDeniedError),
        (404, openai.NotFoundError),
        (409, openai.ConflictError),
        (418, openai.APIStatusError),
        (422, openai.UnprocessableEntityError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
        (503, openai.InternalServerError),
    ],
)
def test_an_error_status_is_the_sdks_error_with_the_servers_message(echo, create, status, cls):
    server = echo([(status, {"error": {"message": "bad key"}}, False)])
    with pytest.raises(cls) as info:
        create(server.url, model="m", messages=[])
    assert type(info.value) is cls  # the class the SDK's own client raises for the status
    assert info.value.status_code == status
    assert info.value.message == f"Error code: {status} - bad key"
    assert info.value.body == {"message": "bad key"}


def test_an_error_body_that_is_not_json_is_kept_as_text(echo, create):
    server = echo([(502, b"<html>Bad gateway</html>", False)])
    with pytest.raises(openai.InternalServerError) as info:
        create(server.url, model="m", messages=[])
    assert info.value.message == "Error code: 502"
    assert info.value.body == "<html>Bad gateway</html>"


def test_the_sdks_headers_and_the_clients_own_go_with_every_call(echo, monkeypatch):
    monkeypatch.setenv("OPENAI_ORG_ID", "org-7")
    server = echo()
    with HTTPChatClient(server.url, "sk-1", headers={"x-team": "checkout"}) as client:
        client.chat.completions.create(model="m", messages=[], extra_query={"api-version": "2"})
    path, headers, _ = server.requests[0]
    assert path == "/v1/chat/completions?api-version=2"
    assert headers["user-agent"].startswith("pytest-commerce-evals/")
    assert headers["openai-organization"] == "org-7"
    assert headers["x-team"] == "checkout"
    assert headers["authorization"] == "Bearer sk-1"


@pytest.mark.parametrize(
    "body, message",
    [
        (b'{"choices": [', "body is not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (b'{"object": "chat.completion"}', "has no choices"),
        (b'{"choices": [{"text": "legacy"}]}', "a choice has no message"),
    ],
)
def test_a_body_that_is_not_a_chat_completion_is_malformed(echo, create, body, message):
    server = echo([(200, body, False)])
    with pytest.raises(openai.APIResponseValidationError, match=message) as info:
        create(server.url, model="m", messages=[])
    assert info.value.status_code == 200


def test_a_connection_the_server_closed_is_replaced(echo):
    ok = {"choices": [{"message": {"content": "again"}}]}
    server = echo([(200, ok, True)])  # answers, then closes the keep-alive connection
    with HTTPChatClient(server.url) as client:
        client.chat.completions.create(model="m", messages=[])
        second = client.chat.completions.create(model="m", messages=[])
    assert second.choices[0].message.content == "hi"
    assert len(server.requests) == 2


def test_nothing_listening_is_a_connection_error(create):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(openai.APIConnectionError) as info:
        create(f"http://127.0.0.1:{port}/v1", model="m", messages=[])
    assert not isinstance(info.value, openai.APITimeoutError)
    causes = []  # the HTTP library's error, and under it (the async one wraps it) the refusal
    cause = info.value.__cause__
    while cause is not None:
        causes.append(cause)
        cause = cause.__cause__ or cause.__context__
    assert isinstance(causes[0], httpx.ConnectError)
    assert any(isinstance(c, ConnectionRefusedError) for c in causes)


def test_a_server_that_stalls_past_the_timeout_is_a_timeout_error(create):
    with (
        MockServer([{"text": "late"}], latency_s=2.0) as server,
        pytest.raises(openai.APITimeoutError) as info,
    ):
        create(
            server.base_url,
            client={"timeout": 0.3},
            model="m",
            messages=[{"role": "user", "content": "x"}],
        )
    assert "timeout" in type(info.value.__cause__).__name__.lower()


def test_a_calls_own_timeout_overrides_the_clients(create):
    with MockServer([{"text": "late"}], latency_s=0.5) as server:
        reply = create(
            server.base_url,
            client={"timeout": 0.1},
            model="m",
            messages=[{"role": "user", "content": "x"}],
            timeout=5,
        )
    assert reply.choices[0].message.content == "late"


def test_the_loopback_server_is_never_proxied(echo, create, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "")
    server = echo()
    reply = create(server.url, model="m", messages=[])
    assert reply.choices[0].message.content == "hi"


def test_a_base_url_that_is_not_http_is_refused():
    with pytest.raises(ValueError, match="must be an http"):
        HTTPChatClient("localhost:8000/v1")


def test_other_calls_are_an_sdk_clients_on_the_same_endpoint(echo):
    with HTTPChatClient("http://127.0.0.1:9/v1", "sk-x", timeout=7) as client:
        assert isinstance(client.sdk, openai.OpenAI)
        assert client.sdk is client.sdk  # made once
        assert client.models is client.sdk.models
        assert str(client.sdk.base_url) == "http://127.0.0.1:9/v1/"
        assert client.sdk.max_retries == 0
        assert client.sdk.timeout.read == 7
        assert client.api_key == "sk-x"


def test_streaming_is_refused_with_what_to_use_instead(create):
    with pytest.raises(ValueError, match="Client does not stream; use the openai SDK"):
        create("http://127.0.0.1:9/v1", model="m", messages=[], stream=True)


def test_one_client_serves_many_threads_at_once():
    script = [{"text": "{message}"}]
    with MockServer(script, latency_s=0.05) as server, HTTPChatClient(server.base_url) as client:
        replies: list[str] = []

        def work(n: int) -> None:
            for i in range(5):
                msg = [{"role": "user", "content": f"t{n}-{i}"}]
                replies.append(
                    client.chat.completions.create(model="m", messages=msg)
                    .choices[0]
                    .message.content
                )

        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(replies) == sorted(f"t{n}-{i}" for n in range(8) for i in range(5))
        assert server.stats()["max_in_flight"] > 1


def test_tools_are_sent_whole_and_follow_a_changed_list(echo):
    server = echo()
    search = {"type": "function", "function": {"name": "search", "parameters": {}}}
    cart = {"type": "function", "function": {"name": "cart", "parameters": {}}}
    with HTTPChatClient(server.url) as client:
        for tools in ([search], [search], [search, cart], [cart]):
            client.chat.completions.create(model="m", messages=[], tools=tools, tool_choice="auto")
        client.chat.completions.create(tools=[search])
    sent = [body for _, _, body in server.requests]
    assert [[t["function"]["name"] for t in b["tools"]] for b in sent] == [
        ["search"],
        ["search"],
        ["search", "cart"],
        ["cart"],
        ["search"],
    ]
    assert sent[2] == {"model": "m", "messages": [], "tools": [search, cart], "tool_choice": "auto"}
    assert sent[4] == {"tools": [search]}


def test_a_tls_failure_is_a_connection_error(monkeypatch):
    import ssl

    with HTTPChatClient("https://127.0.0.1:9/v1") as client:

        def handshake_fails(*args, **kwargs):
            raise ssl.SSLError("certificate verify failed")

        monkeypatch.setattr(client._http, "post", handshake_fails)
        with pytest.raises(openai.APIConnectionError) as info:
            client.chat.completions.create(model="m", messages=[])
    assert isinstance(info.value.__cause__, ssl.SSLError)


def test_a_reply_dumps_to_a_copy_and_reads_by_key():
    reply = Record({"choices": [{"message": {"content": "x"}}]})
    message = reply.choices[0].message
    assert message.get("content") == "x" and message["content"] == "x"
    assert message.get("refusal", "none") == "none"
    dumped = reply.model_dump()
    dumped["choices"][0]["message"]["content"] = "changed"
    assert reply.choices[0].message.content == "x"
    assert reply.model_dump_json() == '{"choices": [{"message": {"content": "x"}}]}'
    assert reply == Record({"choices": [{"message": {"content": "x"}}]})


def test_a_successful_call_does_not_import_the_sdk():
    """`import openai` (0.3-0.5 s) is paid only when an error is raised or `.sdk` is used."""
    code = """
import asyncio
import sys
from pytest_commerce_evals.models.http_client import AsyncHTTPChatClient, HTTPChatClient
from pytest_commerce_evals.testing.fake import FakeClient
from pytest_commerce_evals.testing.mock_server import MockServer
with MockServer([{"text": "hi"}]) as server, HTTPChatClient(server.base_url) as client:
    reply = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
assert reply.choices[0].message.content == "hi"
assert FakeClient(["hi"]).chat.completions.create(model="m", messages=[]).choices

async def main(url):
    async with AsyncHTTPChatClient(url) as client:
        return await client.chat.completions.create(model="m", messages=[])
with MockServer([{"text": "hi"}]) as server:
    assert asyncio.run(main(server.base_url)).choices[0].message.content == "hi"
print("openai" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- the async client -----------------------------------------------------------------------------


def test_the_async_client_sends_what_the_sync_one_sends_and_replies_like_async_fake_client(echo):
    server = echo()
    tools = [{"type": "function", "function": {"name": "search", "parameters": {}}}]
    call = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": tools}
    with HTTPChatClient(server.url, "sk-1", headers={"x-team": "a"}) as client:
        sync_reply = client.chat.completions.create(**call)

    async def main():
        async with AsyncHTTPChatClient(server.url, "sk-1", headers={"x-team": "a"}) as client:
            reply = await client.chat.completions.create(**call)
        fake = await AsyncFakeClient(["hi"]).chat.completions.create(**call)
        return reply, fake

    reply, fake = asyncio.run(main())
    assert type(reply) is type(fake) is type(sync_reply) is Record
    assert reply == sync_reply
    assert reply.choices[0].message.content == fake.choices[0].message.content == "hi"
    (path, sync_headers, sync_body), (async_path, headers, body) = server.requests
    assert async_path == path and body == sync_body
    # the loopback connection asks for no compression and is kept alive as HTTP/1.1 does by
    # default; every other header is the same
    transport = {"accept-encoding", "connection"}
    assert sync_headers["accept-encoding"] == "identity"
    assert {k: v for k, v in headers.items() if k not in transport} == {
        k: v for k, v in sync_headers.items() if k not in transport
    }


def test_a_loopback_server_is_called_on_plain_connections_and_any_other_through_the_library():
    for url, direct in (
        ("http://127.0.0.1:8000/v1", True),
        ("http://localhost:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://10.0.0.5:8000/v1", False),
        ("https://127.0.0.1:8000/v1", False),
    ):
        with HTTPChatClient(url) as client:
            assert (client._loopback is not None) is direct, url
    with HTTPChatClient("http://127.0.0.1:8000/v1", direct_loopback=False) as client:
        assert client._loopback is None


def test_a_closed_client_refuses_a_call_on_either_path(echo):
    server = echo()
    for direct in (True, False):
        client = HTTPChatClient(server.url, direct_loopback=direct)
        client.chat.completions.create(model="m", messages=[])
        client.close()
        with pytest.raises(RuntimeError, match="closed"):
            client.chat.completions.create(model="m", messages=[])
    assert len(server.requests) == 2


def test_a_kept_alive_connection_the_server_dropped_unsaid_is_replaced_and_the_call_sent_again(
    echo,
):
    ok = {"choices": [{"message": {"content": "first"}}]}
    server = echo([(200, ok, "silent")])  # answers, then closes without a connection: close
    with HTTPChatClient(server.url) as client:
        first = client.chat.completions.create(model="m", messages=[])
        second = client.chat.completions.create(model="m", messages=[])
    assert (first.choices[0].message.content, second.choices[0].message.content) == ("first", "hi")
    assert len(server.requests) == 2  # the second call reached the server once


def test_the_async_client_closes_its_connections_on_leaving_async_with(echo):
    server = echo()

    async def main():
        async with AsyncHTTPChatClient(server.url) as client:
            await client.chat.completions.create(model="m", messages=[])
            assert not client._http.is_closed
        assert client._http.is_closed
        with pytest.raises(RuntimeError, match="closed"):  # no call after close
            await client.chat.completions.create(model="m", messages=[])
        other = AsyncHTTPChatClient(server.url)
        await other.close()  # the SDK's AsyncOpenAI spelling closes it too
        assert other._http.is_closed

    asyncio.run(main())
    assert len(server.requests) == 1


def test_the_async_clients_other_calls_are_an_async_sdk_clients_on_the_same_connections():
    async def main():
        async with AsyncHTTPChatClient("http://127.0.0.1:9/v1", "sk-x", timeout=7) as client:
            assert isinstance(client.sdk, openai.AsyncOpenAI)
            assert client.sdk is client.sdk
            assert client.models is client.sdk.models
            assert client.sdk._client is client._http  # the same connection pool
            assert str(client.sdk.base_url) == "http://127.0.0.1:9/v1/"
            assert client.sdk.max_retries == 0
            assert client.sdk.timeout.read == 7
            assert repr(client) == "AsyncHTTPChatClient('http://127.0.0.1:9/v1')"

    asyncio.run(main())


def test_one_async_client_serves_many_calls_at_once():
    async def main(url):
        async with AsyncHTTPChatClient(url) as client:
            replies = await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": f"c{n}"}]
                    )
                    for n in range(16)
                )
            )
        return [r.choices[0].message.content for r in replies]

    with MockServer([{"text": "{message}"}], latency_s=0.1) as server:
        contents = asyncio.run(main(server.base_url))
        assert contents == [f"c{n}" for n in range(16)]
        assert server.stats()["max_in_flight"] > 1


def test_an_async_tls_failure_is_a_connection_error(monkeypatch):
    import ssl

    async def main():
        async with AsyncHTTPChatClient("https://127.0.0.1:9/v1") as client:

            async def handshake_fails(*args, **kwargs):
                raise ssl.SSLError("certificate verify failed")

            monkeypatch.setattr(client._http, "post", handshake_fails)
            with pytest.raises(openai.APIConnectionError) as info:
                await client.chat.completions.create(model="m", messages=[])
        return info.value

    error = asyncio.run(main())
    assert isinstance(error.__cause__, ssl.SSLError)
    assert str(error.request.url) == "https://127.0.0.1:9/v1/chat/completions"


def test_the_http_library_is_the_one_the_installed_sdk_is_built_on():
    import openai

    # another package may bring httpx2 beside an openai 1.x: the SDK's own client class decides
    assert issubclass(openai.DefaultHttpxClient, httpx.Client)
    assert issubclass(openai.DefaultAsyncHttpxClient, httpx.AsyncClient)
    major = int(openai.__version__.split(".")[0])
    assert httpx.__name__ == ("httpx2" if major >= 3 else "httpx"), (openai.__version__, httpx)
