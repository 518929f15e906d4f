"""The settings table: declared once, registered from the table, documented from the table, parsed
and checked once at configure time into one frozen object; a bad value is a usage error naming
where it came from, the value found and what is allowed, before any trial runs."""

from __future__ import annotations

import dataclasses
import re
import typing
from pathlib import Path
from typing import Literal

import pytest

import pytest_commerce_evals
from pytest_commerce_evals.live.redaction import DEFAULT_REDACT
from pytest_commerce_evals.settings import (
    BY_NAME,
    TABLE,
    AutoTrials,
    declared_names,
    documented_names,
    options_markdown,
    resolve_settings,
    run_config,
    settings,
    table,
)

pytest_plugins = ["pytester"]

PACKAGE = Path(pytest_commerce_evals.__file__).parent
DOC = PACKAGE.parent / "docs" / "options.md"
CASE = (
    "- {id: chat-001-hello, priority: low, difficulty: easy, turns: [hi], "
    "expected: {reply_includes: [hello]}}\n"
)
# a trial that runs leaves a file behind: a usage error must come before any of them
TRIAL_MARKER_CONFTEST = """
from pathlib import Path

def pytest_commerce_evals_make_backend(config, case):
    Path(config.rootpath, "a-trial-ran").write_text("yes")
    raise RuntimeError("no trial may run")
"""
ENV = (
    "COMMERCE_CONCURRENCY",
    "COMMERCE_AGENT",
    "OPENAI_MODEL",
    "OPENAI_BASE_URL",
    "COMMERCE_JUDGE_MODEL",
    "COMMERCE_JUDGE_BASE_URL",
    "COMMERCE_LOCAL_MODEL",
    "COMMERCE_LOCAL_N_CTX",
    "COMMERCE_LOCAL_STARTUP_TIMEOUT",
    "COMMERCE_LOCAL_THREADS",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


# -- one table, one registration, one document ---------------------------------------------------


def test_every_setting_is_declared_once():
    names = [s.name for s in TABLE]
    flags = [n for s in TABLE for n in (s.option, s.ini, s.env) if n]
    assert len(names) == len(set(names))
    assert len(flags) == len(set(flags))


def test_no_feature_declares_or_reads_options_of_its_own():
    """Only the settings package registers options and ini keys and reads the plugin's settings from the
    command line, the ini file or the environment (the parse cache reads its folder itself: it
    runs outside pytest too)."""
    reads = re.compile(
        r"getoption\(\s*['\"](--)?commerce|getini\(\s*['\"]commerce_|"
        r"environ(?:\.get)?[\[(]\s*['\"](COMMERCE_|OPENAI_(MODEL|BASE_URL))"
    )
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.parent == PACKAGE / "settings":
            continue
        text = path.read_text(encoding="utf-8")
        relative = path.relative_to(PACKAGE).as_posix()
        if ".addoption(" in text or ".addini(" in text:
            offenders.append(f"{relative}: registers an option or ini key")
        for match in reads.finditer(text):
            if (
                relative == "cases/yaml_cache.py"
                and "COMMERCE_CACHE_DIR" in text[match.start() :][:40]
            ):
                continue
            offenders.append(f"{relative}: reads {match.group(0)!r}")
    assert offenders == []


def test_the_entry_plugin_and_the_store_read_settings_not_other_features_privates():
    plugin = (PACKAGE / "plugin.py").read_text(encoding="utf-8")
    store = (PACKAGE / "store" / "_plugin.py").read_text(encoding="utf-8")
    assert "_scheduler" not in plugin
    assert "models._plugin" not in store


def test_help_lists_every_option_and_ini_key_in_the_group(pytester: pytest.Pytester):
    result = pytester.runpytest("--help")
    out = result.stdout.str()
    group = out.split("commerce-evals:", 1)[1].split("\n\n", 1)[0]
    for s in TABLE:
        if s.option:
            assert re.search(rf"^  {re.escape(s.option)}\b", group, re.M), s.option
        if s.ini:
            assert re.search(rf"^  {re.escape(s.ini)} \(", out, re.M), s.ini


def test_help_still_works_with_a_bad_value(pytester: pytest.Pytester, monkeypatch):
    monkeypatch.setenv("COMMERCE_CONCURRENCY", "lots")
    pytester.makeini("[pytest]\ncommerce_retry_attempts = many\n")
    result = pytester.runpytest("--help")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*--commerce-concurrency=C*"])
    assert pytester.runpytest().ret == pytest.ExitCode.USAGE_ERROR


def test_the_doc_is_the_table():
    text = DOC.read_text(encoding="utf-8")
    # both ways: every declared name is documented, and nothing documented is undeclared
    assert documented_names(text) - declared_names() == set()
    assert declared_names() - documented_names(text) == set()
    assert text == options_markdown(), "regenerate: python -m pytest_commerce_evals.settings"


def test_the_doc_check_sees_a_missing_or_an_extra_row():
    text = options_markdown()
    row = next(line for line in text.splitlines() if line.startswith("| `--commerce-trials`"))
    assert "--commerce-trials" not in documented_names(text.replace(row + "\n", ""))
    extra = "| `--commerce-nonsense` |  |  | text | — | command line | nothing |\n"
    assert "--commerce-nonsense" in documented_names(text + extra) - declared_names()


def test_the_table_agrees_with_the_features_constants():
    from pytest_commerce_evals.judge.judge import RESPONSE_FORMATS, ContextBudget
    from pytest_commerce_evals.judge.verdict_store import DEFAULT_STORE_PATH as VERDICTS
    from pytest_commerce_evals.live.redaction import DEFAULT_REDACT
    from pytest_commerce_evals.models import embedded
    from pytest_commerce_evals.models.endpoint import _KEY_ENV
    from pytest_commerce_evals.models.retry import RetryPolicy
    from pytest_commerce_evals.store.diff import DEFAULT_LEVEL
    from pytest_commerce_evals.store.history import DEFAULT_HISTORY_RUNS
    from pytest_commerce_evals.store.run_store import DEFAULT_STORE_PATH as RUNS

    assert BY_NAME["judge_format"].choices == ("auto", *RESPONSE_FORMATS)
    assert BY_NAME["judge_store"].default == VERDICTS.as_posix()
    assert BY_NAME["store"].default == RUNS.as_posix()
    assert BY_NAME["diff_level"].default == DEFAULT_LEVEL
    assert BY_NAME["history_runs"].default == DEFAULT_HISTORY_RUNS
    assert BY_NAME["redact"].default == DEFAULT_REDACT
    assert BY_NAME["local_model"].default == embedded.DEFAULT_MODEL
    assert BY_NAME["local_n_ctx"].default == embedded.DEFAULT_N_CTX
    assert BY_NAME["local_startup_timeout"].default == embedded.DEFAULT_STARTUP_TIMEOUT_S
    policy = RetryPolicy()
    assert (BY_NAME["retry_attempts"].default, BY_NAME["retry_wait_max"].default) == (
        policy.attempts,
        policy.wait_max,
    )
    assert f"else {ContextBudget().limit})" in BY_NAME["judge_budget"].help
    keys = {s.env for s in TABLE if s.kind == "secret"}
    assert {name for names in _KEY_ENV.values() for name in names} == keys


# -- one frozen object, resolved once ------------------------------------------------------------


def test_the_settings_object_is_immutable(pytester: pytest.Pytester):
    found = settings(pytester.parseconfig("--commerce-live=a.jsonl", "--commerce-live=b"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.trials = 3
    with pytest.raises(TypeError):
        found.sources["trials"] = "ini"
    assert found.live == ("a.jsonl", "b") and isinstance(found.case_dirs, tuple)


def test_the_object_is_resolved_at_configure_and_shared(pytester: pytest.Pytester):
    pytester.makepyfile(
        """
        from pytest_commerce_evals.settings import SETTINGS, settings

        def test_x(pytestconfig):
            found = pytestconfig.stash[SETTINGS]  # put there by pytest_configure
            assert found is settings(pytestconfig) and found.trials == 3
            assert found.origin("trials") == "option" and found.origin("store") == "default"
        """
    )
    result = pytester.runpytest("--commerce-trials=3")
    result.assert_outcomes(passed=1)


def test_precedence_of_an_endpoint_setting(pytester: pytest.Pytester, monkeypatch):
    """`--commerce-model` wins over ini `commerce_model`, which wins over env OPENAI_MODEL."""
    monkeypatch.setenv("OPENAI_MODEL", "from-env")
    assert settings(pytester.parseconfig()).model == "from-env"
    pytester.makeini("[pytest]\ncommerce_model = from-ini\n")
    found = settings(pytester.parseconfig())
    assert (found.model, found.origin("model")) == ("from-ini", "ini")
    found = settings(pytester.parseconfig("--commerce-model=from-option"))
    assert (found.model, found.origin("model")) == ("from-option", "option")
    monkeypatch.delenv("OPENAI_MODEL")
    pytester.makeini("[pytest]\ncommerce_model =   \n")  # empty counts as not set
    found = settings(pytester.parseconfig())
    assert (found.model, found.origin("model")) == (None, "default")


def test_precedence_of_concurrency_and_of_the_embedded_model(pytester, monkeypatch):
    monkeypatch.setenv("COMMERCE_CONCURRENCY", "3")
    monkeypatch.setenv("COMMERCE_LOCAL_N_CTX", "1024")
    assert settings(pytester.parseconfig()).concurrency == 3
    pytester.makeini("[pytest]\ncommerce_concurrency = 5\ncommerce_local_n_ctx = 2048\n")
    found = settings(pytester.parseconfig())
    assert (found.concurrency, found.local_n_ctx) == (5, 2048)  # ini over env, for both
    assert settings(pytester.parseconfig("--commerce-concurrency=auto")).concurrency is None


def test_a_store_option_may_switch_the_store_off_with_an_empty_value(pytester):
    pytester.makeini("[pytest]\ncommerce_store = elsewhere\ncommerce_judge_store = v.sqlite\n")
    found = settings(pytester.parseconfig("--commerce-store=", "--commerce-judge-store="))
    assert found.store is None  # '' is one of the values that switch it off
    assert found.judge_store is None  # for both stores


def test_without_a_config_only_defaults_and_the_environment_count(monkeypatch):
    monkeypatch.setenv("COMMERCE_LOCAL_THREADS", "3")
    found = settings()
    assert (found.local_threads, found.trials, found.origin("local_threads")) == (3, 1, "env")
    monkeypatch.setenv("COMMERCE_LOCAL_THREADS", "0")
    with pytest.raises(pytest.UsageError, match="env COMMERCE_LOCAL_THREADS: expected 1 or more"):
        resolve_settings(None)


def test_keys_are_never_held(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-123")
    found = settings()
    assert "sk-secret-123" not in repr(found)
    assert not any(f.name.endswith("api_key") for f in dataclasses.fields(found))


# -- a bad value is a usage error, before any trial ----------------------------------------------


def _run_cases(pytester: pytest.Pytester, *args: str, ini: str = "") -> pytest.RunResult:
    pytester.makefile(".yaml", **{"cases/chat": CASE})
    pytester.makeconftest(TRIAL_MARKER_CONFTEST)
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    result = pytester.runpytest("cases", "--commerce-store=none", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert not (pytester.path / "a-trial-ran").exists()
    return result


@pytest.mark.parametrize(
    "value, message",
    [
        ("many", "ini commerce_retry_attempts: expected a whole number 1 or more; found 'many'"),
        ("0", "ini commerce_retry_attempts: expected 1 or more; found 0"),
    ],
)
def test_a_bad_retry_attempts_in_the_ini_stops_the_run_before_any_trial(
    pytester: pytest.Pytester, value: str, message: str
):
    result = _run_cases(pytester, ini=f"commerce_retry_attempts = {value}")
    result.stderr.fnmatch_lines([f"ERROR: {message}"])


@pytest.mark.parametrize(
    "args, env, ini, message",
    [
        # int
        (
            (),
            {},
            "commerce_trials = lots",
            "ini commerce_trials: expected a whole number 1..10000, or auto[:MIN:MAX] with "
            "1 <= MIN <= MAX <= 100 (auto = auto:2:10); found 'lots'",
        ),
        (
            ("--commerce-trials=0",),
            {},
            "",
            "--commerce-trials: expected 1..10000 or auto[:MIN:MAX]; found 0",
        ),
        # adaptive trials: auto[:MIN:MAX]
        (
            ("--commerce-trials=auto:3:2",),
            {},
            "",
            "--commerce-trials: auto:MIN:MAX needs 1 <= MIN <= MAX <= 100; found 'auto:3:2'",
        ),
        (
            ("--commerce-trials=auto:0:5",),
            {},
            "",
            "--commerce-trials: auto:MIN:MAX needs 1 <= MIN <= MAX <= 100; found 'auto:0:5'",
        ),
        (
            ("--commerce-trials=auto:2:101",),
            {},
            "",
            "--commerce-trials: auto:MIN:MAX needs 1 <= MIN <= MAX <= 100; found 'auto:2:101'",
        ),
        (
            ("--commerce-trials=auto:x:y",),
            {},
            "",
            "--commerce-trials: auto:MIN:MAX takes two whole numbers; found 'auto:x:y'",
        ),
        (
            ("--commerce-trials=auto:4",),
            {},
            "",
            "--commerce-trials: expected a whole number 1..10000, or auto[:MIN:MAX] with "
            "1 <= MIN <= MAX <= 100 (auto = auto:2:10); found 'auto:4'",
        ),
        (
            (),
            {"COMMERCE_LOCAL_N_CTX": "big"},
            "",
            "env COMMERCE_LOCAL_N_CTX: expected a whole number 1 or more; found 'big'",
        ),
        # float / rate
        (
            ("--commerce-sample-rate=1.5",),
            {},
            "",
            "--commerce-sample-rate: expected 0..1; found 1.5",
        ),
        (
            (),
            {},
            "commerce_live_threshold = half",
            "ini commerce_live_threshold: expected a number 0..1; found 'half'",
        ),
        (
            (),
            {"COMMERCE_LOCAL_STARTUP_TIMEOUT": "0"},
            "",
            "env COMMERCE_LOCAL_STARTUP_TIMEOUT: expected above 0; found 0.0",
        ),
        # a level strictly between 0 and 1
        (
            ("--commerce-diff-level=1",),
            {},
            "",
            "--commerce-diff-level: expected above 0 and below 1; found 1.0",
        ),
        (
            (),
            {},
            "commerce_diff_level = 0",
            "ini commerce_diff_level: expected above 0 and below 1; found 0.0",
        ),
        # choice
        (
            (),
            {},
            "commerce_judge_format = yaml",
            "ini commerce_judge_format: expected one of auto, json_schema, json_object, none; "
            "found 'yaml'",
        ),
        (
            ("--commerce-judge-budget-unit=words",),
            {},
            "",
            "*--commerce-judge-budget-unit*invalid choice*'words'*chars*tokens*",
        ),
        # bool-like: a switch takes no value
        (("--commerce-no-judge=yes",), {}, "", "*--commerce-no-judge*explicit argument 'yes'*"),
        # path / URL
        (
            ("--commerce-base-url=localhost:8000",),
            {},
            "",
            "--commerce-base-url: expected an http(s) URL, e.g. http://localhost:11434/v1; "
            "found 'localhost:8000'",
        ),
        (
            ("--commerce-judge-base-url=ftp://judge",),
            {},
            "",
            "--commerce-judge-base-url: expected an http(s) URL*found 'ftp://judge'",
        ),
        (
            (),
            {},
            "commerce_redact_patterns =\n    no-colon-here",
            "ini commerce_redact_patterns line 1: expected 'name: regex', found 'no-colon-here'",
        ),
        (
            (),
            {},
            "commerce_live_dimensions = tone",
            "ini commerce_live_dimensions: tone not standard dimension(s)*budget_respected*",
        ),
        # concurrency: auto or N
        (
            (),
            {"COMMERCE_CONCURRENCY": "lots"},
            "",
            "env COMMERCE_CONCURRENCY: expected a whole number of trials in flight (1..1024) or "
            "'auto'; found 'lots'",
        ),
        (
            (),
            {},
            "commerce_concurrency = 2000",
            "ini commerce_concurrency: expected 1..1024 or 'auto'; found 2000",
        ),
    ],
)
def test_a_bad_value_names_where_it_came_from_the_value_and_what_is_allowed(
    pytester: pytest.Pytester, monkeypatch, args, env, ini, message
):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    result = _run_cases(pytester, *args, ini=ini)
    pattern = message if message.startswith("*") else "ERROR: " + message.replace("[", "[[]")
    result.stderr.fnmatch_lines([pattern])


def test_a_bad_endpoint_variable_stops_only_a_run_whose_trials_need_it(
    pytester: pytest.Pytester, monkeypatch
):
    """OPENAI_BASE_URL is the openai SDK's variable too: a project's plain tests still run."""
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    result = pytester.runpytest("test_plain.py", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, warnings=None)
    assert result.ret == 0


def test_a_bad_value_is_refused_even_when_its_feature_is_not_used(pytester: pytest.Pytester):
    """Checked at configure time, not when the feature first reads it (here: the judge)."""
    result = _run_cases(pytester, "--commerce-no-judge", ini="commerce_judge_max_tokens = 0")
    result.stderr.fnmatch_lines(
        ["ERROR: ini commerce_judge_max_tokens: expected 1 or more; found 0"]
    )


def test_an_ini_key_the_project_does_not_set_is_not_where_a_value_came_from(
    pytester: pytest.Pytester,
):
    found = settings(pytester.parseconfigure())
    assert (found.trials, found.origin("trials")) == (1, "default")
    assert (found.redact, found.origin("redact")) == (DEFAULT_REDACT, "default")
    pytester.makeini("[pytest]\ncommerce_trials = 3\ncommerce_redact =\n")
    found = settings(pytester.parseconfigure())
    assert (found.trials, found.origin("trials")) == (3, "ini")
    assert (found.redact, found.origin("redact")) == ((), "ini")  # an empty list: no redaction


def test_an_ini_default_means_what_the_settings_default_means():
    from pytest_commerce_evals.settings._resolve import _default, _parse

    root = Path("/project")
    for s in TABLE:
        if s.ini and s.ini_default not in ("", None) and s.stored:
            assert _parse(s, "ini", s.ini_default, root) == _default(s, root), s.name


def test_redaction_kinds_are_checked_at_configure(pytester: pytest.Pytester):
    from pytest_commerce_evals.live.redaction import REDACTION_KINDS

    assert set(BY_NAME["redact"].choices) == set(REDACTION_KINDS)
    result = _run_cases(pytester, ini="commerce_redact = email emial")
    result.stderr.fnmatch_lines(
        [
            "ERROR: ini commerce_redact: expected email, phone, card, iban, secret, address (any of them), "
            "or none; "
            "found emial"
        ]
    )
    assert "trial" not in result.stdout.str()


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("auto", AutoTrials(2, 10)),
        ("auto:3:8", AutoTrials(3, 8)),
        ("auto:1:1", AutoTrials(1, 1)),
        ("auto:5:100", AutoTrials(5, 100)),
        ("7", 7),
        (5, 5),
    ],
)
def test_trials_take_a_number_or_auto_with_its_bounds(raw, expected):
    from pytest_commerce_evals.settings._resolve import _parse

    assert _parse(BY_NAME["trials"], "option", raw, None) == expected


def test_auto_trials_collect_the_maximum_and_keep_the_bounds(pytester: pytest.Pytester):
    config = pytester.parseconfigure("--commerce-trials=auto:3:7")
    assert settings(config).trials == AutoTrials(3, 7)
    rc = run_config(config)
    assert (rc.trials, rc.adaptive, str(rc.adaptive)) == (7, AutoTrials(3, 7), "auto:3:7")


def test_nothing_changes_the_resolved_settings_or_the_run_config(pytester: pytest.Pytester):
    import dataclasses

    config = pytester.parseconfigure("--commerce-trials=3")
    for frozen in (settings(config), run_config(config)):
        with pytest.raises(dataclasses.FrozenInstanceError):
            frozen.trials = 5  # type: ignore[misc]


# -- values the docs do not allow, refused before any trial -----------------------------------


@pytest.mark.parametrize(
    ("name", "origin", "raw", "message"),
    [
        ("threshold", "option", "nan", "expected a number 0..1; found 'nan'"),
        ("threshold", "ini", "nan", "expected a number 0..1; found 'nan'"),
        ("threshold", "option", float("nan"), "expected a number 0..1; found nan"),
        ("sample_rate", "option", "nan", "expected a number 0..1; found 'nan'"),
        ("diff_level", "option", "nan", "expected a number above 0 and below 1; found 'nan'"),
        ("request_timeout", "ini", "inf", "expected a number above 0; found 'inf'"),
        ("request_timeout", "ini", "nan", "expected a number above 0; found 'nan'"),
        ("retry_wait_max", "ini", "inf", "expected a number 0 or more; found 'inf'"),
        ("local_startup_timeout", "ini", "nan", "expected a number above 0; found 'nan'"),
        ("retry_attempts", "ini", "٣", "expected a whole number 1 or more; found '٣'"),
        ("trials", "option", "", "found an empty value"),
        ("trials", "option", "٣", "found '٣'"),
        ("trials", "option", "AUTO", "found 'AUTO'"),
        ("trials", "option", " auto", "found ' auto' (spaces)"),
        ("trials", "option", "auto:٢:٣", "auto:MIN:MAX takes two whole numbers; found 'auto:٢:٣'"),
        ("concurrency", "option", "AUTO", "expected a whole number of trials in flight"),
        ("concurrency", "option", "", "found an empty value"),
        ("judge_min_kappa", "option", "AUTO", "found 'AUTO'"),
        ("judge_min_kappa", "option", "None", "found 'None'"),
        ("judge_min_kappa", "option", "", "found an empty value"),
        ("judge_min_kappa", "option", "٠.٥", "found '٠.٥'"),
        ("live_dimensions", "option", ",", "expected standard dimension names"),
        ("json", "option", "", "found an empty value"),
        ("redact", "ini", ["email", "none"], "found email none (none means no other value)"),
        ("redact", "ini", ["NONE"], "found NONE"),
        ("base_url", "option", "http://", "found 'http://'"),
        ("base_url", "option", "http://host:99999/v1", "found 'http://host:99999/v1'"),
        ("store", "option", "ftp://x/y", "found 'ftp://x/y', a URL of another kind"),
    ],
)
def test_a_value_the_docs_do_not_allow_is_refused(name, origin, raw, message):
    from pytest_commerce_evals.settings._resolve import _parse

    setting = BY_NAME[name]
    with pytest.raises(pytest.UsageError) as info:
        _parse(setting, origin, raw, Path("/project"), Path("/project"))
    assert str(info.value).startswith(setting.where(origin) + ": "), str(info.value)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("name", "origin", "raw", "value"),
    [
        ("threshold", "option", "0.5", 0.5),
        ("threshold", "ini", " 1e-1 ", 0.1),
        ("threshold", "option", ".5", 0.5),
        ("retry_attempts", "ini", "+3", 3),
        ("trials", "option", "auto:2:6", AutoTrials(2, 6)),
        ("trials", "ini", " auto ", AutoTrials()),  # ini and environment values are stripped
        ("concurrency", "env", " 16", 16),
        ("judge_min_kappa", "option", "none", None),
        ("judge_min_kappa", "option", "-0.25", -0.25),
        ("redact", "ini", ["none"], ("none",)),
        ("agent", "option", " my agent ", "my agent"),  # text keeps its meaning
        ("base_url", "option", "http://localhost:8080/v1", "http://localhost:8080/v1"),
    ],
)
def test_the_values_the_docs_allow_still_read(name, origin, raw, value):
    from pytest_commerce_evals.settings._resolve import _parse

    assert _parse(BY_NAME[name], origin, raw, Path("/project"), Path("/project")) == value


def test_a_redaction_pattern_python_cannot_compile_names_its_key_and_line():
    from pytest_commerce_evals.settings._resolve import _parse

    setting = BY_NAME["redact_patterns"]
    for line, kind in (("x: a{99999999999}", "OverflowError"), ("bad: (", "error")):
        with pytest.raises(pytest.UsageError) as info:
            _parse(setting, "ini", ["ok: a+", line], None)
        text = str(info.value)
        assert text.startswith("ini commerce_redact_patterns line 2: "), text
        assert kind in text and repr(line) in text


@pytest.mark.parametrize(
    ("name", "make", "message"),
    [
        ("json", "folder", "is a folder, not a file"),
        ("html", "folder", "is a folder, not a file"),
        ("trend_svg", "folder", "is a folder, not a file"),
        ("json", "under-a-file", "is a file, so nothing can be made below it"),
        ("judge_store", "folder", "is a folder, not a file"),
        ("judge_store", "under-a-file", "is a file, so nothing can be made below it"),
        ("store", "file", "is a file, not a folder"),
    ],
)
def test_a_path_the_run_cannot_write_is_refused(tmp_path, name, make, message):
    from pytest_commerce_evals.settings._resolve import _parse

    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("x")
    raw = {"folder": "a-folder", "file": "a-file", "under-a-file": "a-file/out"}[make]
    with pytest.raises(pytest.UsageError) as info:
        _parse(BY_NAME[name], "option", raw, tmp_path, tmp_path)
    assert message in str(info.value)
    # and a path it can write is taken
    assert _parse(BY_NAME[name], "option", "a-folder/new/x", tmp_path, tmp_path)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://u@h:99999/db", "the port '99999' is not a number 1..65535"),
        ("postgresql://u@h:abc/db", "the port 'abc' is not a number 1..65535"),
        ("postgresql://u@h/db?schema=", "?schema= is empty"),
        ("postgresql://u@h/db?schema=a&schema=b", "?schema= is given 2 times"),
        ("postgresql://u@h/db?schema=" + "s" * 64, "?schema= is 64 bytes; PostgreSQL keeps 63"),
        ("postgresql://u:p@ss@h/db", "percent-encode an '@' in the user name or password as %40"),
    ],
)
def test_a_store_url_the_plugin_would_misread_is_refused(url, message):
    from pytest_commerce_evals.settings._resolve import _parse
    from pytest_commerce_evals.store import database

    if not database.driver_available():
        pytest.skip("psycopg is in the [postgres] extra")
    for name in ("store", "judge_store"):
        with pytest.raises(pytest.UsageError) as info:
            _parse(BY_NAME[name], "option", url, None)
        assert message in str(info.value), str(info.value)
        assert "ss@h" not in str(info.value) and ":p@" not in str(info.value)  # no password
    assert _parse(BY_NAME["store"], "option", "postgresql://u@h:5432/db?schema=" + "s" * 63, None)


