"""Registering the table's options and ini keys, and resolving them into one frozen `Settings`."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import pytest

from . import database_urls as database
from .table import (
    AUTO_TRIALS_CAP,
    GROUP,
    NO_STORE,
    TABLE,
    AutoTrials,
    Setting,
    Settings,
    bounds_text,
)
from .values import MinKappaError, parse_min_kappa

# -- registration ----------------------------------------------------------------------------

_IniType = Literal["string", "paths", "pathlist", "args", "linelist", "bool", "int", "float"]
"""The ini value types `pytest.Parser.addini` takes."""


def register(parser: pytest.Parser) -> None:
    """Every option (in the `commerce-evals` group) and ini key of TABLE."""
    group = parser.getgroup(GROUP)
    for s in TABLE:
        if s.option:
            kwargs: dict[str, Any] = {"dest": s.dest, "help": s.help}
            if s.kind == "flag":
                kwargs.update(action="store_true", default=False)
            else:
                kwargs.update(default=None, metavar=s.metavar)
                # numbers stay text here: argparse's int() and float() take any Unicode digit,
                # nan and inf; _number parses them
                if s.kind == "list":
                    kwargs["action"] = "append"
                elif s.kind == "choice":
                    kwargs.update(choices=s.choices, metavar=None)
            group.addoption(s.option, **kwargs)
        if s.ini:
            help_text = s.ini_help or (f"{s.help}; {s.option} overrides" if s.option else s.help)
            # the table's ini types are pytest's names, which addini checks
            ini_type = cast(_IniType, s.ini_type)
            if s.ini_default is None:
                parser.addini(s.ini, help_text, type=ini_type)
            else:
                parser.addini(s.ini, help_text, type=ini_type, default=s.ini_default)


# -- resolution ------------------------------------------------------------------------------


def _fail(s: Setting, origin: str, message: str) -> pytest.UsageError:
    return pytest.UsageError(f"{s.where(origin)}: {message}")


def _given(s: Setting, config: Any, environ: Mapping[str, str]) -> tuple[str, Any] | None:
    """The first value given for `s`, in its order, and where it came from; None if none."""
    for origin in s.order:
        if origin == "option" and s.option and config is not None:
            value = config.getoption(s.dest, None)
            if value is None or value is False or (s.kind == "list" and not value):
                continue
            # `--x=` is given: empty, which only the stores take (as off); _parse says so
            return origin, value
        if origin == "ini" and s.ini and config is not None:
            try:
                value = config.getini(s.ini)
            except (ValueError, AttributeError):  # the ini keys are not registered
                continue
            if value == s.ini_default:
                continue  # what pytest answers for a key the ini does not set: not given here
            if s.ini_type != "string":
                return origin, value  # a list, as the ini gives it (`commerce_redact =`: none)
            if value is None or not str(value).strip():
                continue
            return origin, value
        if origin == "env" and s.env:
            value = environ.get(s.env)
            if value is not None and value.strip():
                return origin, value
    return None


INTEGER = re.compile(r"[+-]?[0-9]+")
"""A whole number as the settings take it: ASCII digits (Python's int() takes any script's)."""
DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
"""A number as the settings take it: ASCII digits, no nan or inf."""


def _number(s: Setting, origin: str, raw: Any) -> int | float:
    kind = int if s.kind == "int" else float
    if isinstance(raw, bool):
        raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
    if isinstance(raw, (int, float)) and (kind is float or isinstance(raw, int)):
        value = kind(raw)
    else:
        text = str(raw).strip()
        if not (INTEGER if kind is int else DECIMAL).fullmatch(text):
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
        value = kind(text)
    if isinstance(value, float) and not math.isfinite(value):
        raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
    if (
        (s.low is not None and value < s.low)
        or (s.high is not None and value > s.high)
        or (s.above is not None and value <= s.above)
        or (s.below is not None and value >= s.below)
    ):
        raise _fail(s, origin, f"expected{bounds_text(s)}; found {value}")
    return value


def _trials(s: Setting, origin: str, raw: Any) -> int | AutoTrials:
    """A whole number of trials per case, or `auto[:MIN:MAX]` (adaptive trials)."""
    text = str(raw).strip()
    if isinstance(raw, int) and not isinstance(raw, bool) or INTEGER.fullmatch(text):
        number = int(text)
        if not 1 <= number <= 10_000:
            raise _fail(s, origin, f"expected{bounds_text(s)} or auto[:MIN:MAX]; found {number}")
        return number
    parts = text.split(":")
    if parts[0] != "auto" or len(parts) not in (1, 3):
        raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
    if len(parts) == 1:
        return AutoTrials()
    if not all(INTEGER.fullmatch(p) for p in parts[1:]):
        raise _fail(s, origin, f"auto:MIN:MAX takes two whole numbers; found {raw!r}")
    low, high = int(parts[1]), int(parts[2])
    if not 1 <= low <= high <= AUTO_TRIALS_CAP:
        raise _fail(
            s,
            origin,
            f"auto:MIN:MAX needs 1 <= MIN <= MAX <= {AUTO_TRIALS_CAP}; found {raw!r}",
        )
    return AutoTrials(low, high)


def _concurrency(s: Setting, origin: str, raw: Any) -> int | None:
    text = str(raw).strip()
    if text == "auto":
        return None
    if not INTEGER.fullmatch(text):
        raise _fail(
            s,
            origin,
            f"expected a whole number of trials in flight (1..1024) or 'auto'; found {raw!r}",
        )
    number = int(text)
    if not 1 <= number <= 1024:
        raise _fail(s, origin, f"expected 1..1024 or 'auto'; found {number}")
    return number


def _dimensions(s: Setting, origin: str, raw: Any) -> tuple[str, ...]:
    from ..rubrics import STANDARD

    if isinstance(raw, str):
        names = [d.strip() for d in raw.split(",") if d.strip()]
    else:
        names = [str(d) for d in raw]
    if not names and isinstance(raw, str):  # `,`: no name (an empty ini list is all of them)
        raise _fail(
            s, origin, f"expected standard dimension names ({', '.join(STANDARD)}); found {raw!r}"
        )
    unknown = [d for d in names if d not in STANDARD]
    if unknown:
        raise _fail(
            s,
            origin,
            f"{', '.join(unknown)} not standard dimension(s); live traffic is judged on the "
            f"standard ones: {', '.join(STANDARD)} (found {raw!r})",
        )
    return tuple(names)


def _min_kappa(s: Setting, origin: str, raw: Any) -> float | str | None:
    try:
        return parse_min_kappa(raw)
    except MinKappaError as exc:
        raise _fail(s, origin, str(exc)) from None


def _patterns(s: Setting, origin: str, raw: Any) -> tuple[tuple[str, str], ...]:
    out = []
    for n, line in enumerate(raw, 1):
        name, sep, regex = line.partition(":")
        if not sep or not name.strip() or not regex.strip():
            raise pytest.UsageError(
                f"{s.where(origin)} line {n}: expected 'name: regex', found {line!r}"
            )
        try:
            re.compile(regex.strip())
        except (re.error, OverflowError, RecursionError) as exc:
            raise pytest.UsageError(
                f"{s.where(origin)} line {n}: {regex.strip()!r} is not a regex Python can "
                f"compile ({type(exc).__name__}: {exc}); found {line!r}"
            ) from None
        out.append((name.strip(), regex.strip()))
    return tuple(out)


def _prices(s: Setting, origin: str, raw: Any) -> Any:
    from ..errors import ConfigurationError
    from ..prices import parse_price_table

    try:
        return parse_price_table(raw, s.where(origin))
    except ConfigurationError as exc:
        raise pytest.UsageError(str(exc)) from None


def _budget(s: Setting, origin: str, raw: Any) -> Any:
    from .values import BudgetError, parse_run_budget

    try:
        return parse_run_budget(str(raw))
    except BudgetError as exc:
        raise _fail(s, origin, str(exc)) from None


def _shard_value(s: Setting, origin: str, raw: Any) -> Any:
    from .values import ShardError, parse_run_id, parse_shard

    try:
        if s.kind == "shard":
            return parse_shard(str(raw), os.environ)
        return parse_run_id(str(raw).strip())
    except ShardError as exc:
        raise _fail(s, origin, str(exc)) from None


def _parse(
    s: Setting, origin: str, raw: Any, root: Path | None, invocation: Path | None = None
) -> Any:
    """`raw`, found at `origin`, as the setting's type; UsageError when it is not allowed.

    Long for a reason: one branch per kind of the table, each a few lines, read as the one
    place that says what each kind accepts (the longer kinds have functions of their own)."""
    kind = s.kind
    if any(
        isinstance(v, str) and "\x00" in v
        for v in (raw if isinstance(raw, list | tuple) else [raw])
    ):
        shown = database.public_url(raw) if database.is_database_url(raw) else repr(raw)
        raise _fail(s, origin, f"expected {s.describe_allowed()}; found {shown} (a NUL character)")
    if origin == "option" and isinstance(raw, str) and kind != "store":
        # the command line is taken as typed: `--x=` and ` auto` are not values of anything
        if not raw.strip():
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found an empty value")
        if raw != raw.strip() and kind != "str":
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r} (spaces)")
    if kind in ("int", "float"):
        return _number(s, origin, raw)
    if kind == "concurrency":
        return _concurrency(s, origin, raw)
    if kind == "trials":
        return _trials(s, origin, raw)
    if kind == "min_kappa":
        return _min_kappa(s, origin, raw)
    if kind == "flag":
        return bool(raw)
    if kind == "choice":
        text = str(raw).strip()
        if text not in s.choices:
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
        return text
    if kind == "url":
        text = str(raw).strip()
        if origin != "env" and not _is_http_url(text):
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
        # a variable the openai SDK and other tools share is not this plugin's to refuse in
        # every run: a bad one stops a run only when its trials need the endpoint
        # (models.endpoint says which variable and what to set)
        return text
    if kind == "list" and s.choices:
        values = tuple(str(v) for v in raw)
        unknown = [v for v in values if v not in s.choices and v != "none"]
        if unknown:
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {', '.join(unknown)}")
        if "none" in values and len(values) > 1:
            raise _fail(
                s,
                origin,
                f"expected {s.describe_allowed()}; found {' '.join(values)} (none "
                "means no other value)",
            )
        return values
    if kind == "store":
        text = str(raw)
        if text.strip().lower() in NO_STORE:
            return None
        if database.is_database_url(text):
            try:
                database.check_url(text)
            except ValueError as exc:
                raise _fail(s, origin, f"{database.public_url(text)}: {exc}") from None
            # a PostgreSQL database: kept as the URL (its password too, for the driver; every
            # message shows it through `public_url`)
            if not database.driver_available():
                raise _fail(
                    s,
                    origin,
                    f"{database.public_url(text)} is a PostgreSQL store, which needs the psycopg "
                    f"driver (not installed): {database.INSTALL_HINT}",
                )
            return text.strip()
        if _URL_SCHEME.match(text.strip()):
            raise _fail(
                s, origin, f"expected {s.describe_allowed()}; found {raw!r}, a URL of another kind"
            )
        path = Path(text)
        path = path if path.is_absolute() or root is None else root / path
        problem = _unwritable(path, folder=s.name == "store")
        if problem:
            raise _fail(s, origin, f"{path}: {problem}")
        return path
    if kind == "output":
        try:
            path = Path(str(raw).strip()).expanduser()
        except RuntimeError:  # `~someone` of a user this machine does not know
            raise _fail(s, origin, f"{raw}: names the home folder of an unknown user") from None
        base = invocation if invocation is not None else Path.cwd()
        problem = _unwritable(path if path.is_absolute() else base / path, folder=False)
        if problem:
            raise _fail(s, origin, f"{raw}: {problem}")
        return str(raw).strip()
    if kind == "paths":
        return tuple((root / d).resolve() if root is not None else Path(d) for d in raw)
    if kind == "list":
        return tuple(str(v) for v in raw)
    if kind == "dimensions":
        return _dimensions(s, origin, raw)
    if kind == "patterns":
        return _patterns(s, origin, raw)
    if kind == "prices":
        return _prices(s, origin, raw)
    if kind == "budget":
        return _budget(s, origin, raw)
    if kind in ("shard", "run_id"):
        return _shard_value(s, origin, raw)
    return str(raw).strip()


_URL_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")


def _is_http_url(text: str) -> bool:
    """An http(s) URL with a host (`http://` alone names no server)."""
    if not text.startswith(("http://", "https://")):
        return False
    try:
        parts = urlsplit(text)
        parts.port  # noqa: B018 - raises on a port that is not a number 0..65535
    except ValueError:
        return False
    return bool(parts.hostname)


def _unwritable(path: Path, folder: bool) -> str | None:
    """Why the plugin could not write `path` (a folder it fills, or a file it writes), found
    before any trial; None when it can."""
    if path.exists():
        if folder and not path.is_dir():
            return "is a file, not a folder"
        if not folder and path.is_dir():
            return "is a folder, not a file"
        target = path if folder else path.parent
        if not os.access(target, os.W_OK):
            return f"{target} cannot be written (no write permission)"
        return None
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, so nothing can be made below it"
            if not os.access(parent, os.W_OK):
                return f"{parent} cannot be written (no write permission)"
            return None
    return None


def _default(s: Setting, root: Path | None) -> Any:
    if s.default is None:
        return None
    return _parse(s, "default", s.default, root)


SETTINGS = pytest.StashKey["Settings"]()


def resolve_settings(
    config: pytest.Config | None, environ: Mapping[str, str] | None = None
) -> Settings:
    """Every setting from `config`'s options and ini keys and the environment, parsed and
    checked. Raises `pytest.UsageError` naming the first bad one. With no config: defaults and
    environment only. Under `--help` and `--version` a bad value gives way to the default, so
    the help that explains it can still be read."""
    environ = os.environ if environ is None else environ
    root = Path(config.rootpath) if config is not None else None
    invocation = Path(config.invocation_params.dir) if config is not None else None
    option = getattr(config, "option", None)
    lenient = bool(getattr(option, "help", False) or getattr(option, "version", False))
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for s in TABLE:
        if not s.stored:
            continue
        found = _given(s, config, environ)
        if found is None:
            values[s.name] = _default(s, root)
            continue
        origin, raw = found
        try:
            values[s.name] = _parse(s, origin, raw, root, invocation)
        except pytest.UsageError:
            if not lenient:
                raise
            values[s.name] = _default(s, root)
            continue
        sources[s.name] = origin
    return Settings(**values, sources=MappingProxyType(sources))


def settings(config: pytest.Config | None = None) -> Settings:
    """The run's settings: resolved at configure time (or on first use, for a config that was
    parsed but not configured), then the same object for the whole run. With no config: the
    defaults and the environment, resolved now."""
    if config is None:
        return resolve_settings(None)
    found = config.stash.get(SETTINGS, None)
    if found is None:
        found = config.stash[SETTINGS] = resolve_settings(config)
    return found


def agent_label(config: pytest.Config) -> str | None:
    """The agent's name as the user gave it: `--commerce-agent`, ini `commerce_agent`, env
    `COMMERCE_AGENT`, else the `pytest_commerce_evals_agent_label` hook; None when unnamed."""
    label = settings(config).agent
    if label:
        return label
    hook = getattr(config.hook, "pytest_commerce_evals_agent_label", None)
    label = hook(config=config) if hook is not None else None  # None: used on its own
    return str(label).strip() if label and str(label).strip() else None
