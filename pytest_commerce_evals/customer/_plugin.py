"""The simulated customer's pytest hook: the built-in customer, on the endpoint `endpoint.py`
resolves for purpose `user`, its replies cached in the verdict store (`--commerce-judge-store`).
Its options are declared in `settings.TABLE`."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import pytest

from ..settings import settings
from .simulator import SimulatedCustomer

if TYPE_CHECKING:
    from ..cases.case import Case

DEFAULT_SEED = 0
DEFAULT_MAX_TOKENS = 200

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


def build_customer(config: pytest.Config) -> SimulatedCustomer:
    """The built-in simulated customer the settings describe."""
    from ..models import endpoint  # imported late: it may start the embedded model

    resolved = endpoint.resolve_endpoint(config, "user")
    found = settings(config)
    return SimulatedCustomer(
        endpoint.session_client(config, "user"),
        resolved.model,
        seed=DEFAULT_SEED if found.user_seed is None else found.user_seed,
        max_tokens=DEFAULT_MAX_TOKENS if found.user_max_tokens is None else found.user_max_tokens,
        store=_reply_store(config),
    )


@pytest.hookimpl(trylast=True)
def pytest_commerce_evals_make_user(config: pytest.Config, case: Case) -> Any:
    return build_customer(config)
