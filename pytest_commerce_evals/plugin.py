"""The pytest plugin: options, case collection, trial items, the summary and the exit status.

Which files are cases: a `.yaml`, `.yml` or `.json` file whose name does not start with `_` or
`.`, lying under one of the `commerce_case_dirs` (ini, default `cases`, relative to the rootdir),
or named explicitly on the command line. `_set.yaml` in a case folder configures that set.
"""

from __future__ import annotations

import gc
import importlib
import importlib.util
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pytest

from . import hookspecs
from ._collect import CASE_SUFFIXES, CaseProblem, load_case_file, load_set_config
from ._run import ConfigurationError, run_trial
from ._scheduler import SCHEDULER, TrialScheduler, concurrency, resolve_auto
from ._summary import Summary, TrialRecord
from ._xdist_compat import xdist_queued
from .case import Case, CaseFileWarning
from .results import NOT_GRADED as UNGRADED_OUTCOMES
from .results import TrialResult

SUBPLUGINS = (
    "pytest_commerce_evals._endpoint_plugin",
    "pytest_commerce_evals._judge_plugin",
    "pytest_commerce_evals._store_plugin",
    "pytest_commerce_evals._live_plugin",
    "pytest_commerce_evals._lint_plugin",
)

PRIORITY_MARKERS = ("critical", "high", "medium", "low")
DIFFICULTY_MARKERS = ("easy", "medium", "hard")


@dataclass
class RunConfig:
    """The plugin's settings, resolved once from options and ini keys."""

    trials: int
    threshold: float
    case_dirs: list[Path]
    explicit: set[Path]
    concurrency: int | None = None  # None: auto


RUN_CONFIG = pytest.StashKey[RunConfig]()
SUMMARY = pytest.StashKey[Summary]()
SEEN_IDS = pytest.StashKey[dict[str, str]]()
NON_CASE_FAILURES = pytest.StashKey[list[str]]()
NOT_GRADED = pytest.StashKey[list[tuple[str, str]]]()
VACUITY = pytest.StashKey[list]()
TAG_MARKERS = pytest.StashKey[set[str]]()
RESERVED_MARKS = pytest.StashKey[frozenset[str]]()
TRIAL_RAN = pytest.StashKey[bool]()
AGENT_USED = pytest.StashKey[dict]()


def agent_used(config: pytest.Config) -> dict | None:
    """The agent endpoint a trial of this run asked the plugin for (`model`, `base_url`,
    `embedded`), as the trials reported it (from every xdist worker); None when no trial's agent
    asked for a plugin client, i.e. the agent brings its own."""
    return config.stash.get(AGENT_USED, None)


def _agent_endpoint_data(config: pytest.Config) -> dict | None:
    from .endpoint import used_endpoint
    from .store import public_base_url

    used = used_endpoint(config, "agent")
    if used is None:
        return None
    base = used.base_url if not used.is_local else "embedded"
    return {"model": used.model, "base_url": public_base_url(base), "embedded": used.is_local}


def run_config(config: pytest.Config) -> RunConfig:
    return config.stash[RUN_CONFIG]


# -- registration and options -----------------------------------------------------------------


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)
    for name in SUBPLUGINS:
        if importlib.util.find_spec(name) is not None and not pluginmanager.has_plugin(name):
            pluginmanager.register(importlib.import_module(name), name)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("commerce-evals", "commerce agent evals")
    group.addoption(
        "--commerce-trials",
        type=int,
        default=None,
        metavar="N",
        help="run each case N times as separate items (ini: commerce_trials; default 1)",
    )
    group.addoption(
        "--commerce-threshold",
        type=float,
        default=None,
        metavar="RATE",
        help="default pass threshold (0..1) of a set without its own _set.yaml threshold "
        "(ini: commerce_threshold; default 0.8)",
    )
    group.addoption(
        "--commerce-concurrency",
        default=None,
        metavar="C",
        help="trials in flight at once in this process (ini commerce_concurrency, env "
        "COMMERCE_CONCURRENCY; default auto: 8 against a remote endpoint, 1 on the embedded "
        "model); with -n, per xdist worker",
    )
    parser.addini(
        "commerce_case_dirs", "folders holding eval cases", type="args", default=["cases"]
    )
    parser.addini("commerce_concurrency", "trials in flight at once (a number or auto)", default="")
    parser.addini("commerce_trials", "trials per case", default="1")
    parser.addini("commerce_threshold", "default pass threshold of a set", default="0.8")


