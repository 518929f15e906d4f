"""Running one trial: fresh backend, injected state, every turn, then the graders and the judge."""

from __future__ import annotations

import inspect
import json
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
import tenacity

from ..agent import AgentSession, InfraError
from ..backend import Backend, Snapshot
from ..cases.case import Case
from ..customer import UserError, check_message, conversation_of
from ..errors import ConfigurationError
from ..events import TurnEnd, coerce_event
from ..graders.code import grade
from ..graders.observation import GoldState, Observation
from ..hookspecs import missing_hook
from ..models.pricing import price_book
from ..results import GraderResult, TrialRecord, TrialSpec, fold_outcome
from ..usage import Meter, metered
from ._scheduler import run_coroutine, waited
from .gold import replay, replay_through_agent

_PLUGIN_DIR = Path(__file__).resolve().parents[1]  # the package: its frames are not user code
_SKIPPED_DIRS = (
    str(Path(pytest.__file__).resolve().parent.parent / "_pytest"),
    str(Path(inspect.getfile(tenacity)).resolve().parent),
)


def _user_file(path: str) -> bool:
    """Code the user wrote (or the reference system standing in for it), not this engine."""
    resolved = Path(path).resolve()
    if "pluggy" in resolved.parts or str(resolved).startswith(_SKIPPED_DIRS):
        return False
    if resolved.is_relative_to(_PLUGIN_DIR):
        return resolved.is_relative_to(_PLUGIN_DIR / "reference")
    return True


def _short_path(path: str) -> str:
    resolved = Path(path).resolve()
    for base in (Path.cwd(), _PLUGIN_DIR.parent):
        if resolved.is_relative_to(base):
            return resolved.relative_to(base).as_posix()
    return resolved.as_posix()


def defined_at(obj: Any) -> str:
    """`file:line` where a function, method or class was written, for pointing at the glue."""
    target = getattr(obj, "__func__", obj)
    if not (inspect.isfunction(target) or inspect.isclass(target) or inspect.ismethod(target)):
        target = getattr(type(obj), "run_turn", None) or type(obj)
        target = getattr(target, "__func__", target)
    try:
        file = inspect.getsourcefile(target) or inspect.getfile(target)
        line = inspect.getsourcelines(target)[1]
    except (OSError, TypeError):
        return getattr(target, "__qualname__", type(obj).__name__)
    return f"{_short_path(file)}:{line}"


def raised_at(exc: BaseException) -> str | None:
    """`file:line` of the innermost frame of the user's own code in `exc`'s traceback."""
    where = None
    for frame, line in traceback.walk_tb(exc.__traceback__):
        if _user_file(frame.f_code.co_filename):
            where = f"{_short_path(frame.f_code.co_filename)}:{line}"
    return where


def _glue(what: str, exc: BaseException, fix: str) -> ConfigurationError:
    where = raised_at(exc)
    message = "".join(traceback.format_exception_only(type(exc), exc)).strip()
    return ConfigurationError(
        f"{what} raised {message}" + (f" (at {where})" if where else "") + f"; {fix}"
    )


def is_infra_error(exc: BaseException) -> bool:
    """The infrastructure's failure, not the agent's: `InfraError`, exhausted retries, and the
    endpoint failures a retry would have covered (rate limits, 5xx, timeouts, bad bodies)."""
    from ..models.retry import is_retryable

    if isinstance(exc, json.JSONDecodeError):
        return False  # the agent's own parsing; a malformed reply reaches it as InfraError
    return isinstance(exc, (InfraError, tenacity.RetryError)) or is_retryable(exc)


_EVENTS_WANTED = (
    "run_turn must return or yield pytest_commerce_evals events (ToolCall, ToolResult, Ui, "
    "CartUpdate, ChangeUpdate, Text, TurnEnd) or mappings with their 'type' key; convert your "
    "framework's messages to events first"
)


