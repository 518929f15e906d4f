"""Reading case files: YAML or JSON, one case or a list, every error with its file and line.

Case files and `_set.yaml` are input the suite does not control, so reading one never raises and
never takes long: whatever is wrong comes back as a `CaseProblem` naming the file, the line, the
key, what was found and what is allowed, and the other files still collect and run.

The YAML reader here builds plain data from the parser's events (libyaml when present) instead of
PyYAML's constructor, so that it can

- refuse a key given twice in one mapping (PyYAML keeps the last silently), naming both lines;
- refuse tags outside plain data (`!!binary`, `!!set`, `!!python/…`, custom tags), values PyYAML
  cannot build (`2025-02-30`, `!!int abc`, `!!bool maybe`), numbers past `MAX_NUMBER_CHARS`
  characters, `.nan`/`.inf`, and keys that are not text;
- bound the work: nesting deeper than `MAX_DEPTH` stops the read (libyaml's own composer recurses
  in C: 10,000 levels took it half a second, 100,000 crashed the process), and so do aliases
  that repeat more than `MAX_ALIAS_VALUES` values (an alias "bomb": a few hundred bytes that
  expand to millions of values); an alias inside its own anchor (`&a [*a]`) is an error;
- record each key's line on the way, in the same pass.

JSON files go through the same builder from their own tokens (`_JsonEvents`), so they keep JSON's
meaning where YAML 1.1 differs (`1e5` is a number, `\\ud83e\\udd14` one character, a key may be
longer than 1,024 characters, NEL and U+2028 are text).
"""

from __future__ import annotations

import difflib
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from ..errors import CommerceEvalsError
from . import yaml_cache as _yaml_cache
from .case import Case

CASE_SUFFIXES = (".yaml", ".yml", ".json")
SET_FILE = "_set.yaml"

MAX_DEPTH = 64
"""Lists and mappings inside each other, at most; a case needs about six."""
MAX_ALIAS_VALUES = 100_000
"""Values that aliases may repeat in one file, each repeat counted."""
MAX_ALIAS_LINES = 10_000
"""Keys inside repeated values whose own lines are kept; past these, a problem inside a repeated
value is reported at its alias."""
MAX_NUMBER_CHARS = 1_000
"""Characters in one number, at most (Python refuses integers past 4,300 digits anyway)."""
MAX_PROBLEMS = 20
"""Problems reported per case (or per file, for a file that cannot be read as cases); the rest
are counted in one more."""
MAX_FILE_BYTES = 32 * 2**20
"""A case file or `_set.yaml` this large is not read (10,000 cases take about 4 MB)."""
FALLBACK_MAX_CHARS = 200_000
"""A syntax error in a text this long or shorter is read again by the pure-Python parser, whose
message says what it found (libyaml's says only what it expected)."""


@dataclass
class CaseProblem:
    """One thing wrong with a case file, said the way the user needs to fix it."""

    path: Path
    line: int | None
    key: str | None
    message: str
    case_id: str | None = None
    entry: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else str(self.path)
        key = f" key '{self.key}':" if self.key else ""
        return f"{where}:{key} {self.message}"


@dataclass
class LoadedCase:
    case: Case
    line: int
    key_lines: dict[tuple, int] = field(default_factory=dict)

    def line_of(self, *loc: str | int) -> int:
        """The line of a key inside this case (`"expected", "rubric"`), else the case's line."""
        for end in range(len(loc), 0, -1):
            if loc[:end] in self.key_lines:
                return self.key_lines[loc[:end]]
        return self.line


@dataclass
class LoadedFile:
    cases: list[LoadedCase]
    problems: list[CaseProblem]
    warnings: list[str] = field(default_factory=list)
    """Not errors, but worth saying (`path:line: message`): a file that holds an empty list."""


