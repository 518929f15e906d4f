"""Lazy exports: a package's names imported when first used, and what a plain run imports."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

import pytest_commerce_evals
from pytest_commerce_evals.exports import lazy

ROOT = Path(__file__).resolve().parents[1]

NOT_IMPORTED_BY_A_PLAIN_RUN = (
    # every integration and the frameworks' converters
    "pytest_commerce_evals.adapters",
    "pytest_commerce_evals.adapters.integration",
    # the judge: a run whose cases have no rubric, without the run header (-q)
    "pytest_commerce_evals.judge.judge",
    "pytest_commerce_evals.judge.calibrated",
    "pytest_commerce_evals.judge.calibration",
    "pytest_commerce_evals.judge.verdict_store",
    # live traffic, promotion and the trend
    "pytest_commerce_evals.live.capture",
    "pytest_commerce_evals.live.conversations",
    "pytest_commerce_evals.live.promote",
    "pytest_commerce_evals.live.reading",
    "pytest_commerce_evals.live.redaction",
    "pytest_commerce_evals.live.trend",
    # the lint and the vacuity check, model comparison, merging shards
    "pytest_commerce_evals.authoring.lint",
    "pytest_commerce_evals.authoring.vacuity",
    "pytest_commerce_evals.reports.compare",
    "pytest_commerce_evals.runner.merge",
    "pytest_commerce_evals.store.compare",
    # the attacking customer, the settings' docs
    "pytest_commerce_evals.customer.attacker",
    "pytest_commerce_evals.settings._docs",
)


def test_a_name_is_imported_from_its_module_on_first_use_and_kept(tmp_path, monkeypatch):
    (tmp_path / "mod.py").write_text("VALUE = object()\n")
    package = types.ModuleType("lazy_probe")
    package.__path__ = [str(tmp_path)]  # type: ignore[attr-defined]
    getattr_, dir_ = lazy("lazy_probe", {"VALUE": "mod"})
    package.__getattr__ = getattr_  # type: ignore[method-assign]
    monkeypatch.setitem(sys.modules, "lazy_probe", package)
    monkeypatch.delitem(sys.modules, "lazy_probe.mod", raising=False)

    assert "lazy_probe.mod" not in sys.modules  # nothing imported until the name is used
    assert "VALUE" in dir_()
    value = package.VALUE
    assert value is sys.modules["lazy_probe.mod"].VALUE
    assert vars(package)["VALUE"] is value  # kept: found directly from now on
    with pytest.raises(AttributeError, match="module 'lazy_probe' has no attribute 'OTHER'"):
        package.OTHER  # noqa: B018


def test_an_unknown_name_is_an_attribute_error_naming_the_package():
    with pytest.raises(
        AttributeError, match="module 'pytest_commerce_evals' has no attribute 'Nope'"
    ):
        pytest_commerce_evals.Nope  # noqa: B018
    with pytest.raises(ImportError, match="Nope"):
        exec("from pytest_commerce_evals import Nope", {})


def test_dir_and_star_import_list_every_export():
    assert set(pytest_commerce_evals.__all__) <= set(dir(pytest_commerce_evals))
    names: dict = {}
    exec("from pytest_commerce_evals import *", names)
    assert set(pytest_commerce_evals.__all__) <= set(names)
    from pytest_commerce_evals.testing.fake import FakeClient

    assert names["FakeClient"] is FakeClient


@pytest.mark.parametrize(
    "package",
    [
        "pytest_commerce_evals",
        "pytest_commerce_evals.adapters",
        "pytest_commerce_evals.customer",
        "pytest_commerce_evals.judge",
        "pytest_commerce_evals.live",
        "pytest_commerce_evals.settings",
        "pytest_commerce_evals.store",
    ],
)
def test_every_lazy_package_resolves_every_name_it_exports(package):
    """In a fresh interpreter, so that each name is found through `__getattr__`."""
    code = textwrap.dedent(f"""
        import importlib
        package = importlib.import_module({package!r})
        exported = package.__all__
        missing = [n for n in exported if getattr(package, n, None) is None]
        assert not missing, missing
        print(len(exported))
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0


def test_a_plain_run_imports_no_feature_it_does_not_use(pytester):
    """Cases with code graders only, `-q` (no run header), the run store on: the integrations,
    the judge, live traffic, the lint, comparison and merging stay unimported."""
    pytester.makefile(
        ".yaml",
        **{
            "cases/chat": "\n".join(
                f"- {{id: chat-{i:03d}-hello, priority: low, difficulty: easy, turns: [hi], "
                "expected: {reply_includes: [ok]}}"
                for i in range(3)
            )
        },
    )
    shutil.copy(ROOT / "tests" / "helpers.py", pytester.path / "helpers.py")
    from helpers import toy_conftest

    pytester.makeconftest(
        toy_conftest()
        + textwrap.dedent(f"""

        import sys

        def pytest_unconfigure(config):
            found = [m for m in {NOT_IMPORTED_BY_A_PLAIN_RUN!r} if m in sys.modules]
            print("\\nimported:", ",".join(found) or "none")
        """)
    )
    result = pytester.runpytest_subprocess("cases", "-q", "-s", "--commerce-concurrency=2")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["imported: none"])
