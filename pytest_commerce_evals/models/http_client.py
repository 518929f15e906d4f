"""The plugin's chat client: the openai SDK's HTTP library and errors, without its per-call work.

The plugin's own model calls (the reference agent, the judge) go through it by default. A call is
one POST on a client of the HTTP library the installed openai SDK is built on (`httpx2` with
openai 3.x, `httpx` before), configured as the SDK configures its own (`DefaultHttpxClient`'s
connection limits, redirects, timeouts, proxies from the environment); failures are raised as the
SDK's exceptions. What it leaves out is the SDK's per-call work and its import: the request is not
transformed against the SDK's parameter types nor its options copied and merged (1.2 ms of CPU a
call with the reference agent's tool schemas; 0.5 ms even on the SDK's low-level `post`), the
reply is not built into pydantic models, and `import openai` (0.3-0.5 s) happens only when an
error is raised or `.sdk` is used. On two cores that CPU is what caps how many trials can be in
flight.

    client = HTTPChatClient("http://localhost:8000/v1", api_key="...", timeout=120)
    reply = client.chat.completions.create(model="m", messages=[...], tools=[...])
    reply.choices[0].message.tool_calls[0].function.arguments

Replies are `replies.Record`s (attribute access over the JSON, as the SDK's `ChatCompletion`
reads; a missing field reads as None; `model_dump()` for the dict); `FakeClient` returns the
same type. Failures are the SDK's own exceptions, as its `create` raises them:
`openai.APIStatusError` and its subclasses by status (`RateLimitError`, `InternalServerError`,
`AuthenticationError`, ...; the server's message, error body and response headers),
`openai.APIConnectionError` / `openai.APITimeoutError` (the HTTP library's error as the cause),
and `openai.APIResponseValidationError` for a success status whose body is not a chat
completion. One client serves concurrent trials (the HTTP client is safe to share between
threads). Tool schemas are encoded once per schema object: to change a tool, pass a new dict
rather than editing the one already sent. Proxies come from the environment (`HTTPS_PROXY`,
`NO_PROXY`) unless `trust_env=False`; a loopback server is never proxied. Anything other than
`chat` (`client.models.list()`, ...) is an `openai.OpenAI`'s (`.sdk`) on the same connections.

`AsyncHTTPChatClient` is the same client on the HTTP library's `AsyncClient`: the same request,
the same `Record` replies (`AsyncFakeClient`'s type too), the same errors; `.sdk` is an
`openai.AsyncOpenAI`. Both build the request, read the reply and map the errors with the same
code (`_ChatClientBase`); only the call itself differs.

    async with AsyncHTTPChatClient("http://localhost:8000/v1") as client:
        reply = await client.chat.completions.create(model="m", messages=[...])
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import re
import ssl
import threading
import time
from importlib.metadata import PackageNotFoundError, requires, version
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..errors import redact
from ..settings import BY_NAME
from ..usage import record_response, server_of
from .loopback import LoopbackPoster, Reply
from .replies import Record

if TYPE_CHECKING:
    import openai

__all__ = [
    "NO_KEY",
    "AsyncHTTPChatClient",
    "HTTPChatClient",
    "completion_from_response",
    "http_library",
    "status_error",
]

NO_KEY = "no-key-required"
"""The API key sent where none is given (servers that need none; the SDK requires one)."""

# The call's options, not part of the request body.
_CONTROL = {"extra_body", "extra_headers", "extra_query", "timeout"}
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}
# openai's DefaultHttpxClient: its connection limits, and it follows redirects
_MAX_CONNECTIONS = 1000
_MAX_KEEPALIVE = 100
# headers the SDK sends from the environment (declared in settings.TABLE)
_ENV_HEADERS = tuple(
    (env, header)
    for env, header in (
        (BY_NAME["openai_org_id"].env, "openai-organization"),
        (BY_NAME["openai_project_id"].env, "openai-project"),
    )
    if env is not None
)


@functools.cache
def http_library() -> Any:
    """The HTTP library the installed openai SDK is built on: `httpx2` (openai 3.x), else
    `httpx` (openai 1.x and 2.x), from the SDK's declared requirements (another package may
    bring `httpx2` beside an openai 1.x; the SDK itself is not imported). Read once: every
    client asks."""
    try:
        declared = requires("openai") or []
    except PackageNotFoundError:
        declared = []
    wanted = {
        re.split(r"[^A-Za-z0-9._-]", line.strip(), maxsplit=1)[0].lower()
        for line in declared
        if "extra ==" not in line  # the SDK's own requirements, not its extras'
    }
    return importlib.import_module("httpx2" if "httpx2" in wanted else "httpx")


class _Completions:
    def __init__(self, client: HTTPChatClient) -> None:
        self._client = client

    def create(self, **kwargs: Any) -> Record:
        return self._client._create(kwargs)


class _AsyncCompletions:
    def __init__(self, client: AsyncHTTPChatClient) -> None:
        self._client = client

    async def create(self, **kwargs: Any) -> Record:
        return await self._client._create(kwargs)


class _Chat:
    def __init__(self, completions: Any) -> None:
        self.completions = completions


class _ChatClientBase:
    """What the sync and the async client share: the connection settings, the request as sent
    (body, headers, query, timeout), the reply as read and the errors as the SDK raises them.
    A subclass names its HTTP client class and SDK class, and makes the call."""

    meters_usage = True
    """Each answered call is recorded on the trial it is made in (`usage.record_response`)."""

    _http_class = "Client"  # the HTTP library's client class
    _sdk_class = "OpenAI"  # the openai SDK's client class, for `.sdk`
    _completions_class: Any = _Completions
    _direct = False  # calls a loopback server on `loopback.LoopbackPoster` (the sync client)

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        headers: dict[str, str] | None = None,
        trust_env: bool = True,
        direct_loopback: bool = True,
    ) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL; found {base_url!r}")
        self.base_url = base_url.rstrip("/")
        self._server = server_of(self.base_url)
        self.api_key = api_key or NO_KEY
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        self._trust_env = trust_env and parts.hostname not in _LOOPBACK
        self._http_made: Any = None
        self._http_lock = threading.Lock()
        self._closed = False
        self._custom_headers = dict(headers or {})
        self._headers = _headers(self.api_key, self._custom_headers)
        self._url = f"{self.base_url}/chat/completions"
        self._loopback: LoopbackPoster | None = None
        if self._direct and direct_loopback and parts.scheme == "http":
            if parts.hostname in _LOOPBACK:
                self._loopback = LoopbackPoster(
                    http_library, self._url, timeout=timeout, connect_timeout=self.connect_timeout
                )
        self._tools_cache: dict[tuple[int, ...], tuple[tuple[Any, ...], str]] = {}
        self._sdk: Any = None
        self._sdk_lock = threading.Lock()
        self.chat = _Chat(self._completions_class(self))

    @property
    def _lib(self) -> Any:
        return http_library()

    @property
    def _http(self) -> Any:
        """The HTTP library's client, made on first use: a client that only calls a loopback
        server never imports the library nor builds its TLS context (85 ms at start-up)."""
        made = self._http_made
        if made is None:
            with self._http_lock:
                if self._http_made is None:
                    lib = self._lib
                    self._http_made = getattr(lib, self._http_class)(
                        timeout=lib.Timeout(self.timeout, connect=self.connect_timeout),
                        limits=lib.Limits(
                            max_connections=_MAX_CONNECTIONS,
                            max_keepalive_connections=_MAX_KEEPALIVE,
                        ),
                        follow_redirects=True,
                        trust_env=self._trust_env,
                    )
                    if self._closed and self._http_class == "Client":
                        self._http_made.close()  # closed before first use: stays closed
                made = self._http_made
        return made

    # --- one call: the request, the reply, the errors --------------------------------------------

    def _request(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments of the HTTP client's `post` for a `create(**kwargs)`."""
        if kwargs.get("stream"):
            raise ValueError(
                f"{type(self).__name__} does not stream; use the openai SDK for stream=True "
                "(make_client(config, purpose, sdk=True))"
            )
        body = {k: v for k, v in kwargs.items() if k not in _CONTROL and v is not None}
        body.update(kwargs.get("extra_body") or {})
        headers = self._headers
        if kwargs.get("extra_headers"):
            headers = {**headers, **kwargs["extra_headers"]}
        return {
            "url": self._url,
            "content": self._encode(body),
            "headers": headers,
            "params": kwargs.get("extra_query") or None,
            "timeout": kwargs.get("timeout"),
        }

    def _library_request(self, request: dict[str, Any]) -> dict[str, Any]:
        """`request` as the HTTP library's `post` takes it (no timeout: the client's own)."""
        if request["timeout"] is None:
            return {**request, "timeout": self._lib.USE_CLIENT_DEFAULT}
        return request

    def _transport_error(self, exc: BaseException) -> openai.APIConnectionError:
        """The SDK's exception for a request that got no response: `APITimeoutError` for a
        timeout, `APIConnectionError` for the rest (refused, reset, a protocol or a proxy's
        error, a TLS failure the HTTP library let through), as the SDK's client raises them."""
        import openai

        if isinstance(exc, self._lib.TimeoutException):
            return openai.APITimeoutError(request=exc.request)
        if isinstance(exc, self._lib.RequestError):
            return openai.APIConnectionError(request=exc.request)
        return openai.APIConnectionError(request=self._http.build_request("POST", self._url))

    def _transport_errors(self) -> tuple[type[BaseException], ...]:
        return (self._lib.RequestError, ssl.SSLError)

    def _reply(self, response: Any) -> Record:
        if response.status_code >= 400:
            raise status_error(response)
        return completion_from_response(response)

    def _encode(self, body: dict[str, Any]) -> bytes:
        """The request as JSON. The tool schemas, the same objects on every call of an agent,
        are encoded once (a tenth of a millisecond a call saved, three calls a trial)."""
        tools = body.get("tools")
        if not isinstance(tools, list) or not tools:
            return json.dumps(body, default=_default).encode()
        rest = json.dumps({k: v for k, v in body.items() if k != "tools"}, default=_default)
        text = self._tools_json(tools)
        sep = ", " if rest != "{}" else ""
        return f'{rest[:-1]}{sep}"tools": {text}}}'.encode()

    def _tools_json(self, tools: list[Any]) -> str:
        key = tuple(map(id, tools))
        hit = self._tools_cache.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], tools, strict=True)):
            return hit[1]
        text = json.dumps(tools, default=_default)
        if len(self._tools_cache) >= 64:
            self._tools_cache.clear()
        self._tools_cache[key] = (tuple(tools), text)
        return text

    # --- the rest is the SDK's -------------------------------------------------------------------

    def _make_sdk(self) -> Any:
        with self._sdk_lock:
            if self._sdk is None:
                import openai

                self._sdk = getattr(openai, self._sdk_class)(
                    api_key=self.api_key,
                    base_url=self.base_url,
                    timeout=openai.Timeout(self.timeout, connect=self.connect_timeout),
                    max_retries=0,
                    default_headers=self._custom_headers or None,
                    http_client=self._http,
                )
            return self._sdk

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # not yet set (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self._make_sdk(), name)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base_url!r})"


