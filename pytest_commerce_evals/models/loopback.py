"""Chat calls to a server on this machine (the embedded model, a local vLLM, llama.cpp or Ollama,
a test's mock) on plain keep-alive `http.client` connections, one per thread.

A loopback server is never proxied, speaks plain HTTP and answers in microseconds, so what a call
costs is the client's own CPU: the HTTP library's client, pool and protocol layers take about
0.4 ms of it a call (0.58 ms against 0.21 ms on this path, measured on the mock server), three
calls a trial, and on two cores that CPU is what caps the trials in flight. Everything a caller
sees stays the HTTP library's: a failure is raised as its exception (`ConnectError`,
`ConnectTimeout`, `ReadTimeout`, `RemoteProtocolError`, with the socket's error as the cause),
which `http_client` turns into the SDK's, and an error status becomes the library's `Response`
before the SDK's exception is built from it.

A kept-alive connection that fails before a reply (the server closed it while it sat idle: a
keep-alive timeout, a restart) is replaced and the call sent once more, as browsers and urllib3
do; a chat completion changes nothing a second send could repeat. A new connection that fails is
the library's error at once.
"""

from __future__ import annotations

import http.client
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LoopbackPoster", "Reply"]

_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


class Reply:
    """A success reply as the chat client reads it: its status and body. `as_response()` is the
    HTTP library's `Response` for it, made only when an error must carry one."""

    __slots__ = ("_poster", "content", "headers", "status_code")

    def __init__(self, poster: LoopbackPoster, status: int, headers: Any, content: bytes) -> None:
        self._poster = poster
        self.status_code = status
        self.headers = headers
        self.content = content

    def as_response(self) -> Any:
        lib = self._poster.lib
        return lib.Response(
            self.status_code,
            headers=self.headers,
            content=self.content,
            request=self._poster.request(),
        )


class LoopbackPoster:
    """POSTs to one URL on a loopback server. `timeout` bounds each wait on the socket once
    connected (a call's own `timeout` overrides it), `connect_timeout` the connecting."""

    def __init__(self, library: Any, url: str, *, timeout: float, connect_timeout: float) -> None:
        """`library()`: the HTTP library whose errors and `Response` this speaks (asked only
        when one is needed: a call that succeeds never imports it)."""
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"a loopback URL is plain http://host[:port]/path; found {url!r}")
        self._library = library
        self.url = url
        self.host = parts.hostname
        self.port = parts.port or 80
        self.target = parts.path + (f"?{parts.query}" if parts.query else "")
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._local = threading.local()
        self._open: set[http.client.HTTPConnection] = set()
        self._lock = threading.Lock()
        self._closed = False

    @property
    def lib(self) -> Any:
        return self._library()

    def request(self, headers: dict[str, str] | None = None) -> Any:
        """The HTTP library's `Request` for this URL, as an error names it."""
        return self.lib.Request("POST", self.url, headers=headers)

    def post(self, content: bytes, headers: dict[str, str], timeout: float | None) -> Reply:
        """One POST; the reply, whatever its status. Raises the HTTP library's errors, and
        `RuntimeError` once closed, as the library's client does."""
        if self._closed:
            raise RuntimeError("Cannot send a request, as the client has been closed.")
        wait = self.timeout if timeout is None else float(timeout)
        conn, reused = self._connection(wait, headers)
        try:
            return self._exchange(conn, content, headers, wait)
        except _STALE as exc:
            self._drop(conn)
            if not reused:
                raise self.lib.RemoteProtocolError(str(exc), request=self.request(headers)) from exc
        except BaseException:
            self._drop(conn)
            raise
        conn, _ = self._connection(wait, headers)  # the server closed an idle connection
        try:
            return self._exchange(conn, content, headers, wait)
        except BaseException:
            self._drop(conn)
            raise

    def _exchange(
        self, conn: http.client.HTTPConnection, content: bytes, headers: dict[str, str], wait: float
    ) -> Reply:
        try:
            if conn.sock is not None:
                conn.sock.settimeout(wait)
            conn.request("POST", self.target, body=content, headers=headers)
            response = conn.getresponse()
            body = response.read()
        except _STALE:
            raise
        except TimeoutError as exc:  # socket.timeout
            raise self.lib.ReadTimeout(str(exc) or "timed out", request=self.request()) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise self.lib.RemoteProtocolError(str(exc), request=self.request()) from exc
        if response.will_close:
            self._drop(conn)
        return Reply(self, response.status, response.getheaders(), body)

    def _connection(
        self, wait: float, headers: dict[str, str]
    ) -> tuple[http.client.HTTPConnection, bool]:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None:
            return conn, True
        conn = http.client.HTTPConnection(self.host, self.port, timeout=self.connect_timeout)
        try:
            conn.connect()
        except TimeoutError as exc:
            raise self.lib.ConnectTimeout(str(exc), request=self.request(headers)) from exc
        except OSError as exc:
            raise self.lib.ConnectError(str(exc), request=self.request(headers)) from exc
        assert conn.sock is not None
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn.sock.settimeout(wait)
        self._local.conn = conn
        with self._lock:
            self._open.add(conn)
        return conn, False

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None
        with self._lock:
            self._open.discard(conn)

    def close(self) -> None:
        """Close every thread's connection; a later call is refused."""
        with self._lock:
            self._closed = True
            found, self._open = self._open, set()
        for conn in found:
            conn.close()
