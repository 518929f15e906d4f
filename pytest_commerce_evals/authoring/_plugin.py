"""`pytest --commerce-lint`: check the authoring rules over the case files, then exit."""

from __future__ import annotations

from pathlib import Path

import pytest

from .lint import RULES, FixtureIndex, lint_paths


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("commerce-evals")
    group.addoption(
        "--commerce-lint",
        action="store_true",
        default=False,
        help="check the case files against the authoring rules (docs/authoring.md) and exit",
    )
    group.addoption(
        "--commerce-vacuity",
        action="store_true",
        default=False,
        help="run every case against degenerate scripted agents and report cases that assert "
        "nothing (docs/authoring.md)",
    )
    parser.addini(
        "commerce_captured",
        "files or folders of captured traffic the lint scans for poisoned IDs",
        type="args",
        default=[],
    )


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not config.getoption("commerce_lint"):
        return None
    from _pytest.main import wrap_session

    return wrap_session(config, _lint)


def lint_targets(config: pytest.Config) -> list[Path]:
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        return [Path(a.split("::")[0]).resolve() for a in config.args]
    return [(config.rootpath / d).resolve() for d in config.getini("commerce_case_dirs")]


def _lint(config: pytest.Config, session: pytest.Session) -> int:
    index = config.hook.pytest_commerce_evals_fixture_index(config=config) or FixtureIndex()
    captured = [(config.rootpath / p) for p in config.getini("commerce_captured")]
    roots = [(config.rootpath / d).resolve() for d in config.getini("commerce_case_dirs")]
    findings = lint_paths(lint_targets(config), index, config.rootpath, captured, roots)
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
    tw.line(
        f"{len(findings)} finding(s) over {len(RULES)} rules"
        + (": " + ", ".join(f"{r} {n}" for r, n in sorted(counts.items())) if counts else ""),
        red=bool(findings),
        green=not findings,
    )
    return pytest.ExitCode.TESTS_FAILED if findings else pytest.ExitCode.OK
