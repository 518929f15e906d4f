"""pyproject.toml's extras and ranges as the README and CI use them: one extra per framework,
xdist without `[dev]`, every lower bound a release CI can install (`.ci/versions.py`)."""

from __future__ import annotations

import re
import runpy
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).parents[1]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
EXTRAS = PROJECT["optional-dependencies"]
versions = runpy.run_path(str(ROOT / ".ci" / "versions.py"))


def names(extras: list[str]) -> set[str]:
    return {r.name for r in versions["direct"](extras)}


def test_each_framework_has_its_own_extra_and_frameworks_has_them_all():
    assert names(["pydantic-ai"]) - names([]) == {"pydantic-ai-slim"}
    assert names(["openai-agents"]) - names([]) == {"openai-agents"}
    assert names(["langchain"]) - names([]) == {"langchain-core"}
    assert names(["langgraph"]) - names([]) == {"langchain-core", "langgraph"}
    assert names(["otel"]) - names([]) == {"opentelemetry-sdk"}
    framework = names(["pydantic-ai", "openai-agents", "langgraph", "otel"])
    assert names(["frameworks"]) == framework


def test_xdist_comes_without_the_dev_extra_and_dev_has_everything_the_tests_use():
    assert "pytest-xdist" in names(["xdist"]) and "ruff" not in names(["xdist"])
    assert names(["frameworks", "postgres", "xdist"]) <= names(["dev"])


def test_every_direct_dependency_has_a_lower_bound():
    for req in versions["direct"](sorted(EXTRAS)):
        assert versions["lower_bound"](req) is not None, req


def test_the_lower_bound_is_the_highest_floor_a_range_names():
    assert versions["lower_bound"](Requirement("pytest>=8.0,<10")) == Version("8.0")
    assert versions["lower_bound"](Requirement("x>=1,>=1.5")) == Version("1.5")
    assert versions["lower_bound"](Requirement("x<2")) is None


def test_the_readmes_install_lines_name_extras_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    named = set(re.findall(r"pytest-commerce-evals\[([a-z-]+)\]", readme))
    named |= {e for line in re.findall(r"\.\[([a-z,-]+)\]", readme) for e in line.split(",")}
    assert named and named <= set(EXTRAS), named - set(EXTRAS)
    one_each = re.search(r"one framework: ([a-z, -]+)", readme)
    assert one_each and {e.strip() for e in one_each.group(1).split(",")} <= set(EXTRAS)


def test_the_package_says_it_is_typed():
    root = Path(__file__).resolve().parents[1]
    assert (root / "pytest_commerce_evals" / "py.typed").is_file()
    data = tomllib.loads((root / "pyproject.toml").read_text())
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["pytest_commerce_evals"]


def test_the_html_reports_css_and_js_are_package_data_and_inlined_in_the_page():
    from pytest_commerce_evals.reports import html_page

    reports = ROOT / "pytest_commerce_evals" / "reports"
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns = data["tool"]["setuptools"]["package-data"]["pytest_commerce_evals.reports"]
    assets = sorted(p.relative_to(reports).as_posix() for p in (reports / "assets").iterdir())
    assert assets == ["assets/report.css", "assets/report.js"]
    for asset in assets:
        assert any(fnmatch(asset, pattern) for pattern in patterns), f"{asset} is not shipped"
    page = html_page._page("title", "subtitle", "")
    for asset in assets:
        text = (reports / asset).read_text(encoding="utf-8")
        assert text.strip() and text in page, f"{asset} is not inlined in the page"
