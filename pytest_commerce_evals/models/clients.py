"""Chat clients for an endpoint: `make_client` builds the sync or async client (the plugin's
own HTTP client, or the openai SDK's), wrapped so that its calls retry per the `RetryPolicy`; the
session's shared clients, and which endpoint a run's clients used.

    client = make_client(config, "agent")            # retries; exhausted retries -> InfraError
    reply = client.chat.completions.create(model=client.endpoint.model, messages=[...])
    client.close()
"""

from __future__ import annotations

import os
import threading
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
import tenacity

from ..settings import settings
from ._json_schema import _async_create, _create
from .endpoint import _KEY_ENV, HOSTED_BASE_URL, Endpoint, Purpose, resolve_endpoint
from .http_client import NO_KEY, AsyncHTTPChatClient, HTTPChatClient
from .retry import _CONFIG_STATUS, RetryPolicy, _infra, _retrying, _what, api_errors, is_retryable

if TYPE_CHECKING:
    import openai

__all__ = [
    "AGENT_USED",
    "AsyncRetryingClient",
    "RetryingClient",
    "agent_used",
    "async_retrying_create",
    "close_session_clients",
    "make_client",
    "retrying_create",
    "session_client",
    "used_endpoint",
]

DEFAULT_TIMEOUT_S = 120.0
LOCAL_TIMEOUT_S = 900.0
"""The embedded server's default: it works on CPU, one request at a time, and cannot cancel a
request whose client gave up, so a retry after a timeout only queues behind the abandoned call."""
CONNECT_TIMEOUT_S = 10.0

# Sent to servers that need no key (the embedded model, most vLLM/Ollama/llama.cpp set-ups): the
# SDK refuses to build a client without one, and the user's real key must not go to them.
_NO_KEY = NO_KEY


def _timeout_s(config: Any, local: bool = False) -> float:
    value = settings(config).request_timeout if config is not None else None
    return value if value else (LOCAL_TIMEOUT_S if local else DEFAULT_TIMEOUT_S)


def _timeout(config: Any, local: bool = False) -> openai.Timeout:
    import openai

    total = _timeout_s(config, local)
    return openai.Timeout(total, connect=min(CONNECT_TIMEOUT_S, total))


def _connect(config: Any, purpose: Purpose) -> tuple[Endpoint, dict[str, Any]]:
    """The endpoint (started, if embedded), its API key and whether it is loopback."""
    endpoint = resolve_endpoint(config, purpose)
    if endpoint.is_local:
        from . import embedded as _local_model

        # an attacker on the embedded model talks through the customer's server
        server = _local_model.ensure_server(config, "user" if purpose == "attacker" else purpose)
        endpoint = replace(endpoint, base_url=server.base_url)
        return endpoint, {"api_key": _NO_KEY, "local": True}
    key = next((os.environ[n] for n in _KEY_ENV[purpose] if os.environ.get(n)), None)
    return endpoint, {"api_key": key or _NO_KEY, "local": False}


def make_client(
    config: pytest.Config | None,
    purpose: Purpose,
    *,
    async_: bool = False,
    retrying: bool = True,
    sdk: bool = False,
) -> Any:
    """A chat client for `purpose`'s endpoint; starts the embedded model if that is the one.

    By default an `HTTPChatClient` (the SDK's HTTP library and errors without its per-call work
    or its import: a fraction of the CPU per call, see `http_client`), with `async_=True` its
    async twin `AsyncHTTPChatClient`; both reply with `Record`s, as `FakeClient` and
    `AsyncFakeClient` do. With `sdk=True` an `openai.OpenAI` / `openai.AsyncOpenAI` (replies are
    the SDK's `ChatCompletion`), whose own retries are off. With `retrying` (the default) it
    comes wrapped in a `RetryingClient` (or `AsyncRetryingClient`) whose
    `chat.completions.create` retries per the config's `RetryPolicy` and raises `InfraError`
    when retries run out; `.endpoint` says where it points and `.raw` is the wrapped client. The
    caller closes it (`close()`, or `with`; `await aclose()` or `async with` for the async one).
    """
    endpoint, conn = _connect(config, purpose)
    if config is not None:
        config.stash.setdefault(_USED, {}).setdefault(purpose, endpoint)
    local = conn["local"]
    base_url = endpoint.base_url or HOSTED_BASE_URL
    total = _timeout_s(config, local)
    if sdk:
        import openai

        kwargs: dict[str, Any] = {
            "api_key": conn["api_key"],
            "timeout": _timeout(config, local),
            "max_retries": 0,
        }
        if endpoint.base_url:
            kwargs["base_url"] = endpoint.base_url
        if local:
            # Loopback must never go through a proxy from the environment.
            http_cls = openai.DefaultAsyncHttpxClient if async_ else openai.DefaultHttpxClient
            kwargs["http_client"] = http_cls(trust_env=False, timeout=kwargs["timeout"])
        client: Any = (openai.AsyncOpenAI if async_ else openai.OpenAI)(**kwargs)
    else:
        client = (AsyncHTTPChatClient if async_ else HTTPChatClient)(
            base_url,
            conn["api_key"],
            timeout=total,
            connect_timeout=min(CONNECT_TIMEOUT_S, total),
            trust_env=not local,  # loopback never goes through a proxy from the environment
        )
    if not retrying:
        return client
    policy = RetryPolicy.from_config(config)
    wrapper = AsyncRetryingClient if async_ else RetryingClient
    return wrapper(client, policy, endpoint=endpoint)


