"""The simulated customer's pytest hook: the built-in customer, on the endpoint `endpoint.py`
resolves for purpose `user`, its replies cached in the verdict store (`--commerce-judge-store`).
Its options are declared in `settings.TABLE`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import shown_url
from ..hookspecs import implemented_by_user
from ..models.embedded import CUSTOMER_MAX_TOKENS
from ..models.endpoint import attacker_model_set
from ..settings import agent_label, settings

if TYPE_CHECKING:
    from ..cases.case import Case
    from .simulator import SimulatedCustomer

DEFAULT_SEED = 0
DEFAULT_MAX_TOKENS = 200
EMBEDDED_MAX_TOKENS = CUSTOMER_MAX_TOKENS  # on the embedded model (models/embedded.py)

_STORE = pytest.StashKey[Any]()
_lock = threading.Lock()


def _reply_store(config: pytest.Config) -> Any:
    """The verdict store the replies are cached in, opened once per process; None when storing
    is switched off."""
    with _lock:
        if _STORE in config.stash:
            return config.stash[_STORE]
        from ..judge.verdict_store import VerdictStore

        path = settings(config).judge_store
        store = VerdictStore(path) if path is not None else None
        if store is not None:
            config.add_cleanup(store.close)
        config.stash[_STORE] = store
        return store


def build_customer(config: pytest.Config, case: Case | None = None) -> SimulatedCustomer:
    """The built-in simulated customer the settings describe; for a case with `user.attack`,
    the attacking customer (`AttackingCustomer`) on the attacker's endpoint."""
    from ..models import clients, endpoint  # imported late: it may start the embedded model
    from .attacker import AttackingCustomer
    from .simulator import SimulatedCustomer

    attacking = case is not None and case.attack is not None
    purpose: endpoint.Purpose = "attacker" if attacking else "user"
    kind = AttackingCustomer if attacking else SimulatedCustomer
    resolved = endpoint.resolve_endpoint(config, purpose)
    found = settings(config)
    # the cache key's endpoint: where the replies come from, without its secrets
    server = (
        "embedded"
        if resolved.is_local
        else shown_url(resolved.base_url or endpoint.HOSTED_BASE_URL)
    )
    return kind(
        clients.session_client(config, purpose),
        resolved.model,
        seed=DEFAULT_SEED if found.user_seed is None else found.user_seed,
        max_tokens=found.user_max_tokens or customer_max_tokens(resolved.is_local),
        store=_reply_store(config),
        server=server,
    )


def customer_max_tokens(embedded: bool) -> int:
    """max_tokens of a customer's message when `commerce_user_max_tokens` is not set."""
    return EMBEDDED_MAX_TOKENS if embedded else DEFAULT_MAX_TOKENS


@pytest.hookimpl(tryfirst=True, specname="pytest_commerce_evals_make_user")
def pytest_commerce_evals_make_user_for_an_attack(config: pytest.Config, case: Case) -> Any:
    """The attacker's own model or URL set (`attacker_model_set`): the built-in attacking
    customer plays every attack case on it, before the conftest's hook is asked; None for any
    other case (the conftest's hook, else the built-in customer below)."""
    if case.attack is not None and attacker_model_set(config):
        return build_customer(config, case)
    return None


@pytest.hookimpl(trylast=True)
def pytest_commerce_evals_make_user(config: pytest.Config, case: Case) -> Any:
    return build_customer(config, case)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """A `user:` case whose customer would fall back to the embedded model while the agent runs
    on a model of its own stops the run before any trial, saying what to set: the embedded model
    is a poor and slow customer, and nothing asked for it."""
    config = session.config
    if config.option.collectonly or hasattr(config, "workerinput"):
        return
    trials = config.hook.pytest_commerce_evals_case_trials(items=session.items) or []
    talking = [i for i in trials if i.case.user is not None and not i.case.skip]
    if not talking or implemented_by_user(config, "pytest_commerce_evals_make_user"):
        return
    message = embedded_customer_problem(config, talking[0].case)
    if message is not None:
        where = getattr(talking[0], "location", None)
        at = f" ({where[0]})" if where else ""
        raise pytest.UsageError(f"commerce-evals: case {talking[0].case.id!r}{at}: {message}")


def embedded_customer_problem(config: pytest.Config, case: Case) -> str | None:
    """Why the built-in customer must not play `case`: it would run on the embedded model
    although nothing configured one for it, and the agent runs elsewhere (it is named as
    bringing its own client, or it is one of the integrations, on its framework's model).
    None when nothing is wrong, or when it cannot be told before a trial."""
    from ..models import endpoint

    try:
        # an attacker runs on its own endpoint settings when it has them
        plays: endpoint.Purpose = "attacker" if case.attack is not None else "user"
        customer = endpoint.resolve_endpoint(config, plays)
        agent = endpoint.resolve_endpoint(config, "agent")
    except endpoint.EndpointError:
        return None  # the endpoint check says what to set
    if not (customer.embedded and agent.source == "embedded"):
        return None  # a customer model was configured, or the agent's endpoint was
    label = agent_label(config)
    if label is None and not _agent_brings_its_model(config, case):
        return None  # the agent runs on the embedded model too (the reference wiring)
    runs = f"the agent ({label})" if label else "the agent (an integration, on its own model)"
    return (
        "it has a user: block and nothing says who plays the customer: the built-in simulated "
        f"customer would run on the embedded model while {runs} runs elsewhere. Set "
        "--commerce-user-model (ini commerce_user_model, env COMMERCE_USER_MODEL; with "
        "--commerce-user-base-url for a server of your own), or return a customer from "
        "pytest_commerce_evals_make_user in conftest.py (pytest_commerce_evals.BriefCustomer "
        "plays the case's own brief with no model)"
    )


def _agent_brings_its_model(config: pytest.Config, case: Case) -> bool:
    """Whether the conftest's agent for `case` is one of the integrations (it runs on its
    framework's model, never the plugin's). The backend and agent are made once to see; a hook
    that fails here is left for the trial to report."""
    backend = None
    try:
        backend = config.hook.pytest_commerce_evals_make_backend(config=config, case=case)
        if backend is None:
            return False
        agent = config.hook.pytest_commerce_evals_make_agent(
            config=config, case=case, backend=backend
        )
    except Exception:
        return False
    finally:
        close = getattr(backend, "close", None)
        if callable(close):
            close()
    return callable(getattr(agent, "scripted", None))
