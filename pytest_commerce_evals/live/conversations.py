"""What reading captured traffic yields: the sampled conversations, redacted, and the problems.

`CaptureBuilder` is where every format's records meet: it samples them by conversation id,
validates the sampled ones and builds the redacted conversations, so sampling, validation and
redaction are the same whichever format the traffic was logged in.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from ..events import coerce_event
from .capture import CapturedTurn, Role
from .lines import id_problem, structure_problem, validation_message
from .redaction import Redactor
from .sampling import is_sampled

__all__ = ["Capture", "CaptureBuilder", "CaptureProblem", "Conversation"]


@dataclass
class CaptureProblem:
    """A line that could not be used, or a conversation left out because of one."""

    path: str
    line: int
    message: str
    conversation_id: str | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class Conversation:
    """The sampled turns of one conversation, in turn order, redacted."""

    conversation_id: str
    role: Role
    turns: list[CapturedTurn]
    path: str
    line: int

    @property
    def user_messages(self) -> list[str]:
        return [t.user for t in self.turns]

    @property
    def events(self) -> list[list[Any]]:
        return [list(t.events) for t in self.turns]

    @property
    def started_at(self) -> datetime:
        return self.turns[0].timestamp


@dataclass
class Capture:
    """What `read_capture` found: the sampled conversations and every line it had to skip."""

    conversations: list[Conversation] = field(default_factory=list)
    problems: list[CaptureProblem] = field(default_factory=list)
    lines: int = 0
    conversations_seen: int = 0


def _missing_turns(numbers: list[int], most: int = 5) -> tuple[list[int], int]:
    """The first `most` turn numbers missing below the highest of `numbers` (sorted, distinct),
    and how many are missing in all; never builds the range (a turn may be 2**31 - 1)."""
    missing: list[int] = []
    expected = 1
    for n in numbers:
        while expected < n and len(missing) < most:
            missing.append(expected)
            expected += 1
        expected = n + 1
    return missing, numbers[-1] - len(numbers)


class CaptureBuilder:
    """Collects capture records (the native line's JSON object, however it was read), samples
    them by conversation id, validates the sampled ones and builds the redacted conversations.
    Every format is read through one, so sampling, validation and redaction are the same."""

    def __init__(self, rate: float, seed: str | int, redactor: Redactor) -> None:
        self.rate, self.seed, self.redactor = rate, seed, redactor
        self.capture = Capture()
        self.turns: dict[str, list[tuple[CapturedTurn, str, int]]] = {}
        self.spoiled: dict[str, CaptureProblem] = {}
        self.decided: dict[str, bool] = {}
        self.pending: list[Any] = []
        """What a reader of another format keeps until every file is read (spans)."""

    def problem(self, shown: str, n: int, message: str) -> None:
        self.capture.problems.append(CaptureProblem(shown, n, message))

    def wanted(self, cid: str) -> bool:
        """Whether conversation `cid` is in the sample (and not already left out)."""
        take = self.decided.get(cid)
        if take is None:
            take = self.decided[cid] = is_sampled(cid, self.rate, self.seed)
        return take and cid not in self.spoiled

    def shown_id(self, cid: str) -> str:
        return self.redactor.text(cid) if self.redactor.active else cid

    def offer(self, shown: str, n: int, raw: bytes, data: Any) -> None:
        """One record read at `shown`:`n`; `raw` is the text it came from (a cheap pre-check of
        its nesting and surrogates)."""
        error = id_problem(data)
        if error is not None:
            self.problem(shown, n, f"{error}; line skipped")
            return
        cid = data["conversation_id"]
        if not self.wanted(cid):
            return
        problem = structure_problem(raw, data)
        if problem is None:
            try:
                turn = CapturedTurn.model_validate(data, strict=True)
            except ValidationError as exc:
                problem = validation_message(exc)
        if problem is not None:
            self.spoil(cid, shown, n, f"{problem}; the conversation is left out of the sample")
            return
        self.turns.setdefault(cid, []).append((turn, shown, n))

    def spoil(self, cid: str, shown: str, n: int, message: str) -> None:
        """Leave conversation `cid` out of the sample, for `message` found at `shown`:`n`."""
        if cid not in self.spoiled:
            shown_id = self.shown_id(cid)
            self.spoiled[cid] = CaptureProblem(
                shown, n, f"conversation {shown_id!r}: {message}", shown_id
            )

    def finish(self) -> Capture:
        capture, spoiled, redactor = self.capture, self.spoiled, self.redactor
        capture.conversations_seen = len(self.decided)
        for cid, found in self.turns.items():
            if cid in spoiled:
                continue
            found.sort(key=lambda t: (t[0].turn, t[0].timestamp))
            numbers = [t.turn for t, _, _ in found]
            shown_id = self.shown_id(cid)
            first = found[0]
            repeated = next((i for i in range(1, len(found)) if numbers[i] == numbers[i - 1]), None)
            if repeated is not None:
                t, where, n = found[repeated]
                spoiled[cid] = CaptureProblem(
                    where,
                    n,
                    f"conversation {shown_id!r}: turn {t.turn} appears twice (first at "
                    f"{found[repeated - 1][1]}:{found[repeated - 1][2]}); the conversation is "
                    "left out",
                    shown_id,
                )
                continue
            roles = {t.role for t, _, _ in found}
            if len(roles) > 1:
                t, where, n = next(x for x in found if x[0].role != first[0].role)
                spoiled[cid] = CaptureProblem(
                    where,
                    n,
                    f"conversation {shown_id!r}: turn {t.turn} is {t.role} but turn "
                    f"{first[0].turn} is {first[0].role}; the conversation is left out",
                    shown_id,
                )
                continue
            if numbers[-1] != len(numbers):
                missing, count = _missing_turns(numbers)
                more = f" ({count} in all)" if count > len(missing) else ""
                spoiled[cid] = CaptureProblem(
                    first[1],
                    first[2],
                    f"conversation {shown_id!r}: turn(s) "
                    f"{', '.join(map(str, missing))}{more} missing from the capture; the "
                    "conversation is left out",
                    shown_id,
                )
                continue
            try:
                clean = [_redacted(t, shown_id, redactor) for t, _, _ in found]
            except ValidationError as exc:
                # a redaction made a value its type does not allow (a card-shaped quantity)
                spoiled[cid] = CaptureProblem(
                    first[1],
                    first[2],
                    f"conversation {shown_id!r}: redacting it leaves an invalid event "
                    f"({validation_message(exc)}); the conversation is left out",
                    shown_id,
                )
                continue
            capture.conversations.append(
                Conversation(shown_id, first[0].role, clean, first[1], first[2])
            )
        capture.problems += spoiled.values()
        capture.problems.sort(key=lambda p: (p.path, p.line))
        capture.conversations.sort(key=lambda c: (c.started_at, c.conversation_id))
        return capture


def _redacted(turn: CapturedTurn, shown_id: str, redactor: Redactor) -> CapturedTurn:
    if not redactor.active:
        return turn
    return turn.model_copy(
        update={
            "conversation_id": shown_id,
            "user": redactor.text(turn.user),
            "events": [
                coerce_event(redactor.value(e.model_dump(mode="json"))) for e in turn.events
            ],
        }
    )