class _TurnRunner:
    """Calls the agent for each turn, sync or async. Async turns run on the session's shared
    event loop, so an async client made once can serve every trial.

    What the agent raises is the agent's failure; what it returns that is not an event is the
    glue's (a `ConfigurationError` pointing at the agent's `run_turn`)."""

    def __init__(self, agent: Any) -> None:
        self._fn = getattr(agent, "run_turn", None) or agent
        if not callable(self._fn):
            raise ConfigurationError(
                f"the agent from pytest_commerce_evals_make_agent must have "
                f"run_turn(session, message) or be callable; got {type(agent).__name__} "
                f"(defined at {defined_at(agent)})"
            )

    last_s: float | None = None
    """An async agent's own time in the last turn: from its coroutine's start to its end on the
    shared loop, less the time it stood ready behind other trials' work; None for a sync agent
    (its turn is timed around the whole call, a generator's run included)."""

    def __call__(self, session: AgentSession, message: str) -> list[Any]:
        took: list[float] = []
        out = self._fn(session, message)
        if inspect.isawaitable(out):
            out = run_coroutine(_timed(_awaited(out), took))
        if inspect.isasyncgen(out):
            out = run_coroutine(_timed(_drain(out), took))
        self.last_s = sum(took) if took else None
        if out is None:
            return []
        if isinstance(out, str | bytes | dict) or not hasattr(out, "__iter__"):
            raise ConfigurationError(
                f"the agent's run_turn (at {defined_at(self._fn)}) returned "
                f"{type(out).__name__} {out!r:.80}; {_EVENTS_WANTED}"
            )
        items = list(out)  # a generator runs the agent's own code here
        events = []
        for i, item in enumerate(items):
            try:
                events.append(coerce_event(item))
            except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
                first = str(exc).splitlines()[0]
                raise ConfigurationError(
                    f"the agent's run_turn (at {defined_at(self._fn)}) gave item {i + 1} of "
                    f"{len(items)} as {type(item).__name__} {item!r:.80}, not an event "
                    f"({first}); {_EVENTS_WANTED}"
                ) from None
        return events

    def close(self) -> None:
        pass


async def _timed(awaitable: Any, took: list[float]) -> Any:
    """Await the agent's turn on the shared loop, recording its own time: from its start to its
    end, less the time its steps stood ready while the loop ran other trials' work."""
    import asyncio

    waits = waited()
    began = time.perf_counter()
    try:
        # a task of its own, so every step of the turn carries `waits` in its context
        return await asyncio.ensure_future(awaitable)
    finally:
        took.append(max(time.perf_counter() - began - waits.total, 0.0))


async def _awaited(awaitable: Any) -> Any:
    return await awaitable


async def _drain(agen: Any) -> list[Any]:
    return [e async for e in agen]


def make_backend(config: pytest.Config, case: Case) -> Backend:
    try:
        backend = config.hook.pytest_commerce_evals_make_backend(config=config, case=case)
    except Exception as exc:
        raise _glue(
            "pytest_commerce_evals_make_backend",
            exc,
            "it should return a fresh backend with load_state() and snapshot()",
        ) from exc
    if backend is None:
        raise ConfigurationError(
            "no backend: "
            + missing_hook(
                config,
                "pytest_commerce_evals_make_backend",
                "config, case",
                "returning a fresh backend with load_state() and snapshot()",
            )
        )
    for method in ("load_state", "snapshot"):
        if not callable(getattr(backend, method, None)):
            raise ConfigurationError(
                f"the backend from pytest_commerce_evals_make_backend "
                f"({type(backend).__name__}) has no {method}() method"
            )
    return backend


def make_customer(config: pytest.Config, case: Case) -> Any:
    """The simulated customer of one trial of a `user:` case, from the conftest's
    `pytest_commerce_evals_make_user` or the built-in one (always the built-in attacker for an
    attack case when the attacker's model or URL is set); its failure to be made is the
    customer's (`UserError`), not the agent's."""
    try:  # the customer's plugin answers first for an attack whose own model was asked for
        customer = config.hook.pytest_commerce_evals_make_user(config=config, case=case)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # whatever the hook raised: the customer's, not the agent's
        raise UserError(
            "pytest_commerce_evals_make_user raised "
            + "".join(traceback.format_exception_only(type(exc), exc)).strip()
        ) from exc
    if not callable(getattr(customer, "reply", None)):
        raise UserError(
            f"pytest_commerce_evals_make_user returned {type(customer).__name__}, not an object "
            "with reply(case, conversation)"
        )
    return customer


