"""`pytest --commerce-lint`: check the authoring rules over the case files, then exit (the
options, `--commerce-lint` and `--commerce-vacuity`, are declared in `settings.TABLE`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..compat import run_session
from ..settings import settings
from .lint import RULES, FixtureIndex, lint_paths


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    if not settings(config).lint:
        return None
    return run_session(config, _lint)


def lint_targets(config: pytest.Config) -> list[Path]:
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        return [Path(a.split("::")[0]).resolve() for a in config.args]
    return list(settings(config).case_dirs)


def _lint(config: pytest.Config, session: pytest.Session) -> int:
    index = config.hook.pytest_commerce_evals_fixture_index(config=config) or FixtureIndex()
    found = settings(config)
    captured = [(config.rootpath / p) for p in found.captured]
    roots = list(found.case_dirs)
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
