"""The plugin's settings: one table declares every option, ini key and environment variable, and
one immutable `Settings` object, resolved and checked once at configure time, is what every
feature reads.

    TABLE                       # every setting: name, type, default, allowed values, help, where
    register(parser)            # the command-line options and ini keys, from TABLE
    settings(config)            # the run's `Settings` (frozen), e.g. settings(config).trials

Each setting is looked up in its own order (most: command line, then ini, then environment), the
first value given wins, else its default. A bad value is a `pytest.UsageError` naming where it
came from (`--commerce-trials`, `ini commerce_trials` or `env COMMERCE_CONCURRENCY`), the value
found and what is allowed, before any trial runs. docs/options.md is generated from TABLE
(`options_markdown()`) and a test compares the two.

API keys are declared here too but never held by `Settings`: they are read from the environment
where a client is made, so no object of the run can print one.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

__all__ = [
    "NO_STORE",
    "RUN_CONFIG",
    "SETTINGS",
    "TABLE",
    "RunConfig",
    "Setting",
    "Settings",
    "agent_label",
    "options_markdown",
    "register",
    "resolve_settings",
    "run_config",
    "settings",
]

GROUP = "commerce-evals"
NO_STORE = ("none", "off", "")
"""Values of `--commerce-store` and `--commerce-judge-store` that switch the store off."""


@dataclass(frozen=True)
class Setting:
    """One setting: where it may be given, its type and what it may be.

    `kind` decides how a value is parsed and checked: `str`, `int`, `float`, `choice`, `flag`
    (a command-line switch), `url` (http or https), `concurrency` (`auto` or a number), `store`
    (a path relative to the rootdir, or none/off), `paths` (ini list of folders under the
    rootdir), `list` (ini list or repeatable option), `dimensions` (standard rubric dimensions),
    `patterns` (ini lines `name: regex`), `secret` (environment only, never held) and `env`
    (read by the module that uses it, declared here for the docs)."""

    name: str
    kind: str
    help: str
    default: Any = None
    option: str | None = None
    ini: str | None = None
    env: str | None = None
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    above: float | None = None  # exclusive lower bound
    metavar: str | None = None
    ini_type: str = "string"
    ini_default: Any = ""
    ini_help: str | None = None
    order: tuple[str, ...] = ("option", "ini", "env")
    blank_option_unset: bool = True  # `--x=` counts as not given (False: '' is the value)
    allowed: str | None = None  # how the docs and errors describe the allowed values

    @property
    def dest(self) -> str | None:
        return self.option[2:].replace("-", "_") if self.option else None

    @property
    def stored(self) -> bool:
        return self.kind not in ("secret", "env")

    def where(self, origin: str) -> str:
        """How an error names this setting's source: the flag, `ini <key>` or `env <NAME>`."""
        if origin == "option":
            return str(self.option)
        if origin == "ini":
            return f"ini {self.ini}"
        if origin == "env":
            return f"env {self.env}"
        return self.name

    def describe_allowed(self) -> str:
        """The allowed values, in words (for errors and docs/options.md)."""
        if self.allowed:
            return self.allowed
        if self.kind == "choice":
            return "one of " + ", ".join(self.choices)
        if self.kind in ("int", "float"):
            noun = "a whole number" if self.kind == "int" else "a number"
            return f"{noun}{_bounds(self)}"
        return {
            "str": "text",
            "flag": "a switch (no value)",
            "url": "an http(s) URL, e.g. http://localhost:11434/v1",
            "concurrency": "auto, or a whole number 1..1024",
            "store": "a path relative to the rootdir, or none/off",
            "paths": "folders relative to the rootdir",
            "list": "a list",
            "secret": "the key (environment only)",
            "env": "text",
        }.get(self.kind, self.kind)


def _bounds(s: Setting) -> str:
    if s.low is not None and s.high is not None:
        return f" {s.low:g}..{s.high:g}"
    if s.low is not None:
        return f" {s.low:g} or more"
    if s.above is not None:
        return f" above {s.above:g}"
    return ""


_ENDPOINT_ORDER = ("option", "ini", "env")
_LOCAL_ORDER = ("ini", "env")  # the embedded model's settings: ini first, then environment

