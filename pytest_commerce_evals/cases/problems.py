"""What is wrong with a case file, worded for the person who fixes it.

A `CaseProblem` names the file, the line, the key, what was found and what is allowed. This
module words the parsers' syntax errors (libyaml's, PyYAML's, `json`'s) and pydantic's validation
errors that way, and bounds how many problems one case reports.
"""

from __future__ import annotations

import difflib
import json
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from pydantic import BaseModel

from .case import Case

if TYPE_CHECKING:
    from pydantic_core import ErrorDetails

MAX_PROBLEMS = 20
"""Problems reported per case (or per file, for a file that cannot be read as cases); the rest
are counted in one more."""


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


def at_most(problems: list[CaseProblem], total: int | None = None) -> list[CaseProblem]:
    """The first MAX_PROBLEMS problems, and one that counts the rest (at the next one's line)."""
    total = len(problems) if total is None else total
    if total <= MAX_PROBLEMS:
        return problems
    rest = problems[MAX_PROBLEMS]
    prefix = f"case {rest.case_id!r}: " if rest.case_id else ""
    more = f"{prefix}and {total - MAX_PROBLEMS:,} more problems"
    summary = CaseProblem(rest.path, rest.line, None, more, rest.case_id, rest.entry)
    return [*problems[:MAX_PROBLEMS], summary]


# -- syntax errors ----------------------------------------------------------------------------


def _position(text: str, index: int) -> tuple[int, int]:
    """1-based line and column of the character at `index`."""
    index = max(0, min(index, len(text)))
    line_start = text.rfind("\n", 0, index) + 1
    return text.count("\n", 0, index) + 1, index - line_start + 1


def syntax_problem(path: Path, exc: Exception, text: str, fmt: str = "YAML") -> CaseProblem:
    """A parser's syntax error (`json`'s, PyYAML's or libyaml's) as a problem at its line."""
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
    mark_line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    if problem == "found invalid Unicode character escape code":  # libyaml, on \ud83e
        problem = (
            "found an escape that is not a character (half of a surrogate pair such as "
            "\\ud83e, or past \\U0010ffff)"
        )
    context = getattr(exc, "context", None)
    detail = f"{context}, {problem}" if context else problem
    return CaseProblem(path, mark_line, None, f"malformed {fmt}: {detail}")


# -- validation errors ------------------------------------------------------------------------


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


def describe(error: ErrorDetails) -> str:
    """One pydantic error of a Case's validation, as the message its problem carries."""
    found_value = error.get("input")
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
    return f"{message} (found {found(found_value)})"


def found(value: Any) -> str:
    """A value as the file wrote it, in at most 80 characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


def key_name(loc: tuple) -> str:
    """A key path as the user reads it: `expected.calls_tool[1]`."""
    parts: list[str] = []
    for step in loc:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        else:
            parts.append(("." if parts else "") + str(step))
    return "".join(parts)


def line_for(lines: dict[tuple, int], loc: tuple) -> int | None:
    """The line of the key at `loc`, else of the nearest key above it that has one."""
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None
