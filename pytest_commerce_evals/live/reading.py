"""Reading captured traffic: the capture files under the paths given, each line read, the
conversations sampled (`--commerce-live=PATH --commerce-sample-rate=R`).

The native capture lines are read here; OpenAI chat-completions logs and OpenTelemetry GenAI
spans are read by `_formats` into the same records, which `CaptureBuilder` samples, validates
and redacts alike.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from types import ModuleType

from ..jsonsafe import printable
from .conversations import Capture, CaptureBuilder, CaptureProblem
from .lines import parse_line
from .redaction import NO_REDACTION, Redactor

__all__ = ["LIVE_FORMATS", "capture_files", "read_capture"]


def capture_files(
    paths: Iterable[str | os.PathLike[str]], suffixes: Sequence[str] | None = None
) -> list[Path]:
    """Files named, and the files under folders named whose names end in one of `suffixes`
    (default `.jsonl`), in a stable order."""
    suffixes = tuple(suffixes or (".jsonl",))
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out += sorted(q for q in path.rglob("*") if q.suffix in suffixes and q.is_file())
        else:
            out.append(path)
    return out


LIVE_FORMATS = ("auto", "native", "openai", "otel")
"""The formats `read_capture` reads: the plugin's capture lines, OpenAI chat-completions logs,
OpenTelemetry GenAI spans as OTLP JSON, or `auto` (decided per file, `live._formats`)."""


def read_capture(
    paths: Iterable[str | os.PathLike[str]],
    *,
    rate: float = 1.0,
    seed: str | int = 0,
    redactor: Redactor | None = None,
    display: Callable[[Path], str] = str,
    format: str = "native",
) -> Capture:
    """Read capture files, keep the sampled conversations, and report every unusable line.

    A line that is not JSON (or is JSON cut short: "truncated JSON"), is nested too deeply to
    read, or has no usable conversation id is skipped on its own. A line of a sampled
    conversation that does not validate (an unknown event type or schema_version, a missing key,
    a turn out of range, a lone surrogate, nesting deeper than `CAPTURE_MAX_DEPTH`, a repeated
    turn) takes its whole conversation out of the sample, reported, since judging a transcript
    with a turn missing would grade something that never happened. Conversations outside the
    sample are not validated at all. Every problem names the file and the line; none quotes the
    line's content.

    `format` (one of `LIVE_FORMATS`) reads OpenAI chat-completions logs or OpenTelemetry GenAI
    spans instead (`live._formats`); their conversations are sampled, validated and redacted
    the same way.
    """
    if format not in LIVE_FORMATS:
        raise ValueError(
            f"unknown live traffic format {format!r}; known: {', '.join(LIVE_FORMATS)}"
        )
    found = CaptureBuilder(rate, seed, redactor or NO_REDACTION)
    capture = found.capture
    foreign: ModuleType | None = None  # _formats, imported when a foreign format is read
    for path in capture_files(paths, suffixes=(".jsonl", ".json") if format == "otel" else None):
        shown = printable(display(path))
        if path.exists() and not path.is_file():  # a folder, or a pipe that would block
            capture.problems.append(CaptureProblem(shown, 0, "cannot read: not a regular file"))
            continue
        try:
            fh = path.open("rb")
        except OSError as exc:
            capture.problems.append(CaptureProblem(shown, 0, f"cannot read: {exc.strerror or exc}"))
            continue
        with fh:
            if format != "native":
                if foreign is None:
                    from . import _formats

                    foreign = _formats
                if foreign.read_file(fh, shown, found, format):
                    continue  # read as a foreign format
            for n, raw in enumerate(fh, 1):
                capture.lines += 1
                if not raw.strip():
                    continue
                data, error = parse_line(raw)
                if error is not None:
                    capture.problems.append(CaptureProblem(shown, n, error))
                    continue
                found.offer(shown, n, raw, data)
    if foreign is not None:
        foreign.finish(found)
    return found.finish()
