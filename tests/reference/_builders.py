"""Shared builders for the reference system's tests."""

from __future__ import annotations

from typing import Any

from pytest_commerce_evals.agent import AgentSession
from pytest_commerce_evals.cases.case import Case, State
from pytest_commerce_evals.reference import ReferenceAgent, ReferenceBackend
from pytest_commerce_evals.testing.fake import FakeClient


def make_backend(poisoned: bool = False, **state: Any) -> ReferenceBackend:
    backend = ReferenceBackend.fresh(poisoned=poisoned)
    if state:
        backend.load_state(State(**state))
    return backend


def make_session(backend: ReferenceBackend, role: str = "customer") -> AgentSession:
    tags = ["operator"] if role == "operator" else []
    case = Case(id="ref-001-test", priority="low", difficulty="easy", tags=tags, turns=["hi"])
    return AgentSession(
        case=case, backend=backend, role=role, seen_products=list(backend.seen_products)
    )


def run_turn(
    script: Any,
    message: str = "hello",
    *,
    backend: ReferenceBackend | None = None,
    session: AgentSession | None = None,
    role: str = "customer",
    **agent_options: Any,
) -> tuple[list[Any], AgentSession, FakeClient]:
    """One turn of the reference agent against a scripted model."""
    client = script if isinstance(script, FakeClient) else FakeClient(script)
    if session is None:
        session = make_session(backend or make_backend(), role)
    agent = ReferenceAgent(client, "fake-model", retry_wait_s=0, **agent_options)
    events = agent.run_turn(session, message)
    return events, session, client


def of_type(events: list[Any], kind: str) -> list[Any]:
    return [e for e in events if e.type == kind]


def result_for(events: list[Any], name: str) -> Any:
    """The tool_result of the last call to `name`."""
    calls = [e.call_id for e in events if e.type == "tool_call" and e.name == name]
    assert calls, f"no call to {name} in {[e.type for e in events]}"
    return next(e for e in events if e.type == "tool_result" and e.call_id == calls[-1])


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]