_SESSION_CLIENTS = pytest.StashKey[dict[str, "RetryingClient"]]()
_USED = pytest.StashKey[dict[str, Endpoint]]()


def used_endpoint(config: pytest.Config, purpose: Purpose) -> Endpoint | None:
    """The endpoint of the first client made for `purpose` in this process, or None when nobody
    asked the plugin for one (a team's agent that brings its own model client)."""
    return config.stash.get(_USED, {}).get(purpose)


AGENT_USED = pytest.StashKey[dict]()
"""Where reports gather (the controller under xdist): the agent endpoint the first trial that
asked for a client reported, as `agent_used` returns it; the runner sets it."""


def agent_used(config: pytest.Config) -> dict | None:
    """The agent endpoint a trial of this run asked the plugin for (`model`, `base_url`,
    `embedded`), as the trials reported it (from every xdist worker); None when no trial's agent
    asked for a plugin client, i.e. the agent brings its own."""
    return config.stash.get(AGENT_USED, None)


_session_lock = threading.Lock()


def session_client(config: pytest.Config, purpose: Purpose) -> RetryingClient:
    """A sync retrying client for `purpose`, shared for the session (and its concurrent trials)
    and closed at its end."""
    clients = config.stash.setdefault(_SESSION_CLIENTS, {})
    client = clients.get(purpose)
    if client is None:
        with _session_lock:
            client = clients.get(purpose)
            if client is None:
                client = clients[purpose] = make_client(config, purpose)
    return client


def close_session_clients(config: pytest.Config) -> None:
    for client in config.stash.get(_SESSION_CLIENTS, {}).values():
        client.close()
    config.stash[_SESSION_CLIENTS] = {}