def converse(
    case: Case, result: TrialRecord, customer: Any, turn: Any, meter: Meter | None = None
) -> None:
    """A conversation with a simulated customer: the case's scripted turns, then the
    customer's messages (its `opening` first, if fixed), each answered by the agent (`turn`),
    until the customer ends it or `max_turns` messages were answered. Every customer message is
    recorded in `result.messages`, the closing one too, and those its reply cache answered in
    `result.cached`; `result.ended` says why it ended. What the customer raises or gives that
    the checks refuse raises `UserError`. The customer's model calls are recorded on `meter` as
    the simulated customer's."""
    meter = meter or Meter()
    spec = case.user
    assert spec is not None
    result.messages = []
    for message in case.turns:
        result.messages.append(message)
        turn(message)
    while len(result.turns) < spec.max_turns:
        if spec.opening is not None and not result.turns:
            message, ends = spec.opening, False
        else:
            conversation = conversation_of(result.messages, result.turns)
            reused = getattr(customer, "reused", None)
            try:
                with metered(meter, "user"):
                    raw = customer.reply(case, conversation)
                if _answered_by_cache(customer, reused):
                    result.cached.append(len(result.messages))
                if isinstance(raw, str) and type(raw) is not str:
                    raw = str.__getitem__(raw, slice(None))  # the text, not a subclass's methods
                message, ends = check_message(raw, spec, conversation)
            except UserError:
                raise
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # whatever the customer raised: its fault, not the agent's
                raise UserError(
                    "the simulated customer raised "
                    + "".join(traceback.format_exception_only(type(exc), exc)).strip()
                ) from exc
        result.messages.append(message)
        if ends:
            result.ended = "customer"
            return
        turn(message)
    result.ended = "max_turns"


def _answered_by_cache(customer: Any, before: Any) -> bool:
    """Whether the customer's last reply came from its reply cache: its `reused` count (the
    built-in customer's) went up during the call."""
    after = getattr(customer, "reused", None)
    return type(before) is int and type(after) is int and after > before


def make_agent(config: pytest.Config, case: Case, backend: Backend) -> Any:
    try:
        agent = config.hook.pytest_commerce_evals_make_agent(
            config=config, case=case, backend=backend
        )
    except Exception as exc:
        raise _glue(
            "pytest_commerce_evals_make_agent",
            exc,
            "it should return an object with run_turn(session, message)",
        ) from exc
    if agent is None:
        raise ConfigurationError(
            "no agent: "
            + missing_hook(
                config,
                "pytest_commerce_evals_make_agent",
                "config, case, backend",
                "returning an object with run_turn(session, message)",
            )
        )
    return agent


