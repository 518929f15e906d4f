"""Plain data from a YAML or JSON parser's events, with each key's line, within bounds.

The builder here takes the parser's events (libyaml's when present) instead of PyYAML's
constructor, so that it can

- refuse a key given twice in one mapping (PyYAML keeps the last silently), naming both lines;
- refuse tags outside plain data (`!!binary`, `!!set`, `!!python/…`, custom tags), values PyYAML
  cannot build (`2025-02-30`, `!!int abc`, `!!bool maybe`), numbers past `MAX_NUMBER_CHARS`
  characters, `.nan`/`.inf`, and keys that are not text;
- bound the work: nesting deeper than `MAX_DEPTH` stops the read (libyaml's own composer recurses
  in C: 10,000 levels took it half a second, 100,000 crashed the process), and so do aliases
  that repeat more than `MAX_ALIAS_VALUES` values (an alias "bomb": a few hundred bytes that
  expand to millions of values); an alias inside its own anchor (`&a [*a]`) is an error;
- record each key's line on the way, in the same pass.

What cannot be built is collected (`Built.problems`) and the read goes on; only a bound passed
stops it, with `DocumentTooLarge`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import yaml

from ..errors import DocumentTooLarge

MAX_DEPTH = 64
"""Lists and mappings inside each other, at most; a case needs about six."""
MAX_ALIAS_VALUES = 100_000
"""Values that aliases may repeat in one file, each repeat counted."""
MAX_ALIAS_LINES = 10_000
"""Keys inside repeated values whose own lines are kept; past these, a problem inside a repeated
value is reported at its alias."""
MAX_NUMBER_CHARS = 1_000
"""Characters in one number, at most (Python refuses integers past 4,300 digits anyway)."""


YAML_TAG = "tag:yaml.org,2002:"
"""The prefix of the YAML 1.1 tags of plain data (`!!str` is `YAML_TAG + "str"`)."""
STR_TAG, _MERGE_TAG, _VALUE_TAG = YAML_TAG + "str", YAML_TAG + "merge", YAML_TAG + "value"
_BUILT_SCALARS = {
    YAML_TAG + "null": "null",
    YAML_TAG + "bool": "true/false",
    YAML_TAG + "int": "integer",
    YAML_TAG + "float": "number",
    YAML_TAG + "timestamp": "date",
}
_COLLECTION_TAGS = {None, "!", YAML_TAG + "seq", YAML_TAG + "map"}
_SCALAR_BUILDER = yaml.constructor.SafeConstructor()
_MERGE = object()  # the `<<` key
_AWAIT_KEY = object()
_BAD_KEY = object()
_MISSING = object()


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(YAML_TAG) if tag.startswith(YAML_TAG) else tag


def _tag_refused(tag: str) -> str:
    return (
        f"the tag {_short_tag(tag)} is not allowed; a case file holds text, numbers, "
        "true/false, null, dates, lists and mappings"
    )


def type_name(value: Any) -> str:
    """How a message names a value's kind: `null`, `true/false`, `a list`, `a mapping`, `text`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    return {"list": "a list", "dict": "a mapping", "str": "text"}.get(
        type(value).__name__, type(value).__name__
    )


class _Frame:
    """A list or mapping being built."""

    __slots__ = ("value", "path", "anchor", "rows_at", "size", "keys", "key", "key_line", "merges")

    def __init__(self, value: Any, path: tuple, anchor: str | None, rows_at: int) -> None:
        self.value = value
        self.path = path
        self.anchor = anchor
        self.rows_at = rows_at
        self.size = 1
        self.keys: dict[str, int] = {}
        self.key: Any = _AWAIT_KEY
        self.key_line = 0
        self.merges: list[tuple[dict, tuple]] = []


@dataclass
class Built:
    """One document's data, its keys' lines, and what could not be built."""

    data: Any
    rows: list[tuple[tuple, int]]
    """Every key path with its line: the key's line for a mapping value, else the value's."""
    problems: list[tuple[tuple, int, str]]
    """(key path, line, message) for each value that could not be built."""