def _number(config: pytest.Config, option: str, ini: str, kind: type, low: float, high: float):
    value = config.getoption(option)
    source = f"--{option.replace('_', '-')}"
    if value is None:
        raw, source = config.getini(ini), f"ini {ini}"
        try:
            value = kind(raw)
        except ValueError:
            raise pytest.UsageError(
                f"{source}: expected a {kind.__name__}; found {raw!r}"
            ) from None
    if not low <= value <= high:
        raise pytest.UsageError(f"{source}: expected {low:g}..{high:g}; found {value}")
    return value


def pytest_configure(config: pytest.Config) -> None:
    for name in PRIORITY_MARKERS:
        config.addinivalue_line("markers", f"{name}: case priority {name} (commerce-evals)")
    for name in ("easy", "hard"):
        config.addinivalue_line("markers", f"{name}: case difficulty {name} (commerce-evals)")
    for name in DIFFICULTY_MARKERS:
        config.addinivalue_line("markers", f"difficulty_{name}: case difficulty {name}")
    config.addinivalue_line("markers", "commerce_case: an eval case trial (commerce-evals)")
    root = config.rootpath
    args = [Path(a.split("::")[0]) for a in config.args]
    config.stash[RUN_CONFIG] = RunConfig(
        trials=_number(config, "commerce_trials", "commerce_trials", int, 1, 10_000),
        threshold=_number(config, "commerce_threshold", "commerce_threshold", float, 0, 1),
        case_dirs=[(root / d).resolve() for d in config.getini("commerce_case_dirs")],
        explicit={(Path.cwd() / a).resolve() for a in args if a.suffix in CASE_SUFFIXES},
        concurrency=concurrency(config),
    )
    config.stash[SUMMARY] = Summary()
    config.stash[SEEN_IDS] = {}
    config.stash[NON_CASE_FAILURES] = []
    config.stash[NOT_GRADED] = []
    config.stash[VACUITY] = []
    config.stash[TAG_MARKERS] = set()


# -- collection -------------------------------------------------------------------------------


def is_case_file(config: pytest.Config, path: Path) -> bool:
    if path.suffix not in CASE_SUFFIXES or path.name.startswith(("_", ".")):
        return False
    rc = run_config(config)
    resolved = path.resolve()
    if resolved in rc.explicit:
        return True
    return any(resolved.is_relative_to(d) for d in rc.case_dirs)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if is_case_file(parent.config, file_path):
        return CaseFile.from_parent(parent, path=file_path)
    return None


# marks that change how pytest runs an item: a tag must never become one of these
PYTEST_MARKS = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "usefixtures",
        "parametrize",
        "filterwarnings",
        "tryfirst",
        "trylast",
        # the words of a -m expression: a marker by these names could never be selected
        "and",
        "or",
        "not",
    }
)
TAG_PREFIX = "tag_"


def _marker_name(tag: str) -> str | None:
    """The marker a tag becomes: word characters kept, the rest `_`, leading `_` dropped (pytest
    refuses marker names that start with one). None when nothing is left (`"🎁"`, `"--"`)."""
    name = re.sub(r"\W", "_", tag).lstrip("_")
    return name or None


def _reserved_marks(config: pytest.Config) -> frozenset[str]:
    """Marker names a tag may not take: pytest's own marks, the plugin's priority and
    difficulty marks, and every mark another plugin registered. Markers the project's own ini
    declares are left to its tags (a tag `slow` is `-m slow`), unless one of the first two."""
    known = config.stash.get(RESERVED_MARKS, None)
    if known is None:

        def names(lines: Any) -> set[str]:
            if isinstance(lines, str):
                lines = lines.splitlines()
            return {ln.split(":", 1)[0].split("(", 1)[0].strip() for ln in lines or [] if ln}

        registered = names(config.getini("markers"))
        # markers the project's own ini declares are its tags' vocabulary: `slow` stays `-m slow`
        try:
            own = names(config.inicfg.get("markers"))
        except Exception:  # the ini mapping is a deprecated view in pytest 9; without it, none
            own = set()
        tags = config.stash[TAG_MARKERS]
        plugin_marks = {
            *PRIORITY_MARKERS,
            "easy",
            "hard",
            "commerce_case",
            *(f"difficulty_{d}" for d in DIFFICULTY_MARKERS),
        }
        known = frozenset(PYTEST_MARKS | plugin_marks | (registered - tags - own))
        config.stash[RESERVED_MARKS] = known
    return known


