"""The plugin's chat client: the openai SDK's client and HTTP stack, minus its per-call work.

The plugin's own model calls (the reference agent, the judge) go through it by default. It is an
`openai.OpenAI` (`.sdk`) and the HTTP client the SDK is built on (`openai.DefaultHttpxClient`: an
`httpx2.Client` with openai 3.x, `httpx` before), shared between them: one connection pool, TLS,
proxies from the environment, timeouts, the SDK's headers (computed once) and the SDK's errors.
Only `chat.completions.create` skips the SDK's request layer and posts to the HTTP client
directly: the body goes out as given, not transformed against the SDK's parameter types, and no
per-call request options are copied and merged (together 1.2 ms of CPU a call with the reference
agent's tool schemas, 0.5 ms even on its low-level `post`). The reply is the SDK's
`ChatCompletion`, validated with pydantic, or where the server left out a field the type
requires, built with `ChatCompletion.construct` as the SDK itself builds replies. On two cores
that CPU is what caps how many trials can be in flight.

    client = SDKChatClient("http://localhost:8000/v1", api_key="...", timeout=120)
    reply = client.chat.completions.create(model="m", messages=[...], tools=[...])
    reply.choices[0].message.tool_calls[0].function.arguments   # an openai ChatCompletion

Failures are the SDK's own exceptions, as its `create` raises them: `openai.APIStatusError` and
its subclasses by status (`RateLimitError`, `InternalServerError`, `AuthenticationError`, ...;
the server's message, error body and response headers), `openai.APIConnectionError` /
`openai.APITimeoutError` (the HTTP library's error as the cause), and
`openai.APIResponseValidationError` for a success status whose body is not a chat completion.
One client serves concurrent trials (the HTTP client is safe to share between threads). Tool
schemas are encoded once per schema object: to change a tool, pass a new dict rather than editing
the one already sent. Proxies come from the environment (`HTTPS_PROXY`, `NO_PROXY`) unless
`trust_env=False`; a loopback server is never proxied. Anything other than `chat`
(`client.models.list()`, ...) is the SDK client's.
"""

from __future__ import annotations

import json
import ssl
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import openai
    from openai.types.chat import ChatCompletion

__all__ = ["NO_KEY", "SDKChatClient", "completion_from_response", "http_library", "status_error"]

NO_KEY = "no-key-required"
"""The API key sent where none is given: the SDK refuses to build a client without one."""

# The call's options, not part of the request body.
_CONTROL = {"extra_body", "extra_headers", "extra_query", "timeout"}
_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def http_library() -> Any:
    """The HTTP library the installed openai SDK is built on: `httpx2` (openai 3.x), else
    `httpx`."""
    try:
        import httpx2 as http
    except ImportError:  # pragma: no cover - openai 1.x/2.x
        import httpx as http
    return http


class _Completions:
    def __init__(self, client: SDKChatClient) -> None:
        self._client = client

    def create(self, **kwargs: Any) -> ChatCompletion:
        return self._client._create(kwargs)


class _Chat:
    def __init__(self, client: SDKChatClient) -> None:
        self.completions = _Completions(client)


