"""Reading case files: YAML or JSON, one case or a list, every error with its file and line."""

from __future__ import annotations

import difflib
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from . import _yaml_cache
from .case import Case

CASE_SUFFIXES = (".yaml", ".yml", ".json")
SET_FILE = "_set.yaml"


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


# -- line numbers -----------------------------------------------------------------------------


def _line_index(node: yaml.Node, path: tuple = (), out: dict | None = None) -> dict[tuple, int]:
    """Map every key path in a YAML document to its 1-based line."""
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = key_node.value
            out[(*path, key)] = key_node.start_mark.line + 1
            _line_index(value_node, (*path, key), out)
            out[(*path, key)] = key_node.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _line_index(item, (*path, i), out)
    return out


def _line_for(lines: dict[tuple, int], loc: tuple) -> int | None:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return None


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
    found_text = json.dumps(found, default=str) if found is not None else "null"
    if len(found_text) > 80:
        found_text = found_text[:79] + "…"
    return f"{message} (found {found_text})"


def _key_name(loc: tuple) -> str:
    parts: list[str] = []
    for step in loc:
        if isinstance(step, int):
            parts.append(f"[{step}]")
        else:
            parts.append(("." if parts else "") + str(step))
    return "".join(parts)


# -- loading ----------------------------------------------------------------------------------


def _syntax_problem(path: Path, exc: Exception) -> CaseProblem:
    if isinstance(exc, json.JSONDecodeError):
        return CaseProblem(
            path, exc.lineno, None, f"malformed JSON: {exc.msg} (column {exc.colno})"
        )
    mark = getattr(exc, "problem_mark", None)
    line = mark.line + 1 if mark is not None else None
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    detail = f"{context}, {problem}" if context else problem
    return CaseProblem(path, line, None, f"malformed YAML: {detail}")


_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _compose_and_construct(text: str) -> tuple[yaml.Node | None, Any]:
    """Parse once (libyaml when present): the node tree gives line numbers, the data is built
    from the same tree. A syntax error is parsed again by the pure-Python loader, whose message
    says what it found (libyaml's says only what it expected)."""
    try:
        return _parse(text, _Loader)
    except yaml.YAMLError:
        if _Loader is yaml.SafeLoader:
            raise
        return _parse(text, yaml.SafeLoader)


def _parse(text: str, loader_cls: type) -> tuple[yaml.Node | None, Any]:
    loader = loader_cls(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()
    return node, data


CACHE_MIN_CHARS = 1_500
"""Case files this long or longer are parsed once per edit (`_yaml_cache`): libyaml takes about
0.5 ms a case, reading the cached result a tenth of that."""


def _parse_case_text(text: str) -> dict[str, Any]:
    """The document's data, and each case's key paths with their lines (`[*path, line]` rows,
    one list per case: JSON-shaped, so the result can be cached)."""
    node, data = _compose_and_construct(text)
    if isinstance(data, dict):
        indexes = [_line_index(node)]
    elif isinstance(data, list):
        # each case's key paths from its own node: one walk of the document in all
        indexes = [_line_index(item) for item in node.value]
    else:
        indexes = []
    return {"data": data, "lines": [[[*k, v] for k, v in i.items()] for i in indexes]}


def load_case_file(path: Path, display: Path | None = None) -> LoadedFile:
    """Parse and validate one case file; problems never raise, so other files still load."""
    shown = display or path
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return LoadedFile([], [CaseProblem(shown, None, None, f"cannot read the file: {exc}")])
    try:
        if path.suffix == ".json":
            json.loads(text)
        parsed = _yaml_cache.memo(text, "case-file", _parse_case_text, min_chars=CACHE_MIN_CHARS)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        return LoadedFile([], [_syntax_problem(shown, exc)])
    data = parsed["data"]
    if data is None:
        return LoadedFile(
            [],
            [
                CaseProblem(
                    shown,
                    1,
                    None,
                    "the file is empty; expected a case (a mapping) or a list of cases",
                )
            ],
        )
    entry_lines = [{tuple(row[:-1]): row[-1] for row in rows} for rows in parsed["lines"]]
    if isinstance(data, dict):
        entries = [data]
    elif isinstance(data, list):
        entries = data
    else:
        return LoadedFile(
            [],
            [
                CaseProblem(
                    shown,
                    1,
                    None,
                    f"expected a case (a mapping) or a list of cases; found {type(data).__name__}",
                )
            ],
        )
    cases: list[LoadedCase] = []
    problems: list[CaseProblem] = []
    for i, entry in enumerate(entries):
        lines = entry_lines[i]
        line = lines.get((), 1)
        if not isinstance(entry, dict):
            problems.append(
                CaseProblem(
                    shown,
                    line,
                    None,
                    f"list item {i + 1}: expected a case (a mapping); found {type(entry).__name__}",
                    entry=i,
                )
            )
            continue
        case_id = entry.get("id") if isinstance(entry.get("id"), str) else None
        try:
            case = Case.model_validate(entry)
        except ValidationError as exc:
            for error in exc.errors():
                loc = tuple(error["loc"])
                problems.append(
                    CaseProblem(
                        shown,
                        _line_for(lines, loc),
                        _key_name(loc) or None,
                        (f"case {case_id!r}: " if case_id else "") + _describe(error),
                        case_id,
                        i,
                    )
                )
            continue
        cases.append(LoadedCase(case, line, lines))
    return LoadedFile(cases, problems)


@dataclass
class SetConfig:
    threshold: float | None = None
    description: str | None = None


def load_set_config(folder: Path) -> tuple[SetConfig, CaseProblem | None]:
    """The folder's `_set.yaml`, if any: `threshold` (0..1) and `description`."""
    path = folder / SET_FILE
    if not path.exists():
        return SetConfig(), None
    try:
        data = _compose_and_construct(path.read_text(encoding="utf-8"))[1] or {}
    except yaml.YAMLError as exc:
        return SetConfig(), _syntax_problem(path, exc)
    if not isinstance(data, dict):
        return SetConfig(), CaseProblem(path, 1, None, "expected a mapping with 'threshold'")
    unknown = sorted(set(data) - {"threshold", "description"})
    if unknown:
        return SetConfig(), CaseProblem(
            path, None, unknown[0], "unknown key; allowed: description, threshold"
        )
    threshold = data.get("threshold")
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0 <= threshold <= 1
    ):
        return SetConfig(), CaseProblem(
            path, None, "threshold", f"expected a number from 0 to 1; found {threshold!r}"
        )
    return SetConfig(threshold, data.get("description")), None