class Builder:
    """Plain data from the events of one YAML document, with each value's line.

    `loader` is a PyYAML loader over the text, or anything with its `get_event`, `check_event`
    and `resolve` (`JsonEvents`); `alias_lines` is `MAX_ALIAS_LINES` unless given."""

    def __init__(self, loader: Any, alias_lines: int = MAX_ALIAS_LINES) -> None:
        self.loader = loader
        self.alias_lines = alias_lines
        self.rows: list[tuple[tuple, int]] = []
        self.problems: list[tuple[tuple, int, str]] = []
        # name -> (value, size, (first row, end row, depth) of the rows written below it); None
        # while open. The rows are sliced only when an alias replays them: copying them at each
        # anchor would cost depth x rows for nested anchors that no alias ever uses
        self.anchors: dict[str, Any] = {}
        self.anchor_lines: dict[str, int] = {}
        self.repeated = 0
        self.replayed = 0
        # a scalar's tag without asking the loader where the answer is text anyway: its first
        # character starts no implicit resolver's pattern, and no resolver matches any text
        # (18,000 scalars in 1,000 cases; the loader's `resolve` is Python, a call each)
        table = getattr(loader, "yaml_implicit_resolvers", None)
        self.resolved_first: frozenset[str] | None = (
            frozenset(k for k in table if k)
            if table is not None
            and None not in table
            and not getattr(loader, "yaml_path_resolvers", None)
            else None
        )
        """First characters that a plain scalar's implicit tag depends on; None: ask the loader
        for every scalar."""

    def problem(self, path: tuple, line: int, message: str) -> None:
        self.problems.append((path, line, message))

    def document(self) -> Built:
        loader = self.loader
        loader.get_event()  # stream start
        data = None
        if not loader.check_event(yaml.StreamEndEvent):
            start = loader.get_event()  # document start
            data = self.value()
            loader.get_event()  # document end
            if not loader.check_event(yaml.StreamEndEvent):
                raise yaml.composer.ComposerError(
                    "expected a single document in the stream",
                    start.start_mark,
                    "but found another document",
                    loader.get_event().start_mark,
                )
        return Built(data, self.rows, self.problems)

    def _child(self, stack: list[_Frame], line: int) -> tuple[tuple, int, bool]:
        """Where the next value goes: its path, the line its row gets, whether it is a key."""
        if not stack:
            return (), line, False
        parent = stack[-1]
        if isinstance(parent.value, list):
            return (*parent.path, len(parent.value)), line, False
        key = parent.key
        if key is _AWAIT_KEY:
            return parent.path, line, True
        if key is _MERGE:
            return (*parent.path, "<<"), parent.key_line, False
        if key is _BAD_KEY:
            return (*parent.path, "?"), parent.key_line, False
        return (*parent.path, key), parent.key_line, False

    def value(self) -> Any:
        """The next value: a scalar, or a list or mapping read to its end (a loop over a stack
        of open frames, not recursion, so nesting costs no Python frames)."""
        get_event = self.loader.get_event
        rows = self.rows
        first = self.resolved_first
        stack: list[_Frame] = []
        while True:
            event = get_event()
            kind = type(event)
            line = event.start_mark.line + 1
            if kind is yaml.ScalarEvent:
                text = event.value
                if (
                    stack
                    and event.anchor is None
                    and event.tag is None
                    and first is not None
                    and text
                    and text[0] not in first
                    and text.isascii()
                ):
                    # most of a file: plain ASCII text in a mapping or a list, written here
                    # as `_child`, `scalar` and `attach` would (the rest goes through them)
                    parent = stack[-1]
                    container = parent.value
                    parent.size += 1
                    if type(container) is list:
                        rows.append(((*parent.path, len(container)), line))
                        container.append(text)
                        continue
                    key = parent.key
                    if key is _AWAIT_KEY:
                        if text in parent.keys:
                            self.attach(parent, text, 0, line)  # says it is a duplicate
                        else:
                            parent.keys[text] = line
                            parent.key = text
                            parent.key_line = line
                        continue
                    if key is not _MERGE and key is not _BAD_KEY:
                        rows.append(((*parent.path, key), parent.key_line))
                        parent.key = _AWAIT_KEY
                        container[key] = text
                        continue
                    parent.size -= 1
                path, row_line, is_key = self._child(stack, line)
                value = self.scalar(event, path, line, is_key)
                size = 1
                if not is_key:
                    rows.append((path, row_line))
                if event.anchor is not None:
                    self.define(event.anchor, line, path)
                    self.anchors[event.anchor] = (value, 1, None)
            elif kind is yaml.SequenceStartEvent or kind is yaml.MappingStartEvent:
                if len(stack) >= MAX_DEPTH:
                    raise DocumentTooLarge(
                        line,
                        f"lists and mappings nest deeper than {MAX_DEPTH} levels here; "
                        "the file was read no further (a case needs about six)",
                    )
                path, row_line, is_key = self._child(stack, line)
                if event.tag not in _COLLECTION_TAGS:
                    self.problem(path, line, _tag_refused(event.tag))
                if not is_key:
                    self.rows.append((path, row_line))
                if event.anchor is not None:
                    self.define(event.anchor, line, path)
                    self.anchors[event.anchor] = None  # open: an alias to it now is recursive
                stack.append(
                    _Frame(
                        [] if kind is yaml.SequenceStartEvent else {},
                        path,
                        event.anchor,
                        len(self.rows),
                    )
                )
                continue
            elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
                frame = stack.pop()
                if frame.merges:
                    self.merge(frame)
                value, size = frame.value, frame.size
                if frame.anchor is not None:
                    span = (frame.rows_at, len(self.rows), len(frame.path))
                    self.anchors[frame.anchor] = (value, size, span)
            elif kind is yaml.AliasEvent:
                path, row_line, is_key = self._child(stack, line)
                value, size = self.alias(event.anchor, path, line)
                if not is_key:
                    self.rows.append((path, row_line))
                    if size > 1:
                        self.replay(event.anchor, path)
            else:  # pragma: no cover - the parser sends nothing else inside a document
                raise yaml.composer.ComposerError(
                    None, None, f"unexpected {kind.__name__}", event.start_mark
                )
            if not stack:
                return value
            self.attach(stack[-1], value, size, line)

    def replay(self, name: str, path: tuple) -> None:
        """The rows written below anchor `name`, again at the alias's `path`, while the
        `alias_lines` allowance lasts; past it, the keys inside keep the alias's line."""
        anchor = self.anchors.get(name)
        span = anchor[2] if anchor else None
        if span is not None:
            start, end, depth = span
            if end > start and self.replayed + (end - start) <= self.alias_lines:
                self.replayed += end - start
                self.rows.extend(((*path, *p[depth:]), n) for p, n in self.rows[start:end])

    def define(self, name: str, line: int, path: tuple) -> None:
        if name in self.anchor_lines:
            self.problem(
                path,
                line,
                f"anchor &{name} is defined twice (lines {self.anchor_lines[name]} and {line}); "
                "give each anchor its own name",
            )
        self.anchor_lines[name] = line

    def alias(self, name: str, path: tuple, line: int) -> tuple[Any, int]:
        anchor = self.anchors.get(name, _MISSING)
        if anchor is _MISSING:
            self.problem(path, line, f"alias *{name} has no anchor &{name} before it")
            return None, 1
        if anchor is None:
            self.problem(
                path,
                line,
                f"alias *{name} is inside the value its anchor &{name} names; "
                "a value cannot contain itself",
            )
            return None, 1
        value, size, _ = anchor
        self.repeated += size
        if self.repeated > MAX_ALIAS_VALUES:
            raise DocumentTooLarge(
                line,
                f"aliases repeat more than {MAX_ALIAS_VALUES:,} values (here *{name}); "
                "the file was read no further",
            )
        return value, size

    def scalar(self, event: Any, path: tuple, line: int, is_key: bool) -> Any:
        text = event.value
        tag = event.tag
        if tag is None or tag == "!":
            first = self.resolved_first
            if first is not None and text and text[0] not in first:
                tag = STR_TAG
            else:
                tag = self.loader.resolve(yaml.ScalarNode, text, event.implicit)
        if tag == STR_TAG or tag == _VALUE_TAG:  # a plain `=` is text, as in YAML 1.2
            if text.isascii():
                return text
            return self.text(text, path, line)
        if tag == _MERGE_TAG:
            if is_key:
                return _MERGE
            self.problem(path, line, "<< merges a mapping into one; as a value, quote it")
            return None
        kind = _BUILT_SCALARS.get(tag)
        if kind is None:
            self.problem(path, line, _tag_refused(tag))
            return None
        if len(text) > MAX_NUMBER_CHARS:
            article = "an" if kind[0] in "aeiou" else "a"
            self.problem(path, line, f"{article} {kind} of {len(text):,} characters is too long")
            return None
        try:
            value = _SCALAR_BUILDER.yaml_constructors[tag](
                _SCALAR_BUILDER, yaml.ScalarNode(tag, text)
            )
        except Exception as exc:  # ValueError, KeyError, AttributeError: PyYAML's own checks
            reason = str(exc) if isinstance(exc, ValueError) else ""
            hint = f" ({reason})" if reason and len(reason) < 100 else ""
            self.problem(
                path,
                line,
                f"{text!r} is not a valid {kind}{hint}; quote it if it is meant as text",
            )
            return None
        if isinstance(value, float) and not math.isfinite(value):
            self.problem(path, line, f"{text} is not a finite number; use a number or quote it")
            return None
        return value

    def text(self, text: str, path: tuple, line: int) -> str | None:
        try:
            text.encode("utf-8")
            return text
        except UnicodeEncodeError:
            pass
        try:  # a pair of surrogate escapes is one character
            return text.encode("utf-16", "surrogatepass").decode("utf-16")
        except UnicodeDecodeError:
            self.problem(
                path,
                line,
                "the text holds half of a surrogate pair (an escape such as \\ud83e alone), "
                "which is not a character; write the character itself",
            )
            return None

    def attach(self, parent: _Frame, value: Any, size: int, line: int) -> None:
        parent.size += size
        container = parent.value
        if isinstance(container, list):
            container.append(value)
            return
        key = parent.key
        if key is _AWAIT_KEY:
            parent.key_line = line
            if value is _MERGE:
                parent.key = _MERGE
            elif not isinstance(value, str):
                parent.key = _BAD_KEY
                found = type_name(value)
                if not isinstance(value, list | dict):
                    found = f"{json.dumps(value, default=str)} ({found})"
                self.problem(parent.path, line, f"a key must be text; found {found}: quote it")
            elif value in parent.keys:
                parent.key = _BAD_KEY
                self.problem(
                    (*parent.path, value),
                    line,
                    f"duplicate key {value!r}: first on line {parent.keys[value]}, again on "
                    f"line {line}; a key can appear once in a mapping",
                )
            else:
                parent.keys[value] = line
                parent.key = value
            return
        parent.key = _AWAIT_KEY
        if key is _MERGE:
            sources = value if isinstance(value, list) else [value]
            if all(isinstance(s, dict) for s in sources):
                prefixes = (
                    [("<<", i) for i in range(len(sources))] if sources is value else [("<<",)]
                )
                parent.merges.extend(zip(sources, prefixes, strict=True))
            else:
                self.problem(
                    (*parent.path, "<<"),
                    parent.key_line,
                    f"<< merges a mapping or a list of mappings; found {type_name(value)}",
                )
        elif key is not _BAD_KEY:
            container[key] = value

    def merge(self, frame: _Frame) -> None:
        """`<<: *base`: the keys of the merged mappings the mapping does not give itself (the
        first merged mapping wins among them, as the merge key specifies), with the lines they
        were written on."""
        depth = len(frame.path)
        below = [
            (p[depth:], n) for p, n in self.rows[frame.rows_at :] if p[depth : depth + 1] == ("<<",)
        ]
        merged: dict[str, Any] = {}
        for source, prefix in frame.merges:
            for key, value in source.items():
                if key not in merged and key not in frame.value:
                    merged[key] = value
                    at = (*prefix, key)
                    self.rows.extend(
                        ((*frame.path, *p[len(prefix) :]), n)
                        for p, n in below
                        if p[: len(at)] == at
                    )
        merged.update(frame.value)
        frame.value = merged
