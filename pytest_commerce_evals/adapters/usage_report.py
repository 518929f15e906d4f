"""The usage of the model responses a converter reads, reported to the trial running here as
the agent's calls (`report_usage`): held while a conversion runs (`@converter`) and recorded
once it succeeds, once per response however often the trial converts it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..usage import Meter, current_meter, record_call, tokens_of

__all__ = ["report_usage"]


@dataclass(frozen=True)
class _Report:
    response: Any
    key: Hashable | None
    model: str | None
    input_tokens: int | None
    output_tokens: int | None
    cached_tokens: int | None
    server: str | None = None


_PENDING: ContextVar[list[_Report] | None] = ContextVar("commerce_usage_pending", default=None)

SEEN_TRIALS = 256
"""Trials whose reported responses are remembered (the most recent ones), so a response
converted again in a later turn of the same trial is not counted twice."""


class _Seen:
    """The responses already reported on one trial: by the key naming a response (its id, with
    its model and tokens), else by the object itself, kept here while the trial is remembered
    (an id of a freed object could name a new one)."""

    __slots__ = ("keys", "meter", "objects")

    def __init__(self, meter: Meter) -> None:
        self.meter = meter  # held, so no later trial's meter takes its id while it is remembered
        self.keys: set[Hashable] = set()
        self.objects: dict[int, Any] = {}

    def has(self, report: _Report) -> bool:
        if report.key is not None:
            return report.key in self.keys
        return self.objects.get(id(report.response)) is report.response

    def add(self, report: _Report) -> None:
        if report.key is not None:
            self.keys.add(report.key)
        else:
            self.objects[id(report.response)] = report.response


_SEEN: OrderedDict[int, _Seen] = OrderedDict()
_SEEN_LOCK = threading.Lock()


def _seen(meter: Meter) -> _Seen:
    with _SEEN_LOCK:
        seen = _SEEN.get(id(meter))
        if seen is None or seen.meter is not meter:
            seen = _SEEN[id(meter)] = _Seen(meter)
            while len(_SEEN) > SEEN_TRIALS:
                _SEEN.popitem(last=False)
        else:
            _SEEN.move_to_end(id(meter))
        return seen


def _commit(reports: list[_Report]) -> None:
    if not reports:
        return
    here = current_meter()
    if here is None:  # converted outside a trial: nothing is counted
        return
    seen = _seen(here[0])
    for report in reports:
        with _SEEN_LOCK:
            if seen.has(report):
                continue
            seen.add(report)
        record_call(
            model=report.model,
            input_tokens=report.input_tokens,
            output_tokens=report.output_tokens,
            cached_tokens=report.cached_tokens,
            source="agent",
            server=report.server,
        )


def report_usage(
    response: Any,
    *,
    usage: Any = None,
    model: Any = None,
    key: Hashable | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cached_tokens: int | None = None,
    server: str | None = None,
) -> bool:
    """Report the usage of one model response a converter reads as the agent's call on the
    trial running here (`usage.record_call(source="agent")`): its tokens, or those `usage`
    holds (any shape `usage.tokens_of` reads), its model, and the server it came from when
    the framework says (`server`, a base URL; else the call goes where the agent endpoint's
    settings point). A response whose usage says neither input nor output tokens is not
    reported (False): "not reported", never 0.

    `key` names the response (its id, with what else tells two responses apart; the model
    and the tokens are added to it) so a copy of it converted in a later turn of the trial
    is counted once; without a key the object itself is counted once. Inside a converter
    (`@converter`) the report is made when the conversion succeeds; a failed one reports
    nothing. Outside a trial nothing is recorded.
    """
    if usage is not None:
        got = tokens_of(usage)
        input_tokens = got[0] if input_tokens is None else input_tokens
        output_tokens = got[1] if output_tokens is None else output_tokens
        cached_tokens = got[2] if cached_tokens is None else cached_tokens
    if input_tokens is None and output_tokens is None:
        return False
    name = model if isinstance(model, str) and model else None
    if key is not None:  # the same id with other numbers is another response (a chunk of one)
        key = (key, name, input_tokens, output_tokens, cached_tokens)
        try:
            hash(key)
        except TypeError:  # an id of an odd type: the object itself names the response
            key = None
    where = server if isinstance(server, str) and server else None
    report = _Report(response, key, name, input_tokens, output_tokens, cached_tokens, where)
    pending = _PENDING.get()
    if pending is not None:
        pending.append(report)
    else:
        _commit([report])
    return True
