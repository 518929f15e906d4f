"""A JSON case file as the events of a YAML parser, so that it goes through the same builder.

JSON keeps its own meaning where YAML 1.1 differs: `1e5` is a number, `\\ud83e\\udd14` one
character, a key may be longer than 1,024 characters, NEL and U+2028 are text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

from .documents import STR_TAG, YAML_TAG, Builder, Built
from .problems import CaseProblem, syntax_problem


def json_problem(path: Path, text: str) -> CaseProblem | None:
    """JSON's own syntax errors, from `json` itself (numbers are not converted here: a number
    too long for Python is the reader's to report, with its line)."""
    try:
        json.loads(text, parse_int=str, parse_float=str, parse_constant=str)
    except json.JSONDecodeError as exc:
        return syntax_problem(path, exc, text, "JSON")
    except RecursionError:
        return None  # nested past Python's limit: the reader stops at MAX_DEPTH, with the line
    return None


_JSON_TOKEN = re.compile(
    r'[ \t\n\r]*(?:("(?:[^"\\]|\\.)*")|([][{}])|[,:]|([^][{},: \t\n\r"]+))', re.DOTALL
)
_JSON_WORDS = {"true": YAML_TAG + "bool", "false": YAML_TAG + "bool", "null": YAML_TAG + "null"}
_JSON_INT = re.compile(r"-?[0-9]+")


class JsonEvents:
    """A JSON text as the parser's events, for `Builder`: JSON's own values (`1e5` is a
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
            assert match.lastindex is not None  # one of the groups matched
            start = match.start(match.lastindex)
            line += text.count("\n", last, start)
            last = start
            mark = yaml.Mark("<json>", start, line, 0, None, None)
            if string is not None:
                # json.decoder.scanstring exists (the C or Python scanner) but is not in the stubs
                value = json.decoder.scanstring(string, 1)[0]  # type: ignore[attr-defined]
                yield yaml.ScalarEvent(None, STR_TAG, (False, True), value, mark, mark, '"')
            elif word is not None:
                tag = _JSON_WORDS.get(word) or (
                    YAML_TAG + "int" if _JSON_INT.fullmatch(word) else YAML_TAG + "float"
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
        return STR_TAG

    def dispose(self) -> None:
        self._events.close()


def parse_json(text: str) -> Built:
    """The document of a text `json` accepted, built as `Builder` builds YAML."""
    return Builder(JsonEvents(text)).document()