def tag_marker(config: pytest.Config, tag: str) -> str | None:
    """The marker for `tag`, namespaced as `tag_<name>` when the plain name is a mark pytest, the
    plugin or another plugin already gives a meaning to (so a tag `skip` or `critical` never
    changes how a case runs or which `-m` selects it)."""
    name = _marker_name(tag)
    if name is None:
        return None
    if name in _reserved_marks(config):
        return TAG_PREFIX + name
    return name


class CaseFile(pytest.File):
    """A YAML or JSON file holding one case or a list of cases."""

    def collect(self):
        config = self.config
        rc = run_config(config)
        display = (
            Path(self.path).relative_to(config.rootpath)
            if Path(self.path).is_relative_to(config.rootpath)
            else Path(self.path)
        )
        loaded = load_case_file(Path(self.path), display)
        set_path = Path(self.path).parent
        set_name = (
            set_path.relative_to(config.rootpath).as_posix()
            if set_path.is_relative_to(config.rootpath)
            else set_path.as_posix()
        )
        set_config, set_problem = load_set_config(set_path, config.rootpath)
        for message in loaded.warnings:  # pytest's warnings summary shows them; xdist forwards
            try:
                self.warn(CaseFileWarning(message))
            except CaseFileWarning:  # warnings are errors here (-W error): this file errs alone
                text = message.split(":1: ", 1)[-1]
                problem = CaseProblem(display, 1, None, f"{text} (a warning made an error)")
                yield InvalidCase.from_parent(
                    self, name=f"{Path(self.path).name}::warning", problems=[problem]
                )
        threshold = set_config.threshold if set_config.threshold is not None else rc.threshold
        problems = list(loaded.problems)
        if set_problem is not None:
            problems.append(set_problem)
        seen = config.stash[SEEN_IDS]
        groups: dict[Any, list[CaseProblem]] = {}
        for n, problem in enumerate(problems):
            groups.setdefault(
                problem.entry if problem.entry is not None else f"file-{n}", []
            ).append(problem)
        for key, group in groups.items():
            first = group[0]
            label = first.case_id or (
                f"entry-{key + 1}" if isinstance(key, int) else Path(first.path).name
            )
            yield InvalidCase.from_parent(self, name=f"{label}::invalid", problems=group)
        for entry in loaded.cases:
            case = entry.case
            where = f"{display}:{entry.line}"
            if case.id in seen:
                yield InvalidCase.from_parent(
                    self,
                    name=f"{case.id}::duplicate",
                    problems=[
                        CaseProblem(
                            display,
                            entry.line,
                            "id",
                            f"duplicate id {case.id!r}, first defined at {seen[case.id]}; "
                            "ids must be unique across the suite",
                            case.id,
                        )
                    ],
                )
                continue
            seen[case.id] = where
            if config.getoption("commerce_vacuity", False):
                yield VacuityItem.from_parent(
                    self,
                    name=case.id,
                    case=case,
                    trial=1,
                    trials=1,
                    set_name=set_name,
                    threshold=threshold,
                    line=entry.line,
                    display=str(display),
                )
                continue
            for trial in range(1, rc.trials + 1):
                name = case.id if rc.trials == 1 else f"{case.id}[trial-{trial}]"
                yield CaseItem.from_parent(
                    self,
                    name=name,
                    case=case,
                    trial=trial,
                    trials=rc.trials,
                    set_name=set_name,
                    threshold=threshold,
                    line=entry.line,
                    display=str(display),
                )


