"""The settings table: every option, ini key and environment variable of the plugin, declared
once, as a field of the typed `Settings` (its type, and its row: default, allowed values, help,
where it may be given, which source wins); `TABLE` is read off that class."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, ClassVar, Literal, get_args, get_type_hints

from ..prices import Price
from .values import RunBudget, Shard

__all__ = [
    "AUTO_TRIALS_CAP",
    "BY_NAME",
    "GROUP",
    "NO_STORE",
    "TABLE",
    "AutoTrials",
    "Setting",
    "Settings",
    "bounds_text",
    "env_only",
    "stored",
]

GROUP = "commerce-evals"
NO_STORE = ("none", "off", "")
"""Values of `--commerce-store` and `--commerce-judge-store` that switch the store off."""
AUTO_TRIALS_CAP = 100
"""The largest MAX of `--commerce-trials=auto:MIN:MAX`."""


@dataclass(frozen=True)
class AutoTrials:
    """`--commerce-trials=auto:MIN:MAX`: each case runs MIN to MAX trials, until its verdict is
    decided (runner/adaptive.py); `auto` alone is `auto:2:10`."""

    minimum: int = 2
    maximum: int = 10

    def __str__(self) -> str:
        return f"auto:{self.minimum}:{self.maximum}"


@dataclass(frozen=True)
class Setting:
    """One setting: where it may be given, its type and what it may be.

    `kind` decides how a value is parsed and checked: `str`, `int`, `float`, `choice`, `flag`
    (a command-line switch), `url` (http or https), `concurrency` (`auto` or a number), `store`
    (a path relative to the rootdir, or none/off), `output` (a file the run writes, relative to
    the invocation directory: refused when it cannot be written), `paths` (ini list of folders
    under the rootdir), `list` (ini list or repeatable option), `dimensions` (standard rubric
    dimensions), `min_kappa` (`auto`, `none` or a kappa in [-1, 1]),
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
    below: float | None = None  # exclusive upper bound
    metavar: str | None = None
    ini_type: str = "string"
    ini_default: Any = ""
    ini_help: str | None = None
    order: tuple[str, ...] = ("option", "ini", "env")
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
            return f"{noun}{bounds_text(self)}"
        return {
            "str": "text",
            "flag": "a switch (no value)",
            "url": "an http(s) URL, e.g. http://localhost:11434/v1",
            "concurrency": "auto, or a whole number 1..1024",
            "min_kappa": "auto, none, or a number -1..1",
            "store": "a path relative to the rootdir, a postgresql:// URL, or none/off",
            "output": "a file path to write (relative to the directory pytest runs in)",
            "paths": "folders relative to the rootdir",
            "list": "a list",
            "secret": "the key (environment only)",
            "prices": "lines 'MODEL = INPUT OUTPUT [CACHED]' (USD per million tokens)",
            "budget": (
                "calls:N, tokens:N (N from 1 to 10^15) or cost:USD (above 0, at most "
                "1,000,000,000; one or more, comma-separated)"
            ),
            "shard": (
                "K/N: whole numbers, 1 <= K <= N <= 256 (e.g. 2/4), or ci (GitLab CI's or "
                "Buildkite's parallel job)"
            ),
            "run_id": (
                "1 to 128 ASCII letters, digits, '.', '_', ':' or '-', starting with a letter "
                "or a digit"
            ),
            "env": "text",
        }.get(self.kind, self.kind)


def bounds_text(s: Setting) -> str:
    """The numeric bounds of `s` in words, e.g. ' 0..1' or ' 1 or more' ('' when none)."""
    if s.above is not None and s.below is not None:
        return f" above {s.above:g} and below {s.below:g}"
    if s.low is not None and s.high is not None:
        return f" {s.low:g}..{s.high:g}"
    if s.low is not None:
        return f" {s.low:g} or more"
    if s.above is not None:
        return f" above {s.above:g}"
    return ""


_ENDPOINT_ORDER = ("option", "ini", "env")
_LOCAL_ORDER = ("ini", "env")  # the embedded model's settings: ini first, then environment
_ROW = "commerce_evals_setting"