class DocumentTooLarge(CommerceEvalsError):
    """The document went past a bound (nesting, aliases): the read stopped at `line`."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


# -- reading the text -------------------------------------------------------------------------


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of the character at `index`."""
    index = max(0, min(index, len(text)))
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def _read_text(path: Path, shown: Path) -> tuple[str | None, CaseProblem | None]:
    """The file's text (UTF-8, newlines as `read_text` gives them), or why it cannot be read."""
    try:
        if path.is_dir():
            return None, CaseProblem(shown, None, None, "is a folder; expected a file")
        if not path.is_file():  # a pipe or a device would block the read, or never end
            return None, CaseProblem(shown, None, None, "is not a regular file")
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            return None, CaseProblem(
                shown,
                None,
                None,
                f"is {size:,} bytes; a case file holds at most {MAX_FILE_BYTES:,}",
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


def _syntax_problem(path: Path, exc: Exception, text: str, fmt: str = "YAML") -> CaseProblem:
    if isinstance(exc, json.JSONDecodeError):
        return CaseProblem(
            path, exc.lineno, None, f"malformed JSON: {exc.msg} (column {exc.colno})"
        )
    if isinstance(exc, yaml.reader.ReaderError):
        # libyaml's position counts bytes; find the character itself
        found = yaml.reader.Reader.NON_PRINTABLE.search(text)
        index = found.start() if found else exc.position
        line, column = _position(text, index)
        char = ord(text[index]) if found else exc.character
        if isinstance(char, str):
            char = ord(char)
        return CaseProblem(
            path,
            line,
            None,
            f"malformed {fmt}: character #x{char:04x} at column {column} cannot appear in "
            f"the text ({exc.reason}); remove it, or write it as an escape (\\u{char:04x}) "
            "inside a double-quoted string",
        )
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    if problem == "found invalid Unicode character escape code":  # libyaml, on \ud83e
        problem = (
            "found an escape that is not a character (half of a surrogate pair such as "
            "\\ud83e, or past \\U0010ffff)"
        )
    context = getattr(exc, "context", None)
    detail = f"{context}, {problem}" if context else problem
    return CaseProblem(path, line, None, f"malformed {fmt}: {detail}")


def _json_problem(path: Path, text: str) -> CaseProblem | None:
    """JSON's own syntax errors, from `json` itself (numbers are not converted here: a number
    too long for Python is the reader's to report, with its line)."""
    try:
        json.loads(text, parse_int=str, parse_float=str, parse_constant=str)
    except json.JSONDecodeError as exc:
        return _syntax_problem(path, exc, text, "JSON")
    except RecursionError:
        return None  # nested past Python's limit: the reader stops at MAX_DEPTH, with the line
    return None


# -- building data from parser events ---------------------------------------------------------

_YAML = "tag:yaml.org,2002:"
_STR, _MERGE_TAG, _VALUE_TAG = _YAML + "str", _YAML + "merge", _YAML + "value"
_BUILT_SCALARS = {
    _YAML + "null": "null",
    _YAML + "bool": "true/false",
    _YAML + "int": "integer",
    _YAML + "float": "number",
    _YAML + "timestamp": "date",
}
_COLLECTION_TAGS = {None, "!", _YAML + "seq", _YAML + "map"}
_SCALAR_BUILDER = yaml.constructor.SafeConstructor()
_MERGE = object()  # the `<<` key
_AWAIT_KEY = object()
_BAD_KEY = object()
_MISSING = object()


def _short_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_YAML) if tag.startswith(_YAML) else tag


def _tag_refused(tag: str) -> str:
    return (
        f"the tag {_short_tag(tag)} is not allowed; a case file holds text, numbers, "
        "true/false, null, dates, lists and mappings"
    )


def _type_name(value: Any) -> str:
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
class _Built:
    data: Any
    rows: list[tuple[tuple, int]]
    """Every key path with its line: the key's line for a mapping value, else the value's."""
    problems: list[tuple[tuple, int, str]]
    """(key path, line, message) for each value that could not be built."""


