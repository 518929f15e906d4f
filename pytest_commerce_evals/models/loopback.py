"""Chat calls to a server on this machine (the embedded model, a local vLLM, llama.cpp or Ollama,
a test's mock) on plain keep-alive HTTP/1.1 connections, one per thread.

A loopback server is never proxied, speaks plain HTTP and answers in microseconds, so what a call
costs is the client's own CPU: the HTTP library's client, pool and protocol layers take about
0.4 ms of it a call (0.58 ms against 0.21 ms on this path, measured on the mock server), three
calls a trial, and on two cores that CPU is what caps the trials in flight. Everything a caller
sees stays the HTTP library's: a failure is raised as its exception (`ConnectError`,
`ConnectTimeout`, `ReadTimeout`, `RemoteProtocolError`, with the socket's error as the cause),
which `http_client` turns into the SDK's, and an error status becomes the library's `Response`
before the SDK's exception is built from it.

A connection is a socket this module speaks HTTP/1.1 on itself: the request written in one
send (`Host`, `Accept-Encoding: identity` and `Content-Length` added as `http.client` adds them),
the reply's status line and headers split by hand rather than through the e-mail parser
`http.client` uses, its body read by `Content-Length`, chunked, or to the close; on the mock
server that halves the client's CPU a call. A reply it cannot read is a protocol error.

A kept-alive connection that fails before a reply (the server closed it while it sat idle: a
keep-alive timeout, a restart) is replaced and the call sent once more, as browsers and urllib3
do; a chat completion changes nothing a second send could repeat. A new connection that fails is
the library's error at once.
"""

from __future__ import annotations

import http.client
import re
import socket
import struct
import sys
import threading
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LoopbackPoster", "Reply"]

_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)


_NO_BODY = {204, 304}
_ILLEGAL = re.compile(r"[\r\n\0]")
_MAX_HEAD = 65536  # a status line and headers past this are not a reply this reads
_KERNEL_WAITS = sys.platform.startswith("linux")
"""Where the socket's waits are bounded by the kernel (`SO_RCVTIMEO`, `SO_SNDTIMEO` on a
blocking socket): each send and receive is then one system call, where a socket with a Python
timeout polls before every one (two calls, each releasing and taking back the interpreter's lock,
which at hundreds of trials in flight is most of what a model call costs the process)."""


