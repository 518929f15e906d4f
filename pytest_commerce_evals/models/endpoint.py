"""Where the agent's and the judge's models live, and chat clients for them that retry.

Each purpose (`agent`, `judge`, `user`: the simulated customer) resolves to one `Endpoint`, field
by field, first hit wins:

    agent:  --commerce-model / --commerce-base-url          (command line)
            commerce_model / commerce_base_url              (ini)
            OPENAI_MODEL / OPENAI_BASE_URL                  (environment)
            the embedded local model                        (nothing configured)
    judge:  --commerce-judge-model / --commerce-judge-base-url
            commerce_judge_model / commerce_judge_base_url
            COMMERCE_JUDGE_MODEL / COMMERCE_JUDGE_BASE_URL
            then whatever the agent resolved to
    user:   --commerce-user-model / --commerce-user-base-url, commerce_user_model / ..., and
            COMMERCE_USER_MODEL / COMMERCE_USER_BASE_URL, then the agent's, as the judge

API keys are read from the environment only (`OPENAI_API_KEY`; `COMMERCE_JUDGE_API_KEY` first for
the judge, `COMMERCE_USER_API_KEY` for the simulated customer), handed to the client and never
stored, logged or printed: an `Endpoint` only says whether one is present.

    client = make_client(config, "agent")            # retries; exhausted retries -> InfraError
    reply = client.chat.completions.create(model=client.endpoint.model, messages=[...])
    client.close()
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import pytest
import tenacity

from ..agent import InfraError
from ..errors import shown_url
from ..settings import BY_NAME, settings
from ..usage import record_response, server_of
from .http_client import NO_KEY, AsyncHTTPChatClient, HTTPChatClient

if TYPE_CHECKING:
    import openai

__all__ = [
    "AsyncRetryingClient",
    "Endpoint",
    "EndpointError",
    "LOCAL_MODEL",
    "Purpose",
    "RetryPolicy",
    "RetryingClient",
    "async_retrying_create",
    "make_client",
    "resolve_endpoint",
    "retrying_create",
    "session_client",
    "AGENT_USED",
    "agent_used",
    "used_endpoint",
]

log = logging.getLogger(__name__)

Purpose = Literal["agent", "judge", "user"]

LOCAL_MODEL = "local"
"""The model name that asks for the embedded model explicitly (`--commerce-model=local`)."""

HOSTED_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT_S = 120.0
LOCAL_TIMEOUT_S = 900.0
"""The embedded server's default: it works on CPU, one request at a time, and cannot cancel a
request whose client gave up, so a retry after a timeout only queues behind the abandoned call."""
CONNECT_TIMEOUT_S = 10.0

# Sent to servers that need no key (the embedded model, most vLLM/Ollama/llama.cpp set-ups): the
# SDK refuses to build a client without one, and the user's real key must not go to them.
_NO_KEY = NO_KEY

# The setting (settings.TABLE) behind each field, per purpose.
_SETTING: dict[str, dict[str, str]] = {
    "agent": {"model": "model", "base_url": "base_url"},
    "judge": {"model": "judge_model", "base_url": "judge_base_url"},
    "user": {"model": "user_model", "base_url": "user_base_url"},
}


def _env_of(name: str) -> str:
    """The variable of the key setting `name` (a key is read from its variable alone)."""
    env = BY_NAME[name].env
    assert env is not None
    return env


# the variables holding each purpose's key, in the order they are tried (settings.TABLE)
_KEY_ENV: dict[str, tuple[str, ...]] = {
    "agent": (_env_of("openai_api_key"),),
    "judge": (_env_of("judge_api_key"), _env_of("openai_api_key")),
    "user": (_env_of("user_api_key"), _env_of("openai_api_key")),
}


class EndpointError(InfraError):
    """The endpoint is misconfigured or unreachable; the message says what to set or install.

    An `InfraError`, so a trial that meets it is an `infra_error`, never an agent failure.
    """


@dataclass(frozen=True)
class Endpoint:
    """One resolved model endpoint. Holds no key: only whether one is present.

    `base_url` is None for hosted OpenAI (the SDK's default) and for the embedded model until it
    has been started; `make_client` fills it in then. `source` says where it was configured:
    `cli`, `ini`, `env`, `agent` (a judge that fell back to the agent's) or `embedded`.
    """

    purpose: Purpose
    base_url: str | None
    model: str
    api_key_present: bool
    is_local: bool
    source: str

    @property
    def embedded(self) -> bool:
        """Alias of `is_local`: served by the embedded llama.cpp server."""
        return self.is_local

    def describe(self) -> str:
        """One line for headers and reports, e.g. `gpt-4o-mini at https://api.openai.com/v1`."""
        if self.is_local:
            where = shown_url(self.base_url) or "an embedded llama.cpp server, started on first use"
            return f"{self.model} (embedded) at {where}"
        return f"{self.model} at {shown_url(self.base_url) or HOSTED_BASE_URL}"


@dataclass(frozen=True)
class RetryPolicy:
    """How model calls are retried: `attempts` in all, exponential wait with jitter between
    `wait_initial` and `wait_max` seconds (a server's Retry-After is honoured up to `wait_max`)."""

    attempts: int = 4
    wait_initial: float = 1.0
    wait_max: float = 20.0

    @classmethod
    def from_config(cls, config: pytest.Config | None) -> RetryPolicy:
        if config is None:
            return cls()
        found = settings(config)  # ini commerce_retry_attempts / _wait_max, checked at configure
        return cls(attempts=found.retry_attempts, wait_max=found.retry_wait_max)

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exp = min(self.wait_max, self.wait_initial * 2 ** (state.attempt_number - 1))
        wait = random.uniform(0, exp)
        exc = state.outcome.exception() if state.outcome else None
        retry_after = _retry_after(exc)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.wait_max)


# --- resolution -------------------------------------------------------------------------------


_ORIGIN = {"option": "cli", "ini": "ini", "env": "env"}


def _pick(config: Any, purpose: str, field: str) -> tuple[str, str] | None:
    """The value of `field` for `purpose` (from the run's settings: command line, ini, then
    environment), and where it came from; None when not given."""
    name = _SETTING[purpose][field]
    found = settings(config)
    value = getattr(found, name)
    return None if value is None else (_ORIGIN[found.origin(name)], value)


def _check_url(url: str, purpose: str, source: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise EndpointError(
            f"{purpose} base URL {shown_url(url)!r} (from {source}) is not an http(s) URL; "
            "give the server's OpenAI-compatible root, e.g. http://localhost:11434/v1"
        )
    return url.rstrip("/")


def _key_present(purpose: str) -> bool:
    return any(os.environ.get(name) for name in _KEY_ENV[purpose])


def _embedded(purpose: Purpose, config: Any, source: str) -> Endpoint:
    from . import embedded as _local_model

    return Endpoint(
        purpose=purpose,
        base_url=None,
        model=_local_model.model_id(config),
        api_key_present=False,
        is_local=True,
        source=source,
    )


def resolve_endpoint(config: pytest.Config | None, purpose: Purpose) -> Endpoint:
    """Resolve `purpose`'s endpoint from options, ini and environment; starts and reaches nothing.

    Raises `EndpointError` when the settings contradict each other (a base URL with no model, a
    hosted model with no key), naming the setting to add.
    """
    if purpose not in _SETTING:
        raise ValueError(f"purpose must be 'agent', 'judge' or 'user', not {purpose!r}")
    if purpose != "agent":
        return _resolve_beside_agent(config, purpose)
    return _resolve(
        config, "agent", _pick(config, "agent", "model"), _pick(config, "agent", "base_url")
    )


def _resolve(
    config: Any,
    purpose: Purpose,
    model: tuple[str, str] | None,
    base: tuple[str, str] | None,
) -> Endpoint:
    if model is None and base is None:
        return _embedded(purpose, config, "embedded")
    if model is not None and model[1] == LOCAL_MODEL:
        return _embedded(purpose, config, model[0])
    if model is None:
        assert base is not None
        flag, env = _model_setting(purpose)
        raise EndpointError(
            f"{purpose} base URL {base[1]} (from {base[0]}) has no model: "
            f"pass {flag}=<model> or set {env}"
        )
    base_url = _check_url(base[1], purpose, base[0]) if base else None
    key = _key_present(purpose)
    if base_url is None and not key:
        raise EndpointError(
            f"{purpose} model {model[1]!r} (from {model[0]}) would go to hosted OpenAI, but "
            f"{' / '.join(_KEY_ENV[purpose])} is not set: set the key, or point at another "
            f"server with {_url_flag(purpose)}"
        )
    sources = {model[0]} | ({base[0]} if base else set())
    return Endpoint(
        purpose=purpose,
        base_url=base_url,
        model=model[1],
        api_key_present=key,
        is_local=False,
        source="+".join(sorted(sources, key=["cli", "ini", "env", "agent"].index)),
    )


def _resolve_beside_agent(config: Any, purpose: Purpose) -> Endpoint:
    """The judge's or the simulated customer's endpoint: its own settings, else the agent's."""
    model = _pick(config, purpose, "model")
    base = _pick(config, purpose, "base_url")
    if model is None and base is None:
        agent = resolve_endpoint(config, "agent")
        return replace(
            agent,
            purpose=purpose,
            source="agent",
            api_key_present=(_key_present(purpose) and not agent.is_local),
        )
    if base is None and model is not None and model[1] != LOCAL_MODEL:
        # A model alone runs on the agent's server (or hosted OpenAI).
        agent_base = _pick(config, "agent", "base_url")
        if agent_base is not None:
            base = ("agent", agent_base[1])
    return _resolve(config, purpose, model, base)


def _model_setting(purpose: str) -> tuple[str | None, str | None]:
    setting = BY_NAME[_SETTING[purpose]["model"]]
    return setting.option, setting.env


def _url_flag(purpose: str) -> str | None:
    return BY_NAME[_SETTING[purpose]["base_url"]].option


# --- clients ----------------------------------------------------------------------------------


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

        server = _local_model.ensure_server(config, purpose)
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


# --- retries ----------------------------------------------------------------------------------

_RETRY_STATUS = {408, 409, 429}
# Misconfiguration: retrying cannot help, and it is never the agent's fault.
_CONFIG_STATUS = {401, 403, 404}


def api_errors() -> tuple[type[BaseException], ...]:
    """What a model call raises when the endpoint, not the caller, failed: the openai SDK's API
    errors (every client the plugin makes raises those) and a body the SDK could not decode."""
    errors: tuple[type[BaseException], ...] = (json.JSONDecodeError,)
    openai = sys.modules.get("openai")  # not loaded: none of its errors can have been raised
    if openai is not None:
        errors += (openai.APIError,)
    return errors


def is_retryable(exc: BaseException) -> bool:
    """Rate limits, 5xx, timeouts, connection errors and malformed bodies."""
    if isinstance(exc, json.JSONDecodeError):
        return True
    openai = sys.modules.get("openai")
    if openai is None:
        return False
    if isinstance(exc, (openai.APIConnectionError, openai.APIResponseValidationError)):
        return True  # APIConnectionError includes APITimeoutError
    if not isinstance(exc, openai.APIStatusError):
        return False
    status = exc.status_code
    return isinstance(status, int) and (status in _RETRY_STATUS or status >= 500)


def _retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None


def _what(endpoint: Endpoint | None, kwargs: dict[str, Any]) -> str:
    if endpoint is not None:
        return f"{endpoint.purpose} model {endpoint.describe()}"
    return f"model {kwargs.get('model', '?')!r}"


def _infra(exc: BaseException, what: str, attempts: int) -> InfraError:
    status = getattr(exc, "status_code", None)
    if status in _CONFIG_STATUS:  # an openai.APIStatusError, which has a message
        message = getattr(exc, "message", exc)
        return EndpointError(
            f"{what}: HTTP {status} ({type(exc).__name__}): {message}; "
            "check the model name, base URL and API key"
        )
    tries = "attempt" if attempts == 1 else "attempts"
    return InfraError(f"{what}: gave up after {attempts} {tries}: {_describe(exc)}")


def _describe(exc: BaseException) -> str:
    """`Type: message`, and what lies under it: the SDK's connection errors say only
    "Connection error." or "Request timed out.", their cause says which (refused, reset, ...)."""
    text = f"{type(exc).__name__}: {_status_message(exc) or exc}"
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({type(cause).__name__}: {cause})"
    return text


def _status_message(exc: BaseException) -> str | None:
    """An error status as `Error code: <status> - <the server's message>`, whichever openai
    release raised it (openai 1.93 put the whole error object in its message, later releases
    only its message); None for other errors or a body with no message."""
    openai = sys.modules.get("openai")
    if openai is None or not isinstance(exc, openai.APIStatusError):
        return None
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    if not isinstance(detail, str) or not detail:
        return None
    return f"Error code: {exc.status_code} - {detail}"


def _retrying(policy: RetryPolicy, cls: type, sleep: Callable | None) -> Any:
    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "model call failed (attempt %d of %d): %s: %s; retrying in %.1fs",
            state.attempt_number,
            policy.attempts,
            type(exc).__name__,
            exc,
            state.next_action.sleep if state.next_action else 0.0,
        )

    extra = {"sleep": sleep} if sleep is not None else {}
    return cls(
        stop=tenacity.stop_after_attempt(policy.attempts),
        wait=policy._wait,
        retry=tenacity.retry_if_exception(is_retryable),
        reraise=True,
        before_sleep=before_sleep,
        **extra,
    )


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


_NO_JSON_SCHEMA: set[str] = set()
"""Base URLs of servers that refused a `json_schema` response format this session."""


def _json_object(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A `json_schema` response format in llama.cpp's form, `{"type": "json_object", "schema":
    ...}`, which its servers honour (the schema constrains the reply as before)."""
    fmt = kwargs.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return kwargs
    schema = (fmt.get("json_schema") or {}).get("schema")
    found = {"type": "json_object", **({"schema": schema} if schema is not None else {})}
    return {**kwargs, "response_format": found}


def _refuses_json_schema(exc: BaseException, kwargs: dict[str, Any]) -> bool:
    """The server refused the request's `json_schema` response format (llama-cpp-python's
    answers HTTP 500, `response_format.type: Input should be 'text' or 'json_object'`)."""
    fmt = kwargs.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return False
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or status not in (400, 422) and status < 500:
        return False
    text = f"{_status_message(exc) or ''} {exc}"
    return "response_format" in text and "json_schema" in text


def _own_server(endpoint: Endpoint | None) -> str | None:
    """The base URL of a server of the user's own (not hosted OpenAI), else None."""
    if endpoint is None:
        return None
    base = endpoint.base_url or HOSTED_BASE_URL
    return None if base == HOSTED_BASE_URL and not endpoint.is_local else base


def _as_remembered(endpoint: Endpoint | None, kwargs: dict[str, Any]) -> tuple[str | None, dict]:
    """The server of one's own the call goes to (None: hosted OpenAI), and the request in the
    form that server was found to take this session."""
    server = _own_server(endpoint)
    if server is not None and server in _NO_JSON_SCHEMA:
        kwargs = _json_object(kwargs)
    return server, kwargs


def agent_server(config: pytest.Config) -> str | None:
    """Where the agent endpoint's settings send its calls (scheme and host): the server an
    agent's own reported calls are taken to go to. None when nothing configures the agent's
    endpoint (the embedded default: an agent on its own client may be anywhere)."""
    try:
        endpoint = resolve_endpoint(config, "agent")
    except EndpointError:
        return None
    if endpoint.source == "embedded" and endpoint.is_local:
        return None
    return _server(endpoint)


def _server(endpoint: Endpoint | None) -> str | None:
    """Where an endpoint's calls go, as a call records it (hosted OpenAI when no base URL)."""
    if endpoint is None:
        return None
    return server_of(endpoint.base_url or HOSTED_BASE_URL)


def _create(client: Any, endpoint: Endpoint | None, kwargs: dict[str, Any]) -> Any:
    """One call; a server of one's own that refuses a `json_schema` response format is asked
    again at once with it in llama.cpp's form, and so for the rest of the session. A client
    that does not record its own calls (`meters_usage`: the openai SDK's) is recorded here."""
    server, kwargs = _as_remembered(endpoint, kwargs)
    started = time.perf_counter()
    try:
        reply = client.chat.completions.create(**kwargs)
    except api_errors() as exc:
        if server is None or not _refuses_json_schema(exc, kwargs):
            raise
        _NO_JSON_SCHEMA.add(server)
        started = time.perf_counter()
        reply = client.chat.completions.create(**_json_object(kwargs))
    if not getattr(client, "meters_usage", False):
        record_response(reply, started, kwargs.get("model"), _server(endpoint))
    return reply


async def _async_create(client: Any, endpoint: Endpoint | None, kwargs: dict[str, Any]) -> Any:
    """`_create` for the async client."""
    server, kwargs = _as_remembered(endpoint, kwargs)
    started = time.perf_counter()
    try:
        reply = await client.chat.completions.create(**kwargs)
    except api_errors() as exc:
        if server is None or not _refuses_json_schema(exc, kwargs):
            raise
        _NO_JSON_SCHEMA.add(server)
        started = time.perf_counter()
        reply = await client.chat.completions.create(**_json_object(kwargs))
    if not getattr(client, "meters_usage", False):
        record_response(reply, started, kwargs.get("model"), _server(endpoint))
    return reply


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
        for attempt in _retrying(policy, tenacity.Retrying, sleep):
            with attempt:
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
        async for attempt in _retrying(policy, tenacity.AsyncRetrying, sleep):
            with attempt:
                return await _async_create(client, endpoint, kwargs)
    except api_errors() as exc:
        if is_retryable(exc) or getattr(exc, "status_code", None) in _CONFIG_STATUS:
            raise _infra(exc, _what(endpoint, kwargs), policy.attempts) from exc
        raise
    raise AssertionError("unreachable")  # pragma: no cover


class _Completions:
    def __init__(self, owner: RetryingClient) -> None:
        self._owner = owner

    def create(self, **kwargs: Any) -> Any:
        o = self._owner
        return retrying_create(
            o.raw, policy=o.policy, endpoint=o.endpoint, sleep=o._sleep, **kwargs
        )


class _AsyncCompletions:
    def __init__(self, owner: AsyncRetryingClient) -> None:
        self._owner = owner

    async def create(self, **kwargs: Any) -> Any:
        o = self._owner
        return await async_retrying_create(
            o.raw, policy=o.policy, endpoint=o.endpoint, sleep=o._sleep, **kwargs
        )


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