class _Builder:
    """Plain data from the events of one YAML document, with each value's line."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader
        self.rows: list[tuple[tuple, int]] = []
        self.problems: list[tuple[tuple, int, str]] = []
        # name -> (value, size, (first row, end row, depth) of the rows written below it); None
        # while open. The rows are sliced only when an alias replays them: copying them at each
        # anchor would cost depth x rows for nested anchors that no alias ever uses
        self.anchors: dict[str, Any] = {}
        self.anchor_lines: dict[str, int] = {}
        self.repeated = 0
        self.replayed = 0

    def problem(self, path: tuple, line: int, message: str) -> None:
        self.problems.append((path, line, message))

    def document(self) -> _Built:
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
        return _Built(data, self.rows, self.problems)

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
        get_event = self.loader.get_event
        stack: list[_Frame] = []
        while True:
            event = get_event()
            kind = type(event)
            line = event.start_mark.line + 1
            if kind is yaml.ScalarEvent:
                path, row_line, is_key = self._child(stack, line)
                value = self.scalar(event, path, line, is_key)
                size = 1
                if not is_key:
                    self.rows.append((path, row_line))
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
                    anchor = self.anchors.get(event.anchor)
                    span = anchor[2] if anchor and size > 1 else None
                    if span is not None:
                        start, end, depth = span
                        if end > start and self.replayed + (end - start) <= MAX_ALIAS_LINES:
                            self.replayed += end - start
                            self.rows.extend(
                                ((*path, *p[depth:]), n) for p, n in self.rows[start:end]
                            )
            else:  # pragma: no cover - the parser sends nothing else inside a document
                raise yaml.composer.ComposerError(
                    None, None, f"unexpected {kind.__name__}", event.start_mark
                )
            if not stack:
                return value
            self.attach(stack[-1], value, size, line)

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
            tag = self.loader.resolve(yaml.ScalarNode, text, event.implicit)
        if tag == _STR or tag == _VALUE_TAG:  # a plain `=` is text, as in YAML 1.2
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
                found = _type_name(value)
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
                    f"<< merges a mapping or a list of mappings; found {_type_name(value)}",
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


_JSON_TOKEN = re.compile(
    r'[ \t\n\r]*(?:("(?:[^"\\]|\\.)*")|([][{}])|[,:]|([^][{},: \t\n\r"]+))', re.DOTALL
)
_JSON_WORDS = {"true": _YAML + "bool", "false": _YAML + "bool", "null": _YAML + "null"}
_JSON_INT = re.compile(r"-?[0-9]+")


class _JsonEvents:
    """A JSON text as the parser's events, for `_Builder`: JSON's own values (`1e5` is a
    number, `\\ud83e\\udd14` one character, any key length), lines as JSON counts them.

    Only for a text `json` accepted, or found nested past Python's limit (then the text up to
    there is JSON, and the builder stops at MAX_DEPTH before the rest)."""

    def __init__(self, text: str) -> None:
        self._events = self._stream(text)
        self._next: Any = None

    def _stream(self, text: str) -> Any:
        mark = yaml.Mark("<json>", 0, 0, 0, None, None)
        yield yaml.StreamStartEvent(mark, mark)
        yield yaml.DocumentStartEvent(mark, mark)
        line, last = 0, 0
        for match in _JSON_TOKEN.finditer(text):
            string, bracket, word = match.groups()
            if string is None and bracket is None and word is None:
                continue  # , or :
            start = match.start(match.lastindex)
            line += text.count("\n", last, start)
            last = start
            mark = yaml.Mark("<json>", start, line, 0, None, None)
            if string is not None:
                value = json.decoder.scanstring(string, 1)[0]
                yield yaml.ScalarEvent(None, _STR, (False, True), value, mark, mark, '"')
            elif word is not None:
                tag = _JSON_WORDS.get(word) or (
                    _YAML + "int" if _JSON_INT.fullmatch(word) else _YAML + "float"
                )
                yield yaml.ScalarEvent(None, tag, (False, False), word, mark, mark)
            elif bracket == "[":
                yield yaml.SequenceStartEvent(None, None, True, mark, mark, True)
            elif bracket == "{":
                yield yaml.MappingStartEvent(None, None, True, mark, mark, True)
            else:
                end = yaml.SequenceEndEvent if bracket == "]" else yaml.MappingEndEvent
                yield end(mark, mark)
        yield yaml.DocumentEndEvent(mark, mark)
        yield yaml.StreamEndEvent(mark, mark)

    def get_event(self) -> Any:
        if self._next is not None:
            event, self._next = self._next, None
            return event
        return next(self._events)

    def check_event(self, *choices: type) -> bool:
        if self._next is None:
            self._next = next(self._events)
        return isinstance(self._next, choices)

    def resolve(self, *args: Any) -> str:  # pragma: no cover - every JSON scalar has its tag
        return _STR

    def dispose(self) -> None:
        self._events.close()


def _parse_json(text: str) -> _Built:
    return _Builder(_JsonEvents(text)).document()


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _build(text: str, loader_cls: type) -> _Built:
    loader = loader_cls(text)
    try:
        return _Builder(loader).document()
    finally:
        loader.dispose()


def _parse_yaml(text: str) -> _Built:
    """Build the document with libyaml when present. A syntax error is read again by the
    pure-Python parser for its message, unless that parser stops earlier (it refuses tabs that
    libyaml allows in JSON) or not at all (it allows surrogate escapes libyaml refuses)."""
    try:
        return _build(text, _Loader)
    except yaml.MarkedYAMLError as first:
        if first.problem == LIBYAML_TOO_DEEP and first.problem_mark is not None:
            _too_deep(text, first.problem_mark)
        if _Loader is yaml.SafeLoader or len(text) > FALLBACK_MAX_CHARS:
            raise
        try:
            _build(text, yaml.SafeLoader)
        except yaml.MarkedYAMLError as second:
            if _mark_at(second) >= _mark_at(first):
                raise second from None
        except (yaml.YAMLError, DocumentTooLarge):
            pass
        raise


LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
"""libyaml's own limit (1,000 levels, from PyYAML 6.0.4's wheels on): its scanner looks ahead for
a possible key and meets it before the builder has seen MAX_DEPTH levels."""


def _too_deep(text: str, mark: Any) -> None:
    """Raise the builder's own `DocumentTooLarge`, with the line where the text passes MAX_DEPTH,
    for a text libyaml stopped at its deeper limit: the text before libyaml's mark nests within
    libyaml's limit and past MAX_DEPTH, so reading it stops at MAX_DEPTH. Returns when it does
    not (libyaml's own error is then reported)."""
    lines = text.split("\n", mark.line + 1)
    if len(lines) <= mark.line:
        return  # lines broken by characters other than \n: libyaml's error stands
    prefix = "\n".join([*lines[: mark.line], lines[mark.line][: mark.column]])
    try:
        _build(prefix, _Loader)
    except yaml.YAMLError:
        pass


def _mark_at(exc: yaml.MarkedYAMLError) -> tuple[int, int]:
    mark = exc.problem_mark or exc.context_mark
    return (mark.line, mark.column) if mark is not None else (-1, -1)


# -- allowed keys, for suggestions ------------------------------------------------------------


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the last key of `loc` inside a Case."""
    model: Any = Case
    for step in loc[:-1]:
        if isinstance(step, int):
            continue
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        field = model.model_fields.get(step)
        if field is None:
            return None
        model = _unwrap(field.annotation)
    return model if isinstance(model, type) and issubclass(model, BaseModel) else None


def _unwrap(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if arg is not type(None):
                found = _unwrap(arg)
                if isinstance(found, type) and issubclass(found, BaseModel):
                    return found
        return None
    if origin in (list, tuple):
        return _unwrap(typing.get_args(annotation)[0])
    return annotation


_STRICT_MESSAGES = {
    "bool_type": "expected true or false, unquoted",
    "int_type": "expected a whole number, unquoted",
    "float_type": "expected a number, unquoted",
    "string_type": "expected text",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
}


def _describe(error: dict[str, Any]) -> str:
    found = error.get("input")
    kind = error["type"]
    loc = error["loc"]
    if kind == "extra_forbidden":
        model = _model_at(loc)
        allowed = sorted(model.model_fields) if model else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
        hint = f"; did you mean '{close[0]}'?" if close else ""
        return f"unknown key{hint} allowed: {', '.join(allowed)}"
    if kind == "missing":
        return "required key is missing"
    message = error["msg"]
    if kind == "value_error":
        message = message.removeprefix("Value error, ")
        return message
    message = _STRICT_MESSAGES.get(kind, message)
    return f"{message} (found {_found(found)})"


def _found(value: Any) -> str:
    """A value as the file wrote it, in at most 80 characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


def _key_name(loc: tuple) -> str:
    parts: list[str] = []
    for step in loc:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        else:
            parts.append(("." if parts else "") + str(step))
    return "".join(parts)


def _line_for(lines: dict[tuple, int], loc: tuple) -> int | None:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


# -- case files -------------------------------------------------------------------------------

CACHE_MIN_CHARS = 1_500
"""Case files this long or longer are parsed once per edit (`_yaml_cache`): libyaml takes about
0.5 ms a case, reading the cached result a tenth of that."""
_CACHE_KIND = "case-file/2"
"""Names what `_parse_case_text` computes: a change to what it returns or refuses changes this,
so no entry written by an older reader is ever read."""


def _parse_case_text(text: str, parse: Any = None) -> dict[str, Any]:
    """The document's data, each case's key paths with their lines (`[*path, line]` rows, one
    list per case) and what could not be built (`[path, line, message]`): JSON-shaped, so the
    result can be cached. `parse` is `_parse_yaml` unless given (`_parse_json`)."""
    built = (parse or _parse_yaml)(text)
    data = built.data
    if isinstance(data, list):
        # each case's key paths relative to it: one pass over the rows in all
        per_case: list[list] = [[] for _ in data]
        for path, line in built.rows:
            if path:
                per_case[path[0]].append([*path[1:], line])
        lines = per_case
    elif isinstance(data, dict):
        lines = [[[*path, line] for path, line in built.rows]]
    else:
        lines = []
    problems = [[list(path), line, message] for path, line, message in built.problems]
    return {"data": data, "lines": lines, "problems": problems}


def _cacheable(parsed: Any) -> bool:
    """Only a clean parse is kept, and only an entry of the right shape is read."""
    if not (isinstance(parsed, dict) and parsed.keys() == {"data", "lines", "problems"}):
        return False
    data, lines = parsed["data"], parsed["lines"]
    cases = len(data) if isinstance(data, list) else 1 if isinstance(data, dict) else 0
    return (
        parsed["problems"] == []
        and isinstance(lines, list)
        and len(lines) == cases
        and all(isinstance(rows, list) for rows in lines)
    )


def _at_most(problems: list[CaseProblem], total: int | None = None) -> list[CaseProblem]:
    """The first MAX_PROBLEMS problems, and one that counts the rest (at the next one's line)."""
    total = len(problems) if total is None else total
    if total <= MAX_PROBLEMS:
        return problems
    rest = problems[MAX_PROBLEMS]
    prefix = f"case {rest.case_id!r}: " if rest.case_id else ""
    more = f"{prefix}and {total - MAX_PROBLEMS:,} more problems"
    summary = CaseProblem(rest.path, rest.line, None, more, rest.case_id, rest.entry)
    return [*problems[:MAX_PROBLEMS], summary]


def _file_problem(shown: Path, line: int | None, message: str) -> LoadedFile:
    return LoadedFile([], [CaseProblem(shown, line, None, message)])


def load_case_file(path: Path, display: Path | None = None) -> LoadedFile:
    """Parse and validate one case file; problems never raise, so other files still load."""
    shown = display or path
    text, problem = _read_text(path, shown)
    if problem is not None:
        return LoadedFile([], [problem])
    assert text is not None
    kind = _CACHE_KIND
    compute = _parse_case_text
    if path.suffix == ".json":
        problem = _json_problem(shown, text)
        if problem is not None:
            return LoadedFile([], [problem])
        kind += ":json"

        def compute(t: str) -> dict[str, Any]:
            return _parse_case_text(t, _parse_json)

    try:
        parsed = _yaml_cache.memo(text, kind, compute, CACHE_MIN_CHARS, valid=_cacheable)
    except yaml.YAMLError as exc:
        fmt = "JSON" if path.suffix == ".json" else "YAML"
        return LoadedFile([], [_syntax_problem(shown, exc, text, fmt)])
    except DocumentTooLarge as exc:
        return _file_problem(shown, exc.line, exc.message)
    data = parsed["data"]
    built_problems: dict[int | None, list[tuple[tuple, int, str]]] = {}
    for path_, line, message in parsed["problems"]:
        path_ = tuple(path_)
        if isinstance(data, list) and path_:
            built_problems.setdefault(path_[0], []).append((path_[1:], line, message))
        elif isinstance(data, dict):
            built_problems.setdefault(0, []).append((path_, line, message))
        else:
            built_problems.setdefault(None, []).append((path_, line, message))
    if None in built_problems:
        found = [
            CaseProblem(shown, line, _key_name(loc) or None, message)
            for loc, line, message in built_problems[None]
        ]
        return LoadedFile([], _at_most(found))
    if data is None:
        return _file_problem(
            shown, 1, "the file is empty; expected a case (a mapping) or a list of cases"
        )
    entry_lines = [{tuple(row[:-1]): row[-1] for row in rows} for rows in parsed["lines"]]
    if isinstance(data, dict):
        entries = [data]
    elif isinstance(data, list):
        entries = data
        if not entries:
            return LoadedFile(
                [], [], [f"{shown}:1: the file holds an empty list; no cases to collect"]
            )
    else:
        return _file_problem(
            shown,
            1,
            f"expected a case (a mapping) or a list of cases; found {type(data).__name__}",
        )
    cases: list[LoadedCase] = []
    problems: list[CaseProblem] = []
    not_cases = 0  # list items that are not mappings: the first MAX_PROBLEMS are reported
    for i, entry in enumerate(entries):
        lines = entry_lines[i]
        line = lines.get((), 1)
        case_id = None
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            case_id = entry["id"]
        prefix = f"case {case_id!r}: " if case_id else ""
        if i in built_problems:
            found = [
                CaseProblem(shown, at, _key_name(loc) or None, prefix + message, case_id, i)
                for loc, at, message in built_problems[i]
            ]
            problems.extend(_at_most(found))
            continue
        if not isinstance(entry, dict):
            not_cases += 1
            if not_cases <= MAX_PROBLEMS:
                problems.append(
                    CaseProblem(
                        shown,
                        line,
                        None,
                        f"list item {i + 1}: expected a case (a mapping); found "
                        f"{type(entry).__name__}",
                        entry=i,
                    )
                )
            continue
        try:
            # strict: no "yes" for true, no "3" or 3.0 for 3; the file says what it means
            case = Case.model_validate(entry, strict=True)
        except ValidationError as exc:
            errors = exc.errors()
            found = [
                CaseProblem(
                    shown,
                    _line_for(lines, tuple(error["loc"])),
                    _key_name(tuple(error["loc"])) or None,
                    prefix + _describe(error),
                    case_id,
                    i,
                )
                for error in errors[: MAX_PROBLEMS + 1]
            ]
            problems.extend(_at_most(found, len(errors)))
            continue
        cases.append(LoadedCase(case, line, lines))
    if not_cases > MAX_PROBLEMS:
        problems.append(
            CaseProblem(
                shown,
                1,
                None,
                f"and {not_cases - MAX_PROBLEMS:,} more list items that are not cases (a mapping "
                "each); only the first are listed",
            )
        )
    return LoadedFile(cases, problems)


# -- _set.yaml --------------------------------------------------------------------------------


@dataclass
class SetConfig:
    threshold: float | None = None
    description: str | None = None


_SET_KEYS = ("description", "threshold")


def load_set_config(folder: Path, root: Path | None = None) -> tuple[SetConfig, CaseProblem | None]:
    """The folder's `_set.yaml`, if any: `threshold` (0..1) and `description`.

    Problems name the file relative to `root` (the rootdir; else the working folder)."""
    path = folder / SET_FILE
    try:
        if not path.exists():
            return SetConfig(), None
        base = root if root is not None else Path.cwd()
        shown = path.relative_to(base) if path.is_relative_to(base) else path
    except OSError:  # a folder we may not look into, a working folder removed
        shown = path
    text, problem = _read_text(path, shown)
    if problem is not None:
        if problem.message.startswith("is a folder"):
            problem.message = "is a folder; expected a file holding threshold and description"
        return SetConfig(), problem
    assert text is not None
    try:
        built = _parse_yaml(text)
    except yaml.YAMLError as exc:
        return SetConfig(), _syntax_problem(shown, exc, text)
    except DocumentTooLarge as exc:
        return SetConfig(), CaseProblem(shown, exc.line, None, exc.message)
    if built.problems:
        loc, line, message = built.problems[0]
        return SetConfig(), CaseProblem(shown, line, _key_name(loc) or None, message)
    data = built.data if built.data is not None else {}
    lines = dict(built.rows)
    if not isinstance(data, dict):
        return SetConfig(), CaseProblem(
            shown,
            lines.get((), 1),
            None,
            f"expected a mapping with threshold and description; found {_type_name(data)}",
        )
    for key in data:
        if key not in _SET_KEYS:
            close = difflib.get_close_matches(key, _SET_KEYS, n=1, cutoff=0.6)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            return SetConfig(), CaseProblem(
                shown, lines.get((key,)), key, f"unknown key{hint} allowed: description, threshold"
            )
    threshold = data.get("threshold")
    if threshold is not None and (type(threshold) not in (int, float) or not 0 <= threshold <= 1):
        return SetConfig(), CaseProblem(
            shown,
            lines.get(("threshold",)),
            "threshold",
            f"expected a number from 0 to 1; found {_found(threshold)}",
        )
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        return SetConfig(), CaseProblem(
            shown,
            lines.get(("description",)),
            "description",
            f"expected text; found {_found(description)}",
        )
    return SetConfig(threshold, description), None