def _kernel_wait(sock: socket.socket, seconds: float) -> bool:
    """Bound each send and receive on `sock` by `seconds` in the kernel, the socket blocking;
    False where this cannot be done (another platform, a bound that is not a positive number of
    seconds), the socket left as it was."""
    if not _KERNEL_WAITS or not 0 < seconds < 2**31:
        return False
    micros = max(1, round(seconds * 1_000_000))  # a zero would mean no bound at all
    value = struct.pack("ll", micros // 1_000_000, micros % 1_000_000)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, value)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, value)
    except OSError:
        return False
    sock.settimeout(None)
    return True


class _Connection:
    """One keep-alive HTTP/1.1 connection: `request` writes a POST, `response` reads the reply
    (status, headers, body, whether the server will close). Raises `http.client`'s errors for
    a server that closed the connection (`RemoteDisconnected`) or sent what is not HTTP
    (`BadStatusLine`, `IncompleteRead`, `HTTPException`), and the socket's own."""

    __slots__ = ("_buf", "sock", "wait")

    def __init__(self, sock: socket.socket) -> None:
        self.sock: socket.socket | None = sock
        self._buf = bytearray()
        self.wait: float | None = None
        """The bound on each send and receive the socket has now."""

    def bound(self, wait: float) -> None:
        """Bound each send and receive by `wait` seconds: in the kernel where it can be
        (`_kernel_wait`), else as the socket's timeout. Nothing is done when it is already so."""
        if self.sock is None or wait == self.wait:
            return
        if not _kernel_wait(self.sock, wait):
            self.sock.settimeout(wait)
        self.wait = wait

    def close(self) -> None:
        sock, self.sock = self.sock, None
        if sock is not None:
            sock.close()

    def request(self, head: bytes, content: bytes) -> None:
        assert self.sock is not None
        self.sock.sendall(head + content if len(content) < 65536 else head)
        if len(content) >= 65536:
            self.sock.sendall(content)

    def _more(self) -> bool:
        assert self.sock is not None
        data = self.sock.recv(262144)
        if not data:
            return False
        self._buf += data
        return True

    def response(self) -> tuple[int, list[tuple[str, str]], bytes, bool]:
        while True:
            status, version, headers = self._head()
            if not 100 <= status < 200:
                break  # an interim reply (100 Continue) is skipped
        fields = {name.lower(): value for name, value in headers}
        connection = fields.get("connection", "").lower()
        will_close = "close" in connection or (
            version == "HTTP/1.0" and "keep-alive" not in connection
        )
        if status in _NO_BODY:
            return status, headers, b"", will_close
        if "chunked" in fields.get("transfer-encoding", "").lower():
            return status, headers, self._chunked(), will_close
        length = fields.get("content-length")
        if length is not None:
            try:
                size = int(length)
            except ValueError:
                raise http.client.HTTPException(f"bad Content-Length {length!r}") from None
            if size < 0:
                raise http.client.HTTPException(f"bad Content-Length {length!r}")
            return status, headers, self._exactly(size), will_close
        while self._more():  # no length: the body runs to the close
            pass
        body = bytes(self._buf)
        self._buf.clear()
        return status, headers, body, True

    def _head(self) -> tuple[int, str, list[tuple[str, str]]]:
        end = self._buf.find(b"\r\n\r\n")
        while end < 0:
            if len(self._buf) > _MAX_HEAD:
                raise http.client.HTTPException("the reply's headers are too long")
            if not self._more():
                if self._buf:
                    raise http.client.IncompleteRead(bytes(self._buf))
                raise http.client.RemoteDisconnected(
                    "Remote end closed connection without response"
                )
            end = self._buf.find(b"\r\n\r\n")
        lines = bytes(self._buf[:end]).decode("iso-8859-1").split("\r\n")
        del self._buf[: end + 4]
        parts = lines[0].split(None, 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise http.client.BadStatusLine(lines[0])
        headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise http.client.HTTPException(f"a header line without a colon: {line!r}")
            headers.append((name.strip(), value.strip()))
        return int(parts[1]), parts[0], headers

    def _exactly(self, size: int) -> bytes:
        while len(self._buf) < size:
            if not self._more():
                raise http.client.IncompleteRead(bytes(self._buf), size - len(self._buf))
        body = bytes(self._buf[:size])
        del self._buf[:size]
        return body

    def _line(self) -> bytes:
        end = self._buf.find(b"\r\n")
        while end < 0:
            if len(self._buf) > _MAX_HEAD or not self._more():
                raise http.client.IncompleteRead(bytes(self._buf))
            end = self._buf.find(b"\r\n")
        line = bytes(self._buf[:end])
        del self._buf[: end + 2]
        return line

    def _chunked(self) -> bytes:
        body = bytearray()
        while True:
            size_text = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise http.client.HTTPException(f"bad chunk size {size_text!r}") from None
            if size == 0:
                while self._line():  # the trailer, up to its empty line
                    pass
                return bytes(body)
            body += self._exactly(size)
            if self._line():
                raise http.client.HTTPException("a chunk not followed by CRLF")


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
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.host_header = host if self.port == 80 else f"{host}:{self.port}"
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self._local = threading.local()
        self._open: set[_Connection] = set()
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

    def _head(self, content: bytes, headers: dict[str, str]) -> bytes:
        """The request line and headers, as `http.client` writes them: `Host` and
        `Accept-Encoding: identity` unless given, then `Content-Length`, then the headers."""
        given = {name.lower() for name in headers}
        lines = [f"POST {self.target} HTTP/1.1"]
        if "host" not in given:
            lines.append(f"Host: {self.host_header}")
        if "accept-encoding" not in given:
            lines.append("Accept-Encoding: identity")
        if "content-length" not in given:
            lines.append(f"Content-Length: {len(content)}")
        for name, raw in headers.items():
            # as http.client takes them: text, bytes (Latin-1) or a number
            value = raw.decode("iso-8859-1") if isinstance(raw, bytes) else str(raw)
            if _ILLEGAL.search(name) or _ILLEGAL.search(value):
                raise ValueError(f"Invalid header {name!r}: {value!r}")
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("iso-8859-1")

    def _exchange(
        self, conn: _Connection, content: bytes, headers: dict[str, str], wait: float
    ) -> Reply:
        head = self._head(content, headers)
        try:
            conn.bound(wait)
            conn.request(head, content)
            status, reply_headers, body, will_close = conn.response()
        except _STALE:
            raise
        except (TimeoutError, BlockingIOError) as exc:  # the socket's timeout, or the kernel's
            text = "timed out" if isinstance(exc, BlockingIOError) else str(exc) or "timed out"
            raise self.lib.ReadTimeout(text, request=self.request()) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise self.lib.RemoteProtocolError(str(exc), request=self.request()) from exc
        if will_close:
            self._drop(conn)
        return Reply(self, status, reply_headers, body)

    def _connection(self, wait: float, headers: dict[str, str]) -> tuple[_Connection, bool]:
        conn = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None:
            return conn, True
        try:
            sock = socket.create_connection((self.host, self.port), timeout=self.connect_timeout)
        except TimeoutError as exc:
            raise self.lib.ConnectTimeout(str(exc), request=self.request(headers)) from exc
        except OSError as exc:
            raise self.lib.ConnectError(str(exc), request=self.request(headers)) from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Connection(sock)
        conn.bound(wait)
        self._local.conn = conn
        with self._lock:
            self._open.add(conn)
        return conn, False

    def _drop(self, conn: _Connection) -> None:
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
