"""One line of captured traffic, read: its JSON value, or why it cannot be used.

Every format's reader (the native capture lines and the foreign formats in `_formats`) parses
its lines here, so a line cut short, nested too deeply or without a usable conversation id is
reported in the same words whatever the format. No message quotes the line's content.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import ValidationError

from ..events import EVENT_TYPES
from ..jsonsafe import deep_json_path, first_json_problem, printable
from .capture import CAPTURE_MAX_DEPTH

__all__ = ["id_problem", "parse_line", "structure_problem", "validation_message"]


def validation_message(exc: ValidationError) -> str:
    """What was wrong, without the offending values (they may hold customer data)."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "union_tag_invalid":
            tag = err.get("ctx", {}).get("tag", "")
            parts.append(
                f"{loc}: unknown event type {str(tag)[:40]!r}; known: {', '.join(EVENT_TYPES)}"
            )
        elif err["type"] == "union_tag_not_found":
            parts.append(f"{loc}: an event without a 'type' key")
        else:
            parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts[:4]) + (f" (and {len(parts) - 4} more)" if len(parts) > 4 else "")


_PARTIAL_NUMBER = re.compile(r"-?\d*\.?\d*(?:[eE][+-]?\d*)?")
# a \\u escape at the end of the text, or a whole one followed by (part of) its low surrogate
_PARTIAL_ESCAPE = re.compile(r"u[0-9a-fA-F]{0,4}(?:\\(?:u[0-9a-fA-F]{0,4})?)?")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether `text` is the start of a JSON document (a write cut short) rather than no JSON:
    the parser ran out of text, or stopped in the last token, which is itself cut short."""
    if exc.msg.startswith("Extra data"):  # a whole value, then more
        return False
    rest = text[exc.pos :].rstrip()
    return (
        not rest
        or exc.msg.startswith("Unterminated string")
        or (exc.msg.startswith("Invalid \\uXXXX") and _PARTIAL_ESCAPE.fullmatch(rest) is not None)
        or any(literal.startswith(rest) for literal in _LITERALS)
        or _PARTIAL_NUMBER.fullmatch(rest) is not None
    )


def parse_line(raw: bytes) -> tuple[Any, str | None]:
    """(the line's JSON value, None), or (None, why it cannot be read)."""
    raw = raw.rstrip(b"\r\n")  # so that positions are on line 1, where they are
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":  # cut inside a character: look at the rest
            text = raw[: exc.start].decode("utf-8-sig", "replace")
            try:
                json.loads(text)
            except json.JSONDecodeError as cut:
                if _cut_short(text, cut):
                    return None, f"truncated JSON: {cut} (and a character cut short)"
            except (ValueError, RecursionError):
                pass
        return None, f"not JSON: not UTF-8 text (byte {exc.start}: {exc.reason})"
    try:
        return json.loads(text), None
    except RecursionError:
        where = deep_json_path(text, CAPTURE_MAX_DEPTH)
        return None, f"{where}: nested deeper than {CAPTURE_MAX_DEPTH} levels; line skipped"
    except json.JSONDecodeError as exc:
        return None, f"{'truncated JSON' if _cut_short(text, exc) else 'not JSON'}: {exc}"
    except ValueError as exc:  # an integer of more than 4,300 digits
        return None, f"not JSON: {exc}"


def structure_problem(raw: bytes, data: Any) -> str | None:
    """A value nested deeper than `CAPTURE_MAX_DEPTH`, or a lone surrogate, as 'KEY: what'. Only
    a line that could hold one is walked: enough brackets, or a `\\uD8xx`-`\\uDFxx` escape."""
    deep = raw.count(b"[") + raw.count(b"{") > CAPTURE_MAX_DEPTH
    surrogate = _SURROGATE_ESCAPE.search(raw) is not None
    if not deep and not surrogate:
        return None
    return first_json_problem(data, CAPTURE_MAX_DEPTH, surrogates=surrogate)


def id_problem(data: Any) -> str | None:
    """Why `data` has no usable conversation id, or None; said without quoting the id."""
    if not isinstance(data, dict):
        return "not a JSON object"
    if "conversation_id" not in data:
        return "no conversation_id"
    cid = data["conversation_id"]
    if not isinstance(cid, str):
        return f"conversation_id is not a string (found {type(cid).__name__})"
    if not cid:
        return "conversation_id is empty"
    if printable(cid) != cid:
        return "conversation_id holds a lone surrogate (half of a UTF-16 pair; not valid Unicode)"
    return None