class HTTPChatClient(_ChatClientBase):
    """`HTTPChatClient(base_url, api_key=None, *, timeout=120.0, connect_timeout=10.0)`.

    `timeout` bounds each wait on the socket (connecting within `connect_timeout`, sending, each
    read), so a server that stalls longer fails with `openai.APITimeoutError`; a call's own
    `timeout=` overrides it. No key sends `no-key-required`, never `OPENAI_API_KEY`. Nothing is
    retried here (the endpoint's `RetryingClient` retries). `close()` closes the connections.
    """

    _completions_class = _Completions
    _direct = True

    def _create(self, kwargs: dict[str, Any]) -> Record:
        request = self._request(kwargs)
        poster = self._loopback
        timeout = kwargs.get("timeout")
        started = time.perf_counter()
        try:
            if poster is not None and not request["params"] and _seconds(timeout):
                reply = poster.post(request["content"], request["headers"], timeout)
                if reply.status_code >= 400:
                    raise status_error(reply.as_response())
                record = completion_from_response(reply)
            else:
                response = self._http.post(**self._library_request(request))
                record = self._reply(response)
        except self._transport_errors() as exc:
            raise self._transport_error(exc) from exc
        record_response(record, started, kwargs.get("model"), self._server)
        return record

    @property
    def sdk(self) -> openai.OpenAI:
        """An `openai.OpenAI` for this endpoint on the same connections (made on first use): for
        anything other than `chat.completions.create`, e.g. `client.sdk.models.list()`."""
        return self._make_sdk()

    def close(self) -> None:
        """Close the connections (the `.sdk` client's too: they are the same)."""
        self._closed = True
        if self._loopback is not None:
            self._loopback.close()
        if self._http_made is not None:
            self._http_made.close()

    def __enter__(self) -> HTTPChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncHTTPChatClient(_ChatClientBase):
    """The async twin of `HTTPChatClient`, on the HTTP library's `AsyncClient`:
    `await client.chat.completions.create(...)` returns the same `Record` and raises the same
    SDK exceptions, with the same request, headers, timeouts and proxies. Close it with
    `await client.aclose()` (or `await client.close()`, as the SDK's `AsyncOpenAI`) or
    `async with`; `.sdk` is an `openai.AsyncOpenAI` on the same connections. Use it from one
    event loop at a time."""

    _http_class = "AsyncClient"
    _sdk_class = "AsyncOpenAI"
    _completions_class = _AsyncCompletions

    async def _create(self, kwargs: dict[str, Any]) -> Record:
        request = self._request(kwargs)
        started = time.perf_counter()
        try:
            response = await self._http.post(**self._library_request(request))
        except self._transport_errors() as exc:
            raise self._transport_error(exc) from exc
        record = self._reply(response)
        record_response(record, started, kwargs.get("model"), self._server)
        return record

    @property
    def sdk(self) -> openai.AsyncOpenAI:
        """An `openai.AsyncOpenAI` for this endpoint on the same connections (made on first
        use), e.g. `await client.sdk.models.list()`."""
        return self._make_sdk()

    async def aclose(self) -> None:
        """Close the connections (the `.sdk` client's too: they are the same)."""
        self._closed = True
        await self._http.aclose()

    close = aclose

    async def __aenter__(self) -> AsyncHTTPChatClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _headers(api_key: str, custom: dict[str, str]) -> dict[str, str]:
    """What the SDK sends with each request, less its telemetry: the key, JSON, a user agent,
    the organization and project from the environment, then the caller's own headers."""
    try:
        ours = version("pytest-commerce-evals")
    except PackageNotFoundError:  # pragma: no cover - a source checkout not installed
        ours = "dev"
    headers = {
        "authorization": f"Bearer {api_key}",
        "content-type": "application/json",
        "accept": "application/json",
        "user-agent": f"pytest-commerce-evals/{ours}",
    }
    for env, name in _ENV_HEADERS:
        if os.environ.get(env):
            headers[name] = os.environ[env]
    headers.update(custom)
    return headers