def stored(kind: str, help: str, **row: Any) -> Any:
    """Declare a setting `Settings` holds: its row (`Setting`'s fields but the name, which is the
    field's). A `choice` setting's choices are its type's (`Literal[...]`)."""
    return field(metadata={_ROW: Setting("", kind, help, **row)})


def env_only(kind: str, help: str, **row: Any) -> Setting:
    """Declare a setting `Settings` never holds: an API key (`secret`) or a variable read by the
    module that uses it (`env`), declared here for the docs and the lookups."""
    return Setting("", kind, help, **row)


@dataclass(frozen=True)
class Settings:
    """The run's settings, one attribute per stored setting (e.g. `trials`, `store`,
    `judge_format`), parsed and checked; frozen. Each is declared once, here: its type (as
    `settings._resolve` parses it) and its row (`stored(...)`: where it may be given, its kind,
    default, allowed values and help); `TABLE` is read off this class, in this order. A setting
    only the environment gives (`env_only(...)`) is a class-level row, never a value.

    `sources` (and `origin(name)`) says where each value came from: `option`, `ini`, `env` or
    `default`."""

    # -- running cases -------------------------------------------------------------------------
    trials: int | AutoTrials = stored(
        "trials",
        "run each case N times as separate items, or auto[:MIN:MAX] (auto = auto:2:10): each "
        "case's trials until its verdict is decided (ini: commerce_trials; default 1)",
        default=1,
        option="--commerce-trials",
        ini="commerce_trials",
        low=1,
        high=10_000,
        metavar="N",
        allowed=f"a whole number 1..10000, or auto[:MIN:MAX] with 1 <= MIN <= MAX <= "
        f"{AUTO_TRIALS_CAP} (auto = auto:2:10)",
        ini_default="1",
        ini_help="trials per case",
    )
    threshold: float = stored(
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
    )
    concurrency: int | None = stored(
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
    )
    budget: RunBudget | None = stored(
        "budget",
        "stop starting new trials once the run's model calls (the agent's, the judge's and the "
        "simulated customer's: the bill) have spent this much: calls:N, tokens:N or cost:USD, "
        "comma-separated, lower-case keywords and ASCII digits (what ran is recorded; sets that "
        "could not finish are UNDECIDED)",
        option="--commerce-budget",
        ini="commerce_budget",
        metavar="SPEND",
        ini_help="the run's budget: calls:N, tokens:N, cost:USD",
    )
    prices: Mapping[str, Price] = stored(
        "prices",
        "the price of each model the run's calls name, one per line: MODEL = INPUT OUTPUT "
        "[CACHED] in US dollars per million tokens; first, before genai-prices' data",
        default={},
        ini="commerce_prices",
        ini_type="linelist",
        ini_default=[],
        allowed="lines 'MODEL = INPUT OUTPUT [CACHED]' (USD per million tokens)",
    )
    case_dirs: tuple[Path, ...] = stored(
        "paths",
        "folders holding eval cases",
        default=("cases",),
        ini="commerce_case_dirs",
        ini_type="args",
        ini_default=["cases"],
    )
    # -- the agent and model endpoints ---------------------------------------------------------
    agent: str | None = stored(
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
    )
    model: str | None = stored(
        "str",
        "the agent's model name (env OPENAI_MODEL; 'local' = the embedded model)",
        option="--commerce-model",
        ini="commerce_model",
        env="OPENAI_MODEL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    )
    base_url: str | None = stored(
        "url",
        "the agent's OpenAI-compatible base URL, e.g. http://localhost:8000/v1 "
        "(env OPENAI_BASE_URL; key from OPENAI_API_KEY)",
        option="--commerce-base-url",
        ini="commerce_base_url",
        env="OPENAI_BASE_URL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    )
    judge_model: str | None = stored(
        "str",
        "the judge's model name (env COMMERCE_JUDGE_MODEL; default: the agent's endpoint)",
        option="--commerce-judge-model",
        ini="commerce_judge_model",
        env="COMMERCE_JUDGE_MODEL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    )
    judge_base_url: str | None = stored(
        "url",
        "the judge's OpenAI-compatible base URL (env COMMERCE_JUDGE_BASE_URL; key from "
        "COMMERCE_JUDGE_API_KEY, else OPENAI_API_KEY)",
        option="--commerce-judge-base-url",
        ini="commerce_judge_base_url",
        env="COMMERCE_JUDGE_BASE_URL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    )
    user_model: str | None = stored(
        "str",
        "the simulated customer's model name (env COMMERCE_USER_MODEL; default: the agent's "
        "endpoint)",
        option="--commerce-user-model",
        ini="commerce_user_model",
        env="COMMERCE_USER_MODEL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    )
    user_base_url: str | None = stored(
        "url",
        "the simulated customer's OpenAI-compatible base URL (env COMMERCE_USER_BASE_URL; key "
        "from COMMERCE_USER_API_KEY, else OPENAI_API_KEY)",
        option="--commerce-user-base-url",
        ini="commerce_user_base_url",
        env="COMMERCE_USER_BASE_URL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    )
    attacker_model: str | None = stored(
        "str",
        "the attacking customer's model name, for cases with user.attack (env "
        "COMMERCE_ATTACKER_MODEL; default: the simulated customer's endpoint)",
        option="--commerce-attacker-model",
        ini="commerce_attacker_model",
        env="COMMERCE_ATTACKER_MODEL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    )
    attacker_base_url: str | None = stored(
        "url",
        "the attacking customer's OpenAI-compatible base URL (env COMMERCE_ATTACKER_BASE_URL; "
        "key from COMMERCE_ATTACKER_API_KEY, else COMMERCE_USER_API_KEY, else OPENAI_API_KEY)",
        option="--commerce-attacker-base-url",
        ini="commerce_attacker_base_url",
        env="COMMERCE_ATTACKER_BASE_URL",
        metavar="VALUE",
        order=_ENDPOINT_ORDER,
    )
    openai_api_key: ClassVar[Setting] = env_only(
        "secret",
        "the agent's API key (and the judge's when COMMERCE_JUDGE_API_KEY is not set); "
        "environment only, never stored, logged or printed",
        env="OPENAI_API_KEY",
    )
    judge_api_key: ClassVar[Setting] = env_only(
        "secret",
        "the judge's API key; environment only, never stored, logged or printed",
        env="COMMERCE_JUDGE_API_KEY",
    )
    user_api_key: ClassVar[Setting] = env_only(
        "secret",
        "the simulated customer's API key; environment only, never stored, logged or printed",
        env="COMMERCE_USER_API_KEY",
    )
    attacker_api_key: ClassVar[Setting] = env_only(
        "secret",
        "the attacking customer's API key (else the simulated customer's); environment only, "
        "never stored, logged or printed",
        env="COMMERCE_ATTACKER_API_KEY",
    )
    request_timeout: float | None = stored(
        "float",
        "seconds a model request may take (default 120; 900 on the embedded model)",
        ini="commerce_request_timeout",
        above=0,
    )
    retry_attempts: int = stored(
        "int",
        "attempts per model call on rate limits, 5xx, timeouts (default 4)",
        default=4,
        ini="commerce_retry_attempts",
        low=1,
    )
    retry_wait_max: float = stored(
        "float",
        "longest wait between attempts, seconds (default 20)",
        default=20.0,
        ini="commerce_retry_wait_max",
        low=0,
    )
    local_model: str = stored(
        "str",
        "embedded model: smollm2-135m (default), gemma3-270m, or a path to a .gguf "
        "(env COMMERCE_LOCAL_MODEL)",
        default="smollm2-135m",
        ini="commerce_local_model",
        env="COMMERCE_LOCAL_MODEL",
        order=_LOCAL_ORDER,
    )
    local_n_ctx: int = stored(
        "int",
        "embedded model's context window in tokens (default 8192)",
        default=8192,
        ini="commerce_local_n_ctx",
        env="COMMERCE_LOCAL_N_CTX",
        low=1,
        order=_LOCAL_ORDER,
    )
    local_startup_timeout: float = stored(
        "float",
        "seconds to wait for the embedded model (default 120)",
        default=120.0,
        ini="commerce_local_startup_timeout",
        env="COMMERCE_LOCAL_STARTUP_TIMEOUT",
        above=0,
        order=_LOCAL_ORDER,
    )
    local_threads: int | None = stored(
        "int",
        "CPU threads of the embedded model (default: the CPUs, shared among xdist workers)",
        env="COMMERCE_LOCAL_THREADS",
        low=1,
    )
    # -- the judge -----------------------------------------------------------------------------
    judge_store: Path | str | None = stored(
        "store",
        "SQLite file of stored judge verdicts, relative to the rootdir, or a PostgreSQL URL "
        "(postgresql://user@host:5432/db, optional ?schema=NAME; needs the [postgres] extra); "
        "'none' disables reuse (ini commerce_judge_store, env COMMERCE_JUDGE_STORE; default "
        ".commerce/verdicts.sqlite)",
        default=".commerce/verdicts.sqlite",
        option="--commerce-judge-store",
        ini="commerce_judge_store",
        env="COMMERCE_JUDGE_STORE",
        metavar="PATH|URL",
        ini_help="SQLite file of stored judge verdicts, or a PostgreSQL URL",
    )
    judge_budget: int | None = stored(
        "int",
        "the judge's context budget for one prompt, in the unit of "
        "--commerce-judge-budget-unit; longer transcripts are cut from the start, the graded "
        "turn kept (default: ini commerce_judge_budget, else 48000)",
        option="--commerce-judge-budget",
        ini="commerce_judge_budget",
        low=0,
        metavar="N",
        ini_help="the judge's context budget for one prompt",
    )
    judge_budget_unit: Literal["chars", "tokens"] = stored(
        "choice",
        "chars, or tokens counted as 4 characters each (default: ini "
        "commerce_judge_budget_unit, else chars)",
        default="chars",
        option="--commerce-judge-budget-unit",
        ini="commerce_judge_budget_unit",
        ini_default="chars",
        ini_help="chars or tokens",
    )
    judge_format: Literal["auto", "json_schema", "json_object", "none"] = stored(
        "choice",
        "how the judge asks for structured output: json_schema (OpenAI, vLLM), "
        "json_object (llama.cpp's server), none (prompt only); auto picks json_object for the "
        "embedded llama.cpp server and json_schema otherwise",
        default="auto",
        option="--commerce-judge-format",
        ini="commerce_judge_format",
        ini_default="auto",
        ini_help="auto, json_schema, json_object or none",
    )
    judge_seed: int | None = stored(
        "int",
        "the seed sent on every judge call",
        ini="commerce_judge_seed",
    )
    judge_max_tokens: int | None = stored(
        "int",
        "max_tokens of a judge reply",
        ini="commerce_judge_max_tokens",
        low=1,
    )
    user_seed: int | None = stored(
        "int",
        "the seed sent on every call of the simulated customer",
        ini="commerce_user_seed",
    )
    user_max_tokens: int | None = stored(
        "int",
        "max_tokens of a simulated customer's message",
        ini="commerce_user_max_tokens",
        low=1,
    )
    no_judge: bool = stored(
        "flag",
        "do not call the judge: rubric dimensions are reported as not judged",
        default=False,
        option="--commerce-no-judge",
    )
    judge_min_kappa: float | str | None = stored(
        "min_kappa",
        "the calibrated Cohen's kappa a judge needs on a rubric dimension for its verdicts there "
        "to decide a trial; below it (or uncalibrated) verdicts are reported as advisory and "
        "decide nothing. auto: 0.4 for the embedded judge, no bar for a configured one; none: "
        "every verdict decides (ini commerce_judge_min_kappa; default auto)",
        default="auto",
        option="--commerce-judge-min-kappa",
        ini="commerce_judge_min_kappa",
        metavar="KAPPA",
        ini_default="auto",
        ini_help="auto, none, or the kappa a judged dimension needs to decide a trial",
    )
    judge_calibrate: bool = stored(
        "flag",
        "run the configured judge over the labelled calibration set, print agreement and "
        "Cohen's kappa per rubric dimension, and exit",
        default=False,
        option="--commerce-judge-calibrate",
    )
    judge_calibration_set: str | None = stored(
        "str",
        "folder or JSON file of labelled transcripts for --commerce-judge-calibrate "
        "(default: tests/data/calibration under the rootdir)",
        option="--commerce-judge-calibration-set",
        metavar="PATH",
    )
    # -- the run store and reports -------------------------------------------------------------
    store: Path | str | None = stored(
        "store",
        "folder of the run store (SQLite inside), relative to the rootdir, or a PostgreSQL URL "
        "(postgresql://user@host:5432/db, optional ?schema=NAME; needs the [postgres] extra); "
        "'none' records nothing (ini commerce_store, env COMMERCE_STORE; default .commerce/runs)",
        default=".commerce/runs",
        option="--commerce-store",
        ini="commerce_store",
        env="COMMERCE_STORE",
        metavar="PATH|URL",
        ini_help="folder of the run store (SQLite inside), or a PostgreSQL URL",
    )
    store_copy: str | None = stored(
        "str",
        "copy every run from one run store to another and exit without running tests: "
        "SRC,DST, each a folder (relative to the rootdir) or a PostgreSQL URL; a run already "
        "in DST is written over with the same rows, so copying twice adds nothing",
        option="--commerce-store-copy",
        metavar="SRC,DST",
    )
    store_import: tuple[str, ...] = stored(
        "list",
        "store a run record written aside (unsaved-<run>.json, or any --commerce-json record) "
        "in the run store (--commerce-store) and exit without running tests; repeatable; a "
        "run already there is written over with the same rows, so importing twice adds nothing",
        default=(),
        option="--commerce-store-import",
        metavar="FILE",
    )
    judge_store_copy: str | None = stored(
        "str",
        "copy every stored judge verdict from one verdict store to another and exit without "
        "running tests: SRC,DST, each a SQLite file (relative to the rootdir) or a PostgreSQL "
        "URL; idempotent (may be given with --commerce-store-copy)",
        option="--commerce-judge-store-copy",
        metavar="SRC,DST",
    )
    baseline: str | None = stored(
        "str",
        "diff the failing set against this stored run id (or unique prefix) or run record "
        "JSON file instead of the previous comparable run",
        option="--commerce-baseline",
        metavar="RUN|FILE",
    )
    diff_level: float = stored(
        "float",
        "level of the one-sided Fisher exact test that calls a case newly failing or fixed "
        "against its baseline (ini commerce_diff_level; default 0.01)",
        default=0.01,
        option="--commerce-diff-level",
        ini="commerce_diff_level",
        above=0,
        below=1,
        metavar="P",
        ini_default="0.01",
        ini_help="level of the per-case drop/rise test of the failing-set diff",
    )
    history_runs: int = stored(
        "int",
        "comparable runs per case pooled into its baseline and shown in its flaky strip "
        "(ini commerce_history_runs; default 10)",
        default=10,
        option="--commerce-history-runs",
        ini="commerce_history_runs",
        low=1,
        high=1000,
        metavar="M",
        ini_default="10",
        ini_help="comparable runs per case in its baseline and flaky strip",
    )
    flaky: bool | None = stored(
        "flag",
        "list the flaky cases (outcome flipped across the last --commerce-history-runs "
        "complete runs) of the latest agent model, or of --commerce-agent, and exit without "
        "running tests",
        option="--commerce-flaky",
    )
    compare: str | None = stored(
        "str",
        "print the failing sets of two runs side by side and exit without running tests; "
        "each side is a run id, a run record JSON file, or an agent model name (its latest "
        "complete run)",
        option="--commerce-compare",
        metavar="A,B",
    )
    regrade: str | None = stored(
        "str",
        "grade a stored run again without calling the agent: today's cases (expected, rubric) "
        "and judge on the transcripts and final states it recorded, as many trials per case as "
        "it stored; records a new run naming its source (options.regrade_of) and diffs against "
        "it; with a different judge, prints the agreement and Cohen's kappa of the stored and "
        "the new verdicts per rubric dimension",
        option="--commerce-regrade",
        metavar="RUN|FILE",
        allowed="a stored run id, a unique prefix of one (8+ characters), or a run record "
        "JSON file",
    )
    html: str | None = stored(
        "output",
        "write a self-contained HTML report of the run (or of --commerce-compare) to PATH",
        option="--commerce-html",
        metavar="PATH",
    )
    json: str | None = stored(
        "output",
        "write the run record (JSON, with schema_version) to PATH, e.g. for CI artifacts",
        option="--commerce-json",
        metavar="PATH",
    )
    # -- one run across many CI runners (docs/shards.md) ------------------------------------------
    shard: Shard | None = stored(
        "shard",
        "run the K-th of N slices of the run's cases (balanced by each case's recorded time) as "
        "part of one run in the run store, shared by every shard; the shard's own errors set "
        "its exit status, the run's verdict is the merge step's (--commerce-merge); ci reads "
        "GitLab CI's parallel job (CI_NODE_INDEX/CI_NODE_TOTAL) or Buildkite's "
        "(BUILDKITE_PARALLEL_JOB/_COUNT); env COMMERCE_SHARD",
        option="--commerce-shard",
        env="COMMERCE_SHARD",
        metavar="K/N|ci",
        order=("option", "env"),
    )
    run_id: str | None = stored(
        "run_id",
        "the id of the run every shard writes into (with --commerce-shard); by default the CI "
        "run's own: GitHub Actions, GitLab CI and Buildkite are read (env COMMERCE_RUN_ID)",
        option="--commerce-run-id",
        env="COMMERCE_RUN_ID",
        metavar="ID",
        order=("option", "env"),
    )
    merge: str | None = stored(
        "str",
        "gate a run recorded in shards and exit without running tests: its sets, failing-set "
        "diff, exit status and reports over every shard's trials; ci for the run the CI's "
        "variables name; a shard missing or unfinished makes the run incomplete and the exit "
        "status 1",
        option="--commerce-merge",
        metavar="RUN|ci",
    )
    # -- live traffic --------------------------------------------------------------------------
    live: tuple[str, ...] = stored(
        "list",
        "judge captured production traffic (a JSONL capture file, or a folder of them; "
        "repeatable) instead of running cases; see docs/live.md",
        default=(),
        option="--commerce-live",
        metavar="PATH",
    )
    live_format: Literal["auto", "native", "openai", "otel"] = stored(
        "choice",
        "format of the --commerce-live files: native (the plugin's capture lines), openai "
        "(one chat-completions conversation per line), otel (OpenTelemetry GenAI spans as OTLP "
        "JSON), or auto (decided per file from its content)",
        default="auto",
        option="--commerce-live-format",
        ini="commerce_live_format",
        ini_default="auto",
        ini_help="auto, native, openai or otel",
    )
    sample_rate: float = stored(
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
    )
    sample_seed: str = stored(
        "str",
        "seed of the sample: the same seed keeps the same conversations "
        "(ini commerce_sample_seed; default 0)",
        default="0",
        option="--commerce-sample-seed",
        ini="commerce_sample_seed",
        metavar="S",
        ini_default="0",
        ini_help="seed of the live sample",
    )
    live_dimensions: tuple[str, ...] = stored(
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
    )
    promote: tuple[str, ...] = stored(
        "list",
        "with --commerce-live: write each named conversation (ids, comma-separated or "
        "repeated) as a case for review into --commerce-promote-to; see docs/live.md",
        default=(),
        option="--commerce-promote",
        metavar="ID[,ID]",
    )
    promote_to: str = stored(
        "str",
        "the folder promoted cases are written to (default cases/promoted)",
        default="cases/promoted",
        option="--commerce-promote-to",
        metavar="DIR",
    )
    promote_customer: Literal["turns", "user"] = stored(
        "choice",
        "how a promoted case's customer speaks: turns (the last message, scripted) or user (a "
        "simulated customer opening with it, told what was said before)",
        default="turns",
        option="--commerce-promote-customer",
    )
    live_threshold: float = stored(
        "float",
        "pass threshold of the live set (default 0: a live run reports a trend, it does not gate)",
        default=0.0,
        ini="commerce_live_threshold",
        low=0,
        high=1,
        ini_default="0",
    )
    redact: tuple[str, ...] = stored(
        "list",
        "identifiers redacted from live traffic before the judge "
        "and the run store see it: email phone card iban secret address, or none",
        default=("email", "phone", "card", "iban", "secret", "address"),
        ini="commerce_redact",
        ini_type="args",
        ini_default=["email", "phone", "card", "iban", "secret", "address"],
        choices=("email", "phone", "card", "iban", "secret", "address"),
        allowed="email, phone, card, iban, secret, address (any of them), or none",
    )
    redact_patterns: tuple[tuple[str, str], ...] = stored(
        "patterns",
        "extra redaction patterns, one per line: name: regex",
        default=(),
        ini="commerce_redact_patterns",
        ini_type="linelist",
        ini_default=[],
        allowed="lines 'name: regex'",
    )
    trend: bool = stored(
        "flag",
        "print the pass rate per rubric dimension over the live runs in the run store "
        "(after a --commerce-live run, or alone, without running anything)",
        default=False,
        option="--commerce-trend",
    )
    trend_svg: str | None = stored(
        "output",
        "draw the live trend as an SVG chart at PATH (implies --commerce-trend)",
        option="--commerce-trend-svg",
        metavar="PATH",
    )
    trend_runs: int = stored(
        "int",
        "how many of the newest live runs the trend covers (default 12)",
        default=12,
        option="--commerce-trend-runs",
        low=1,
        metavar="N",
    )
    # -- authoring -----------------------------------------------------------------------------
    lint: bool = stored(
        "flag",
        "check the case files against the authoring rules (docs/authoring.md) and exit",
        default=False,
        option="--commerce-lint",
    )
    vacuity: bool = stored(
        "flag",
        "run every case against degenerate scripted agents and report cases that assert "
        "nothing (docs/authoring.md)",
        default=False,
        option="--commerce-vacuity",
    )
    captured: tuple[str, ...] = stored(
        "list",
        "files or folders of captured traffic the lint scans for poisoned IDs",
        default=(),
        ini="commerce_captured",
        ini_type="args",
        ini_default=[],
    )
    # -- caches --------------------------------------------------------------------------------
    cache_dir: ClassVar[Setting] = env_only(
        "env",
        "folder of the parsed-YAML cache (default $XDG_CACHE_HOME/commerce-evals, else "
        "~/.cache/commerce-evals); off, no, 0 or empty turn the cache off",
        env="COMMERCE_CACHE_DIR",
        allowed="a folder, or off",
    )
    # -- read where an imported τ²-bench folder finds its checkout (tau2/imported.py) ----------
    tau2_checkout: ClassVar[Setting] = env_only(
        "env",
        "root of the τ²-bench checkout the cases imported by python -m pytest_commerce_evals.tau2 "
        "import run against (default: where it was at the import, relative to the folder)",
        env="COMMERCE_TAU2_CHECKOUT",
        allowed="a folder",
    )
    # -- read where a model client is made, as the openai SDK reads them ----------------------
    openai_org_id: ClassVar[Setting] = env_only(
        "env",
        "sent as the openai-organization header of every model call, as the openai SDK does",
        env="OPENAI_ORG_ID",
        allowed="an organization id",
    )
    openai_project_id: ClassVar[Setting] = env_only(
        "env",
        "sent as the openai-project header of every model call, as the openai SDK does",
        env="OPENAI_PROJECT_ID",
        allowed="a project id",
    )

    sources: Mapping[str, str] = field(default_factory=dict)

    def origin(self, name: str) -> str:
        """Where setting `name` came from: `option`, `ini`, `env` or `default`."""
        return self.sources.get(name, "default")


def _table() -> tuple[Setting, ...]:
    """Every setting, in the order `Settings` declares them: its fields' rows and its
    environment-only rows, each named for its attribute."""
    hints = get_type_hints(Settings)
    held = {f.name: f.metadata[_ROW] for f in fields(Settings) if _ROW in f.metadata}
    undeclared = [f.name for f in fields(Settings) if f.name not in held and f.name != "sources"]
    if undeclared:  # a field without its row could be held but never given
        raise TypeError(f"Settings fields declared without stored(...): {undeclared}")
    rows = []
    for name in Settings.__annotations__:
        row = held.get(name, Settings.__dict__.get(name))
        if not isinstance(row, Setting):
            continue
        row = replace(row, name=name)
        if row.kind == "choice":
            row = replace(row, choices=get_args(hints[name]))
            if not row.choices or not all(isinstance(c, str) for c in row.choices):
                raise TypeError(f"choice setting {name} is not typed Literal['a', 'b', ...]")
        rows.append(row)
    return tuple(rows)


TABLE: tuple[Setting, ...] = _table()

BY_NAME: Mapping[str, Setting] = MappingProxyType({s.name: s for s in TABLE})