class InvalidCase(pytest.Item):
    """Stands for a case entry that could not be read; errors at setup, the others still run."""

    def __init__(self, *, problems: list[CaseProblem], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problems = problems

    @property
    def message(self) -> str:
        return "\n".join(f"invalid case: {p}" for p in self.problems)

    def setup(self) -> None:
        pytest.fail(self.message, pytrace=False)

    def runtest(self) -> None:  # never reached: setup always fails
        pytest.fail(self.message, pytrace=False)

    def reportinfo(self):
        return (
            self.path,
            (self.problems[0].line or 1) - 1,
            f"invalid case in {self.problems[0].path}",
        )


class TrialFailed(Exception):
    def __init__(self, result: TrialResult) -> None:
        super().__init__(result.case_id)
        self.result = result


class CaseItem(pytest.Item):
    """One trial of one case."""

    def __init__(
        self,
        *,
        case: Case,
        trial: int,
        trials: int,
        set_name: str,
        threshold: float,
        line: int,
        display: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.trial = trial
        self.trials = trials
        self.set_name = set_name
        self.threshold = threshold
        self.line = line
        self.display = display
        self.result: TrialResult | None = None
        self.add_marker(case.priority)
        self.add_marker(f"difficulty_{case.difficulty}")
        if case.difficulty != "medium":
            self.add_marker(case.difficulty)
        self.add_marker("commerce_case")
        registered = self.config.stash[TAG_MARKERS]
        for tag in case.tags:
            self.extra_keyword_matches.add(tag)  # -k matches the tag's own text, always
            marker = tag_marker(self.config, tag)
            if marker is None:
                continue  # nothing usable as a marker name: the tag stays a keyword
            if marker not in registered:  # once per tag, not once per trial
                _reserved_marks(self.config)  # fixed before the first tag marker is added
                registered.add(marker)
                self.config.addinivalue_line("markers", f"{marker}: case tag {tag!r}")
            self.add_marker(marker)
        self.extra_keyword_matches.add(case.flow)
        if case.skip:
            self.add_marker(pytest.mark.skip(reason=case.skip))
        self.user_properties += [
            ("case_id", case.id),
            ("priority", case.priority),
            ("difficulty", case.difficulty),
            ("trial", f"{trial}/{trials}"),
        ]

    def compute(self) -> TrialResult:
        """Run the trial (on a scheduler thread when trials run concurrently)."""
        return run_trial(
            self.config,
            self.case,
            trial=self.trial,
            trials=self.trials,
            set_name=self.set_name,
            file=self.display,
            line=self.line,
        )

    def runtest(self) -> None:
        scheduler = self.config.stash.get(SCHEDULER, None)
        if scheduler is not None and scheduler.submitted(self):
            result = scheduler.wait(self)
        else:
            result = self.compute()
            self.config.stash[TRIAL_RAN] = True
        self.result = result
        self.config.hook.pytest_commerce_evals_trial_done(config=self.config, result=result)
        if result.outcome != "pass":
            raise TrialFailed(result)

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, TrialFailed):
            return format_failure(excinfo.value.result)
        if isinstance(excinfo.value, ConfigurationError):
            return f"commerce-evals configuration: {excinfo.value}"
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, self.line - 1, f"{self.case.id} (trial {self.trial}/{self.trials})"


class VacuityFinding(Exception):
    pass


class VacuityItem(CaseItem):
    """One case run against every degenerate scripted agent (`--commerce-vacuity`)."""

    def runtest(self) -> None:
        from .vacuity import check_case

        report = check_case(self.config, self.case, self.set_name)
        self.vacuity = report
        if report.findings:
            raise VacuityFinding(report)

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, VacuityFinding):
            report = excinfo.value.args[0]
            grid = ", ".join(
                f"{name}: {'fails it' if failed else 'passes'}"
                for name, failed in report.failed_under.items()
            )
            lines = [f"{report.case_id} at {self.display}:{self.line}"]
            lines += [f"  ✗ {f}" for f in report.findings]
            lines.append(f"  degenerate agents: {grid}")
            lines += [f"  ! {name}: {err}" for name, err in report.errors.items()]
            return "\n".join(lines)
        return super().repr_failure(excinfo, style)


