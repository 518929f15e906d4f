"""What a trial spent: its model calls (tokens, latency) for the agent, the judge and the
simulated customer, each apart, and the agent's time per turn.

Calls are counted where they are made. The plugin's own clients (`HTTPChatClient`, the
`RetryingClient` the endpoints hand out, `FakeClient`) record each answered call; so does an
adapter that reads a framework's own usage, and a hand-wired agent through
`AgentSession.record_call` (or `record_call` here). The runner opens a `Meter` per trial and says
whose calls are being made (`metered`): the agent's turns, the customer's replies, the judge's
verdicts; a call made outside a trial is not counted anywhere.

What the agent reports itself (`source="agent"`: an adapter, `record_call`) replaces what the
plugin's clients measured for it in the same trial, so a framework model behind a plugin client
is not counted twice. A trial whose agent reported nothing has no agent calls: the reports say
"not reported", never 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "PURPOSES",
    "Meter",
    "ModelCall",
    "Purpose",
    "current_meter",
    "metered",
    "record_call",
    "record_response",
    "tokens_of",
]

Purpose = Literal["agent", "judge", "user"]
PURPOSES: tuple[Purpose, ...] = ("agent", "judge", "user")
"""Whose calls: the agent under test, the judge grading it, the simulated customer."""

Source = Literal["client", "agent"]


@dataclass
class ModelCall:
    """One answered model call. Token counts are what the endpoint or framework reported (None:
    not reported); `input_tokens` includes `cached_tokens`, as OpenAI counts them. `latency_s` is
    the wall time of the answered attempt (a retried call's failed attempts are not in it).
    `turn` is the agent's turn the call was made in (None for the judge). `source` is `client`
    (measured by a plugin client) or `agent` (reported by the agent or an adapter). `server`
    is the scheme and host the call went to (`https://api.openai.com`; None when not known),
    which prices a call by its provider and tells a server of one's own."""

    purpose: Purpose
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    latency_s: float | None = None
    turn: int | None = None
    source: Source = "client"
    server: str | None = None

    @property
    def tokens(self) -> int | None:
        """Input plus output tokens; None when either is not reported."""
        if self.input_tokens is None or self.output_tokens is None:
            return None
        return self.input_tokens + self.output_tokens


class Meter:
    """The calls of one trial, as they are made (several threads may record at once)."""

    __slots__ = ("_calls", "_lock", "turn", "turn_s")

    def __init__(self) -> None:
        self._calls: list[ModelCall] = []
        self._lock = threading.Lock()
        self.turn: int | None = None
        self.turn_s: list[float] = []

    def add(self, call: ModelCall) -> None:
        if call.turn is None and call.purpose == "agent":
            call.turn = self.turn
        with self._lock:
            self._calls.append(call)

    def calls(self) -> list[ModelCall]:
        """Every call, with what the agent reported replacing what the clients measured for it
        (the measured latency kept where the reports have none and the counts agree)."""
        with self._lock:
            calls = list(self._calls)
        reported = [c for c in calls if c.purpose == "agent" and c.source == "agent"]
        if not reported:
            return calls
        measured = [c for c in calls if c.purpose == "agent" and c.source == "client"]
        if len(measured) == len(reported):
            for mine, theirs in zip(reported, measured, strict=True):
                if mine.latency_s is None:
                    mine.latency_s = theirs.latency_s
        return [c for c in calls if not (c.purpose == "agent" and c.source == "client")]


_CURRENT: ContextVar[tuple[Meter, Purpose] | None] = ContextVar("commerce_meter", default=None)


def current_meter() -> tuple[Meter, Purpose] | None:
    """The meter calls made here are recorded on, and whose calls they are; None outside a
    trial."""
    return _CURRENT.get()


@contextmanager
def metered(meter: Meter, purpose: Purpose) -> Iterator[None]:
    """Record the model calls made inside on `meter`, as `purpose`'s."""
    token = _CURRENT.set((meter, purpose))
    try:
        yield
    finally:
        _CURRENT.reset(token)


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return int(value) if value >= 0 else None


def _field(obj: Any, *names: str) -> Any:
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def tokens_of(usage: Any) -> tuple[int | None, int | None, int | None]:
    """(input, output, cached) tokens from a usage object or mapping as OpenAI's chat
    completions (`prompt_tokens`, `completion_tokens`, `prompt_tokens_details.cached_tokens`),
    its Responses API and the Agents SDK (`input_tokens`, `output_tokens`,
    `input_tokens_details.cached_tokens`), pydantic-ai (`input_tokens`, `output_tokens`,
    `cache_read_tokens`) and LangChain (`usage_metadata`: `input_tokens`, `output_tokens`,
    `input_token_details.cache_read`) write it; None for what it does not say."""
    if usage is None:
        return None, None, None
    if hasattr(usage, "model_dump") and not isinstance(usage, Mapping):
        try:
            usage = usage.model_dump()
        except Exception:  # a Record-like object whose dump fails: read its attributes
            pass
    inp = _count(_field(usage, "prompt_tokens", "input_tokens"))
    out = _count(_field(usage, "completion_tokens", "output_tokens"))
    details = _field(usage, "prompt_tokens_details", "input_tokens_details", "input_token_details")
    cached = _count(_field(details, "cached_tokens", "cache_read")) if details else None
    if cached is None:
        cached = _count(_field(usage, "cache_read_tokens"))
    return inp, out, cached


def record_call(
    *,
    model: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cached_tokens: int | None = None,
    latency_s: float | None = None,
    usage: Any = None,
    purpose: Purpose | None = None,
    source: Source = "agent",
    server: str | None = None,
) -> bool:
    """Record one model call on the trial running here: the tokens given, or read from `usage`
    (any of the shapes `tokens_of` reads). Counted as the calls being made here are (the
    agent's, in an agent's turn) unless `purpose` says otherwise. `server` is the base URL the
    call went to (kept as its scheme and host; without it an agent's call is taken to go where
    the agent endpoint's settings point). Returns False when no trial is running here (nothing
    is recorded)."""
    here = _CURRENT.get()
    if here is None:
        return False
    meter, whose = here
    if usage is not None:
        got = tokens_of(usage)
        input_tokens = got[0] if input_tokens is None else input_tokens
        output_tokens = got[1] if output_tokens is None else output_tokens
        cached_tokens = got[2] if cached_tokens is None else cached_tokens
    meter.add(
        ModelCall(
            purpose=purpose or whose,
            model=model,
            input_tokens=_count(input_tokens),
            output_tokens=_count(output_tokens),
            cached_tokens=_count(cached_tokens),
            latency_s=latency_s if latency_s is None or latency_s >= 0 else None,
            source=source,
            server=server_of(server),
        )
    )
    return True


def server_of(base_url: str | None) -> str | None:
    """The scheme and host of `base_url` (no credentials, port or path); None for None."""
    if not base_url:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(base_url)
    host = parts.hostname
    return f"{parts.scheme}://{host}" if parts.scheme and host else None


def record_response(
    response: Any, started: float, model: str | None = None, server: str | None = None
) -> None:
    """Record a chat completion a plugin client received (`started`: `time.perf_counter()` when
    the call was sent; `server`: `server_of` the endpoint), its tokens read from its `usage`."""
    here = _CURRENT.get()
    if here is None:
        return
    latency = time.perf_counter() - started
    data = response._data if hasattr(response, "_data") else response
    usage = _field(data, "usage")
    if type(usage) is dict and "prompt_tokens" in usage:  # a chat completion as JSON: the most
        inp = _count(usage.get("prompt_tokens"))  # common reply, read without the search
        out = _count(usage.get("completion_tokens"))
        details = usage.get("prompt_tokens_details")
        cached = _count(details.get("cached_tokens")) if type(details) is dict else None
    else:
        inp, out, cached = tokens_of(usage)
    here[0].add(
        ModelCall(
            purpose=here[1],
            model=_field(data, "model") or model,
            input_tokens=inp,
            output_tokens=out,
            cached_tokens=cached,
            latency_s=latency,
            source="client",
            server=server,
        )
    )
