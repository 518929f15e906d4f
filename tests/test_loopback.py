"""The loopback connection's HTTP/1.1, byte by byte: what it writes, and every way a reply may
frame its body (length, chunks, to the close), interim replies, and replies it cannot read."""

from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import closing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_commerce_evals.models import loopback
from pytest_commerce_evals.models.http_client import http_library
from pytest_commerce_evals.models.loopback import LoopbackPoster


class RawServer:
    """Answers each request on a connection with the next scripted raw bytes (`None`: close the
    connection without answering); records what each request was, as bytes."""

    def __init__(self, replies: list[bytes | None]) -> None:
        self.replies = list(replies)
        self.requests: list[bytes] = []
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/chat/completions"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while self.replies:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                while self.replies:
                    request = self._read_request(conn)
                    if request is None:
                        break
                    self.requests.append(request)
                    reply = self.replies.pop(0)
                    if reply is None:
                        break
                    conn.sendall(reply)
                    if self._closes(reply):
                        break

    @staticmethod
    def _closes(reply: bytes) -> bool:
        """Whether the connection ends after `reply`: it says so, is HTTP/1.0, or has a body
        framed by neither a length nor chunks."""
        head = reply.split(b"\r\n\r\n", 1)[0].lower()
        framed = b"content-length" in head or b"chunked" in head or b" 204 " in head
        return b"connection: close" in head or head.startswith(b"http/1.0") or not framed

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            more = conn.recv(65536)
            if not more:
                return None
            data += more
        head, _, body = data.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(body) < length:
            body += conn.recv(65536)
        return head + b"\r\n\r\n" + body

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw() -> Iterator[type[RawServer]]:
    made: list[RawServer] = []

    def make(replies: list[bytes | None]) -> RawServer:
        made.append(RawServer(replies))
        return made[-1]

    yield make  # type: ignore[misc]
    for server in made:
        server.close()


def poster(url: str) -> LoopbackPoster:
    return LoopbackPoster(http_library, url, timeout=2.0, connect_timeout=2.0)


OK = b'{"ok": 1}'


def test_the_request_is_written_as_http_client_writes_it(raw):
    server = raw([b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK])
    with closing(poster(server.url)) as p:
        reply = p.post(b'{"a": 1}', {"Content-Type": "application/json"}, None)
    assert (reply.status_code, reply.content) == (200, OK)
    assert reply.headers == [("Content-Length", "9")]
    port = server.url.split(":")[2].split("/")[0]
    assert server.requests == [
        b"POST /v1/chat/completions HTTP/1.1\r\n"
        + f"Host: 127.0.0.1:{port}\r\n".encode()
        + b"Accept-Encoding: identity\r\nContent-Length: 8\r\n"
        b"Content-Type: application/json\r\n\r\n"
        b'{"a": 1}'
    ]


def test_a_header_value_may_be_bytes_or_a_number_as_http_client_takes_it(raw):
    server = raw([b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK])
    with closing(poster(server.url)) as p:
        p.post(b"{}", {"X-Seed": 7, "X-Raw": b"caf\xe9"}, None)
    assert b"\r\nX-Seed: 7\r\nX-Raw: caf\xe9\r\n\r\n" in server.requests[0]


def test_a_header_that_would_split_the_request_is_refused(raw):
    server = raw([b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK])
    with pytest.raises(ValueError, match="Invalid header"):
        with closing(poster(server.url)) as p:
            p.post(b"{}", {"Authorization": "Bearer k\r\nX-Evil: 1"}, None)
    assert server.requests == []


@pytest.mark.parametrize(
    "reply",
    [
        b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{"ok\r\n5;x=y\r\n": 1}\r\n0\r\n\r\n',
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n"
        + OK
        + b"\r\n0\r\nX-T: 1\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK,
        b"HTTP/1.0 200 OK\r\n\r\n" + OK,  # no length: the body runs to the close
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 9\r\n\r\n" + OK,
    ],
    ids=["chunked", "chunked-with-trailer", "interim-100", "to-the-close", "connection-close"],
)
def test_each_way_a_reply_frames_its_body_reads_the_same_body(raw, reply):
    server = raw([reply])
    with closing(poster(server.url)) as p:
        assert p.post(b"{}", {}, None).content == OK


def test_a_reply_that_says_it_closes_drops_the_connection_and_the_next_call_opens_another(raw):
    close = b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 9\r\n\r\n" + OK
    keep = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK
    server = raw([close, keep, keep])
    with closing(poster(server.url)) as p:
        assert [p.post(b"{}", {}, None).content for _ in range(3)] == [OK] * 3
    assert len(server.requests) == 3


def test_a_chunked_reply_is_read_to_its_trailers_end_and_the_connection_kept(raw):
    chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n" + OK
    server = raw([chunked + b"\r\n0\r\nX-T: 1\r\n\r\n", chunked + b"\r\n0\r\n\r\n"])
    with closing(poster(server.url)) as p:
        assert [p.post(b"{}", {}, None).content for _ in range(2)] == [OK, OK]
    assert server.connections == 1


