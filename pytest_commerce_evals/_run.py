"""Running one trial: fresh backend, injected state, every turn, then the graders and the judge."""

from __future__ import annotations

import inspect
import json
import time
import traceback
from typing import Any

import pytest
import tenacity

from ._scheduler import run_coroutine
from .agent import AgentSession, InfraError
from .backend import Backend, Snapshot
from .case import Case
from .events import TurnEnd, coerce_event
from .graders import Observation, grade
from .results import Outcome, RubricVerdict, TrialResult


class ConfigurationError(Exception):
    """The conftest did not supply what the plugin needs; says how to fix it."""


def is_infra_error(exc: BaseException) -> bool:
    """The infrastructure's failure, not the agent's: `InfraError`, exhausted retries, and the
    endpoint failures a retry would have covered (rate limits, 5xx, timeouts, bad bodies)."""
    from .endpoint import is_retryable

    if isinstance(exc, json.JSONDecodeError):
        return False  # the agent's own parsing; a malformed reply reaches it as InfraError
    return isinstance(exc, (InfraError, tenacity.RetryError)) or is_retryable(exc)


class _TurnRunner:
    """Calls the agent for each turn, sync or async. Async turns run on the session's shared
    event loop, so an async client made once can serve every trial."""

    def __init__(self, agent: Any) -> None:
        self._fn = getattr(agent, "run_turn", None) or agent
        if not callable(self._fn):
            raise ConfigurationError(
                f"the agent must have run_turn(session, message) or be callable; "
                f"got {type(agent).__name__}"
            )

    def __call__(self, session: AgentSession, message: str) -> list[Any]:
        out = self._fn(session, message)
        if inspect.isawaitable(out):
            out = run_coroutine(_awaited(out))
        if inspect.isasyncgen(out):
            out = run_coroutine(_drain(out))
        if out is None:
            return []
        return [coerce_event(e) for e in out]

    def close(self) -> None:
        pass


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _drain(agen: Any) -> list[Any]:
    return [e async for e in agen]


def make_backend(config: pytest.Config, case: Case) -> Backend:
    backend = config.hook.pytest_commerce_evals_make_backend(config=config, case=case)
    if backend is None:
        raise ConfigurationError(
            "no backend: implement pytest_commerce_evals_make_backend(config, case) in "
            "conftest.py, returning a fresh backend with load_state() and snapshot()"
        )
    for method in ("load_state", "snapshot"):
        if not callable(getattr(backend, method, None)):
            raise ConfigurationError(
                f"the backend from pytest_commerce_evals_make_backend "
                f"({type(backend).__name__}) has no {method}() method"
            )
    return backend


def make_agent(config: pytest.Config, case: Case, backend: Backend) -> Any:
    agent = config.hook.pytest_commerce_evals_make_agent(config=config, case=case, backend=backend)
    if agent is None:
        raise ConfigurationError(
            "no agent: implement pytest_commerce_evals_make_agent(config, case, backend) in "
            "conftest.py, returning an object with run_turn(session, message)"
        )
    return agent


def run_trial(
    config: pytest.Config,
    case: Case,
    *,
    trial: int,
    trials: int,
    set_name: str,
    file: str | None = None,
    line: int | None = None,
    agent_factory: Any = None,
    judge: bool = True,
) -> TrialResult:
    """One trial from a fresh backend. `agent_factory(backend)` overrides the conftest's agent
    (the vacuity check's scripted agents); `judge=False` leaves rubrics ungraded."""
    started = time.perf_counter()
    result = TrialResult(
        case_id=case.id,
        trial=trial,
        trials=trials,
        set_name=set_name,
        priority=case.priority,
        difficulty=case.difficulty,
        tags=list(case.tags),
        outcome="pass",
        file=file,
        line=line,
    )
    backend = make_backend(config, case)
    backend.load_state(case.state)
    agent = agent_factory(backend) if agent_factory else make_agent(config, case, backend)
    session = AgentSession(
        case=case,
        backend=backend,
        trial=trial,
        role=case.role,
        seen_products=list(case.state.seen_products),
    )
    runner = _TurnRunner(agent)
    try:
        for i, message in enumerate(case.turns):
            session.turn = i
            events = runner(session, message)
            if not events or not isinstance(events[-1], TurnEnd):
                events.append(TurnEnd(turn=i))
            result.turns.append(events)
    except Exception as exc:  # the agent's own failure or the infrastructure's
        result.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        result.outcome = "infra_error" if is_infra_error(exc) else "fail"
        if result.outcome == "fail":
            result.error = f"the agent raised {result.error}\n" + "".join(
                traceback.format_tb(exc.__traceback__, limit=-3)
            )
    finally:
        runner.close()
    if result.outcome == "pass":
        result.snapshot = _snapshot(backend)
        observation = Observation(result.turns, result.snapshot, case.state)
        result.grader_results = grade(case, observation)
        if result.failures:
            result.outcome = "fail"
        if judge and case.expected.rubric is not None:
            verdicts = config.hook.pytest_commerce_evals_grade_rubric(
                config=config, case=case, result=result
            )
            result.rubric_not_judged = verdicts is None
            result.verdicts = list(verdicts or [])
            result.outcome = _fold(result.outcome, result.verdicts)
    close = getattr(backend, "close", None)
    if callable(close):
        close()
    result.duration_s = time.perf_counter() - started
    return result


def _snapshot(backend: Backend) -> Snapshot:
    snap = backend.snapshot()
    if not isinstance(snap, Snapshot):
        raise ConfigurationError(
            f"{type(backend).__name__}.snapshot() must return pytest_commerce_evals.Snapshot; "
            f"got {type(snap).__name__}"
        )
    return snap


def _fold(outcome: Outcome, verdicts: list[RubricVerdict]) -> Outcome:
    """A code failure or a FAIL verdict fails the trial; otherwise judge trouble is not a pass."""
    if outcome == "fail" or any(v.outcome == "fail" for v in verdicts):
        return "fail"
    if any(v.outcome == "infra_error" for v in verdicts):
        return "infra_error"
    if any(v.outcome == "judge_error" for v in verdicts):
        return "judge_error"
    return outcome
