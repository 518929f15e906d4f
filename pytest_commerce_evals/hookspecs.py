"""Hooks a `conftest.py` implements to plug its own agent and backend into the plugin. The seams
between the plugin's own features are declared apart (`seams.py`, `store/seams.py`)."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .backend import Backend
    from .cases.case import Case, State
    from .events import Event
    from .results import TrialRecord
    from .runs import RunRecord


@pytest.hookspec
def pytest_commerce_evals_trial_not_started(
    config: pytest.Config, reason: str, case_id: str, trial: int, set_name: str, threshold: float
) -> None:
    """Called in the controlling process for each trial the run's budget
    (`--commerce-budget`) left unstarted, with what was spent and which trial it was: the run
    is not complete (the run store records it so, and it is no baseline), the trial's set is
    undecided, and the JSON record lists it."""


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_make_backend(config: pytest.Config, case: Case) -> Backend | None:
    """Return a fresh backend for one trial of `case`; called once per trial."""


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_make_agent(config: pytest.Config, case: Case, backend: Backend) -> Any:
    """Return the agent for one trial.

    An agent is an object with `run_turn(session, message)`, or a plain callable taking the same
    two arguments. It returns (or yields) events: a list, a generator, an async generator, or a
    coroutine returning a list all work.
    """


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_make_user(config: pytest.Config, case: Case) -> Any:
    """Return the simulated customer for one trial of a case with a `user:` block; called once
    per trial, after the backend and the agent are made.

    A customer is an object with `reply(case, conversation) -> str`: the customer's next
    message, given the conversation so far (`customer.CustomerMessage`s, the scripted turns
    included); a message holding `case.user.stop` ends the conversation. The built-in one
    (`customer.SimulatedCustomer`) plays the case on the simulated customer's endpoint
    (`--commerce-user-model`, defaulting to the agent's as the judge does). Whatever it
    raises, or a message the plugin's checks refuse, ends the trial as `user_error`.
    """


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_agent_label(config: pytest.Config) -> str | None:
    """Name the agent under test (e.g. `shop-assistant v2 on gpt-4o`), for the header, the run
    record and `--commerce-compare`. `--commerce-agent` / ini `commerce_agent` win over it."""


@pytest.hookspec
def pytest_commerce_evals_trial_done(config: pytest.Config, result: TrialRecord) -> None:
    """Called in the process that ran the trial, after grading; observers record it here."""


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_grade_rubric(
    config: pytest.Config, case: Case, result: TrialRecord
) -> list | None:
    """Judge every rubric dimension of `case` on the finished trial `result`.

    Returns one `RubricVerdict` per dimension (see `results.py`), or None when no judge is
    configured. The built-in judge implements this; a team may supply its own.
    """


@pytest.hookspec
def pytest_commerce_evals_trial_recorded(config: pytest.Config, record: TrialRecord) -> None:
    """Called in the controlling process (also under pytest-xdist) for every finished trial,
    skipped ones included.

    `record` is a `results.TrialRecord`, the typed record the run store stores and the reports
    and the JSON record are built from: the trial's identity, outcome, set and threshold,
    `failures`, `grader_results` (`GraderResult`), `verdicts` (`RubricVerdict`), `turns` (lists
    of events), the customer's `messages` and the final `snapshot` (`Snapshot`). It is the
    same record `trial_done` received, as the worker that ran it sent it under xdist.
    """


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_promote_state(
    config: pytest.Config, messages: list[str], turns: list[list[Event]]
) -> State | None:
    """The state a promoted live conversation starts its last turn from — the products shown,
    the cart, memory and staged changes its earlier turns left — given the customer's
    `messages` and each turn's events (`turns`), the last turn included.

    None (the default) maps the reference tools' events (`live.promote.precondition`); a team
    whose tools show state in other shapes maps its own here.
    """


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_fixture_index(config: pytest.Config) -> Any:
    """Return a `lint.FixtureIndex` describing the fixtures the cases may name.

    The lint uses it to check IDs, poisoned fixtures and preference searches.
    """


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_make_scripted_agent(
    config: pytest.Config, case: Case, backend: Backend, client: Any
) -> Any:
    """Return your agent for `case`, driven by `client` (a FakeClient) instead of your model.

    The vacuity check runs every case against degenerate scripted models through this hook, so
    the same tool loop, guardrails and events are exercised as in a real run. An agent that is
    one of the integrations (`adapters`) needs none: without this hook the check drives
    `make_agent`'s integration with `scripted(client)`.
    """


@pytest.hookspec
def pytest_commerce_evals_report_sections(
    config: pytest.Config, run: RunRecord
) -> list[str] | None:
    """Extra HTML sections for the report of `run` (a `runs.RunRecord`), already escaped.

    Live sampling adds its trend chart here.
    """


@pytest.hookspec
def pytest_commerce_evals_run_metadata(config: pytest.Config) -> dict | None:
    """Fields for the run record, asked once just before the run is first written.

    Return a mapping with `kind` ("regression" or "live") and/or `options` (merged into the
    record's options). Live sampling marks its runs here.
    """


@pytest.hookspec(firstresult=True)
def pytest_commerce_evals_case_history(config: pytest.Config, case_ids: list[str]) -> dict | None:
    """The graded trials of each case in ``case_ids`` in earlier comparable runs, newest run
    first: ``{case_id: [(passed, graded), ...]}``, or None when there is no history.

    The run store answers it (in the controlling process) from the last comparable complete runs;
    adaptive trials (`--commerce-trials=auto`) pool it into each case's baseline with
    `stats.pool_baseline`.
    """


# -- who implements a hook ------------------------------------------------------------------------


def implemented_by_user(config: pytest.Config, name: str) -> str | None:
    """Where a hook is implemented outside this package (a `conftest.py`, a plugin of the
    team's): `conftest.py:27` (relative to the rootdir when under it); None when only the
    plugin's own implementation, or none, answers it. Not a hook itself."""
    caller = getattr(config.hook, name, None)
    for impl in reversed(caller.get_hookimpls() if caller is not None else []):
        module = getattr(impl.plugin, "__name__", "") or ""
        if module.split(".")[0] == "pytest_commerce_evals":
            continue
        try:
            file = Path(inspect.getsourcefile(impl.function) or "")
            line = inspect.getsourcelines(impl.function)[1]
        except (OSError, TypeError):
            return impl.plugin_name
        try:
            file = file.resolve().relative_to(config.rootpath)
        except ValueError:
            pass
        return f"{file.as_posix()}:{line}"
    return None


def conftests_loaded(config: pytest.Config) -> list[Path]:
    """The `conftest.py` files pytest loaded for this run, in the order it registered them."""
    found = []
    for _, plugin in config.pluginmanager.list_name_plugin():
        file = getattr(plugin, "__file__", None)
        if file and Path(file).name == "conftest.py":
            found.append(Path(file).resolve())
    return found


def missing_hook(config: pytest.Config, hook: str, signature: str, returning: str) -> str:
    """What to say when `hook` gave nothing: where it is implemented when it is (it returned
    None); else which conftests were loaded, and the
    `conftest.py` that implements it but was not loaded (in the folder pytest was started from
    or one above it: a case outside the project's folders runs without the project's conftest,
    and without its ini)."""

    def shown(path: Path) -> str:
        try:
            return path.relative_to(config.rootpath).as_posix()
        except ValueError:
            return str(path)

    where = implemented_by_user(config, hook)
    if where is not None:
        return f"{hook} at {where} returned None; implement it {returning}"
    loaded = conftests_loaded(config)
    said = [
        f"no conftest.py of this run implements {hook}({signature}) (conftests loaded: "
        + (", ".join(shown(c) for c in loaded) or "none")
        + f"; rootdir {config.rootpath})"
    ]
    start = Path(config.invocation_params.dir).resolve()
    for folder in (start, *start.parents):
        candidate = folder / "conftest.py"
        if candidate in loaded or not candidate.is_file():
            continue
        try:
            text = candidate.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if f"def {hook}" in text:
            said.append(
                f"{candidate} implements it but was not loaded: pytest loads a conftest.py only "
                "from the rootdir and the folders of the paths it collects, down to them, so a "
                "case outside that conftest's folder runs without it (and without that "
                f"project's ini and judge settings); move the case under {candidate.parent}, or "
                "run it from a folder that conftest covers"
            )
            break
    else:
        said.append(f"implement it in conftest.py beside the cases or above them, {returning}")
    return "; ".join(said)
