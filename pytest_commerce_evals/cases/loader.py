"""Reading case files: YAML or JSON, one case or a list, every error with its file and line.

Case files and `_set.yaml` are input the suite does not control, so reading one never raises and
never takes long: whatever is wrong comes back as a `CaseProblem` naming the file, the line, the
key, what was found and what is allowed, and the other files still collect and run.

This module reads a file (`file_text`), picks the parser (libyaml when present, the pure-Python
one again for a syntax error's message), builds its data with each key's line (`documents`, and
`json_events` for JSON), keeps the result in the parse cache (`yaml_cache`), and validates each
entry as a `Case`, wording what is wrong (`problems`); `_set.yaml` is read here too.

The parser hooks (`_Loader`, `_build`, `_parse_yaml`) and the two bounds a test lowers
(`MAX_FILE_BYTES`, `MAX_ALIAS_LINES`) are read from this module at each call, so that setting
one here changes what the next load does.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from . import yaml_cache as _yaml_cache
from .case import Case
from .documents import (
    MAX_ALIAS_LINES,
    MAX_ALIAS_VALUES,
    MAX_DEPTH,
    MAX_NUMBER_CHARS,
    Builder,
    Built,
    DocumentTooLarge,
    type_name,
)
from .file_text import MAX_FILE_BYTES, read_text
from .json_events import json_problem, parse_json
from .problems import (
    MAX_PROBLEMS,
    CaseProblem,
    at_most,
    describe,
    found,
    key_name,
    line_for,
    syntax_problem,
)

__all__ = [
    "CACHE_MIN_CHARS",
    "CASE_SUFFIXES",
    "FALLBACK_MAX_CHARS",
    "LIBYAML_TOO_DEEP",
    "MAX_ALIAS_LINES",
    "MAX_ALIAS_VALUES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NUMBER_CHARS",
    "MAX_PROBLEMS",
    "SET_FILE",
    "CaseProblem",
    "DocumentTooLarge",
    "LoadedCase",
    "LoadedFile",
    "SetConfig",
    "load_case_file",
    "load_set_config",
]

CASE_SUFFIXES = (".yaml", ".yml", ".json")
SET_FILE = "_set.yaml"

FALLBACK_MAX_CHARS = 200_000
"""A syntax error in a text this long or shorter is read again by the pure-Python parser, whose
message says what it found (libyaml's says only what it expected)."""


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


# -- the YAML parser --------------------------------------------------------------------------

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _build(text: str, loader_cls: type) -> Built:
    loader = loader_cls(text)
    try:
        return Builder(loader, MAX_ALIAS_LINES).document()
    finally:
        loader.dispose()


def _parse_yaml(text: str) -> Built:
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
    result can be cached. `parse` is `_parse_yaml` unless given (`parse_json`)."""
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


def _file_problem(shown: Path, line: int | None, message: str) -> LoadedFile:
    return LoadedFile([], [CaseProblem(shown, line, None, message)])


def _parse_file(path: Path, shown: Path) -> dict[str, Any] | LoadedFile:
    """The file's `_parse_case_text` result, through the parse cache, or the one problem that
    stops the file being read (unreadable, malformed, past a bound)."""
    text, problem = read_text(path, shown, MAX_FILE_BYTES)
    if problem is not None:
        return LoadedFile([], [problem])
    assert text is not None
    kind = _CACHE_KIND
    compute: Callable[[str], dict[str, Any]] = _parse_case_text
    if path.suffix == ".json":
        problem = json_problem(shown, text)
        if problem is not None:
            return LoadedFile([], [problem])
        kind += ":json"

        def compute(t: str) -> dict[str, Any]:
            return _parse_case_text(t, parse_json)

    try:
        return _yaml_cache.memo(
            text, kind, compute, CACHE_MIN_CHARS, valid=_cacheable, text_keys=True
        )
    except yaml.YAMLError as exc:
        fmt = "JSON" if path.suffix == ".json" else "YAML"
        return LoadedFile([], [syntax_problem(shown, exc, text, fmt)])
    except DocumentTooLarge as exc:
        return _file_problem(shown, exc.line, exc.message)


_Unbuilt = dict[int | None, list[tuple[tuple, int, str]]]
"""What could not be built, by list item (0 for a file of one case; None: outside any case),
each as (key path inside the item, line, message)."""


def _unbuilt_by_entry(data: Any, rows: list) -> _Unbuilt:
    unbuilt: _Unbuilt = {}
    for path_, line, message in rows:
        path_ = tuple(path_)
        if isinstance(data, list) and path_:
            unbuilt.setdefault(path_[0], []).append((path_[1:], line, message))
        elif isinstance(data, dict):
            unbuilt.setdefault(0, []).append((path_, line, message))
        else:
            unbuilt.setdefault(None, []).append((path_, line, message))
    return unbuilt


def load_case_file(path: Path, display: Path | None = None) -> LoadedFile:
    """Parse and validate one case file; problems never raise, so other files still load."""
    shown = display or path
    parsed = _parse_file(path, shown)
    if isinstance(parsed, LoadedFile):
        return parsed
    data = parsed["data"]
    unbuilt = _unbuilt_by_entry(data, parsed["problems"])
    if None in unbuilt:
        problems = [
            CaseProblem(shown, line, key_name(loc) or None, message)
            for loc, line, message in unbuilt[None]
        ]
        return LoadedFile([], at_most(problems))
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
    return _load_entries(shown, entries, entry_lines, unbuilt)


def _load_entries(
    shown: Path, entries: list, entry_lines: list[dict[tuple, int]], unbuilt: _Unbuilt
) -> LoadedFile:
    """Each entry as a case, or its problems; items that are not mappings are listed up to
    MAX_PROBLEMS and counted past it."""
    cases: list[LoadedCase] = []
    problems: list[CaseProblem] = []
    not_cases = 0  # list items that are not mappings: the first MAX_PROBLEMS are reported
    for i, entry in enumerate(entries):
        lines = entry_lines[i]
        if i not in unbuilt and not isinstance(entry, dict):
            not_cases += 1
            if not_cases <= MAX_PROBLEMS:
                problems.append(
                    CaseProblem(
                        shown,
                        lines.get((), 1),
                        None,
                        f"list item {i + 1}: expected a case (a mapping); found "
                        f"{type(entry).__name__}",
                        entry=i,
                    )
                )
            continue
        loaded = _load_entry(shown, i, entry, lines, unbuilt.get(i))
        if isinstance(loaded, LoadedCase):
            cases.append(loaded)
        else:
            problems.extend(loaded)
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


def _load_entry(
    shown: Path,
    i: int,
    entry: Any,
    lines: dict[tuple, int],
    unbuilt: list[tuple[tuple, int, str]] | None,
) -> LoadedCase | list[CaseProblem]:
    """Entry `i` validated as a case, or its problems: what could not be built, else what the
    model refuses (at most MAX_PROBLEMS, and a count of the rest)."""
    case_id = None
    if isinstance(entry, dict) and isinstance(entry.get("id"), str):
        case_id = entry["id"]
    prefix = f"case {case_id!r}: " if case_id else ""
    if unbuilt is not None:
        problems = [
            CaseProblem(shown, at, key_name(loc) or None, prefix + message, case_id, i)
            for loc, at, message in unbuilt
        ]
        return at_most(problems)
    try:
        # strict: no "yes" for true, no "3" or 3.0 for 3; the file says what it means
        case = Case.model_validate(entry, strict=True)
    except ValidationError as exc:
        errors = exc.errors()
        problems = [
            CaseProblem(
                shown,
                line_for(lines, tuple(error["loc"])),
                key_name(tuple(error["loc"])) or None,
                prefix + describe(error),
                case_id,
                i,
            )
            for error in errors[: MAX_PROBLEMS + 1]
        ]
        return at_most(problems, len(errors))
    return LoadedCase(case, lines.get((), 1), lines)


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
    text, problem = read_text(path, shown, MAX_FILE_BYTES)
    if problem is not None:
        if problem.message.startswith("is a folder"):
            problem.message = "is a folder; expected a file holding threshold and description"
        return SetConfig(), problem
    assert text is not None
    try:
        built = _parse_yaml(text)
    except yaml.YAMLError as exc:
        return SetConfig(), syntax_problem(shown, exc, text)
    except DocumentTooLarge as exc:
        return SetConfig(), CaseProblem(shown, exc.line, None, exc.message)
    if built.problems:
        loc, line, message = built.problems[0]
        return SetConfig(), CaseProblem(shown, line, key_name(loc) or None, message)
    data = built.data if built.data is not None else {}
    lines = dict(built.rows)
    if not isinstance(data, dict):
        return SetConfig(), CaseProblem(
            shown,
            lines.get((), 1),
            None,
            f"expected a mapping with threshold and description; found {type_name(data)}",
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
            f"expected a number from 0 to 1; found {found(threshold)}",
        )
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        return SetConfig(), CaseProblem(
            shown,
            lines.get(("description",)),
            "description",
            f"expected text; found {found(description)}",
        )
    return SetConfig(threshold, description), None
