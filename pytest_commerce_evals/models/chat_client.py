"""A lean client for OpenAI-compatible chat completions, on the standard library.

The plugin's own model calls (the reference agent, the judge) go through it by default. Against
a loopback mock, the openai SDK spends about 5 ms of CPU per call (transforming every request's
tool schemas and parsing the reply into pydantic models) and 1.3 s importing itself; this client
spends about 0.5 ms and imports nothing heavy. On two cores that CPU is what caps how many
trials can be in flight. It keeps the SDK's surface an agent uses:

    client = ChatClient("http://localhost:8000/v1", api_key="...", timeout=120)
    reply = client.chat.completions.create(model="m", messages=[...], tools=[...])
    reply.choices[0].message.tool_calls[0].function.arguments

Replies are `Record`s: attribute access over the JSON (a missing field reads as None),
`model_dump()` for the dict. Failures are `ChatStatusError` (HTTP status, message, headers),
`ChatConnectionError` / `ChatTimeoutError`, or `MalformedResponse` (a body that is not a chat
completion). Each thread keeps its own keep-alive connection, so one client serves concurrent
trials. Tool schemas are encoded once per schema object: to change a tool, pass a new dict rather
than editing the one already sent. Proxies come from the environment (`HTTPS_PROXY`,
`NO_PROXY`) unless `trust_env=False`.
"""

from __future__ import annotations

import http.client
import json
import ssl
import threading
import urllib.request
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "ChatAPIError",
    "ChatClient",
    "ChatConnectionError",
    "ChatStatusError",
    "ChatTimeoutError",
    "MalformedResponse",
    "Record",
]


class ChatAPIError(Exception):
    """Any failure of a chat-completions call."""


class ChatStatusError(ChatAPIError):
    """The server answered with an HTTP error status."""

    def __init__(self, status_code: int, message: str, headers: dict[str, str]) -> None:
        super().__init__(f"HTTP {status_code}: {message}")
        self.status_code = status_code
        self.message = message
        self.headers = headers


class ChatConnectionError(ChatAPIError):
    """The server could not be reached, or the connection broke."""


class ChatTimeoutError(ChatConnectionError):
    """No answer within the timeout."""


class MalformedResponse(ChatAPIError):
    """A success status whose body is not a chat completion (not JSON, or no choices)."""


