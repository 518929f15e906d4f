"""The pytest and pytest-xdist internals the plugin reads (`pytest_commerce_evals.compat`), each
checked against the installed release: these fail loudly when a release moves one, instead of
the plugin silently degrading (trials one at a time, adaptive cases spread over workers, ungraded
trials written to junit as failures)."""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import textwrap
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from pytest_commerce_evals import compat

PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"


def _declared(name: str) -> SpecifierSet:
    """The range pyproject.toml allows for `name`, wherever it is declared."""
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    lines = [*project["dependencies"], *sum(project["optional-dependencies"].values(), [])]
    found = [Requirement(line) for line in lines if Requirement(line).name == name]
    assert found, f"{name} is not declared in pyproject.toml"
    return found[0].specifier


def test_the_declared_ranges_are_the_ones_compat_was_checked_on():
    assert _declared("pytest") == SpecifierSet(compat.PYTEST_SUPPORTED)
    assert _declared("pytest-xdist") == SpecifierSet(compat.XDIST_SUPPORTED)


def test_the_installed_pytest_is_in_the_supported_range():
    version = importlib.metadata.version("pytest")
    assert version in SpecifierSet(compat.PYTEST_SUPPORTED), (version, compat.PYTEST_SUPPORTED)


def test_wrap_session_takes_a_config_and_a_main():
    from _pytest.main import wrap_session

    assert list(inspect.signature(wrap_session).parameters) == ["config", "doit"]


def test_a_mode_run_in_the_session_returns_its_exit_status(pytester: pytest.Pytester):
    pytester.makeconftest(
        textwrap.dedent("""
        from pytest_commerce_evals.compat import run_session

        def pytest_cmdline_main(config):
            def main(config, session):
                config.get_terminal_writer().line("the mode ran")
                return 3
            return run_session(config, main)
        """)
    )
    result = pytester.runpytest("-p", "no:commerce_evals")
    assert result.ret == 3
    result.stdout.fnmatch_lines(["the mode ran"])


def test_junit_xml_internals_are_where_the_retagging_reads_them():
    from _pytest.junitxml import LogXML, _NodeReporter, xml_key

    assert isinstance(xml_key, pytest.StashKey)
    assert callable(LogXML.node_reporter)
    assert "nodes" in inspect.getsource(_NodeReporter.__init__)
    assert "self.stats" in inspect.getsource(LogXML.__init__)


def test_a_junit_failure_is_retagged_as_an_error(pytester: pytest.Pytester):
    pytester.makeconftest(
        textwrap.dedent("""
        import pytest
        from pytest_commerce_evals.compat import junit_error

        RETAGGED = []

        @pytest.hookimpl(trylast=True)
        def pytest_runtest_logreport(report):
            if report.when == "call" and report.failed:
                RETAGGED.append(junit_error(pytest.CONFIG, report, "judge_error"))

        def pytest_configure(config):
            pytest.CONFIG = config

        def pytest_unconfigure(config):
            print("retagged:", RETAGGED)
        """)
    )
    pytester.makepyfile(test_one="def test_a():\n    assert False\n")
    result = pytester.runpytest("-p", "no:commerce_evals", "-s", "--junitxml=out.xml")
    xml = (pytester.path / "out.xml").read_text()
    assert '<error message="judge_error: ' in xml and "<failure" not in xml, xml
    assert 'errors="1" failures="0"' in xml, xml
    result.stdout.fnmatch_lines(["retagged: [[]True[]]"])


def test_without_a_junit_file_nothing_is_retagged(pytester: pytest.Pytester):
    config = pytester.parseconfigure()
    assert compat.junit_error(config, None, "judge_error") is False


# -- pytest-xdist ------------------------------------------------------------------------------


def test_the_terminal_reporters_line_width_is_where_the_progress_line_reads_it(pytestconfig):
    from pytest_commerce_evals.compat import line_started

    reporter = pytestconfig.pluginmanager.get_plugin("terminalreporter")
    assert isinstance(reporter._tw.width_of_current_line, int)
    assert line_started(object()) is True  # unknown: a line break first


def test_the_installed_xdist_is_in_the_supported_range():
    pytest.importorskip("xdist")
    version = importlib.metadata.version("pytest-xdist")
    assert version in SpecifierSet(compat.XDIST_SUPPORTED), (version, compat.XDIST_SUPPORTED)


