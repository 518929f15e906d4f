"""A case file's text, or the problem that stops it being read: never a raise, never a hang."""

from __future__ import annotations

from pathlib import Path

from .problems import CaseProblem

MAX_FILE_BYTES = 32 * 2**20
"""A case file or `_set.yaml` this large is not read (10,000 cases take about 4 MB)."""


def read_text(
    path: Path, shown: Path, max_bytes: int = MAX_FILE_BYTES
) -> tuple[str | None, CaseProblem | None]:
    """The file's text (UTF-8, newlines as `read_text` gives them), or why it cannot be read."""
    try:
        if path.is_dir():
            return None, CaseProblem(shown, None, None, "is a folder; expected a file")
        if not path.is_file():  # a pipe or a device would block the read, or never end
            return None, CaseProblem(shown, None, None, "is not a regular file")
        size = path.stat().st_size
        if size > max_bytes:
            return None, CaseProblem(
                shown,
                None,
                None,
                f"is {size:,} bytes; a case file holds at most {max_bytes:,}",
            )
        raw = path.read_bytes()
    except OSError as exc:
        return None, CaseProblem(
            shown, None, None, f"cannot read the file: {exc.strerror or type(exc).__name__}"
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        line = raw.count(b"\n", 0, exc.start) + 1
        column = len(raw[line_start : exc.start].decode("utf-8", "replace")) + 1
        return None, CaseProblem(
            shown,
            line,
            None,
            f"not UTF-8: byte 0x{raw[exc.start]:02x} at column {column} is not a character; "
            "save the file as UTF-8",
        )
    if "\r" in text:  # as read_text's universal newlines
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text, None