class Record:
    """Attribute access over decoded JSON: `r.choices[0].message.content`. A field the server
    left out reads as None, as the SDK's optional fields do."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _wrap(self._data.get(name))

    def __getitem__(self, key: str) -> Any:
        return _wrap(self._data[key])

    def get(self, key: str, default: Any = None) -> Any:
        return _wrap(self._data.get(key, default))

    def model_dump(self, **_: Any) -> dict[str, Any]:
        return json.loads(json.dumps(self._data))

    to_dict = model_dump

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and other._data == self._data

    def __repr__(self) -> str:
        return f"Record({self._data!r:.200})"


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class _Completions:
    def __init__(self, client: ChatClient) -> None:
        self._client = client

    def create(self, **kwargs: Any) -> Record:
        return self._client._create(kwargs)


class _Chat:
    def __init__(self, client: ChatClient) -> None:
        self.completions = _Completions(client)


class _Models:
    def __init__(self, client: ChatClient) -> None:
        self._client = client

    def list(self) -> list[Record]:
        data = self._client._call("GET", "/models", None)
        return _wrap(data.get("data") or [])


_CONTROL = {"extra_body", "extra_headers", "extra_query", "timeout"}


class ChatClient:
    """`ChatClient(base_url, api_key=None, *, timeout=120.0, connect_timeout=10.0)`.

    `timeout` bounds each wait on the socket (connecting, sending, each read), so a server that
    stalls longer fails with `ChatTimeoutError`. `close()` closes every thread's connection.
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
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.connect_timeout = min(connect_timeout, timeout)
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._path = parts.path
        self._headers = {"content-type": "application/json", "accept": "application/json"}
        if api_key:
            self._headers["authorization"] = f"Bearer {api_key}"
        self._headers.update(headers or {})
        self._proxy = _proxy_for(parts.scheme, parts.hostname) if trust_env else None
        self._local = threading.local()
        self._all: set[http.client.HTTPConnection] = set()
        self._tools_cache: dict[tuple[int, ...], tuple[tuple[Any, ...], str]] = {}
        self._all_lock = threading.Lock()
        self.chat = _Chat(self)
        self.models = _Models(self)

    # --- one call --------------------------------------------------------------------------------

    def _create(self, kwargs: dict[str, Any]) -> Record:
        if kwargs.get("stream"):
            raise ValueError("ChatClient does not stream; use the openai SDK for stream=True")
        body = {k: v for k, v in kwargs.items() if k not in _CONTROL and v is not None}
        body.update(kwargs.get("extra_body") or {})
        data = self._call("POST", "/chat/completions", body, kwargs.get("extra_headers"))
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices:
            raise MalformedResponse(f"the reply has no choices: {json.dumps(data)[:300]}")
        if not all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices):
            raise MalformedResponse(f"a choice has no message: {json.dumps(choices)[:300]}")
        return Record(data)

    def _call(
        self, method: str, path: str, body: Any, extra_headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        payload = None if body is None else self._encode(body)
        headers = self._headers if not extra_headers else {**self._headers, **extra_headers}
        url = self._path + path
        if self._proxy is not None and self._scheme == "http":
            url = f"http://{self._host}:{self._port}{url}"
        for attempt in (1, 2):
            conn, reused = self._connection()
            try:
                if conn.sock is None:
                    conn.connect()  # within connect_timeout; then each wait within timeout
                    conn.sock.settimeout(self.timeout)
                conn.request(method, url, payload, headers)
                response = conn.getresponse()
                raw = response.read()
                break
            except TimeoutError as exc:
                self._drop()
                raise ChatTimeoutError(
                    f"no answer from {self.base_url} within {self.timeout:g} s"
                ) from exc
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                self._drop()
                if reused and attempt == 1:
                    continue  # a keep-alive connection the server had closed: once more, fresh
                raise ChatConnectionError(f"connection to {self.base_url} broke: {exc}") from exc
            except (OSError, http.client.HTTPException) as exc:
                self._drop()
                raise ChatConnectionError(f"cannot reach {self.base_url}: {exc}") from exc
        if response.getheader("connection", "").lower() == "close":
            self._drop()
        status = response.status
        try:
            data = json.loads(raw) if raw else {}
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            if status >= 400:
                data = {"error": {"message": raw[:300].decode("utf-8", "replace")}}
            else:
                raise MalformedResponse(
                    f"HTTP {status} body is not JSON ({exc}): {raw[:200]!r}"
                ) from exc
        if status >= 400:
            error = data.get("error") if isinstance(data, dict) else None
            message = (
                error.get("message") if isinstance(error, dict) else error
            ) or response.reason
            raise ChatStatusError(
                status, str(message), {k.lower(): v for k, v in response.getheaders()}
            )
        if not isinstance(data, dict):
            raise MalformedResponse(f"HTTP {status} body is not a JSON object: {raw[:200]!r}")
        return data

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

    # --- connections -----------------------------------------------------------------------------

    def _connection(self) -> tuple[http.client.HTTPConnection, bool]:
        """This thread's connection (not yet connected if new) and whether it was used before."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            return conn, True
        host, port, scheme = self._proxy or (self._host, self._port, self._scheme)
        if self._scheme == "https":
            conn = http.client.HTTPSConnection(
                host, port, timeout=self.connect_timeout, context=_tls()
            )
            if self._proxy is not None:  # CONNECT through the proxy, then TLS to the server
                conn.set_tunnel(self._host, self._port)
        else:
            conn = _connect_cls(scheme)(host, port, timeout=self.connect_timeout)
        self._local.conn = conn
        with self._all_lock:
            self._all.add(conn)
        return conn, False

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            with self._all_lock:
                self._all.discard(conn)
            conn.close()

    def close(self) -> None:
        """Close every thread's connection (a thread that calls again opens a new one)."""
        with self._all_lock:
            conns, self._all = list(self._all), set()
        self._local = threading.local()
        for conn in conns:
            conn.close()

    def __enter__(self) -> ChatClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChatClient({self.base_url!r})"


def _connect_cls(scheme: str) -> type[http.client.HTTPConnection]:
    return http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection


def _default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):  # an SDK or Record message passed back into the history
        return dump()
    return str(value)  # Decimal, dates


_tls_context: ssl.SSLContext | None = None


def _tls() -> ssl.SSLContext:
    global _tls_context
    if _tls_context is None:
        try:
            import certifi

            _tls_context = ssl.create_default_context(cafile=certifi.where())
        except ImportError:
            _tls_context = ssl.create_default_context()
    return _tls_context


def _proxy_for(scheme: str, host: str) -> tuple[str, int, str] | None:
    """The proxy the environment sets for `scheme://host`, as (host, port, scheme)."""
    if urllib.request.proxy_bypass(host) or host in ("127.0.0.1", "localhost", "::1"):
        return None
    proxy = urllib.request.getproxies().get(scheme)
    if not proxy:
        return None
    parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    if not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80), parts.scheme
