"""The capture format and its writer: one JSON line per turn of a production conversation.

A production agent appends one JSON line per turn to a capture file (JSONL):

    {"schema_version": 1, "conversation_id": "c-8f3a", "timestamp": "2025-06-01T12:00:03+00:00",
     "role": "customer", "turn": 1, "user": "trail shoes under $120?", "events": [...]}

`events` are exactly the event stream the agent emits (`events.py`), so the judge reads live
traffic the way it reads a regression trial. `CaptureWriter` writes these lines safely from many
threads and processes and redacts customer identifiers before anything reaches the disk.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ..events import Event, coerce_event
from ..jsonsafe import clean_json, printable, short_repr
from .redaction import DEFAULT_REDACTOR, NO_REDACTION, Redactor

__all__ = [
    "CAPTURE_MAX_DEPTH",
    "CAPTURE_SCHEMA_VERSION",
    "CAPTURE_SCHEMA_VERSIONS",
    "MAX_TURN",
    "CaptureWriter",
    "CapturedTurn",
    "Role",
    "event_json",
]

CAPTURE_SCHEMA_VERSION = 1
CAPTURE_SCHEMA_VERSIONS = (1,)
"""The capture schema versions this plugin reads; a line of any other is reported and skipped."""
CAPTURE_MAX_DEPTH = 200
"""How deeply a capture line's arrays and objects may nest (the line itself is level 1). A
deeper line is reported and skipped; the writer keeps a deeper value as its JSON text."""
MAX_TURN = 2**31 - 1

Role = Literal["customer", "operator"]


class CapturedTurn(BaseModel):
    """One line of a capture file: one turn of one conversation, with the events it produced."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = CAPTURE_SCHEMA_VERSION
    conversation_id: str = Field(min_length=1)
    timestamp: datetime
    role: Role
    turn: int = Field(ge=1, le=MAX_TURN)
    user: str
    events: list[Event] = Field(default_factory=list)

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer; found {type(value).__name__}")
        if value not in CAPTURE_SCHEMA_VERSIONS:
            raise ValueError(
                f"unknown capture schema_version {short_repr(value)}; this plugin reads "
                f"{', '.join(map(str, CAPTURE_SCHEMA_VERSIONS))} (a newer plugin may read it)"
            )
        return value

    @field_validator("timestamp", mode="before")
    @classmethod
    def _iso_text(cls, value: Any) -> Any:
        # read strictly (no number taken for a time), yet from the text JSON holds
        if isinstance(value, datetime):
            return value
        if not isinstance(value, str):
            raise ValueError(f"expected an ISO 8601 time as text; found {type(value).__name__}")
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"not an ISO 8601 time: {short_repr(value)}") from None

    @field_validator("timestamp")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def event_json(event: Any) -> dict[str, Any]:
    """An event as a JSON object, however deeply its values nest (pydantic's JSON mode stops
    at 254 levels)."""
    model = coerce_event(event)
    try:
        data = model.model_dump(mode="json")
    except ValueError:
        data = model.model_dump()
    return clean_json(data, CAPTURE_MAX_DEPTH - 2)  # an event is level 3 of a line


def _turn_line(turn: CapturedTurn) -> str:
    data = turn.model_dump(mode="json", exclude={"events"})
    data["events"] = [event_json(e) for e in turn.events]
    line = json.dumps(clean_json(data), ensure_ascii=False, separators=(",", ":"), default=str)
    return line


class CaptureWriter:
    """Appends turns to a capture file; safe across threads and processes.

    Each turn is one `write` of one whole line on a descriptor opened with `O_APPEND`, so
    concurrent writers (threads, worker processes, several hosts on one local disk) never
    interleave inside a line. Identifiers are redacted before the line is written (`redactor`,
    default: emails, phone numbers and card numbers); pass `redactor=None` only when the capture
    store itself may hold them.

        with CaptureWriter("/var/log/agent/capture.jsonl") as capture:
            capture.append_turn(conversation_id, "customer", message, events)

    `turn` counts from 1; left out, the writer numbers the turns of each conversation itself,
    which is right only when one process writes the whole conversation.
    """

    def __init__(
        self, path: str | os.PathLike[str], redactor: Redactor | None = DEFAULT_REDACTOR
    ) -> None:
        self.path = Path(path)
        self.redactor = redactor or NO_REDACTION
        self._lock = threading.Lock()
        self._turns: dict[str, int] = {}
        self._fd: int | None = None
        self._pid = -1

    def _descriptor(self) -> int:
        # a forked child opens its own descriptor (the parent's may be closed under it)
        if self._fd is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._pid = os.getpid()
        return self._fd

    def append_turn(
        self,
        conversation_id: str,
        role: Role,
        user_message: str,
        events: Iterable[Any],
        *,
        turn: int | None = None,
        timestamp: datetime | None = None,
    ) -> CapturedTurn:
        """Redact and append one turn; returns the turn as written."""
        redact = self.redactor.value
        payload = [redact(event_json(e)) for e in events]
        with self._lock:
            if turn is None:
                turn = self._turns.get(conversation_id, 0) + 1
            self._turns[conversation_id] = max(turn, self._turns.get(conversation_id, 0))
            record = CapturedTurn(
                conversation_id=conversation_id,
                timestamp=timestamp or datetime.now(UTC),
                role=role,
                turn=turn,
                user=printable(
                    self.redactor.text(user_message) if self.redactor.active else user_message
                ),
                events=payload,
            )
            data = (_turn_line(record) + "\n").encode("utf-8")
            fd = self._descriptor()
            written = os.write(fd, data)
            while written < len(data):  # only on a full disk or a signal; finish the line
                written += os.write(fd, data[written:])
        return record

    def close(self) -> None:
        with self._lock:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
