"""pytest hooks for model endpoints: the options and ini keys, the header line, and stopping the
embedded model and the session's clients when the session ends."""

from __future__ import annotations

import pytest

from . import _local_model
from .endpoint import EndpointError, close_session_clients, resolve_endpoint

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
    for flag, dest, help_text in _ENDPOINT_OPTIONS:
        group.addoption(flag, dest=dest, default=None, metavar="VALUE", help=help_text)
        parser.addini(dest, f"{help_text}; {flag} overrides", default="")
    for name, help_text in _INI_ONLY:
        parser.addini(name, help_text, default="")


def pytest_report_header(config: pytest.Config) -> list[str]:
    lines = []
    for purpose in ("agent", "judge"):
        try:
            lines.append(
                f"commerce-evals {purpose}: {resolve_endpoint(config, purpose).describe()}"
            )
        except EndpointError as exc:
            lines.append(f"commerce-evals {purpose}: not usable: {exc}")
    return lines


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    close_session_clients(config)
    _local_model.shutdown(config)