def test_a_worker_reads_the_items_queued_for_it(pytester: pytest.Pytester):
    pytest.importorskip("xdist")
    out = pytester.path / "queued.json"
    pytester.makeconftest(
        textwrap.dedent(f"""
        import json
        import pytest
        from pytest_commerce_evals.compat import xdist_queued

        SEEN = []

        @pytest.hookimpl(tryfirst=True)
        def pytest_runtest_protocol(item, nextitem):
            if hasattr(item.config, "workerinput"):
                queued = xdist_queued(item.config, item.session)
                SEEN.append(None if queued is None else [i.name for i in queued])

        def pytest_sessionfinish(session):
            if hasattr(session.config, "workerinput"):
                with open({str(out)!r}, "w") as f:
                    json.dump(SEEN, f)
        """)
    )
    pytester.makepyfile(test_many="\n".join(f"def test_{i}():\n    pass\n" for i in range(60)))
    result = pytester.runpytest("-n", "1", "-p", "no:benchmark", "-p", "no:commerce_evals")
    result.assert_outcomes(passed=60)
    seen = json.loads(out.read_text())
    assert seen and None not in seen, "xdist's WorkerInteractor.torun queue could not be read"
    assert seen[0][0] == "test_1"  # the item after the one running comes first
    assert any(len(q) > 1 for q in seen), seen  # and the ones queued behind it


@pytest.mark.parametrize(
    ("nodeid", "scope"),
    [
        ("cases/cart.yaml::cart-001[trial-3]", "cases/cart.yaml::cart-001"),
        ("cases/cart.yaml::cart-001", "cases/cart.yaml::cart-001"),
        ("tests/test_x.py::test_a[trial-x]", "tests/test_x.py::test_a[trial-x]"),
        ("tests/test_x.py::test_a[1]@db", "db"),
        ("tests/test_x.py::test_a[a@b]", "tests/test_x.py::test_a[a@b]"),
    ],
)
def test_a_case_scope_is_the_case_or_the_xdist_group(nodeid, scope):
    assert compat.case_scope(nodeid) == scope


def test_the_case_scheduler_sends_each_cases_trials_to_one_worker(pytester: pytest.Pytester):
    pytest.importorskip("xdist")
    pytester.makeconftest(
        textwrap.dedent("""
        import os
        from pytest_commerce_evals.compat import case_scheduler

        def pytest_xdist_make_scheduler(config, log):
            return case_scheduler(config, log)
        """)
    )
    pytester.makepyfile(
        test_trials=textwrap.dedent("""
        import os
        import pytest

        TRIALS = [f"trial-{n}" for n in range(1, 7)]

        def trials(case):
            @pytest.mark.parametrize("trial", TRIALS, ids=TRIALS)
            def test(trial):
                worker = os.environ["PYTEST_XDIST_WORKER"]
                with open(f"ran-{case}-{worker}", "a") as f:
                    f.write(trial + ",")

            return test

        test_a, test_b, test_c, test_d = (trials(c) for c in "abcd")
        """)
    )
    result = pytester.runpytest("-n", "2", "-p", "no:benchmark", "-p", "no:commerce_evals")
    result.assert_outcomes(passed=24)
    workers: dict[str, set[str]] = {}
    for path in pytester.path.glob("ran-*"):
        _, case, worker = path.name.split("-")
        workers.setdefault(case, set()).add(worker)
    assert {case: len(w) for case, w in workers.items()} == {"a": 1, "b": 1, "c": 1, "d": 1}
    assert len(set().union(*workers.values())) == 2  # and the cases are spread over both


def _with_capture(capman):
    from types import SimpleNamespace

    return SimpleNamespace(pluginmanager=SimpleNamespace(getplugin=lambda name: capman))


def test_capture_internals_are_where_capture_by_sys_reads_them():
    from _pytest.capture import CaptureManager

    capman = CaptureManager("fd")
    assert capman._method == "fd" and capman._global_capturing is None
    capman.start_global_capturing()
    try:
        capman.suspend_global_capture()
        assert capman._global_capturing._state == "suspended"
        assert compat.capture_by_sys(_with_capture(capman)) is True
        assert capman._method == "sys" and capman._global_capturing._state == "suspended"
        capman.resume_global_capture()
        print("through sys")
        assert capman.read_global_capture().out == "through sys\n"
    finally:
        capman.stop_global_capturing()
    running = CaptureManager("fd")  # switched while capturing: still capturing after
    running.start_global_capturing()
    try:
        assert compat.capture_by_sys(_with_capture(running)) is True
        assert running._global_capturing._state == "started"
    finally:
        running.stop_global_capturing()


@pytest.mark.parametrize("method", ["no", "sys", "tee-sys"])
def test_capture_by_sys_leaves_every_other_capture_as_it_is(method):
    from _pytest.capture import CaptureManager

    capman = CaptureManager(method)
    assert compat.capture_by_sys(_with_capture(capman)) is False  # not started either
    capman.start_global_capturing()
    try:
        before = capman._global_capturing
        assert compat.capture_by_sys(_with_capture(capman)) is False
        assert capman._method == method and capman._global_capturing is before
    finally:
        capman.stop_global_capturing()
    assert compat.capture_by_sys(_with_capture(None)) is False  # -p no:capture
