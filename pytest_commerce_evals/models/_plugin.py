"""pytest hooks for model endpoints: the options and ini keys, the header line, and stopping the
embedded model and the session's clients when the session ends."""

from __future__ import annotations

import os

import pytest

from . import embedded as _local_model
from .endpoint import EndpointError, close_session_clients, resolve_endpoint

AGENT_ENV = "COMMERCE_AGENT"

_ENDPOINT_OPTIONS = (
    (
        "--commerce-model",
        "commerce_model",
        "the agent's model name (env OPENAI_MODEL; 'local' = the embedded model)",
    ),
    (
        "--commerce-base-url",
        "commerce_base_url",
        "the agent's OpenAI-compatible base URL, e.g. http://localhost:8000/v1 "
        "(env OPENAI_BASE_URL; key from OPENAI_API_KEY)",
    ),
    (
        "--commerce-judge-model",
        "commerce_judge_model",
        "the judge's model name (env COMMERCE_JUDGE_MODEL; default: the agent's endpoint)",
    ),
    (
        "--commerce-judge-base-url",
        "commerce_judge_base_url",
        "the judge's OpenAI-compatible base URL (env COMMERCE_JUDGE_BASE_URL; key from "
        "COMMERCE_JUDGE_API_KEY, else OPENAI_API_KEY)",
    ),
)

_INI_ONLY = (
    (
        "commerce_request_timeout",
        "seconds a model request may take (default 120; 900 on the embedded model)",
    ),
    (
        "commerce_retry_attempts",
        "attempts per model call on rate limits, 5xx, timeouts (default 4)",
    ),
    ("commerce_retry_wait_max", "longest wait between attempts, seconds (default 20)"),
    (
        "commerce_local_model",
        "embedded model: smollm2-135m (default), gemma3-270m, or a path to a .gguf "
        "(env COMMERCE_LOCAL_MODEL)",
    ),
    ("commerce_local_n_ctx", "embedded model's context window in tokens (default 8192)"),
    ("commerce_local_startup_timeout", "seconds to wait for the embedded model (default 120)"),
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("commerce-evals")
    group.addoption(
        "--commerce-agent",
        dest="commerce_agent",
        default=None,
        metavar="LABEL",
        help="the name of the agent under test, recorded with the run and accepted by "
        "--commerce-compare (ini commerce_agent, env COMMERCE_AGENT; default: the agent "
        "endpoint's model, when the agent asks the plugin for its client)",
    )
    parser.addini("commerce_agent", "the name of the agent under test; --commerce-agent overrides")
    for flag, dest, help_text in _ENDPOINT_OPTIONS:
        group.addoption(flag, dest=dest, default=None, metavar="VALUE", help=help_text)
        parser.addini(dest, f"{help_text}; {flag} overrides", default="")
    for name, help_text in _INI_ONLY:
        parser.addini(name, help_text, default="")


def agent_label(config: pytest.Config) -> str | None:
    """The agent's name as the user gave it: `--commerce-agent`, ini `commerce_agent`, env
    `COMMERCE_AGENT`, else the `pytest_commerce_evals_agent_label` hook; None when unnamed."""
    for value in (
        config.getoption("commerce_agent", None),
        config.getini("commerce_agent"),
        os.environ.get(AGENT_ENV),
    ):
        if value and str(value).strip():
            return str(value).strip()
    hook = getattr(config.hook, "pytest_commerce_evals_agent_label", None)
    label = hook(config=config) if hook is not None else None  # None: used on its own
    return str(label).strip() if label and str(label).strip() else None


def pytest_report_header(config: pytest.Config) -> list[str]:
    label = agent_label(config)
    lines = [f"commerce-evals agent: {label}"] if label else []
    for purpose in ("agent", "judge"):
        try:
            described = resolve_endpoint(config, purpose).describe()
        except EndpointError as exc:
            described = f"not usable: {exc}"  # a run that needs it stops before any trial
        name = "agent model" if purpose == "agent" else "judge"
        lines.append(
            f"commerce-evals {name}: {described}"
            + (" (when the agent asks the plugin for a client)" if purpose == "agent" else "")
        )
    return lines


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with trials to grade stops here when an endpoint's settings contradict each other
    (a model with no key and no URL): running anyway would end every trial in an error."""
    config = session.config
    if config.option.collectonly or hasattr(config, "workerinput"):
        return
    from ..runner.items import CaseItem

    items = [i for i in session.items if type(i) is CaseItem and not i.case.skip]
    if items:
        judged = any(i.case.expected.rubric is not None for i in items)
        _check_endpoints(config, judge=judged)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Under xdist the controller collects nothing and the workers' collections report no
    usage errors: the controller checks before any worker starts, when the run names case
    folders or files."""
    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    if config.option.collectonly or not _names_cases(config):
        return
    _check_endpoints(config, judge=True)


def _check_endpoints(config: pytest.Config, judge: bool) -> None:
    needed = ["agent"]
    if judge and not config.getoption("commerce_no_judge", False):
        needed.append("judge")
    for purpose in needed:
        try:
            resolve_endpoint(config, purpose)
        except EndpointError as exc:
            raise pytest.UsageError(f"commerce-evals {purpose}: {exc}") from None


def _names_cases(config: pytest.Config) -> bool:
    """Whether the command line's paths are, hold or lie inside the `commerce_case_dirs`."""
    from pathlib import Path

    roots = [(config.rootpath / d).resolve() for d in config.getini("commerce_case_dirs")]
    for arg in config.args:
        path = (Path(config.invocation_params.dir) / arg.split("::")[0]).resolve()
        if path.suffix in (".yaml", ".yml", ".json"):
            return True
        if any(path == r or path.is_relative_to(r) or r.is_relative_to(path) for r in roots):
            return True
    return False


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    close_session_clients(config)
    _local_model.shutdown(config)