TABLE: tuple[Setting, ...] = (
    # -- running cases -------------------------------------------------------------------------
    Setting(
        "trials",
        "int",
        "run each case N times as separate items (ini: commerce_trials; default 1)",
        default=1,
        option="--commerce-trials",
        ini="commerce_trials",
        low=1,
        high=10_000,
        metavar="N",
        ini_default="1",
        ini_help="trials per case",
    ),
    Setting(
        "threshold",
        "float",
        "default pass threshold (0..1) of a set without its own _set.yaml threshold "
        "(ini: commerce_threshold; default 0.8)",
        default=0.8,
        option="--commerce-threshold",
        ini="commerce_threshold",
        low=0,
        high=1,
        metavar="RATE",
        ini_default="0.8",
        ini_help="default pass threshold of a set",
    ),
    Setting(
        "concurrency",
        "concurrency",
        "trials in flight at once in this process (ini commerce_concurrency, env "
        "COMMERCE_CONCURRENCY; default auto: 8 against a remote endpoint, 1 on the embedded "
        "model); with -n, per xdist worker",
        default=None,
        option="--commerce-concurrency",
        ini="commerce_concurrency",
        env="COMMERCE_CONCURRENCY",
        metavar="C",
        ini_help="trials in flight at once (a number or auto)",
    ),
    Setting(
        "case_dirs",
        "paths",
        "folders holding eval cases",
        default=("cases",),
        ini="commerce_case_dirs",
        ini_type="args",
        ini_default=["cases"],
    ),
    # -- the agent and model endpoints ---------------------------------------------------------
    Setting(
        "agent",
        "str",
        "the name of the agent under test, recorded with the run and accepted by "
        "--commerce-compare (ini commerce_agent, env COMMERCE_AGENT; default: the agent "
        "endpoint's model, when the agent asks the plugin for its client)",
        option="--commerce-agent",
        ini="commerce_agent",
        env="COMMERCE_AGENT",
        metavar="LABEL",
        ini_default=None,
        ini_help="the name of the agent under test; --commerce-agent overrides",
    ),
    Setting(
        "model",
        "str",
        "the agent's model name (env OPENAI_MODEL; 'local' = the embedded model)",
        option="--commerce-model",
        ini="commerce_model",
        env="OPENAI_MODEL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    ),
    Setting(
        "base_url",
        "url",
        "the agent's OpenAI-compatible base URL, e.g. http://localhost:8000/v1 "
        "(env OPENAI_BASE_URL; key from OPENAI_API_KEY)",
        option="--commerce-base-url",
        ini="commerce_base_url",
        env="OPENAI_BASE_URL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    ),
    Setting(
        "judge_model",
        "str",
        "the judge's model name (env COMMERCE_JUDGE_MODEL; default: the agent's endpoint)",
        option="--commerce-judge-model",
        ini="commerce_judge_model",
        env="COMMERCE_JUDGE_MODEL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    ),
    Setting(
        "judge_base_url",
        "url",
        "the judge's OpenAI-compatible base URL (env COMMERCE_JUDGE_BASE_URL; key from "
        "COMMERCE_JUDGE_API_KEY, else OPENAI_API_KEY)",
        option="--commerce-judge-base-url",
        ini="commerce_judge_base_url",
        env="COMMERCE_JUDGE_BASE_URL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    ),
    Setting(
        "openai_api_key",
        "secret",
        "the agent's API key (and the judge's when COMMERCE_JUDGE_API_KEY is not set); "
        "environment only, never stored, logged or printed",
        env="OPENAI_API_KEY",
    ),
    Setting(
        "judge_api_key",
        "secret",
        "the judge's API key; environment only, never stored, logged or printed",
        env="COMMERCE_JUDGE_API_KEY",
    ),
    Setting(
        "request_timeout",
        "float",
        "seconds a model request may take (default 120; 900 on the embedded model)",
        ini="commerce_request_timeout",
        above=0,
    ),
    Setting(
        "retry_attempts",
        "int",
        "attempts per model call on rate limits, 5xx, timeouts (default 4)",
        default=4,
        ini="commerce_retry_attempts",
        low=1,
    ),
    Setting(
        "retry_wait_max",
        "float",
        "longest wait between attempts, seconds (default 20)",
        default=20.0,
        ini="commerce_retry_wait_max",
        low=0,
    ),
    Setting(
        "local_model",
        "str",
        "embedded model: smollm2-135m (default), gemma3-270m, or a path to a .gguf "
        "(env COMMERCE_LOCAL_MODEL)",
        default="smollm2-135m",
        ini="commerce_local_model",
        env="COMMERCE_LOCAL_MODEL",
        order=_LOCAL_ORDER,
    ),
    Setting(
        "local_n_ctx",
        "int",
        "embedded model's context window in tokens (default 8192)",
        default=8192,
        ini="commerce_local_n_ctx",
        env="COMMERCE_LOCAL_N_CTX",
        low=1,
        order=_LOCAL_ORDER,
    ),
    Setting(
        "local_startup_timeout",
        "float",
        "seconds to wait for the embedded model (default 120)",
        default=120.0,
        ini="commerce_local_startup_timeout",
        env="COMMERCE_LOCAL_STARTUP_TIMEOUT",
        above=0,
        order=_LOCAL_ORDER,
    ),
    Setting(
        "local_threads",
        "int",
        "CPU threads of the embedded model (default: the CPUs, shared among xdist workers)",
        env="COMMERCE_LOCAL_THREADS",
        low=1,
    ),
    # -- the judge -----------------------------------------------------------------------------
    Setting(
        "judge_store",
        "store",
        "SQLite file of stored judge verdicts, relative to the rootdir; 'none' disables "
        "reuse (default: ini commerce_judge_store, else .commerce/verdicts.sqlite)",
        default=".commerce/verdicts.sqlite",
        option="--commerce-judge-store",
        ini="commerce_judge_store",
        metavar="PATH",
        ini_help="SQLite file of stored judge verdicts",
    ),
    Setting(
        "judge_budget",
        "int",
        "the judge's context budget for one prompt, in the unit of "
        "--commerce-judge-budget-unit; longer transcripts are cut from the start, the graded "
        "turn kept (default: ini commerce_judge_budget, else 48000)",
        option="--commerce-judge-budget",
        ini="commerce_judge_budget",
        low=0,
        metavar="N",
        ini_help="the judge's context budget for one prompt",
    ),
    Setting(
        "judge_budget_unit",
        "choice",
        "chars, or tokens counted as 4 characters each (default: ini "
        "commerce_judge_budget_unit, else chars)",
        default="chars",
        option="--commerce-judge-budget-unit",
        ini="commerce_judge_budget_unit",
        choices=("chars", "tokens"),
        ini_default="chars",
        ini_help="chars or tokens",
    ),
    Setting(
        "judge_format",
        "choice",
        "how the judge asks for structured output: json_schema (OpenAI, vLLM), "
        "json_object (llama.cpp's server), none (prompt only); auto picks json_object for the "
        "embedded llama.cpp server and json_schema otherwise",
        default="auto",
        option="--commerce-judge-format",
        ini="commerce_judge_format",
        choices=("auto", "json_schema", "json_object", "none"),
        ini_default="auto",
        ini_help="auto, json_schema, json_object or none",
    ),
    Setting(
        "judge_seed",
        "int",
        "the seed sent on every judge call",
        ini="commerce_judge_seed",
    ),
    Setting(
        "judge_max_tokens",
        "int",
        "max_tokens of a judge reply",
        ini="commerce_judge_max_tokens",
        low=1,
    ),
    Setting(
        "no_judge",
        "flag",
        "do not call the judge: rubric dimensions are reported as not judged",
        default=False,
        option="--commerce-no-judge",
    ),
    Setting(
        "judge_calibrate",
        "flag",
        "run the configured judge over the labelled calibration set, print agreement and "
        "Cohen's kappa per rubric dimension, and exit",
        default=False,
        option="--commerce-judge-calibrate",
    ),
    Setting(
        "judge_calibration_set",
        "str",
        "folder or JSON file of labelled transcripts for --commerce-judge-calibrate "
        "(default: tests/data/calibration under the rootdir)",
        option="--commerce-judge-calibration-set",
        metavar="PATH",
    ),
    # -- the run store and reports -------------------------------------------------------------
    Setting(
        "store",
        "store",
        "folder of the run store (SQLite inside), relative to the rootdir; 'none' records "
        "nothing (ini commerce_store; default .commerce/runs)",
        default=".commerce/runs",
        option="--commerce-store",
        ini="commerce_store",
        metavar="PATH",
        ini_help="folder of the run store (SQLite inside)",
        blank_option_unset=False,
    ),
    Setting(
        "baseline",
        "str",
        "diff the failing set against this stored run id (or unique prefix) or run record "
        "JSON file instead of the previous comparable run",
        option="--commerce-baseline",
        metavar="RUN|FILE",
    ),
    Setting(
        "compare",
        "str",
        "print the failing sets of two runs side by side and exit without running tests; "
        "each side is a run id, a run record JSON file, or an agent model name (its latest "
        "complete run)",
        option="--commerce-compare",
        metavar="A,B",
    ),
    Setting(
        "html",
        "str",
        "write a self-contained HTML report of the run (or of --commerce-compare) to PATH",
        option="--commerce-html",
        metavar="PATH",
    ),
    Setting(
        "json",
        "str",
        "write the run record (JSON, with schema_version) to PATH, e.g. for CI artifacts",
        option="--commerce-json",
        metavar="PATH",
    ),
    # -- live traffic --------------------------------------------------------------------------
    Setting(
        "live",
        "list",
        "judge captured production traffic (a JSONL capture file, or a folder of them; "
        "repeatable) instead of running cases; see docs/live.md",
        default=(),
        option="--commerce-live",
        metavar="PATH",
    ),
    Setting(
        "sample_rate",
        "float",
        "share of conversations to judge, 0..1, decided per conversation id "
        "(ini commerce_sample_rate; default 1)",
        default=1.0,
        option="--commerce-sample-rate",
        ini="commerce_sample_rate",
        low=0,
        high=1,
        metavar="R",
        ini_default="1",
        ini_help="share of live conversations to judge",
    ),
    Setting(
        "sample_seed",
        "str",
        "seed of the sample: the same seed keeps the same conversations "
        "(ini commerce_sample_seed; default 0)",
        default="0",
        option="--commerce-sample-seed",
        ini="commerce_sample_seed",
        metavar="S",
        ini_default="0",
        ini_help="seed of the live sample",
    ),
    Setting(
        "live_dimensions",
        "dimensions",
        "standard rubric dimensions to judge live traffic on, comma-separated "
        "(ini commerce_live_dimensions; default all)",
        default=(),
        option="--commerce-live-dimensions",
        ini="commerce_live_dimensions",
        metavar="A,B",
        ini_type="args",
        ini_default=[],
        ini_help="standard dimensions judged on live traffic",
    ),
    Setting(
        "live_threshold",
        "float",
        "pass threshold of the live set (default 0: a live run reports a trend, it does not gate)",
        default=0.0,
        ini="commerce_live_threshold",
        low=0,
        high=1,
        ini_default="0",
    ),
    Setting(
        "redact",
        "list",
        "identifiers redacted from live traffic before the judge "
        "and the run store see it: email phone card, or none",
        default=("email", "phone", "card"),
        ini="commerce_redact",
        ini_type="args",
        ini_default=["email", "phone", "card"],
        allowed="email, phone, card (any of them), or none",
    ),
    Setting(
        "redact_patterns",
        "patterns",
        "extra redaction patterns, one per line: name: regex",
        default=(),
        ini="commerce_redact_patterns",
        ini_type="linelist",
        ini_default=[],
        allowed="lines 'name: regex'",
    ),
    Setting(
        "trend",
        "flag",
        "print the pass rate per rubric dimension over the live runs in the run store "
        "(after a --commerce-live run, or alone, without running anything)",
        default=False,
        option="--commerce-trend",
    ),
    Setting(
        "trend_svg",
        "str",
        "draw the live trend as an SVG chart at PATH (implies --commerce-trend)",
        option="--commerce-trend-svg",
        metavar="PATH",
    ),
    Setting(
        "trend_runs",
        "int",
        "how many of the newest live runs the trend covers (default 12)",
        default=12,
        option="--commerce-trend-runs",
        low=1,
        metavar="N",
    ),
    # -- authoring -----------------------------------------------------------------------------
    Setting(
        "lint",
        "flag",
        "check the case files against the authoring rules (docs/authoring.md) and exit",
        default=False,
        option="--commerce-lint",
    ),
    Setting(
        "vacuity",
        "flag",
        "run every case against degenerate scripted agents and report cases that assert "
        "nothing (docs/authoring.md)",
        default=False,
        option="--commerce-vacuity",
    ),
    Setting(
        "captured",
        "list",
        "files or folders of captured traffic the lint scans for poisoned IDs",
        default=(),
        ini="commerce_captured",
        ini_type="args",
        ini_default=[],
    ),
    # -- caches --------------------------------------------------------------------------------
    Setting(
        "cache_dir",
        "env",
        "folder of the parsed-YAML cache (default $XDG_CACHE_HOME/commerce-evals, else "
        "~/.cache/commerce-evals); off, no, 0 or empty turn the cache off",
        env="COMMERCE_CACHE_DIR",
        allowed="a folder, or off",
    ),
)

BY_NAME: Mapping[str, Setting] = MappingProxyType({s.name: s for s in TABLE})


# -- registration ----------------------------------------------------------------------------


def register(parser: pytest.Parser) -> None:
    """Every option (in the `commerce-evals` group) and ini key of TABLE."""
    group = parser.getgroup(GROUP, "commerce agent evals")
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
            if s.ini_type != "string":
                return origin, value  # a list: the ini's own default when not set
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
    ):
        raise _fail(s, origin, f"expected{_bounds(s)}; found {value}")
    return value


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
    from .judge.rubrics import STANDARD

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
    if kind == "flag":
        return bool(raw)
    if kind == "choice":
        text = str(raw).strip()
        if text not in s.choices:
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
        return text
    if kind == "url":
        text = str(raw).strip()
        if not text.startswith(("http://", "https://")):
            raise _fail(s, origin, f"expected {s.describe_allowed()}; found {raw!r}")
        return text
    if kind == "store":
        text = str(raw)
        if text.strip().lower() in NO_STORE:
            return None
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
    namespace={"origin": _origin, "__module__": __name__},
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


# -- the run's selection settings ------------------------------------------------------------


@dataclass
class RunConfig:
    """The settings of collecting and running cases, derived once from `Settings`."""

    trials: int
    threshold: float
    case_dirs: list[Path]
    explicit: set[Path]
    concurrency: int | None = None  # None: auto


RUN_CONFIG = pytest.StashKey[RunConfig]()


def run_config(config: pytest.Config) -> RunConfig:
    return config.stash[RUN_CONFIG]


# -- docs/options.md -------------------------------------------------------------------------

_ORIGIN_WORDS = {"option": "command line", "ini": "ini", "env": "environment"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default_text(s: Setting) -> str:
    if s.kind == "flag":
        return "off"
    if s.default is None or s.default == ():
        return "—"
    if isinstance(s.default, tuple):
        return " ".join(s.default)
    return str(s.default)


def _precedence(s: Setting) -> str:
    found = [o for o in s.order if getattr(s, o)]
    return " > ".join(_ORIGIN_WORDS[o] for o in found)


def options_markdown() -> str:
    """docs/options.md, generated from TABLE."""
    lines = [
        "# Options, ini keys and environment variables",
        "",
        "Every setting of the plugin, generated from the table in",
        "`pytest_commerce_evals/settings.py` (`python -m pytest_commerce_evals.settings >",
        "docs/options.md`); a test keeps the two equal.",
        "",
        "A setting given in more than one place takes the first of its *precedence* column;",
        "an ini key or variable set to an empty value counts as not set. A bad value stops the",
        "run before any trial with a usage error naming where it came from (`--commerce-trials`,",
        "`ini commerce_trials`, `env COMMERCE_CONCURRENCY`), the value found and what is allowed.",
        "",
        "| Option | Ini key | Environment | Type / allowed | Default | Precedence | Help |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in TABLE:
        cells = [
            f"`{s.option}`" if s.option else "",
            f"`{s.ini}`" if s.ini else "",
            f"`{s.env}`" if s.env else "",
            _cell(s.describe_allowed()),
            _cell(_default_text(s)),
            _precedence(s),
            _cell(s.help),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def declared_names() -> set[str]:
    """Every option, ini key and environment variable TABLE declares."""
    return {n for s in TABLE for n in (s.option, s.ini, s.env) if n}


_DOC_NAME = re.compile(r"`((?:--commerce-|commerce_|COMMERCE_|OPENAI_)[A-Za-z0-9_-]+)`")


def documented_names(text: str) -> set[str]:
    """The option, ini and environment names in the table rows of docs/options.md."""
    found: set[str] = set()
    for line in text.splitlines():
        if line.startswith("| `") or line.startswith("|  |") or line.startswith("| |"):
            cells = line.split("|")[1:4]
            for cell in cells:
                found.update(_DOC_NAME.findall(cell))
    return found


if __name__ == "__main__":  # python -m pytest_commerce_evals.settings > docs/options.md
    print(options_markdown(), end="")
