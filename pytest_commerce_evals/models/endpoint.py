"""Where the agent's, the judge's and the simulated customer's models live: each purpose's
`Endpoint`, resolved from the run's settings.

Each purpose (`agent`, `judge`, `user`: the simulated customer) resolves to one `Endpoint`, field
by field, first hit wins:

    agent:  --commerce-model / --commerce-base-url          (command line)
            commerce_model / commerce_base_url              (ini)
            OPENAI_MODEL / OPENAI_BASE_URL                  (environment)
            the embedded local model                        (nothing configured)
    judge:  --commerce-judge-model / --commerce-judge-base-url
            commerce_judge_model / commerce_judge_base_url
            COMMERCE_JUDGE_MODEL / COMMERCE_JUDGE_BASE_URL
            then whatever the agent resolved to
    user:   --commerce-user-model / --commerce-user-base-url, commerce_user_model / ..., and
            COMMERCE_USER_MODEL / COMMERCE_USER_BASE_URL, then the agent's, as the judge

API keys are read from the environment only (`OPENAI_API_KEY`; `COMMERCE_JUDGE_API_KEY` first for
the judge, `COMMERCE_USER_API_KEY` for the simulated customer), handed to the client and never
stored, logged or printed: an `Endpoint` only says whether one is present. The clients made for
an endpoint are built in `clients`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Literal

import pytest

from ..errors import EndpointError, shown_url
from ..settings import BY_NAME, settings
from ..usage import server_of

__all__ = [
    "Endpoint",
    "EndpointError",
    "HOSTED_BASE_URL",
    "LOCAL_MODEL",
    "Purpose",
    "agent_server",
    "resolve_endpoint",
]

Purpose = Literal["agent", "judge", "user", "attacker"]

LOCAL_MODEL = "local"
"""The model name that asks for the embedded model explicitly (`--commerce-model=local`)."""

HOSTED_BASE_URL = "https://api.openai.com/v1"

# The setting (settings.TABLE) behind each field, per purpose.
_SETTING: dict[str, dict[str, str]] = {
    "agent": {"model": "model", "base_url": "base_url"},
    "judge": {"model": "judge_model", "base_url": "judge_base_url"},
    "user": {"model": "user_model", "base_url": "user_base_url"},
    "attacker": {"model": "attacker_model", "base_url": "attacker_base_url"},
}


def _env_of(name: str) -> str:
    """The variable of the key setting `name` (a key is read from its variable alone)."""
    env = BY_NAME[name].env
    assert env is not None
    return env


# the variables holding each purpose's key, in the order they are tried (settings.TABLE)
_KEY_ENV: dict[str, tuple[str, ...]] = {
    "agent": (_env_of("openai_api_key"),),
    "judge": (_env_of("judge_api_key"), _env_of("openai_api_key")),
    "user": (_env_of("user_api_key"), _env_of("openai_api_key")),
    "attacker": (
        _env_of("attacker_api_key"),
        _env_of("user_api_key"),
        _env_of("openai_api_key"),
    ),
}


@dataclass(frozen=True)
class Endpoint:
    """One resolved model endpoint. Holds no key: only whether one is present.

    `base_url` is None for hosted OpenAI (the SDK's default) and for the embedded model until it
    has been started; `make_client` fills it in then. `source` says where it was configured:
    `cli`, `ini`, `env`, `agent` (a judge or customer that fell back to the agent's), `user` (an
    attacker on the simulated customer's) or `embedded`.
    """

    purpose: Purpose
    base_url: str | None
    model: str
    api_key_present: bool
    is_local: bool
    source: str

    @property
    def embedded(self) -> bool:
        """Alias of `is_local`: served by the embedded llama.cpp server."""
        return self.is_local

    def describe(self) -> str:
        """One line for headers and reports, e.g. `gpt-4o-mini at https://api.openai.com/v1`."""
        if self.is_local:
            where = shown_url(self.base_url) or "an embedded llama.cpp server, started on first use"
            return f"{self.model} (embedded) at {where}"
        return f"{self.model} at {shown_url(self.base_url) or HOSTED_BASE_URL}"


# --- resolution -------------------------------------------------------------------------------


_ORIGIN = {"option": "cli", "ini": "ini", "env": "env"}


def _pick(config: Any, purpose: str, field: str) -> tuple[str, str] | None:
    """The value of `field` for `purpose` (from the run's settings: command line, ini, then
    environment), and where it came from; None when not given."""
    name = _SETTING[purpose][field]
    found = settings(config)
    value = getattr(found, name)
    return None if value is None else (_ORIGIN[found.origin(name)], value)


def _check_url(url: str, purpose: str, source: str) -> str:
    if not url.startswith(("http://", "https://")):
        raise EndpointError(
            f"{purpose} base URL {shown_url(url)!r} (from {source}) is not an http(s) URL; "
            "give the server's OpenAI-compatible root, e.g. http://localhost:11434/v1"
        )
    return url.rstrip("/")


def _key_present(purpose: str) -> bool:
    return any(os.environ.get(name) for name in _KEY_ENV[purpose])


def _embedded(purpose: Purpose, config: Any, source: str) -> Endpoint:
    from . import embedded as _local_model

    return Endpoint(
        purpose=purpose,
        base_url=None,
        model=_local_model.model_id(config),
        api_key_present=False,
        is_local=True,
        source=source,
    )


def resolve_endpoint(config: pytest.Config | None, purpose: Purpose) -> Endpoint:
    """Resolve `purpose`'s endpoint from options, ini and environment; starts and reaches nothing.

    Raises `EndpointError` when the settings contradict each other (a base URL with no model, a
    hosted model with no key), naming the setting to add.
    """
    if purpose not in _SETTING:
        raise ValueError(f"purpose must be 'agent', 'judge', 'user' or 'attacker', not {purpose!r}")
    if purpose == "attacker":
        return _resolve_attacker(config)
    if purpose != "agent":
        return _resolve_beside_agent(config, purpose)
    return _resolve(
        config, "agent", _pick(config, "agent", "model"), _pick(config, "agent", "base_url")
    )


def _resolve(
    config: Any,
    purpose: Purpose,
    model: tuple[str, str] | None,
    base: tuple[str, str] | None,
) -> Endpoint:
    if model is None and base is None:
        return _embedded(purpose, config, "embedded")
    if model is not None and model[1] == LOCAL_MODEL:
        return _embedded(purpose, config, model[0])
    if model is None:
        assert base is not None
        flag, env = _model_setting(purpose)
        raise EndpointError(
            f"{purpose} base URL {base[1]} (from {base[0]}) has no model: "
            f"pass {flag}=<model> or set {env}"
        )
    base_url = _check_url(base[1], purpose, base[0]) if base else None
    key = _key_present(purpose)
    if base_url is None and not key:
        raise EndpointError(
            f"{purpose} model {model[1]!r} (from {model[0]}) would go to hosted OpenAI, but "
            f"{' / '.join(_KEY_ENV[purpose])} is not set: set the key, or point at another "
            f"server with {_url_flag(purpose)}"
        )
    sources = {model[0]} | ({base[0]} if base else set())
    return Endpoint(
        purpose=purpose,
        base_url=base_url,
        model=model[1],
        api_key_present=key,
        is_local=False,
        source="+".join(sorted(sources, key=["cli", "ini", "env", "agent", "user"].index)),
    )


def _resolve_beside_agent(config: Any, purpose: Purpose) -> Endpoint:
    """The judge's or the simulated customer's endpoint: its own settings, else the agent's."""
    model = _pick(config, purpose, "model")
    base = _pick(config, purpose, "base_url")
    if model is None and base is None:
        agent = resolve_endpoint(config, "agent")
        return replace(
            agent,
            purpose=purpose,
            source="agent",
            api_key_present=(_key_present(purpose) and not agent.is_local),
        )
    if base is None and model is not None and model[1] != LOCAL_MODEL:
        # A model alone runs on the agent's server (or hosted OpenAI).
        agent_base = _pick(config, "agent", "base_url")
        if agent_base is not None:
            base = ("agent", agent_base[1])
    return _resolve(config, purpose, model, base)


def _resolve_attacker(config: Any) -> Endpoint:
    """The attacking customer's endpoint: its own settings, else the simulated customer's (which
    fall back to the agent's); a model alone runs on the customer's server."""
    model = _pick(config, "attacker", "model")
    base = _pick(config, "attacker", "base_url")
    if model is None and base is None:
        customer = resolve_endpoint(config, "user")
        return replace(
            customer,
            purpose="attacker",
            source="user",
            api_key_present=(_key_present("attacker") and not customer.is_local),
        )
    if base is None and model is not None and model[1] != LOCAL_MODEL:
        for purpose in ("user", "agent"):
            found = _pick(config, purpose, "base_url")
            if found is not None:
                base = ("user" if purpose == "user" else "agent", found[1])
                break
    return _resolve(config, "attacker", model, base)


def _model_setting(purpose: str) -> tuple[str | None, str | None]:
    setting = BY_NAME[_SETTING[purpose]["model"]]
    return setting.option, setting.env


def _url_flag(purpose: str) -> str | None:
    return BY_NAME[_SETTING[purpose]["base_url"]].option


def agent_server(config: pytest.Config) -> str | None:
    """Where the agent endpoint's settings send its calls (scheme and host): the server an
    agent's own reported calls are taken to go to. None when nothing configures the agent's
    endpoint (the embedded default: an agent on its own client may be anywhere)."""
    try:
        endpoint = resolve_endpoint(config, "agent")
    except EndpointError:
        return None
    if endpoint.source == "embedded" and endpoint.is_local:
        return None
    return _server(endpoint)


def _server(endpoint: Endpoint | None) -> str | None:
    """Where an endpoint's calls go, as a call records it (hosted OpenAI when no base URL)."""
    if endpoint is None:
        return None
    return server_of(endpoint.base_url or HOSTED_BASE_URL)


def attacker_model_set(config: pytest.Config) -> bool:
    """Whether the attacker's own model or URL is set (`--commerce-attacker-model`,
    `--commerce-attacker-base-url`, their ini keys and variables): then the built-in attacking
    customer plays every attack case on it, the conftest's `pytest_commerce_evals_make_user`
    hook or not. A setting that names a model is honoured, never dropped without a word."""
    found = settings(config)
    return found.attacker_model is not None or found.attacker_base_url is not None
