"""FakeClient: a scripted stand-in for the part of the openai client an agent or judge uses.

Script it with a queue of replies, or with a function that sees each request and returns the
reply. Every request is recorded in `client.requests`, so a test can assert the exact messages,
tools and parameters the model would have received.

    client = FakeClient([
        tool_reply("search_products", query="trail shoes"),
        text_reply("Here are two trail shoes."),
    ])
    client.chat.completions.create(model="m", messages=[...], tools=[...])
"""

from __future__ import annotations

import copy
import itertools
import json
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import FakeClientExhausted
from ..models.replies import Record
from ..usage import record_response, tokens_of

__all__ = [
    "AsyncFakeClient",
    "FakeClient",
    "FakeClientExhausted",
    "FakeReply",
    "text_reply",
    "tool_reply",
]


@dataclass
class FakeReply:
    """One assistant message: text, tool calls, or both. `usage` is the tokens the reply
    reports (`{"input_tokens": 120, "output_tokens": 30, "cached_tokens": 0}`, or OpenAI's
    `prompt_tokens` / `completion_tokens` form; None: the client's default, else not reported)
    and `latency_s` the latency recorded for the call (None: as measured), so a test can pin
    what a trial spent."""

    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    latency_s: float | None = None


def text_reply(
    content: str, *, usage: dict[str, Any] | None = None, latency_s: float | None = None
) -> FakeReply:
    return FakeReply(content=content, usage=usage, latency_s=latency_s)


def tool_reply(name: str, content: str | None = None, **arguments: Any) -> FakeReply:
    """A reply that calls one tool; chain `.also(name, **args)` for parallel calls. (Script
    its usage with `FakeReply(tool_calls=[(name, args)], usage=...)`.)"""
    return FakeReply(content=content, tool_calls=[(name, arguments)])


def _also(self: FakeReply, name: str, **arguments: Any) -> FakeReply:
    self.tool_calls.append((name, arguments))
    return self


FakeReply.also = _also  # type: ignore[attr-defined]

Script = Iterable[FakeReply | str | dict | BaseException] | Callable[[dict[str, Any]], Any]


class _Completions:
    def __init__(self, owner: FakeClient) -> None:
        self._owner = owner

    def create(self, **kwargs: Any) -> Record:
        return self._owner._respond(kwargs)


class _AsyncCompletions(_Completions):
    async def create(self, **kwargs: Any) -> Record:  # type: ignore[override]
        return self._owner._respond(kwargs)


class _Chat:
    def __init__(self, completions: _Completions) -> None:
        self.completions = completions


class FakeClient:
    """Mirrors `openai.OpenAI().chat.completions.create`. Replies are `models.replies.Record`s,
    the type the plugin's own client (`models.http_client.HTTPChatClient`) returns, shaped like a
    complete chat completion (id, created, model, one choice with its finish reason, usage) and
    read like the SDK's `ChatCompletion`.

    A script item may be a `FakeReply`, a plain string (a text reply), a mapping shaped like an
    assistant message (`{"content": ..., "tool_calls": [...]}`), or an exception instance, which
    is raised (to test retries and infrastructure errors). A callable script receives the request
    (the keyword arguments of `create`) and returns any of those.
    """

    _completions_cls = _Completions
    meters_usage = True
    """Each reply is recorded on the trial it is made in, with its scripted usage and latency."""

    def __init__(
        self, script: Script, model: str = "fake-model", *, usage: dict[str, Any] | None = None
    ) -> None:
        self.model = model
        self.usage = usage  # every reply's tokens unless the reply scripts its own
        self.requests: list[dict[str, Any]] = []
        self._fn: Callable[[dict[str, Any]], Any] | None = None
        self._queue: deque[Any] = deque()
        if callable(script):
            self._fn = script
        else:
            self._queue.extend(script)
        self._ids = itertools.count(1)
        self.chat = _Chat(self._completions_cls(self))

    @property
    def remaining(self) -> int:
        return len(self._queue)

    def _respond(self, request: dict[str, Any]) -> Record:
        started = time.perf_counter()
        self.requests.append(copy.deepcopy(request))
        if self._fn is not None:
            item = self._fn(request)
        elif self._queue:
            item = self._queue.popleft()
        else:
            raise FakeClientExhausted(
                f"FakeClient script exhausted after {len(self.requests) - 1} replies; "
                f"request {len(self.requests)} was not scripted"
            )
        if isinstance(item, BaseException):
            raise item
        record = self._completion(item, request)
        latency = getattr(item, "latency_s", None)
        if latency is not None:
            started = time.perf_counter() - latency
        record_response(record, started)
        return record

    def _completion(self, item: Any, request: dict[str, Any]) -> Record:
        if isinstance(item, str):
            item = FakeReply(content=item)
        elif isinstance(item, dict):
            calls = [
                (c["function"]["name"], json.loads(c["function"].get("arguments") or "{}"))
                if "function" in c
                else (c["name"], c.get("arguments", {}))
                for c in item.get("tool_calls") or []
            ]
            item = FakeReply(
                content=item.get("content"),
                tool_calls=calls,
                usage=item.get("usage"),
                latency_s=item.get("latency_s"),
            )
        if not isinstance(item, FakeReply):
            raise TypeError(f"FakeClient cannot reply with {type(item).__name__}: {item!r:.80}")
        n = next(self._ids)
        tool_calls = [
            {
                "id": f"call_{n}_{i}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for i, (name, args) in enumerate(item.tool_calls)
        ]
        finish = item.finish_reason or ("tool_calls" if tool_calls else "stop")
        return Record(
            {
                "id": f"fake-{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": request.get("model") or self.model,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": finish,
                        "message": {
                            "role": "assistant",
                            "content": item.content,
                            "tool_calls": tool_calls or None,
                        },
                    }
                ],
                "usage": _usage(item.usage if item.usage is not None else self.usage),
            }
        )


def _usage(scripted: dict[str, Any] | None) -> dict[str, Any] | None:
    """A scripted usage in the chat completion's form; None (not reported) when none."""
    if scripted is None:
        return None
    inp, out, cached = tokens_of(scripted)
    if cached is None:
        cached = scripted.get("cached_tokens")
    usage: dict[str, Any] = {
        "prompt_tokens": inp,
        "completion_tokens": out,
        "total_tokens": (inp or 0) + (out or 0),
    }
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return usage


class AsyncFakeClient(FakeClient):
    """The same script, behind `await client.chat.completions.create(...)`."""

    _completions_cls = _AsyncCompletions
