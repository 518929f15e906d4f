"""docs/options.md, generated from the table, and the names a test compares it by."""

from __future__ import annotations

import re

from .table import TABLE, Setting

# -- docs/options.md -------------------------------------------------------------------------

_ORIGIN_WORDS = {"option": "command line", "ini": "ini", "env": "environment"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_text(s: Setting) -> str:
    if s.kind == "flag":
        return "off"
    if s.default is None or s.default == ():
        return "—"
    if isinstance(s.default, tuple):
        return " ".join(s.default)
    return str(s.default)


def _precedence(s: Setting) -> str:
    found = [o for o in s.order if getattr(s, o)]
    return " > ".join(_ORIGIN_WORDS[o] for o in found)


def options_markdown() -> str:
    """docs/options.md, generated from TABLE."""
    lines = [
        "# Options, ini keys and environment variables",
        "",
        "Every setting of the plugin, generated from the table in",
        "`pytest_commerce_evals/settings/table.py` (`python -m pytest_commerce_evals.settings",
        "> docs/options.md`); a test keeps the two equal.",
        "",
        "A setting given in more than one place takes the first of its *precedence* column;",
        "a one-value ini key or a variable set to an empty value counts as not set, while an",
        "empty list ini key is an empty list (`commerce_redact =` redacts nothing). A bad value",
        "stops the run before any trial with a usage error naming where it came from",
        "(`--commerce-trials`, `ini commerce_trials`, `env COMMERCE_CONCURRENCY`), the value",
        "found and what is allowed. The endpoints' variables (`OPENAI_BASE_URL`,",
        "`COMMERCE_JUDGE_BASE_URL`), which other tools read too, are checked only when a run's",
        "trials need the endpoint.",
        "",
        "| Option | Ini key | Environment | Type / allowed | Default | Precedence | Help |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in TABLE:
        cells = [
            f"`{s.option}`" if s.option else "",
            f"`{s.ini}`" if s.ini else "",
            f"`{s.env}`" if s.env else "",
            _cell(s.describe_allowed()),
            _cell(_default_text(s)),
            _precedence(s),
            _cell(s.help),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def declared_names() -> set[str]:
    """Every option, ini key and environment variable TABLE declares."""
    return {n for s in TABLE for n in (s.option, s.ini, s.env) if n}


_DOC_NAME = re.compile(r"`((?:--commerce-|commerce_|COMMERCE_|OPENAI_)[A-Za-z0-9_-]+)`")


def documented_names(text: str) -> set[str]:
    """The option, ini and environment names in the table rows of docs/options.md."""
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| `") or line.startswith("|  |") or line.startswith("| |"):
            cells = line.split("|")[1:4]
            for cell in cells:
                found.update(_DOC_NAME.findall(cell))
    return found