class SDKChatClient:
    """`SDKChatClient(base_url, api_key=None, *, timeout=120.0, connect_timeout=10.0)`.

    `timeout` bounds each wait on the socket (connecting within `connect_timeout`, sending, each
    read), so a server that stalls longer fails with `openai.APITimeoutError`; a call's own
    `timeout=` overrides it. The SDK's own retries are off (the endpoint's `RetryingClient`
    retries). `close()` closes the connection pool.
    """

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        *,
        timeout: float = 120.0,
        connect_timeout: float = 10.0,
        headers: dict[str, str] | None = None,
        trust_env: bool = True,
    ) -> None:
        parts = urlsplit(base_url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL; found {base_url!r}")
        import openai

        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        bounds = openai.Timeout(timeout, connect=self.connect_timeout)
        self._http = openai.DefaultHttpxClient(
            trust_env=trust_env and parts.hostname not in _LOOPBACK, timeout=bounds
        )
        # a placeholder rather than None: the SDK would read OPENAI_API_KEY, and a server given
        # no key (the embedded model, most vLLM/Ollama/llama.cpp set-ups) must not get the user's
        self.sdk: openai.OpenAI = openai.OpenAI(
            api_key=api_key or NO_KEY,
            base_url=self.base_url,
            timeout=bounds,
            max_retries=0,
            default_headers=headers,
            http_client=self._http,
        )
        # what the SDK sends with every request (identity, organization, key, `headers`)
        sent = {**self.sdk.default_headers, **self.sdk.auth_headers}
        self._headers = {k: v for k, v in sent.items() if isinstance(v, str)}
        self._url = f"{self.base_url}/chat/completions"
        self._openai = openai
        self._lib = http_library()
        self._tools_cache: dict[tuple[int, ...], tuple[tuple[Any, ...], str]] = {}
        self.chat = _Chat(self)

    # --- one call --------------------------------------------------------------------------------

    def _create(self, kwargs: dict[str, Any]) -> ChatCompletion:
        if kwargs.get("stream"):
            raise ValueError(
                "SDKChatClient does not stream; use the openai SDK for stream=True "
                "(make_client(config, purpose, sdk=True))"
            )
        body = {k: v for k, v in kwargs.items() if k not in _CONTROL and v is not None}
        body.update(kwargs.get("extra_body") or {})
        headers = self._headers
        if kwargs.get("extra_headers"):
            headers = {**headers, **kwargs["extra_headers"]}
        timeout = kwargs.get("timeout")
        lib = self._lib
        try:
            response = self._http.post(
                self._url,
                content=self._encode(body),
                headers=headers,
                params=kwargs.get("extra_query") or None,
                timeout=lib.USE_CLIENT_DEFAULT if timeout is None else timeout,
            )
        except lib.TimeoutException as exc:
            raise self._openai.APITimeoutError(request=exc.request) from exc
        except lib.RequestError as exc:  # refused, reset, a protocol or a proxy's error, ...
            raise self._openai.APIConnectionError(request=exc.request) from exc
        except ssl.SSLError as exc:  # a TLS failure the HTTP library let through, as the SDK
            request = self._http.build_request("POST", self._url)
            raise self._openai.APIConnectionError(request=request) from exc
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

    # --- the rest is the SDK client's ------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        if name == "sdk":  # not yet set (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self.sdk, name)

    def close(self) -> None:
        """Close the connection pool, the SDK client's too (they are one)."""
        self.sdk.close()

    def __enter__(self) -> SDKChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SDKChatClient({self.base_url!r})"


def completion_from_response(response: Any) -> ChatCompletion:
    """The `ChatCompletion` in a success response of the SDK's HTTP library; a body that is not
    one (not JSON, not an object, no choices, a choice without a message) raises
    `openai.APIResponseValidationError` saying what was found."""
    import pydantic
    from openai.types.chat import ChatCompletion

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
    try:  # a complete reply: pydantic's validation is the fast path (a tenth of `construct`'s)
        return ChatCompletion.model_validate(data)
    except pydantic.ValidationError:
        # what the SDK does with any reply (its strict validation is off by default): nested
        # models built as they come, so a field the server left out reads as None
        return ChatCompletion.construct(**data)


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
        message += f" - {detail}"
    cls = _STATUS_ERRORS.get(status) or (
        "InternalServerError" if status >= 500 else "APIStatusError"
    )
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

    return openai.APIResponseValidationError(response, body, message=message)


def _default(value: Any) -> Any:
    import pydantic

    if isinstance(value, pydantic.BaseModel):  # an SDK message passed back into the history
        # as the SDK encodes one: the fields the server sent, not every optional one as null
        return value.model_dump(exclude_unset=True, mode="json", by_alias=True)
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump()
    return str(value)  # Decimal, dates