def test_a_url_with_a_bad_port_is_shown_with_it():
    from pytest_commerce_evals.store.database import public_url

    assert public_url("postgresql://u:secret@h:99999/db") == "postgresql://u@h:99999/db"
    assert public_url("postgresql://u@h:abc/db") == "postgresql://u@h:abc/db"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ("--commerce-threshold=nan",),
            "--commerce-threshold: expected a number 0..1; found 'nan'",
        ),
        (("--commerce-trials=",), "--commerce-trials: expected * found an empty value"),
        (("--commerce-json=cases",), "--commerce-json: cases: is a folder, not a file"),
        (
            ("--commerce-judge-store=cases",),
            "--commerce-judge-store: *cases: is a folder, not a file",
        ),
        (("--commerce-store=ftp://x/y",), "--commerce-store: expected * a URL of another kind"),
    ],
)
def test_a_bad_value_stops_the_run_before_any_trial(pytester: pytest.Pytester, args, message):
    result = _run_cases(pytester, *args)
    result.stderr.fnmatch_lines(["ERROR: " + message])
    assert not (pytester.path / "ftp:").exists()


def test_an_endpoint_variable_no_trial_uses_does_not_stop_a_run(
    pytester: pytest.Pytester, monkeypatch
):
    """An agent with its own client never reads OPENAI_BASE_URL: another tool's value stays
    another tool's; a trial whose agent asks the plugin for a client is told what is wrong."""
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://x")
    monkeypatch.setenv("OPENAI_MODEL", "some-model")
    pytester.makefile(".yaml", **{"cases/chat": CASE})
    pytester.makeconftest(TRIAL_MARKER_CONFTEST)
    result = pytester.runpytest("cases", "--commerce-store=none", "--commerce-no-judge")
    assert result.ret != pytest.ExitCode.USAGE_ERROR, result.stderr.str()
    assert (pytester.path / "a-trial-ran").exists()