def run_trial(
    config: pytest.Config,
    spec: TrialSpec,
    *,
    agent_factory: Any = None,
    customer: Any = None,
    judge: bool = True,
) -> TrialRecord:
    """The trial `spec` names, from a fresh backend, recorded as it runs.
    `agent_factory(backend)` overrides the conftest's agent (the vacuity check's scripted
    agents), `customer` the simulated customer of a `user:` case; `judge=False` leaves rubrics
    ungraded."""
    started = time.perf_counter()
    case: Case = spec.case
    result = TrialRecord.begin(spec)
    backend: Any = None
    meter = Meter()
    try:
        backend = make_backend(config, case)
        _load_state(backend, case)
        agent = agent_factory(backend) if agent_factory else make_agent(config, case, backend)
        runner = _TurnRunner(agent)
    except ConfigurationError as exc:  # the glue failed before the agent ran
        return _glue_error(result, exc, backend, started)
    session = AgentSession(
        case=case,
        backend=backend,
        trial=spec.trial,
        role=case.role,
        seen_products=list(case.state.seen_products),
    )

    def turn(message: str) -> None:
        session.turn = meter.turn = i = len(result.turns)
        runner.last_s = None
        began = time.perf_counter()
        try:
            with metered(meter, "agent"):
                events = runner(session, message)
        finally:
            spent = runner.last_s
            meter.turn_s.append(time.perf_counter() - began if spent is None else spent)
        if not events or not isinstance(events[-1], TurnEnd):
            events.append(TurnEnd(turn=i))
        result.turns.append(events)

    try:
        if case.user is None:
            for message in case.turns:
                turn(message)
        else:
            converse(case, result, customer or make_customer(config, case), turn, meter)
    except ConfigurationError as exc:  # the agent returned something that is not events
        return _glue_error(result, exc, backend, started)
    except UserError as exc:  # the simulated customer's fault, never the agent's
        result.outcome = "user_error"
        result.ended = "user_error"
        result.error = f"simulated customer error (not counted against the agent): {exc}"
    except Exception as exc:  # the agent's own failure or the infrastructure's
        if case.user is not None:
            result.ended = "agent_error"
        result.error = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        result.outcome = "infra_error" if is_infra_error(exc) else "fail"
        if result.outcome == "fail":
            result.error = f"the agent raised {result.error}\n" + "".join(
                traceback.format_tb(exc.__traceback__, limit=-3)
            )
    finally:
        runner.close()
        result.calls = _with_servers(config, meter.calls())
        result.turn_s = meter.turn_s
    if result.outcome == "pass":
        try:
            result.snapshot = _snapshot(backend)
        except ConfigurationError as exc:
            return _glue_error(result, exc, backend, started)
        grade_trial(config, case, result, judge=judge)
    close = getattr(backend, "close", None)
    if callable(close):
        close()
    result.duration_s = time.perf_counter() - started
    return result.settle()


def _with_servers(config: pytest.Config, calls: list[Any]) -> list[Any]:
    """The agent's reported calls that name no server go where the agent endpoint's settings
    point (none when nothing configures it: then they have no public price)."""
    if not any(c.server is None and c.source == "agent" for c in calls):
        return calls
    from dataclasses import replace

    from ..models.endpoint import agent_server

    server = agent_server(config)
    if server is None:
        return calls
    return [
        replace(c, server=server) if c.server is None and c.source == "agent" else c for c in calls
    ]


def grade_trial(
    config: pytest.Config, case: Case, result: TrialRecord, *, judge: bool = True
) -> TrialRecord:
    """Grade a trial whose turns (and final state, `result.snapshot`) are in `result`: the code
    graders, then the judge on the case's rubric (`judge=False` leaves it ungraded), folded into
    `result.outcome`, and why it failed (`failures`). A regression trial (`run_trial`), a
    regraded one and a sampled live conversation all end here. Returns `result`, graded in
    place."""
    try:
        gold = replay_gold(config, case)
    except ConfigurationError as exc:  # the glue cannot replay: not the agent's failure
        result.outcome = "error"
        result.error = f"commerce-evals glue error (not counted against the agent): {exc}"
        result.grader_results = []
        return result.settle()
    observation = Observation(
        result.turns,
        result.snapshot,
        case.state,
        gold=gold,
        calls=result.calls,
        turn_s=result.turn_s,
        prices=price_book(config) if case.expected.budget is not None else None,
    )
    result.grader_results = grade(case, observation)
    ending = conversation_ending(case, result)
    if ending is not None:
        result.grader_results.append(ending)
    if result.failed_graders:
        result.outcome = "fail"
    if judge and case.expected.rubric is not None:
        meter = Meter()
        with metered(meter, "judge"):
            verdicts = config.hook.pytest_commerce_evals_grade_rubric(
                config=config, case=case, result=result
            )
        # a regrade's judge replaces the stored one's calls
        result.calls = [c for c in result.calls if c.purpose != "judge"] + meter.calls()
        result.rubric_not_judged = verdicts is None
        result.verdicts = list(verdicts or [])
        result.outcome = fold_outcome(result.outcome, result.verdicts)
    return result.settle()