def _compat(endpoint: Endpoint | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Adapt a request to servers that refuse an assistant message whose `content` is null
    (what the SDK gives back alongside tool calls): llama-cpp-python's server, embedded or
    pointed at with `--commerce-base-url`, answers HTTP 500. An empty text means the same to
    every OpenAI-compatible server; hosted OpenAI gets the request as the agent wrote it."""
    if endpoint is None or "messages" not in kwargs:
        return kwargs
    if not endpoint.is_local and (endpoint.base_url or HOSTED_BASE_URL) == HOSTED_BASE_URL:
        return kwargs
    messages = [
        {**m, "content": ""}
        if isinstance(m, dict) and m.get("role") == "assistant" and m.get("content") is None
        else m
        for m in kwargs["messages"]
    ]
    return {**kwargs, "messages": messages}


def retrying_create(
    client: Any,
    *,
    policy: RetryPolicy | None = None,
    endpoint: Endpoint | None = None,
    sleep: Callable[[float], None] | None = None,
    **kwargs: Any,
) -> Any:
    """`client.chat.completions.create(**kwargs)`, retried per `policy`.

    Retries rate limits, 5xx, timeouts and connection errors. Raises `InfraError` when they run
    out, and `EndpointError` at once on 401/403/404; any other error (a 400 for a malformed
    request) propagates unchanged.
    """
    policy = policy or RetryPolicy()
    kwargs = _compat(endpoint, kwargs)
    try:
        try:  # the first attempt, without the retry machinery: most calls need no more
            return _create(client, endpoint, kwargs)
        except api_errors() as exc:
            if not is_retryable(exc):
                raise
            failed: BaseException | None = exc
        for attempt in _retrying(policy, tenacity.Retrying, sleep):
            with attempt:
                if failed is not None:  # the retry machinery counts and waits from attempt 1
                    met, failed = failed, None
                    raise met
                return _create(client, endpoint, kwargs)
    except api_errors() as exc:
        if is_retryable(exc) or getattr(exc, "status_code", None) in _CONFIG_STATUS:
            raise _infra(exc, _what(endpoint, kwargs), policy.attempts) from exc
        raise
    raise AssertionError("unreachable")  # pragma: no cover


async def async_retrying_create(
    client: Any,
    *,
    policy: RetryPolicy | None = None,
    endpoint: Endpoint | None = None,
    sleep: Callable[[float], Awaitable[None]] | None = None,
    **kwargs: Any,
) -> Any:
    """`await client.chat.completions.create(**kwargs)`, retried like `retrying_create`."""
    policy = policy or RetryPolicy()
    kwargs = _compat(endpoint, kwargs)
    try:
        try:  # the first attempt, without the retry machinery, as `retrying_create`
            return await _async_create(client, endpoint, kwargs)
        except api_errors() as exc:
            if not is_retryable(exc):
                raise
            failed: BaseException | None = exc
        async for attempt in _retrying(policy, tenacity.AsyncRetrying, sleep):
            with attempt:
                if failed is not None:
                    met, failed = failed, None
                    raise met
                return await _async_create(client, endpoint, kwargs)
    except api_errors() as exc:
        if is_retryable(exc) or getattr(exc, "status_code", None) in _CONFIG_STATUS:
            raise _infra(exc, _what(endpoint, kwargs), policy.attempts) from exc
        raise
    raise AssertionError("unreachable")  # pragma: no cover


_in_flight = [0]
_in_flight_lock = threading.Lock()


def calls_in_flight() -> int:
    """Model calls the plugin's clients have open in this process (retries included)."""
    return _in_flight[0]


def _opened(step: int) -> None:
    with _in_flight_lock:
        _in_flight[0] += step


class _Completions:
    def __init__(self, owner: RetryingClient) -> None:
        self._owner = owner

    def create(self, **kwargs: Any) -> Any:
        o = self._owner
        _opened(1)
        try:
            return retrying_create(
                o.raw, policy=o.policy, endpoint=o.endpoint, sleep=o._sleep, **kwargs
            )
        finally:
            _opened(-1)


class _AsyncCompletions:
    def __init__(self, owner: AsyncRetryingClient) -> None:
        self._owner = owner

    async def create(self, **kwargs: Any) -> Any:
        o = self._owner
        _opened(1)
        try:
            return await async_retrying_create(
                o.raw, policy=o.policy, endpoint=o.endpoint, sleep=o._sleep, **kwargs
            )
        finally:
            _opened(-1)


class _Chat:
    def __init__(self, completions: Any) -> None:
        self.completions = completions


class RetryingClient:
    """Wraps an openai client (or a `FakeClient`): `chat.completions.create` retries per
    `policy` and raises `InfraError` when retries run out. Anything else passes through to
    `raw`."""

    def __init__(
        self,
        client: Any,
        policy: RetryPolicy | None = None,
        *,
        endpoint: Endpoint | None = None,
        sleep: Callable[[float], Any] | None = None,
    ) -> None:
        self.raw = client
        self.policy = policy or RetryPolicy()
        self.endpoint = endpoint
        self._sleep = sleep
        self.chat = _Chat(self._completions())

    def _completions(self) -> Any:
        return _Completions(self)

    @property
    def model(self) -> str | None:
        """The endpoint's model, the one to pass as `model=`."""
        return self.endpoint.model if self.endpoint else getattr(self.raw, "model", None)

    def __getattr__(self, name: str) -> Any:
        if name == "raw":  # not yet set (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.raw, name)

    def close(self) -> None:
        close = getattr(self.raw, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> RetryingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRetryingClient(RetryingClient):
    """The async form: `await client.chat.completions.create(...)`; close with `await aclose()`
    or `async with`."""

    def _completions(self) -> Any:
        return _AsyncCompletions(self)

    async def aclose(self) -> None:
        close = getattr(self.raw, "close", None)
        if close is not None:
            result = close()
            if hasattr(result, "__await__"):
                await result

    def close(self) -> None:
        raise TypeError("AsyncRetryingClient is closed with `await client.aclose()`")

    async def __aenter__(self) -> AsyncRetryingClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