def format_failure(result: TrialResult) -> str:
    """The text a user reads for a trial that did not pass."""
    head = (
        f"{result.case_id} trial {result.trial}/{result.trials}: {result.outcome} "
        f"({result.priority} priority, {result.difficulty}) at {result.file}:{result.line}"
    )
    lines = [head]
    if result.error:
        lines.append(f"  {result.error.rstrip()}")
    failed = result.failures
    if failed:
        lines.append(f"  {len(failed)} of {len(result.grader_results)} expectations failed:")
        lines += [f"  ✗ {g.message}" for g in failed]
    passed = [g for g in result.grader_results if g.passed]
    if passed:
        lines.append("  passed: " + ", ".join(g.key for g in passed))
    for v in result.verdicts:
        mark = {"pass": "✓", "fail": "✗"}.get(v.outcome, "!")
        cut = (
            f" [transcript cut: {v.truncated_turns} turns, {v.truncated_chars} chars dropped]"
            if v.truncated_chars
            else ""
        )
        if v.outcome in ("pass", "fail"):
            lines.append(f"  {mark} rubric {v.dimension}: {v.verdict} — {v.reasoning}{cut}")
        else:
            lines.append(f"  {mark} rubric {v.dimension}: {v.outcome} — {v.error}{cut}")
    if result.turns:
        from .graders import Observation, calls_made, reply_excerpt

        obs = Observation(result.turns)
        lines.append(f"  calls made: {calls_made(obs)}")
        lines.append(f"  reply: {reply_excerpt(obs.reply)}")
    return "\n".join(lines)


# -- running trials concurrently ---------------------------------------------------------------


def _runs_ahead(item: pytest.Item) -> bool:
    """A trial worth starting before its turn: a case trial pytest will not skip."""
    if type(item) is not CaseItem:
        return False
    return not any(item.iter_markers("skip")) and not any(item.iter_markers("skipif"))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Keep the scheduler fed: every case trial of the session at the first item, or under an
    xdist worker the trials the controller has queued for it so far."""
    config = item.config
    if SCHEDULER not in config.stash:
        if type(item) is not CaseItem:
            return  # decided at the first case trial
        size = run_config(config).concurrency
        if size is None:  # auto: run trials one by one until one has shown what it needs
            if not config.stash.get(TRIAL_RAN, False):
                return
            size = resolve_auto(config)
        if config.getoption("usepdb", False) or config.getoption("trace", False):
            size = 1  # a debugger stops in the trial it is reporting, on the main thread
        config.stash[SCHEDULER] = TrialScheduler(size) if size > 1 else None
    scheduler = config.stash[SCHEDULER]
    if scheduler is None:
        return
    session = item.session
    if hasattr(config, "workerinput"):
        queued = xdist_queued(config, session)
        items = [item, *(queued or [])]
    elif not scheduler.fed:
        scheduler.fed = True
        start = session.items.index(item) if item in session.items else 0
        items = session.items[start:]
    else:
        return
    scheduler.submit([i for i in items if _runs_ahead(i)])


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    """Before an eval run's trials: move what collection built (modules, cases, items) out of
    the garbage collector's reach, so each full collection during the run walks only what the
    trials made. (Again at the session's end, for pytest's own collections at exit.)"""
    if _eval_run(session):
        gc.freeze()


def _eval_run(session: pytest.Session) -> bool:
    return not session.config.option.collectonly and any(
        type(item) is CaseItem for item in session.items
    )


def _close_scheduler(config: pytest.Config) -> None:
    scheduler = config.stash.get(SCHEDULER, None)
    if scheduler is not None:
        scheduler.close()


# -- reports, summary, exit status ------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if isinstance(item, VacuityItem):
        found = getattr(item, "vacuity", None)
        if found is not None and report.when == "call":
            report.commerce_vacuity = asdict(found)
        return report
    if isinstance(item, CaseItem):
        outcome = None
        if report.when == "call":
            # no result: the plugin's own code failed around the trial, not the agent
            outcome = item.result.outcome if item.result else ("pass" if report.passed else "error")
        elif report.when == "setup" and report.skipped:
            outcome = "skipped"
        elif report.when == "setup" and report.failed:
            outcome = "error"  # a fixture or hook failed before the trial: not the agent's doing
        if outcome is not None:
            # on the item: junitxml writes the properties of the teardown report, made from it
            item.user_properties.append(("outcome", outcome))
            if item.result is not None and item.result.rubric_not_judged:
                report.user_properties.append(("rubric", "not judged"))
            record = TrialRecord(
                item.case.id,
                item.trial,
                item.trials,
                item.set_name,
                item.case.priority,
                item.case.difficulty,
                outcome,
            )
            report.commerce = asdict(record) | {
                "threshold": item.threshold,
                "rubric_not_judged": bool(item.result and item.result.rubric_not_judged),
                "agent_endpoint": _agent_endpoint_data(item.config),
            }
            if item.result is not None and report.when == "call":
                report.commerce_trial = item.result.to_dict() | {"threshold": item.threshold}
        if report.when == "teardown":
            item.result = None  # recorded; a long run keeps no second copy of every transcript
    elif isinstance(item, InvalidCase) and report.failed:
        report.commerce_invalid = item.message
    return report


_STATUS_LETTERS = {"judge_error": "J", "infra_error": "I", "error": "E"}


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    data = getattr(report, "commerce", None)
    if data and report.when == "call" and data["outcome"] in UNGRADED_OUTCOMES:
        outcome = data["outcome"]
        return outcome, _STATUS_LETTERS[outcome], outcome.upper()
    return None


class _JUnitOutcomes:
    """In `--junitxml`, a trial that could not be graded (judge, infrastructure or glue error)
    is an `<error>`, not a `<failure>`. pytest writes every failed call as a failure, so the
    element it just wrote is retagged; registered on the controller only."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @pytest.hookimpl(trylast=True)  # after junitxml's own hook has written the element
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "commerce", None)
        if not data or report.when != "call" or not report.failed:
            return
        outcome = data["outcome"]
        if outcome not in UNGRADED_OUTCOMES:
            return
        from _pytest.junitxml import xml_key

        xml = self.config.stash.get(xml_key, None)
        if xml is None:
            return
        reporter = xml.node_reporter(report)
        for node in reversed(reporter.nodes):
            if node.tag == "failure":
                node.tag = "error"
                node.set("message", f"{outcome}: {node.get('message', '')}")
                xml.stats["failure"] -= 1
                xml.stats["error"] += 1
                return