def replay_gold(config: pytest.Config, case: Case) -> GoldState | None:
    """The final state the case's gold actions (`same_state_as`) produce on a fresh backend
    with the case's `state`; None when the case has none. Through the agent's own tools when the
    agent is an integration (`runner.gold`), else the backend's `call_tool`. Raises
    `ConfigurationError` when the replay cannot be made (the backend or agent cannot be made or
    loaded, or neither can replay): the glue's problem, not the agent's."""
    actions = case.expected.same_state_as
    if actions is None:
        return None
    backend: Any = None
    try:
        backend = make_backend(config, case)
        _load_state(backend, case)
        if callable(getattr(backend, "call_tool", None)):
            agent = None
        else:
            agent = make_agent(config, case, backend)
        with metered(Meter(), "agent"):  # the replay's calls are no trial's
            if agent is not None and callable(getattr(agent, "scripted", None)):
                return replay_through_agent(
                    agent, case, backend, actions, _replay_turn, lambda: _snapshot(backend)
                )
            return replay(backend, actions, lambda: _snapshot(backend))
    except ConfigurationError as exc:
        raise ConfigurationError(
            f"the gold actions (same_state_as) could not be replayed: {exc}"
        ) from exc
    finally:
        close = getattr(backend, "close", None)
        if callable(close):
            close()


def _replay_turn(agent: Any, session: AgentSession, message: str) -> list[Any]:
    runner = _TurnRunner(agent)
    try:
        return runner(session, message)
    finally:
        runner.close()


def conversation_ending(case: Case, result: TrialRecord) -> GraderResult | None:
    """A conversation that ended in the agent's error (a stored or imported one graded again:
    a run's own trial fails when its agent raises): failed. One the customer did not end before
    `max_turns`: failed, unless the case grades it as usual (`user.at_max_turns: grade`). None
    for any other trial."""
    spec = case.user
    if spec is not None and result.ended == "agent_error":
        return GraderResult(
            key="user.ended",
            passed=False,
            expected="the customer ends the conversation",
            observed="agent_error",
            message="the conversation ended in the agent's error, before the customer ended it",
        )
    if spec is None or result.ended != "max_turns" or spec.at_max_turns != "fail":
        return None
    return GraderResult(
        key="user.max_turns",
        passed=False,
        expected=spec.max_turns,
        observed=len(result.turns),
        message=(
            f"user.max_turns: the conversation reached {spec.max_turns} customer message(s) "
            "without the customer ending it (at_max_turns: grade would grade it as usual)"
        ),
    )


def _load_state(backend: Backend, case: Case) -> None:
    try:
        backend.load_state(case.state)
    except Exception as exc:
        raise _glue(
            f"{type(backend).__name__}.load_state() for case {case.id!r}",
            exc,
            "check the case's state (IDs must be fixture IDs) and the backend's load_state()",
        ) from exc


def _snapshot(backend: Backend) -> Snapshot:
    try:
        snap = backend.snapshot()
    except Exception as exc:
        raise _glue(
            f"{type(backend).__name__}.snapshot()",
            exc,
            "it should return pytest_commerce_evals.Snapshot",
        ) from exc
    if not isinstance(snap, Snapshot):
        raise ConfigurationError(
            f"{type(backend).__name__}.snapshot() (at {defined_at(backend.snapshot)}) must "
            f"return pytest_commerce_evals.Snapshot (cart, memory, changes; "
            f"Snapshot.from_data() builds one from plain data); got {type(snap).__name__}"
        )
    return snap


def _glue_error(
    result: TrialRecord, exc: ConfigurationError, backend: Any, started: float
) -> TrialRecord:
    """End the trial with the glue's outcome: not the agent's failure, not counted."""
    result.outcome = "error"
    result.error = f"commerce-evals glue error (not counted against the agent): {exc}"
    result.grader_results = []
    close = getattr(backend, "close", None)
    if callable(close):
        close()
    result.duration_s = time.perf_counter() - started
    return result.settle()
