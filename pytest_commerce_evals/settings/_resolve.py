"""Registering the table's options and ini keys, and resolving them into one frozen `Settings`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from ..store import database
from .table import AUTO_TRIALS_CAP, GROUP, NO_STORE, TABLE, AutoTrials, Setting, bounds_text

# -- registration ----------------------------------------------------------------------------


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
                if s.kind == "list":
                    kwargs["action"] = "append"
                elif s.kind == "int":
                    kwargs["type"] = int
                elif s.kind == "float":
                    kwargs["type"] = float
                elif s.kind == "choice":
                    kwargs.update(choices=s.choices, metavar=None)
            group.addoption(s.option, **kwargs)
        if s.ini:
            help_text = s.ini_help or (f"{s.help}; {s.option} overrides" if s.option else s.help)
            if s.ini_default is None:
                parser.addini(s.ini, help_text, type=s.ini_type)
            else:
                parser.addini(s.ini, help_text, type=s.ini_type, default=s.ini_default)


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
            if isinstance(value, str) and not value.strip() and s.blank_option_unset:
                continue
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


def _number(s: Setting, origin: str, raw: Any) -> int | float:
    kind = int if s.kind == "int" else float
    if isinstance(raw, kind) and not isinstance(raw, bool):
        value = raw
    else:
        try:
            value = kind(str(raw).strip())
        except ValueError:
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}") from None
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
    if not text.lower().startswith("auto"):
        try:
            number = raw if isinstance(raw, int) and not isinstance(raw, bool) else int(text)
        except ValueError:
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}") from None
        if not 1 <= number <= 10_000:
            raise _fail(s, origin, f"expected{bounds_text(s)} or auto[:MIN:MAX]; found {number}")
        return number
    parts = text.split(":")
    if parts[0].lower() != "auto" or len(parts) not in (1, 3):
        raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
    if len(parts) == 1:
        return AutoTrials()
    try:
        low, high = int(parts[1]), int(parts[2])
    except ValueError:
        raise _fail(s, origin, f"auto:MIN:MAX takes two whole numbers; found {raw!r}") from None
    if not 1 <= low <= high <= AUTO_TRIALS_CAP:
        raise _fail(
            s,
            origin,
            f"auto:MIN:MAX needs 1 <= MIN <= MAX <= {AUTO_TRIALS_CAP}; found {raw!r}",
        )
    return AutoTrials(low, high)


def _concurrency(s: Setting, origin: str, raw: Any) -> int | None:
    text = str(raw).strip()
    if text.lower() == "auto":
        return None
    try:
        number = int(text)
    except ValueError:
        raise _fail(
            s,
            origin,
            f"expected a whole number of trials in flight (1..1024) or 'auto'; found {raw!r}",
        ) from None
    if not 1 <= number <= 1024:
        raise _fail(s, origin, f"expected 1..1024 or 'auto'; found {number}")
    return number


def _dimensions(s: Setting, origin: str, raw: Any) -> tuple[str, ...]:
    from ..judge.rubrics import STANDARD

    if isinstance(raw, str):
        names = [d.strip() for d in raw.split(",") if d.strip()]
    else:
        names = [str(d) for d in raw]
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
    from ..judge.calibrated import MinKappaError, parse_min_kappa

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
        out.append((name.strip(), regex.strip()))
    return tuple(out)


def _parse(s: Setting, origin: str, raw: Any, root: Path | None) -> Any:
    """`raw`, found at `origin`, as the setting's type; UsageError when it is not allowed."""
    kind = s.kind
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
        if not text.startswith(("http://", "https://")) and origin != "env":
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
        # a variable the openai SDK and other tools share is not this plugin's to refuse in
        # every run: a bad one stops a run only when its trials need the endpoint
        # (models.endpoint says which variable and what to set)
        return text
    if kind == "list" and s.choices:
        values = tuple(str(v) for v in raw)
        unknown = [v for v in values if v not in s.choices and v.lower() != "none"]
        if unknown:
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {', '.join(unknown)}")
        return values
    if kind == "store":
        text = str(raw)
        if text.strip().lower() in NO_STORE:
            return None
        if database.is_database_url(text):
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
        path = Path(text)
        return path if path.is_absolute() or root is None else root / path
    if kind == "paths":
        return tuple((root / d).resolve() if root is not None else Path(d) for d in raw)
    if kind == "list":
        return tuple(str(v) for v in raw)
    if kind == "dimensions":
        return _dimensions(s, origin, raw)
    if kind == "patterns":
        return _patterns(s, origin, raw)
    return str(raw).strip()


def _default(s: Setting, root: Path | None) -> Any:
    if s.default is None:
        return None
    return _parse(s, "default", s.default, root)


def _fields() -> list[tuple[str, Any, Any]]:
    out: list[tuple[str, Any, Any]] = [(s.name, Any, None) for s in TABLE if s.stored]
    return [*out, ("sources", Mapping[str, str], field(default_factory=dict))]


def _origin(self: Settings, name: str) -> str:
    """Where setting `name` came from: `option`, `ini`, `env` or `default`."""
    return self.sources.get(name, "default")


Settings = dataclasses.make_dataclass(
    "Settings",
    _fields(),
    frozen=True,
    namespace={"origin": _origin, "__module__": "pytest_commerce_evals.settings"},
)
Settings.__doc__ = """The run's settings, one attribute per setting of TABLE (e.g. `trials`,
`store`, `judge_format`), parsed and checked; frozen. `sources` (and `origin(name)`) says where
each value came from: `option`, `ini`, `env` or `default`."""

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
            values[s.name] = _parse(s, origin, raw, root)
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
