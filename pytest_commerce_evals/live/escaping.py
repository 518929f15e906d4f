"""Text written where something reads it as more than text: a terminal line (`terminal_text`), a
shell command (`shell_word`) and a YAML case file (`_Dumper`, `_quoted`), each escaped so what is
shown is what was captured and what is written loads back as it was."""

from __future__ import annotations

import json
import shlex

import yaml

from ..jsonsafe import printable

__all__ = ["shell_word", "terminal_text"]


def terminal_text(text: str) -> str:
    """`text` with every character a terminal acts on or does not show written as its escape
    (`\\x1b`, `\\x7f`, `\\x9b`, `\\n`, `\\u2028`, `\\u202e`): ESC, OSC and BEL sequences,
    DEL, C0 and C1 controls, line breaks, tabs, format characters such as bidi overrides, lone
    surrogates. A space and every printable character are kept as they are."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def shell_word(word: str) -> str:
    """`word` as one word of a shell command: `shlex.quote`, or, when it holds a character a
    terminal line cannot show (a control, a line break), ANSI-C quoting `$'…'` (bash, zsh,
    POSIX.1-2024 sh) with each such character escaped, so the command shown is the command
    that runs."""
    if word.isprintable():
        return shlex.quote(word)
    out = []
    for c in word:
        if c in "\\'":
            out.append("\\" + c)
        elif c.isprintable():
            out.append(c)
        elif ord(c) < 0x80:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return "$'" + "".join(out) + "'"


class _Dumper(yaml.SafeDumper):
    """Safe YAML in which a string holding any character that is not printable (a control, DEL,
    a C1 control, a line break, a format character) is double-quoted, every such character
    escaped: the text stays on its line and loads back as it was. A lone surrogate (which no
    YAML file can hold) is written as the text `\\udXXX`, as the capture writer writes it."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    data = printable(data)  # a lone surrogate as the text `\\udXXX`: YAML has no escape for one
    style = None if data.isprintable() else '"'
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def _quoted(text: str) -> str:
    """A string as a one-line YAML double-quoted scalar (JSON's escapes, and `\\uXXXX` or
    `\\UXXXXXXXX` for each other character that is not printable)."""
    dumped = json.dumps(printable(text), ensure_ascii=False)
    if dumped.isprintable():
        return dumped
    return "".join(
        c if c.isprintable() else (f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}")
        for c in dumped
    )
