"""A loopback OpenAI-compatible server with scripted tool-calling replies, latency and faults.

For testing a harness or an agent against real HTTP without a model: every
`POST /v1/chat/completions` is answered from a script `latency_s` after it arrived, and every
`fault_every`-th response can be replaced by a fault (429 with Retry-After, 500, a stall past the
client's timeout, a malformed body).

The script is a list of steps. The step answered is the number of assistant messages after the
last user message in the request, so one script drives a whole tool-calling loop statelessly:

    script = [
        {"tool": "search_products", "arguments": {"query": "{message}"}},
        {"tool": "add_to_cart", "arguments": {"product_id": "{pid}", "quantity": 1}},
        {"text": "Added {pid} to your cart."},
    ]
    with MockServer(script, pattern=r"\\((?P<pid>[\\w-]+)\\)", latency_s=0.2) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x")

`{message}` is the last user message; other `{names}` are the named groups of `pattern` matched
against it. Past the end of the script the last step repeats. `server.stats()` counts requests,
replies and faults by kind.

From a shell (the benchmark runs it in its own process, so its CPU is not the harness's):

    python -m pytest_commerce_evals.testing.mock_server --latency 0.2 --fault-every 10
    # prints "ready http://127.0.0.1:PORT/v1"; GET /stats returns the counts as JSON,
    # GET /times when the first request came and the last reply went
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FAULT_KINDS", "MockServer", "Step", "main"]

Step = dict[str, Any]
FAULT_KINDS = ("429", "500", "stall", "malformed")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the openai client expects
    # http.server writes headers and body in separate sends: without TCP_NODELAY each keep-alive
    # response waits ~40 ms for the client's delayed ACK (Nagle), and that stall is all one sees.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def parse_request(self) -> bool:
        # a request arrives when its first line has been read; its headers are parsed after
        self.arrived = time.monotonic()
        return super().parse_request()

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        """The status line, headers and body in one send: written in two, the reply's second
        half reaches the client a loopback exchange later than the first."""
        fields = {"content-type": "application/json", "content-length": str(len(body))}
        head = [f"{self.protocol_version} {status} {self.responses[status][0]}"]
        head += [f"{k}: {v}" for k, v in {**fields, **(headers or {})}.items()]
        try:
            self.wfile.write("\r\n".join(head).encode("latin-1") + b"\r\n\r\n" + body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a stall)
            pass

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/stats"):
            self._send(200, json.dumps(self.server.mock.stats()).encode())
        elif self.path.rstrip("/").endswith("/times"):
            self._send(200, json.dumps(self.server.mock.times()).encode())
        elif self.path.rstrip("/").endswith("/models"):
            body = {"object": "list", "data": [{"id": "mock", "object": "model"}]}
            self._send(200, json.dumps(body).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        arrived = self.arrived
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        mock = self.server.mock
        try:
            request = json.loads(raw)
        except json.JSONDecodeError:
            mock._count("bad_request")
            self._send(400, b'{"error": {"message": "request body is not JSON"}}')
            return
        fault = mock._next_fault()
        mock._enter()
        try:
            self._answer(mock, request, fault, arrived)
        finally:
            mock._leave()

    def _answer(
        self, mock: MockServer, request: dict[str, Any], fault: str | None, arrived: float
    ) -> None:
        # the latency is the server's whole response time, as a model API's is: from the
        # request line's arrival, the reply is built first and the wait is what is left of
        # latency_s after reading the headers and body and building
        body = mock._reply(request) if fault in (None, "stall") else b""
        left = mock.latency_s - (time.monotonic() - arrived)
        if left > 0:
            time.sleep(left)
        if fault == "429":
            retry = f"{mock.retry_after_s:g}"
            self._send(429, _error("rate limited (injected)", "rate_limit"), {"retry-after": retry})
        elif fault == "500":
            self._send(500, _error("internal error (injected)", "server_error"))
        elif fault == "malformed":
            self._send(200, b'{"id": "chatcmpl-mock", "object": "chat.completion", "choices": [')
        else:
            if fault == "stall":
                time.sleep(mock.stall_s)
            self._send(200, body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256
    mock: MockServer


def _error(message: str, kind: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": kind}}).encode()


class MockServer:
    """`MockServer(script, latency_s=..., fault_every=..., faults=...)`; `start()`/`stop()` or
    `with`. `base_url` ends in `/v1`. Faults cycle through `faults` on every `fault_every`-th
    request (0 = none); a stall sleeps `stall_s` before answering."""

    def __init__(
        self,
        script: list[Step] | None = None,
        *,
        pattern: str | None = None,
        latency_s: float = 0.0,
        fault_every: int = 0,
        faults: tuple[str, ...] = FAULT_KINDS,
        retry_after_s: float = 0.05,
        stall_s: float = 5.0,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        unknown = [f for f in faults if f not in FAULT_KINDS]
        if unknown:
            raise ValueError(f"unknown fault kinds {unknown}; the kinds are {list(FAULT_KINDS)}")
        if fault_every < 0 or latency_s < 0:
            raise ValueError("fault_every and latency_s must not be negative")
        self.script = list(script or [{"text": "ok"}])
        for n, step in enumerate(self.script):
            if not isinstance(step, dict) or not ({"tool", "text", "tools"} & set(step)):
                raise ValueError(f"script step {n}: expected a 'tool', 'tools' or 'text' key")
        self.pattern = re.compile(pattern) if pattern else None
        self.latency_s = latency_s
        self.fault_every = fault_every
        self.faults = tuple(faults)
        self.retry_after_s = retry_after_s
        self.stall_s = stall_s
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()
        self._n = 0
        self._in_flight = 0
        self._first: float | None = None
        self._last: float | None = None
        self._max_in_flight = 0
        self._ids = itertools.count(1)
        self._server = _Server((host, port), _Handler)
        self._server.mock = self
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)  # a bound TCP server's host is text
        return f"http://{host}:{port}/v1"

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> MockServer:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever(poll_interval=0.05)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> MockServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- counts ---------------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """`requests` (chat completions received), `replies` (scripted answers sent),
        `max_in_flight` (the most requests being answered at once), and one count per injected
        fault kind."""
        with self._lock:
            return {"requests": self._n, "max_in_flight": self._max_in_flight, **self._counts}

    def times(self) -> dict[str, float | None]:
        """Wall-clock times (time.time()) of the first request received and the last reply
        sent, or None before any."""
        with self._lock:
            return {"first_request": self._first, "last_reply": self._last}

    def _enter(self) -> None:
        with self._lock:
            if self._first is None:
                self._first = time.time()
            self._in_flight += 1
            self._max_in_flight = max(self._max_in_flight, self._in_flight)

    def _leave(self) -> None:
        with self._lock:
            self._in_flight -= 1
            self._last = time.time()

    def _count(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def _next_fault(self) -> str | None:
        with self._lock:
            self._n += 1
            n = self._n
            if not self.fault_every or n % self.fault_every:
                self._counts["replies"] += 1
                return None
            kind = self.faults[(n // self.fault_every - 1) % len(self.faults)]
            self._counts[kind] += 1
            if kind == "stall":
                self._counts["replies"] += 1  # it is answered, too late
            return kind

    # --- replies --------------------------------------------------------------------------------

    def _reply(self, request: dict[str, Any]) -> bytes:
        messages = request.get("messages") or []
        last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
        message = str(messages[last_user].get("content") or "") if last_user >= 0 else ""
        step_no = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant")
        step = self.script[min(step_no, len(self.script) - 1)]
        values = {"message": message}
        if self.pattern is not None:
            match = self.pattern.search(message)
            if match:
                values.update({k: v for k, v in match.groupdict().items() if v is not None})
        n = next(self._ids)
        calls = step.get("tools") or ([step] if "tool" in step else [])
        tool_calls = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {
                    "name": call["tool"],
                    "arguments": json.dumps(_fill(call.get("arguments") or {}, values)),
                },
            }
            for i, call in enumerate(calls)
        ]
        text = _fill(step["text"], values) if "text" in step else None
        body = {
            "id": f"chatcmpl-mock-{n}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or "mock",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                    "message": {
                        "role": "assistant",
                        "content": text,
                        "tool_calls": tool_calls or None,
                    },
                }
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
        return json.dumps(body).encode()


def _fill(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(0)), value)
    if isinstance(value, dict):
        return {k: _fill(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, values) for v in value]
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pytest_commerce_evals.testing.mock_server",
        description=__doc__.split("\n")[0],
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument(
        "--latency", type=float, default=0.0, help="seconds from a request's arrival to its reply"
    )
    parser.add_argument("--fault-every", type=int, default=0, help="fault every Nth request")
    parser.add_argument("--faults", default=",".join(FAULT_KINDS), help="kinds, in turn")
    parser.add_argument("--stall", type=float, default=5.0, help="seconds a stall lasts")
    parser.add_argument("--retry-after", type=float, default=0.05, help="429's Retry-After")
    parser.add_argument("--script", help="a JSON file holding the list of steps")
    parser.add_argument("--pattern", help="regex with named groups, matched on the user message")
    args = parser.parse_args(argv)
    script = None
    if args.script:
        with open(args.script, encoding="utf-8") as fh:
            script = json.load(fh)
    server = MockServer(
        script,
        pattern=args.pattern,
        latency_s=args.latency,
        fault_every=args.fault_every,
        faults=tuple(f for f in args.faults.split(",") if f),
        stall_s=args.stall,
        retry_after_s=args.retry_after,
        port=args.port,
    )
    print(f"ready {server.base_url}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
