"""Wires this repository's reference agent and backend into commerce-evals.

Kept cheap to import: everything heavy is imported inside the hooks, so `pytest tests` pays
nothing for it. A team wiring its own system replaces the bodies below (docs/plugging-in.md).
"""

from __future__ import annotations

import pytest


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_backend(config, case):
    """A fresh in-memory backend per trial, with the eval-only (poisoned) fixtures merged.

    The plugin then calls `backend.load_state(case.state)` before the first turn.
    """
    from pytest_commerce_evals.reference import ReferenceBackend

    return ReferenceBackend.fresh(poisoned=True)


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_agent(config, case, backend):
    """The reference agent on the configured agent endpoint (the embedded model by default)."""
    from pytest_commerce_evals.models import embedded
    from pytest_commerce_evals.models.clients import session_client
    from pytest_commerce_evals.reference import ReferenceAgent
    from pytest_commerce_evals.reference.agent import embedded_options

    client = session_client(config, "agent")
    # the endpoint client retries already; the agent's own retry layer is not needed on top.
    # On the embedded model (8k tokens, two CPU cores) the history is cut to fit the window,
    # oldest tool results first, and a turn takes at most 5 steps of 192 tokens, a repeated
    # step ending it (the header says so; docs/local-model.md).
    local = embedded_options(embedded.n_ctx(config)) if client.endpoint.is_local else {}
    return ReferenceAgent(client, client.endpoint.model, retries=1, **local)


def pytest_report_header(config):
    """What the reference agent does differently on the embedded model, when it runs there."""
    from pytest_commerce_evals.models.endpoint import EndpointError, resolve_endpoint
    from pytest_commerce_evals.reference.agent import (
        EMBEDDED_ELIDE_IN,
        EMBEDDED_MAX_STEPS,
        EMBEDDED_MAX_TOKENS,
    )

    try:
        local = resolve_endpoint(config, "agent").is_local
    except EndpointError:
        return None
    if not local:
        return None
    return (
        f"commerce-evals reference agent on the embedded model: at most {EMBEDDED_MAX_STEPS} "
        f"steps a turn (8 elsewhere), replies of at most {EMBEDDED_MAX_TOKENS} tokens (512 "
        "elsewhere), a step that repeats the last one ends the turn, the history cut to fit its "
        f"window {EMBEDDED_ELIDE_IN} tool results at a time"
    )


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_make_scripted_agent(config, case, backend, client):
    """The same agent driven by a scripted FakeClient (the lint's vacuity check)."""
    from pytest_commerce_evals.reference import ReferenceAgent

    return ReferenceAgent(client, "scripted", retries=1)


@pytest.hookimpl(optionalhook=True)
def pytest_commerce_evals_fixture_index(config):
    """The reference fixtures as the case lint sees them: IDs, skills, poisoned items, search."""
    from pytest_commerce_evals.reference.index import fixture_index

    return fixture_index()