def completion_from_response(response: Any) -> Record:
    """The chat completion in a success response of the HTTP library, as a `Record`; a body that
    is not one (not JSON, not an object, no choices, a choice without a message) raises
    `openai.APIResponseValidationError` saying what was found."""
    raw = response.content
    status = response.status_code
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        message = f"HTTP {status} body is not JSON ({exc}): {raw[:200]!r}"
        raise _malformed(response, raw, message) from exc
    if not isinstance(data, dict):
        raise _malformed(response, data, f"HTTP {status} body is not a JSON object: {raw[:200]!r}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _malformed(response, data, f"the reply has no choices: {json.dumps(data)[:300]}")
    if not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices):
        raise _malformed(response, data, f"a choice has no message: {json.dumps(choices)[:300]}")
    return Record(data)


def status_error(response: Any) -> openai.APIStatusError:
    """The SDK's exception for an error status, as its own client builds it: the class by status
    (`RateLimitError` for 429, `InternalServerError` for 5xx, ...), the message
    `Error code: <status> - <the server's message>`, `body` the server's error object."""
    import openai

    status = response.status_code
    text = response.text.strip()
    message = f"Error code: {status}"
    try:
        body: Any = json.loads(text)
    except ValueError:
        body = text
    error = body.get("error", body) if isinstance(body, dict) else body
    detail = error.get("message") if isinstance(error, dict) else None
    if isinstance(detail, str) and detail:
        message += f" - {redact(detail)}"
    cls = _STATUS_ERRORS.get(status)
    if cls is None:
        cls = "InternalServerError" if status >= 500 else "APIStatusError"
    return getattr(openai, cls)(message, response=response, body=error)


_STATUS_ERRORS = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    409: "ConflictError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
}


def _malformed(response: Any, body: object, message: str) -> openai.APIResponseValidationError:
    import openai

    if isinstance(response, Reply):  # a loopback reply: the error carries the library's Response
        response = response.as_response()
    return openai.APIResponseValidationError(response, body, message=message)


def _seconds(timeout: Any) -> bool:
    """A call's own timeout the loopback path takes: none, or a number of seconds (a timeout
    object of the HTTP library goes to the library)."""
    return timeout is None or (isinstance(timeout, int | float) and not isinstance(timeout, bool))


def _default(value: Any) -> Any:
    if isinstance(value, Record):  # a reply's message passed back into the history
        return value.model_dump()
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # an SDK message: the fields the server sent, as the SDK encodes one
        try:
            return dump(exclude_unset=True, mode="json", by_alias=True)
        except TypeError:
            return dump()
    return str(value)  # Decimal, dates
