"""Reading OpenAI chat-completions logs into capture records.

One conversation per line, a JSON object with a `messages` array in chat-completions shape
(`system`/`developer`, `user`, `assistant` with `content` and `tool_calls`, `tool` with
`tool_call_id`), optional `conversation_id` or `id`, `metadata`, `timestamp` or `created`. Each
user message starts a turn; the assistant and tool messages after it are its events.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import IO, Any

from ._format_shared import (
    _Bad,
    _conversation_id,
    _json_value,
    _Message,
    _message,
    _offer,
    _records,
    _too_deep,
    _Turn,
)
from .capture import CAPTURE_MAX_DEPTH
from .conversations import CaptureBuilder
from .lines import id_problem, parse_line

_NO_TIME = datetime(1970, 1, 1, tzinfo=UTC)


def _openai_time(data: dict[str, Any], metadata: dict[str, Any]) -> datetime:
    stamp = data.get("timestamp", metadata.get("timestamp"))
    if stamp is not None and not isinstance(stamp, str):
        raise _Bad(f"timestamp is {type(stamp).__name__}, not an ISO 8601 time (text)")
    if isinstance(stamp, str):
        try:
            found = datetime.fromisoformat(stamp)
        except ValueError:
            raise _Bad("timestamp is not an ISO 8601 time") from None
        return found if found.tzinfo is not None else found.replace(tzinfo=UTC)
    created = data.get("created", metadata.get("created"))
    if created is not None and (isinstance(created, bool) or not isinstance(created, int | float)):
        raise _Bad(f"created is {type(created).__name__}, not a Unix time (a number of seconds)")
    if isinstance(created, (int, float)) and not isinstance(created, bool):
        try:
            return datetime.fromtimestamp(created, UTC)
        except (OverflowError, OSError, ValueError):
            raise _Bad("created is not a Unix time") from None
    return _NO_TIME


def _openai_turns(data: dict[str, Any], shown: str, n: int) -> tuple[str, list[_Turn]]:
    given = data.get("metadata")
    metadata: dict[str, Any] = given if isinstance(given, dict) else {}
    role = metadata.get("role", "customer")
    if role not in ("customer", "operator"):
        raise _Bad(
            f"metadata.role is {str(role)[:40]!r}; a conversation is a customer's or an operator's"
        )
    when = _openai_time(data, metadata)
    turns: list[_Turn] = []
    for i, m in enumerate(data["messages"]):
        msg = _message(m, f"messages.{i}")
        if msg.role == "user":
            turns.append(_Turn("\n".join(msg.texts), when, shown, n))
        elif msg.role in ("system", "developer") or not turns:
            continue  # instructions, or a greeting before the customer said anything
        elif msg.role in ("assistant", "tool"):
            # checked above (`_message`); read by the chat-completions converter, as it is
            turns[-1].messages.append(_chat_message(m, msg))
        else:
            raise _Bad(f"messages.{i}: unknown role {msg.role[:40]!r}")
    if not turns:
        raise _Bad("no user message")
    return role, turns


def _chat_message(m: dict[str, Any], msg: _Message) -> dict[str, Any]:
    """A logged message as the chat converter takes it: `tool_calls` logged as JSON text parsed,
    a tool message's id given as `id` moved to `tool_call_id`."""
    out = dict(m)
    if msg.role == "assistant" and isinstance(m.get("tool_calls"), str):
        out["tool_calls"] = _json_value(m["tool_calls"])
    if msg.role == "tool" and "tool_call_id" not in m:
        out["tool_call_id"] = m.get("id")
    return out


def _read_openai(fh: IO[bytes], shown: str, found: CaptureBuilder) -> None:
    for n, raw in enumerate(fh, 1):
        found.capture.lines += 1
        if not raw.strip():
            continue
        data, error = parse_line(raw)
        if error is None and not isinstance(data, dict):
            error = "not a JSON object; line skipped"
        elif error is None and not isinstance(data.get("messages"), list):
            error = "no messages array (an OpenAI-format line holds one conversation); line skipped"
        if error is not None:
            found.problem(shown, n, error)
            continue
        metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
        given = (data.get("conversation_id"), data.get("id"), metadata.get("conversation_id"))
        cid = _conversation_id(next((v for v in given if v is not None), None))
        if cid is None:
            found.problem(
                shown,
                n,
                "no conversation id (conversation_id, id or metadata.conversation_id); "
                "line skipped",
            )
            continue
        id_error = id_problem({"conversation_id": cid})
        if id_error is not None:
            found.problem(shown, n, f"{id_error}; line skipped")
            continue
        if not found.wanted(cid):
            continue
        try:
            role, turns = _openai_turns(data, shown, n)
            _too_deep(turns)
        except _Bad as exc:
            found.spoil(cid, shown, n, f"{exc}; the conversation is left out of the sample")
            continue
        except RecursionError:  # content nested past what Python can walk
            found.spoil(
                cid,
                shown,
                n,
                f"nested deeper than {CAPTURE_MAX_DEPTH} levels; the conversation is left out "
                "of the sample",
            )
            continue
        _offer(found, _records(cid, role, turns))
