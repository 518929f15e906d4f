"""Live traffic other tools logged, read into the capture records of the native format: which
format a file is in, and the reader each format's name maps to.

Two formats besides the plugin's own capture lines (`capture.CapturedTurn`): `openai`, OpenAI
chat-completions logs (`_format_openai`), and `otel`, OpenTelemetry GenAI spans as OTLP JSON
(`_format_otel`); what their readers share is in `_format_shared`. Both feed
`conversations.CaptureBuilder`, so sampling, validation, redaction and the reports are exactly the
native reader's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import IO, Any

from ._format_openai import _read_openai
from ._format_otel import _otel_conversations, _read_otlp, _Span
from .conversations import CaptureBuilder

__all__ = ["detect_format", "finish", "read_file"]

DETECT_LINES = 50
"""How many non-blank lines `detect_format` looks at before it gives up on JSON lines."""


# -- detection --------------------------------------------------------------------------------


def _kind(data: dict[str, Any]) -> str:
    if "resourceSpans" in data:
        return "otel"
    if isinstance(data.get("messages"), list):
        return "openai"
    return "native"


def detect_format(fh: IO[bytes]) -> str:
    """`native`, `openai` or `otel`, from a file's content: the first line that is a JSON object
    decides (`resourceSpans`: otel; a `messages` array: openai; anything else: native); a file
    none of whose first lines is one may be a whole, pretty-printed OTLP JSON document."""
    try:
        fh.seek(0)
        seen = 0
        for raw in fh:
            if not raw.strip():
                continue
            seen += 1
            if seen > DETECT_LINES:
                break
            try:
                data = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if isinstance(data, dict):
                return _kind(data)
        fh.seek(0)
        whole = fh.read()
        if whole.lstrip().startswith(b"{"):
            try:
                data = json.loads(whole)
            except (ValueError, RecursionError):
                return "native"
            if isinstance(data, dict) and "resourceSpans" in data:
                return "otel"
        return "native"
    finally:
        fh.seek(0)


_READERS: dict[str, Callable[[IO[bytes], str, CaptureBuilder], None]] = {
    "openai": _read_openai,
    "otel": _read_otlp,
}
"""The reader of each foreign format, by the name `read_capture` is given."""


def read_file(fh: IO[bytes], shown: str, found: CaptureBuilder, format: str) -> bool:
    """Read one open file in `format` (`auto`: detected) into `found`; False when it is native
    capture lines, left for the native reader (the file is rewound)."""
    kind = detect_format(fh) if format == "auto" else format
    fh.seek(0)
    reader = _READERS.get(kind)
    if reader is None:
        return False
    reader(fh, shown, found)
    return True


def finish(found: CaptureBuilder) -> None:
    """After every file is read: the spans kept, grouped into conversations."""
    spans = [s for s in found.pending if isinstance(s, _Span)]
    found.pending = [s for s in found.pending if not isinstance(s, _Span)]
    _otel_conversations(spans, found)
