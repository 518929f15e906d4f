"""pytest hooks for model endpoints: the header line, the endpoint checks before the first trial,
and stopping the embedded model and the session's clients when the session ends. Their options
and ini keys are declared in `settings.TABLE`."""

from __future__ import annotations

import pytest

from ..hookspecs import implemented_by_user
from ..settings import agent_label, settings
from . import _chat_format
from . import embedded as _local_model
from .clients import close_session_clients
from .endpoint import _SETTING, EndpointError, Purpose, attacker_model_set, resolve_endpoint


def pytest_report_header(config: pytest.Config) -> list[str]:
    label = agent_label(config)
    lines = [f"commerce-evals agent: {label}"] if label else []
    names = {
        "agent": "agent model",
        "judge": "judge",
        "user": "simulated customer",
        "attacker": "attacking customer",
    }
    purposes: list[Purpose] = ["agent", "judge", "user"]
    embedded = False
    if _own_settings(config, "attacker"):  # else it is the simulated customer's endpoint
        purposes.append("attacker")
    for purpose in purposes:
        name = names[purpose]
        own = _played_by_hook(config, purpose)
        if own is not None:
            lines.append(f"commerce-evals {name}: {own}")
            continue
        try:
            described = resolve_endpoint(config, purpose).describe()
        except EndpointError as exc:
            described = f"not usable: {exc}"  # a run that needs it stops before any trial
        if purpose == "agent":
            lines.append(f"commerce-evals {name}: {_agent_model(config, described)}")
        else:
            lines.append(f"commerce-evals {name}: {described}{_fallback(config, purpose)}")
        embedded = embedded or (own is None and "(embedded)" in described)
    if embedded:
        lines.append(EMBEDDED_DIFFERENCES)
    return lines


EMBEDDED_DIFFERENCES = (
    "commerce-evals embedded model (docs/local-model.md): a server per role (agent, customer, "
    "judge); the tools first in the prompt; a tool call's arguments at most "
    f"{_chat_format.ARGUMENTS_CAP} tokens, strings {_chat_format.STRING_CAP} characters, arrays "
    f"{_chat_format.ITEMS_CAP} items where the schema sets no bound; a customer's message at most "
    f"{_local_model.CUSTOMER_MAX_TOKENS} tokens"
)
"""The run header's line on what the embedded default does that an endpoint of one's own does
not (the judge's part is on the judge's calibration line)."""


def _agent_model(config: pytest.Config, described: str) -> str:
    """The agent's model as far as the settings know it: an agent may run on the plugin's
    client, or bring its own model (an integration: pydantic-ai, the Agents SDK, LangGraph),
    which the settings never see. With nothing configured for the agent, the embedded model is
    only what a client from the plugin would get, and the line says so rather than name it as
    the agent's; the cost section names the model the agent's calls reported."""
    try:
        source = resolve_endpoint(config, "agent").source
    except EndpointError:
        source = ""
    if source == "embedded" and implemented_by_user(config, "pytest_commerce_evals_make_agent"):
        return (
            "the agent's own when it brings one (an integration; the model its calls report is "
            f"named in the cost section), else {described} (when the agent asks the plugin for "
            "a client)"
        )
    return f"{described} (when the agent asks the plugin for a client)"


def _fallback(config: pytest.Config, purpose: Purpose) -> str:
    """Why the judge is the embedded model when nothing set one: a run whose
    settings were not read (a case outside the project, away from its ini and conftest) says
    so here rather than judge on the embedded model without a word."""
    if purpose != "judge":
        return ""
    try:
        judge, agent = resolve_endpoint(config, purpose), resolve_endpoint(config, "agent")
    except EndpointError:
        return ""
    if not (judge.is_local and judge.source == "agent" and agent.source == "embedded"):
        return ""
    ini = config.inipath
    read = f"configfile {ini.name}" if ini is not None else "no configfile was read"
    return (
        f" (the default: nothing set a judge or agent model or URL; {read}, rootdir "
        f"{config.rootpath})"
    )


def _played_by_hook(config: pytest.Config, purpose: Purpose) -> str | None:
    """Who plays the judge or the customer when no endpoint does: the team's hook, or no judge."""
    if purpose == "judge" and settings(config).no_judge:
        return "none (--commerce-no-judge: rubrics are reported as not judged)"
    if purpose == "attacker" and attacker_model_set(config):
        return None  # the attacker's own model plays the attacks, whatever the hook
    hook = {
        "judge": "pytest_commerce_evals_grade_rubric",
        "user": "pytest_commerce_evals_make_user",
        "attacker": "pytest_commerce_evals_make_user",
    }.get(purpose)
    where = implemented_by_user(config, hook) if hook else None
    return f"{hook} at {where}" if where else None


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with trials to grade stops here when an endpoint's settings contradict each other
    (a model with no key and no URL): running anyway would end every trial in an error."""
    config = session.config
    if config.option.collectonly or hasattr(config, "workerinput"):
        return
    trials = config.hook.pytest_commerce_evals_case_trials(items=session.items) or []
    items = [i for i in trials if not i.case.skip]
    if items:
        judged = any(i.case.expected.rubric is not None for i in items)
        simulated = any(i.case.user is not None for i in items)
        attacked = any(i.case.attack is not None for i in items)
        _check_endpoints(config, judge=judged, user=simulated, attacker=attacked)


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
    _check_endpoints(config, judge=True, user=False)


def _check_endpoints(
    config: pytest.Config, judge: bool, user: bool, attacker: bool = False
) -> None:
    # an agent endpoint set only by the shared variables (OPENAI_BASE_URL, OPENAI_MODEL) is
    # checked when the agent asks the plugin for a client: an agent with its own client never
    # uses them, and another tool's value must not stop its run
    needed: list[Purpose] = [] if _from_environment_only(config, "agent") else ["agent"]
    if judge and not settings(config).no_judge:
        needed.append("judge")
    if user and _played_by_hook(config, "user") is None:
        needed.append("user")  # a conftest's customer plays instead: its settings go unused
    if attacker and _played_by_hook(config, "attacker") is None:
        needed.append("attacker")
    for purpose in needed:
        try:
            resolve_endpoint(config, purpose)
        except EndpointError as exc:
            raise pytest.UsageError(f"commerce-evals {purpose}: {exc}") from None


def _own_settings(config: pytest.Config, purpose: str) -> bool:
    """Whether any endpoint setting is given for `purpose` itself."""
    found = settings(config)
    return any(getattr(found, _SETTING[purpose][field]) is not None for field in _SETTING[purpose])


def _from_environment_only(config: pytest.Config, purpose: str) -> bool:
    """Whether every endpoint setting given for `purpose` came from the environment."""
    found = settings(config)
    names = [_SETTING[purpose][field] for field in ("model", "base_url")]
    given = [n for n in names if getattr(found, n) is not None]
    return bool(given) and all(found.origin(n) == "env" for n in given)


def _names_cases(config: pytest.Config) -> bool:
    """Whether the command line's paths are, hold or lie inside the `commerce_case_dirs`."""
    from pathlib import Path

    roots = settings(config).case_dirs
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
