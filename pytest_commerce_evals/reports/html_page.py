"""The page both HTML reports share: one self-contained file (inline CSS and JS, no network)
with the helpers every section uses to escape, badge and show JSON, and the writing of the file.

Everything taken from a run is escaped: transcripts carry whatever a model or a poisoned fixture
wrote. The script embeds no data; it only filters and expands what the HTML already shows.
"""

from __future__ import annotations

import json
import re
from html import escape
from importlib.resources import files
from pathlib import Path
from typing import Any

from ..jsonsafe import json_text

__all__ = ["case_anchor", "e", "write_html"]

MAX_PAYLOAD_CHARS = 20_000


def _asset(name: str) -> str:
    """A file of `assets/` as the page inlines it: on the line after its `<style>` or `<script>`
    tag."""
    return "\n" + files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


_CSS = _asset("report.css")
_JS = _asset("report.js")


def e(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return escape("" if value is None else str(value), quote=True)


def case_anchor(case_id: str) -> str:
    return "case-" + re.sub(r"[^A-Za-z0-9_-]", "_", case_id)


def _json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
        if len(text) > 100:  # short payloads read best on one line; long ones indented
            text = json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    except (RecursionError, TypeError, ValueError):
        # nested past what json.dumps recurses into, or keys of mixed types that do not sort
        text = json_text(value)
    if len(text) > MAX_PAYLOAD_CHARS:
        cut = len(text) - MAX_PAYLOAD_CHARS
        text = (
            text[:MAX_PAYLOAD_CHARS]
            + f"\n… ({cut} more characters not shown; the JSON record has them)"
        )
    return f"<pre>{e(text)}</pre>"


def _badge(label: str, kind: str | None = None) -> str:
    return f'<span class="badge b-{e(kind or label)}">{e(label)}</span>'


def _pct(x: float | None) -> str:
    return f"{x:.1%}" if x is not None else "n/a"


def _page(title: str, subtitle: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{_CSS}</style></head><body>"
        f'<header><h1>{e(title)}</h1><div class="sub">{e(subtitle)}</div></header>'
        f"<main>{body}</main><script>{_JS}</script></body></html>\n"
    )


def write_html(text: str, path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8", errors="backslashreplace")  # never a lone surrogate
    return path