class _Gatherer:
    """Collects trial records where reports gather: the only process without xdist, the
    controller with it (workers never register it)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        config = self.config
        vacuity = getattr(report, "commerce_vacuity", None)
        if vacuity is not None:
            config.stash[VACUITY].append(vacuity)
            return
        data = getattr(report, "commerce", None)
        if data is not None:
            if data.get("agent_endpoint") and AGENT_USED not in config.stash:
                config.stash[AGENT_USED] = data["agent_endpoint"]
            config.stash[SUMMARY].add(
                TrialRecord(**{k: data[k] for k in TrialRecord.__dataclass_fields__}),
                data["threshold"],
            )
            if data.get("rubric_not_judged"):
                config.stash[SUMMARY].not_judged += 1
            if data["outcome"] in UNGRADED_OUTCOMES and report.failed:
                config.stash[NOT_GRADED].append((report.nodeid, str(report.longrepr)))
            # taken off the report once recorded: pytest keeps every report to the end
            trial = report.__dict__.pop("commerce_trial", None)
            if trial is None:  # skipped, or the trial never ran
                trial = data | {"turns": [], "grader_results": [], "verdicts": []}
            config.hook.pytest_commerce_evals_trial_recorded(config=config, record=trial)
            return
        invalid = getattr(report, "commerce_invalid", None)
        if invalid is not None:
            config.stash[SUMMARY].invalid.append(invalid)
        elif report.failed:
            config.stash[NON_CASE_FAILURES].append(report.nodeid)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(_Gatherer(config), "commerce_evals.gatherer")
        config.pluginmanager.register(_JUnitOutcomes(config), "commerce_evals.junit")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    try:
        _terminal_summary(terminalreporter, config)
    except Exception as exc:  # the summary must never take the run's exit status with it
        terminalreporter.write_line(
            f"commerce-evals: the summary could not be written ({type(exc).__name__}: {exc}); "
            "the exit status still comes from the sets",
            red=True,
        )


def _terminal_summary(terminalreporter, config: pytest.Config) -> None:
    vacuity = config.stash[VACUITY]
    if vacuity:
        _vacuity_summary(terminalreporter, vacuity)
    summary = config.stash[SUMMARY]
    if not summary.cases and not summary.invalid:
        return
    not_graded = config.stash[NOT_GRADED]
    if not_graded:
        # not agent failures, so pytest's FAILURES section leaves them out: show them here
        terminalreporter.section(
            "judge, infrastructure and glue errors (not counted against the agent)"
        )
        for nodeid, text in not_graded:
            terminalreporter.write_sep("_", nodeid)
            terminalreporter.write_line(text)
    terminalreporter.section("commerce-evals")
    for line in summary.lines(verbose=config.getoption("verbose") > 0):
        terminalreporter.write_line(line)
    shortfalls = summary.shortfalls
    undecided = summary.undecided
    if shortfalls:
        terminalreporter.write_line("")
        terminalreporter.write_line("sets below their threshold:", red=True, bold=True)
        for line in shortfalls:
            terminalreporter.write_line(f"  {line}", red=True)
    if undecided:
        terminalreporter.write_line("")
        terminalreporter.write_line(
            "sets undecided (nothing graded to measure):", yellow=True, bold=True
        )
        for line in undecided:
            terminalreporter.write_line(f"  {line}", yellow=True)
    if summary.sets and not shortfalls and not undecided:
        terminalreporter.write_line("every set met its threshold", green=True)
    if summary.sets:
        others = len(config.stash[NON_CASE_FAILURES])
        terminalreporter.write_line(_verdict_line(summary, others))


def _verdict_line(summary: Summary, others: int = 0) -> str:
    """One line saying why the run passes or fails, as the exit status will."""
    reasons = []
    if summary.shortfalls:
        reasons.append(f"{len(summary.shortfalls)} set(s) short")
    if summary.undecided:
        reasons.append(f"{len(summary.undecided)} set(s) undecided")
    if summary.glue_errors:
        reasons.append(f"{summary.glue_errors} glue error(s)")
    if summary.invalid:
        reasons.append(f"{len(summary.invalid)} invalid case entr(ies)")
    if others:
        reasons.append(f"{others} other test(s) failed")
    if not reasons:
        return f"verdict: pass — all {len(summary.sets)} set(s) met their thresholds"
    return "verdict: fail — " + ", ".join(reasons)


def _vacuity_summary(terminalreporter, reports: list[dict]) -> None:
    terminalreporter.section("commerce-evals vacuity")
    agents = list(reports[0]["failed_under"])
    flagged = [r for r in reports if r["findings"]]
    terminalreporter.write_line(
        f"{len(reports)} cases checked against {len(agents)} degenerate agents; "
        f"{len(flagged)} with findings"
    )
    for name in agents:
        caught = sum(1 for r in reports if r["failed_under"].get(name))
        terminalreporter.write_line(f"  {name:<11} fails {caught:>4} of {len(reports)} cases")
    for r in flagged:
        for finding in r["findings"]:
            terminalreporter.write_line(f"  {r['case_id']}: {finding}", red=True)


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """The exit status says whether every set met its threshold, not whether one trial failed."""
    config = session.config
    _close_scheduler(config)
    if any(type(item) is CaseItem for item in session.items):
        # the run (or the collection) is over: pytest's collections at exit need not walk
        # every case and trial again (5 full collections: 0.3 s for 200 collected cases)
        gc.freeze()
    if hasattr(config, "workerinput"):
        return
    summary = config.stash.get(SUMMARY, None)
    if summary is None or not summary.cases:
        return
    if session.exitstatus not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return
    bad = (
        summary.shortfalls
        or summary.undecided
        or summary.glue_errors
        or summary.invalid
        or config.stash[NON_CASE_FAILURES]
    )
    session.exitstatus = pytest.ExitCode.TESTS_FAILED if bad else pytest.ExitCode.OK