def test_an_endpoint_variable_a_judged_run_needs_stops_it_before_any_trial(
    pytester: pytest.Pytester, monkeypatch
):
    """The judge runs on the agent's endpoint unless given its own: a judged case needs it."""
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8000")
    monkeypatch.setenv("OPENAI_MODEL", "m")
    pytester.makefile(
        ".yaml",
        **{
            "cases/chat": "- {id: chat-001-hello, priority: low, difficulty: easy, turns: [hi], "
            "expected: {rubric: {tone: polite}}}\n"
        },
    )
    pytester.makeconftest(TRIAL_MARKER_CONFTEST)
    result = pytester.runpytest("cases", "--commerce-store=none")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines(
        [
            "*commerce-evals judge: agent base URL 'localhost:8000' (from env) is not an http(s) "
            "URL; give the server's OpenAI-compatible root, e.g. http://localhost:11434/v1*"
        ]
    )
    assert not (pytester.path / "a-trial-ran").exists()


@pytest.mark.parametrize(
    ("store", "message"),
    [
        ("postgresql://postgres@127.0.0.1:1/test", "*--commerce-store: the run store cannot be opened: *127.0.0.1:1*"),
        ("postgresql://postgres@127.0.0.1:5432/no_such_database_here", "*--commerce-store: the run store cannot be opened: *no_such_database_here*"),
    ],
)  # fmt: skip
def test_a_store_that_cannot_be_opened_stops_the_run_before_any_trial(
    pytester: pytest.Pytester, store, message
):
    pytest.importorskip("psycopg", reason="psycopg is in the [postgres] extra")
    pytester.makefile(".yaml", **{"cases/chat": CASE})
    pytester.makeconftest(TRIAL_MARKER_CONFTEST)
    result = pytester.runpytest("cases", f"--commerce-store={store}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([message])
    assert not (pytester.path / "a-trial-ran").exists()
    assert not list(pytester.path.rglob("unsaved-*.json"))


def _is_of(value, hint) -> bool:
    import types
    import typing

    origin = typing.get_origin(hint)
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_is_of(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if origin is tuple:
        args = typing.get_args(hint)
        return isinstance(value, tuple) and all(_is_of(v, args[0]) for v in value)
    if origin is not None:
        return isinstance(value, origin)
    return isinstance(value, hint)


def test_the_settings_fields_are_the_tables_settings_typed_as_parsed(tmp_path):
    import typing

    from pytest_commerce_evals.settings import TABLE, Settings, resolve_settings

    names = [f.name for f in dataclasses.fields(Settings)]
    assert names == [s.name for s in TABLE if s.stored] + ["sources"]
    hints = typing.get_type_hints(Settings)
    environ = {"COMMERCE_TRIALS": "auto", "COMMERCE_CONCURRENCY": "3", "COMMERCE_STORE": "none"}
    for found in (resolve_settings(None, {}), resolve_settings(None, environ)):
        for name in names[:-1]:
            value = getattr(found, name)
            assert _is_of(value, hints[name]), f"{name}: {value!r} is not {hints[name]}"
    assert not _is_of("3", hints["concurrency"])  # the check itself can fail
    for s in TABLE:  # a choice is typed as its choices, no more, no fewer
        if s.stored and s.kind == "choice":
            assert typing.get_args(hints[s.name]) == s.choices, s.name


def test_a_setting_is_declared_once_and_the_table_refuses_a_field_without_its_row(monkeypatch):
    from dataclasses import dataclass, field

    @dataclass(frozen=True)
    class Undeclared:
        trials: int = table.stored("int", "trials", default=1)
        threshold: float = 0.8  # a field with no row: never registered, never given
        sources: dict = field(default_factory=dict)

    monkeypatch.setattr(table, "Settings", Undeclared)
    with pytest.raises(TypeError, match=r"without stored\(\.\.\.\): \['threshold'\]"):
        table._table()

    @dataclass(frozen=True)
    class Untyped:
        judge_format: str = table.stored("choice", "format")  # a choice must be a Literal
        sources: dict = field(default_factory=dict)

    monkeypatch.setattr(table, "Settings", Untyped)
    with pytest.raises(TypeError, match="judge_format is not typed Literal"):
        table._table()

    @dataclass(frozen=True)
    class Declared:
        judge_format: Literal["a", "b"] = table.stored("choice", "format", option="--x")
        key: typing.ClassVar[table.Setting] = table.env_only("secret", "a key", env="K")
        sources: dict = field(default_factory=dict)

    monkeypatch.setattr(table, "Settings", Declared)
    rows = table._table()
    assert [(r.name, r.kind, r.choices, r.option, r.env) for r in rows] == [
        ("judge_format", "choice", ("a", "b"), "--x", None),
        ("key", "secret", (), None, "K"),
    ]
