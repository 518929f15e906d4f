"""JSON every writer and reader here can take: lone surrogates escaped, values nested past a
limit written as their JSON text, and the problems of a value said with its key path. Part of the
contract: the trial record (`results`), the run store, the live reader and the reports all write
through these, and this module imports no feature.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "clean_json",
    "deep_json_path",
    "first_json_problem",
    "is_clean",
    "json_text",
    "key_path",
    "printable",
    "short_repr",
    "surrogate_problem",
    "text_encodes",
]

MAX_DEPTH = 400
"""How deeply a run record's arrays and objects may nest, the record itself being level 1. A
trial's value nested deeper is written as its JSON text, so every record written reads back;
a record nested deeper is refused when read."""


def printable(text: str) -> str:
    """`text` with each lone surrogate written as the escape `\\udXXX`, everything else kept.

    A lone surrogate (half of a UTF-16 pair, e.g. a model reply cut inside an emoji) is a valid
    Python string but no UTF-8 file, database or terminal takes it.
    """
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def text_encodes(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def is_clean(value: Any, limit: int) -> bool:
    """No lone surrogate in any string or key, and no array or object deeper than `limit`.

    Called on every trial a run records, so it is written for speed: scalars are checked where
    they are found (ASCII text, most of it, costs one `isascii`) and only containers are stacked.
    """
    if isinstance(value, str):
        return text_encodes(value)
    if not isinstance(value, dict | list | tuple):
        return True
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return False
        if isinstance(item, dict):
            for key in item:
                if isinstance(key, str) and not key.isascii() and not text_encodes(key):
                    return False
            children = item.values()
        else:
            children = item
        for child in children:
            if isinstance(child, str):
                if not child.isascii() and not text_encodes(child):
                    return False
            elif isinstance(child, dict | list | tuple):
                stack.append((child, depth + 1))
    return True


class _Raw(str):
    """JSON text already written, on `json_text`'s stack."""


def json_text(value: Any) -> str:
    """Compact JSON text of a value nested to any depth (`json.dumps` recurses and stops near
    1,000 levels); lone surrogates escaped, unknown types as their `str`."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Raw):
            out.append(item)
        elif isinstance(item, str):
            out.append(json.dumps(printable(item), ensure_ascii=False))
        elif isinstance(item, dict):
            parts: list[Any] = [_Raw("{")]
            for n, (key, child) in enumerate(item.items()):
                name = printable(key) if isinstance(key, str) else str(key)
                parts += [
                    _Raw(("," if n else "") + json.dumps(name, ensure_ascii=False) + ":"),
                    child,
                ]
            stack.extend(reversed([*parts, _Raw("}")]))
        elif isinstance(item, list | tuple):
            parts = [_Raw("[")]
            for n, child in enumerate(item):
                parts += [_Raw(",")] if n else []
                parts.append(child)
            stack.extend(reversed([*parts, _Raw("]")]))
        else:
            out.append(json.dumps(item, default=str))
    return "".join(out)


def clean_json(value: Any, limit: int = MAX_DEPTH) -> Any:
    """`value` as every JSON writer and reader here takes it: lone surrogates in strings and keys
    escaped (`printable`), and each array or object nested deeper than `limit` levels replaced by
    its JSON text. Returns `value` itself when nothing needed changing."""
    if is_clean(value, limit):
        return value
    root: list[Any] = [None]
    stack: list[tuple[Any, int, Any, Any]] = [(value, 1, root, 0)]
    while stack:
        item, depth, into, slot = stack.pop()
        if isinstance(item, str):
            into[slot] = printable(item)
        elif isinstance(item, dict | list | tuple) and depth > limit:
            into[slot] = json_text(item)
        elif isinstance(item, dict):
            built: dict[Any, Any] = {}
            into[slot] = built
            for key, child in item.items():
                name = printable(key) if isinstance(key, str) else key
                built[name] = None
                stack.append((child, depth + 1, built, name))
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            into[slot] = items
            stack.extend((child, depth + 1, items, n) for n, child in enumerate(item))
        else:
            into[slot] = item
    return root[0]


def short_repr(value: Any, most: int = 40) -> str:
    """`repr(value)`, cut with an ellipsis (and its length) when longer than `most`."""
    text = printable(repr(value))
    return text if len(text) <= most else f"{text[: most - 10]}… ({len(text)} characters)"


def key_path(parts: Iterable[Any]) -> str:
    """`trials.0.turns.0.3.result` for a list of keys and indexes; a long one cut in the middle."""
    names = [printable(str(p)) for p in parts]
    if len(names) > 10:
        names = [*names[:6], f"… {len(names) - 8} more …", *names[-2:]]
    return ".".join(names) or "(the top level)"


def first_json_problem(value: Any, limit: int, *, surrogates: bool) -> str | None:
    """Where `value` breaks a rule of `clean_json`, as 'KEY: what', in document order: an array
    or object nested deeper than `limit`, or (with `surrogates`) a string or key holding a lone
    surrogate. None when there is none."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 1, ())]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, str):
            if surrogates and not text_encodes(item):
                return f"{key_path(where)}: {surrogate_problem(item)}"
        elif isinstance(item, dict | list | tuple):
            if depth > limit:
                return f"{key_path(where)}: nested deeper than {limit} levels"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            children = []
            for key, child in pairs:
                if surrogates and isinstance(key, str) and not text_encodes(key):
                    return f"{key_path((*where, key))}: the key holds {surrogate_problem(key)[2:]}"
                children.append((child, depth + 1, (*where, key)))
            stack.extend(reversed(children))
    return None


def surrogate_problem(text: str) -> str:
    found = next(c for c in text if "\ud800" <= c <= "\udfff")
    return f"a lone surrogate \\u{ord(found):04x} (half of a UTF-16 pair; not valid Unicode text)"


_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]++|\\.)*+)"|([\[\]{},:])|[^\s\[\]{},:"]+)', re.S)


def deep_json_path(text: str, limit: int) -> str:
    """The key path at which JSON `text` first nests deeper than `limit` levels, found without
    parsing it (for text too deep for `json.loads`); '(unknown)' when the text ends first."""
    stack: list[list[Any]] = []  # per open container: [is_object, key or index, awaiting a key]
    pos = 0
    while (m := _TOKEN.match(text, pos)) is not None and m.end() > pos:
        pos = m.end()
        string, mark = m.group(1), m.group(2)
        top = stack[-1] if stack else None
        if mark in ("[", "{"):
            if len(stack) >= limit:
                return key_path(entry[1] for entry in stack)
            stack.append([mark == "{", 0 if mark == "[" else None, mark == "{"])
        elif mark in ("]", "}"):
            if stack:
                stack.pop()
        elif mark == "," and top is not None:
            if top[0]:
                top[2] = True
            else:
                top[1] += 1
        elif string is not None and top is not None and top[0] and top[2]:
            try:
                top[1] = json.loads(f'"{string}"')
            except ValueError:
                top[1] = string
            top[2] = False
    return "(unknown)"
