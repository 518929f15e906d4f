"""Authoring's hooks: `pytest --commerce-lint` checks the authoring rules over the case files,
then exits; `--commerce-vacuity` collects each case as a `VacuityItem` and summarises what the
degenerate agents found (both options are declared in `settings.TABLE`)."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from ..compat import run_session
from ..results import attach_payload, report_payload
from ..settings import settings

VACUITY = pytest.StashKey[list[dict]]()
"""The vacuity findings of the run's cases, as the reports carried them (from every worker)."""


def pytest_configure(config: pytest.Config) -> None:
    config.stash[VACUITY] = []


@pytest.hookimpl(tryfirst=True)
def pytest_commerce_evals_item_class(config: pytest.Config, kind: str) -> type[pytest.Item] | None:
    if kind != "vacuity":
        return None
    from .vacuity import VacuityItem

    return VacuityItem


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    if not settings(item.config).vacuity:  # vacuity items exist only then (cases/collection.py)
        return report
    from .vacuity import VacuityItem

    if isinstance(item, VacuityItem):
        found = getattr(item, "vacuity", None)
        if found is not None and report.when == "call":
            attach_payload(report, "vacuity", finding=asdict(found))
    return report


class _VacuityGatherer:
    """Collects the findings where reports gather: the only process without xdist, the
    controller with it (workers never register it)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        found = report_payload(report, "vacuity")
        if found is not None:
            self.config.stash[VACUITY].append(found["finding"])


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    if settings(config).vacuity and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_VacuityGatherer(config), "commerce_evals.vacuity")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    reports = config.stash.get(VACUITY, [])
    if reports and not hasattr(config, "workerinput"):
        _vacuity_summary(terminalreporter, reports)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not settings(config).lint:
        return None
    return run_session(config, _lint)


def lint_targets(config: pytest.Config) -> list[Path]:
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        return [Path(a.split("::")[0]).resolve() for a in config.args]
    return list(settings(config).case_dirs)


def _shown(path: Path, root: Path) -> str:
    shown = path.relative_to(root) if path.is_relative_to(root) else path
    return shown.as_posix() + ("" if path.exists() else " (not found)")


def _lint(config: pytest.Config, session: pytest.Session) -> int:
    from .lint import RULES, FixtureIndex, lint_paths

    index = config.hook.pytest_commerce_evals_fixture_index(config=config) or FixtureIndex()
    found = settings(config)
    captured = [(config.rootpath / p) for p in found.captured]
    roots = list(found.case_dirs)
    targets = lint_targets(config)
    counted: dict[str, int] = {}
    findings = lint_paths(targets, index, config.rootpath, captured, roots, counted)
    tw = config.get_terminal_writer()
    tw.sep("=", "commerce-evals lint")
    if not index.ids:
        tw.line(
            "no fixture index (pytest_commerce_evals_fixture_index): fixture-ID and poisoned "
            "checks were not run",
            yellow=True,
        )
    for finding in findings:
        tw.line(str(finding), red=True)
    counts: dict[str, int] = {}
    for f in findings:
        counts[f.rule] = counts.get(f.rule, 0) + 1
    tw.line("")
    if not counted.get("files") and not findings:
        # "0 findings" would read as a clean suite: say that nothing was read
        shown = ", ".join(_shown(t, config.rootpath) for t in targets) or "nothing"
        tw.line(
            f"no case linted: {shown} holds no case file (.yaml, .yml or .json not starting "
            "with _ or .); name the folders or files that hold your cases, or set "
            "commerce_case_dirs",
            red=True,
        )
        return pytest.ExitCode.NO_TESTS_COLLECTED
    tw.line(f"linted {counted.get('cases', 0)} case(s) in {counted.get('files', 0)} file(s)")
    tw.line(
        f"{len(findings)} finding(s) over {len(RULES)} rules"
        + (": " + ", ".join(f"{r} {n}" for r, n in sorted(counts.items())) if counts else ""),
        red=bool(findings),
        green=not findings,
    )
    return pytest.ExitCode.TESTS_FAILED if findings else pytest.ExitCode.OK


def _vacuity_summary(terminalreporter, reports: list[dict]) -> None:
    terminalreporter.section("commerce-evals vacuity")
    from .vacuity import ATTACK_AGENTS, DEGENERATE

    attacks = [r for r in reports if set(ATTACK_AGENTS) & set(r["failed_under"])]
    flagged = [r for r in reports if r["findings"]]
    also = f" (and the {', '.join(ATTACK_AGENTS)} on {len(attacks)} attack(s))" if attacks else ""
    terminalreporter.write_line(
        f"{len(reports)} cases checked against {len(DEGENERATE)} degenerate agents{also}; "
        f"{len(flagged)} with findings"
    )
    for name, played in [
        *((n, reports) for n in DEGENERATE),
        *((n, attacks) for n in also and ATTACK_AGENTS),
    ]:
        caught = sum(1 for r in played if r["failed_under"].get(name))
        what = "cases" if played is reports else "attacks"
        terminalreporter.write_line(f"  {name:<11} fails {caught:>4} of {len(played)} {what}")
    for r in flagged:
        for finding in r["findings"]:
            terminalreporter.write_line(f"  {r['case_id']}: {finding}", red=True)