def test_a_no_content_reply_has_no_body_and_keeps_the_connection(raw):
    server = raw(
        [b"HTTP/1.1 204 No Content\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK]
    )
    with closing(poster(server.url)) as p:
        assert p.post(b"{}", {}, None).content == b""
        assert p.post(b"{}", {}, None).content == OK
    assert server.connections == 1


@pytest.mark.parametrize(
    "reply, message",
    [
        (b"SPDY/3 200 OK\r\n\r\n", "SPDY/3 200 OK"),
        (b"HTTP/1.1 2x0 OK\r\n\r\n", "HTTP/1.1 2x0 OK"),
        (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "without a colon"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n", "bad Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n", "CRLF"),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 50\r\n\r\n" + OK, "Incomplete"),
        (b"HTTP/1.1 200 OK\r\nX: " + b"y" * 70000, "too long"),
    ],
    ids=[
        "not-http",
        "status",
        "header",
        "negative",
        "words",
        "chunk-size",
        "chunk-end",
        "short",
        "huge",
    ],
)
def test_a_reply_it_cannot_read_is_a_protocol_error_naming_why(raw, reply, message):
    lib = http_library()
    server = raw([reply])
    with closing(poster(server.url)) as p, pytest.raises(lib.RemoteProtocolError, match=message):
        p.post(b"{}", {}, None)


def test_a_server_that_closes_without_a_reply_on_a_new_connection_is_a_protocol_error(raw):
    lib = http_library()
    server = raw([None])
    with (
        closing(poster(server.url)) as p,
        pytest.raises(lib.RemoteProtocolError, match="without response"),
    ):
        p.post(b"{}", {}, None)


def test_a_kept_connection_the_server_closed_is_replaced_once(raw):
    keep = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK
    server = raw([keep, None, keep])  # the second request finds the connection closed
    with closing(poster(server.url)) as p:
        assert p.post(b"{}", {}, None).content == OK
        assert p.post(b"{}", {}, None).content == OK
    assert len(server.requests) == 3


_HEADS = [
    b"HTTP/1.1 200 OK\r\n",
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n",
    b"HTTP/1.0 204 No\r\n",
    b"",
]


@settings(max_examples=60, deadline=None)
@given(head=st.sampled_from(_HEADS), rest=st.binary(max_size=300))
def test_whatever_a_server_sends_is_a_reply_or_the_librarys_error(head, rest):
    # a reply's bytes are input: any of them ends as a reply or the HTTP library's own error
    lib = http_library()
    server = RawServer([head + rest + b"\r\n\r\n", None])
    try:
        with closing(LoopbackPoster(http_library, server.url, timeout=0.5, connect_timeout=2)) as p:
            try:
                reply = p.post(b"{}", {}, None)
            except (lib.RemoteProtocolError, lib.ReadTimeout):
                return
            assert isinstance(reply.status_code, int) and isinstance(reply.content, bytes)
    finally:
        server.close()


class StallingServer:
    """Answers the first request on a connection, then reads nothing and answers nothing."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/chat/completions"
        self.done = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        conn, _ = self.sock.accept()
        with conn:
            RawServer._read_request(conn)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK)
            self.done.wait(10)

    def close(self) -> None:
        self.done.set()
        self.sock.close()


@pytest.fixture(params=["kernel", "python"])
def waits(request, monkeypatch) -> str:
    """Each send and receive bounded by the kernel (Linux) or by the socket's Python timeout
    (elsewhere): both must give the same errors."""
    if request.param == "python":
        monkeypatch.setattr(loopback, "_KERNEL_WAITS", False)
    elif not loopback._KERNEL_WAITS:
        pytest.skip("the kernel bounds the socket's waits on Linux only")
    return request.param


@pytest.mark.parametrize("size", [10, 48 * 1024 * 1024], ids=["reply-stalls", "send-stalls"])
def test_a_call_past_its_own_timeout_is_a_read_timeout_on_a_kept_connection(size, waits):
    """The bound of each call is its own: a kept connection made for 2 s gives up after the
    0.3 s a later call asks for, whether the reply or the sending stalls."""
    import time

    lib = http_library()
    server = StallingServer()
    try:
        with closing(poster(server.url)) as p:
            assert p.post(b'{"a": 1}', {}, None).content == OK  # the 2 s default
            started = time.monotonic()
            with pytest.raises(lib.ReadTimeout, match="^timed out$"):
                p.post(b"x" * size, {}, 0.3)
            assert time.monotonic() - started < 1.5
    finally:
        server.close()


def _bound(sock: socket.socket) -> float:
    seconds, micros = struct.unpack(
        "ll", sock.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, 16)
    )
    sent_s, sent_us = struct.unpack(
        "ll", sock.getsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, 16)
    )
    assert (sent_s, sent_us) == (seconds, micros)
    return seconds + micros / 1e6


@pytest.mark.skipif(not loopback._KERNEL_WAITS, reason="the kernel bounds waits on Linux only")
def test_on_linux_the_kernel_bounds_each_wait_and_the_socket_blocks(raw):
    """One system call a send or a receive: the socket blocks (no Python timeout, which would
    poll before each), SO_RCVTIMEO and SO_SNDTIMEO hold the call's bound, set again only when a
    call asks for another."""
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n" + OK
    server = raw([reply] * 4)
    with closing(poster(server.url)) as p:
        p.post(b"{}", {}, None)
        (conn,) = p._open
        assert conn.sock.gettimeout() is None
        assert 2.0 <= _bound(conn.sock) < 2.01  # the poster's own (the kernel counts in ticks)
        p.post(b"{}", {}, 0.25)
        assert 0.25 <= _bound(conn.sock) < 0.26
    assert server.connections <= 2


def test_a_bound_the_kernel_cannot_hold_leaves_the_socket_as_it_was(monkeypatch):
    a, b = socket.socketpair()
    with a, b:
        a.settimeout(3.0)
        for bad in (0.0, -1.0, float("inf"), float("nan")):
            assert loopback._kernel_wait(a, bad) is False
            assert a.gettimeout() == 3.0
        if loopback._KERNEL_WAITS:  # never no bound at all: a zero would mean that
            assert loopback._kernel_wait(a, 1e-9) is True and 0 < _bound(a) < 0.02
        monkeypatch.setattr(loopback, "_KERNEL_WAITS", False)  # elsewhere: the socket's own
        conn = loopback._Connection(b)
        conn.bound(0.5)
        assert b.gettimeout() == 0.5 and conn.wait == 0.5
