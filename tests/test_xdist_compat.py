"""The one xdist internal the plugin reads (a worker's queue), checked against the installed
pytest-xdist: this fails loudly when a release moves it, instead of trials silently running one at
a time on each worker."""

from __future__ import annotations

import importlib.metadata
import json
import textwrap

import pytest

xdist = pytest.importorskip("xdist")


def test_the_installed_xdist_is_in_the_supported_range():
    from packaging.specifiers import SpecifierSet

    from pytest_commerce_evals.runner._xdist_compat import SUPPORTED

    version = importlib.metadata.version("pytest-xdist")
    assert version in SpecifierSet(SUPPORTED), (version, SUPPORTED)


def test_a_worker_reads_the_items_queued_for_it(pytester: pytest.Pytester):
    out = pytester.path / "queued.json"
    pytester.makeconftest(
        textwrap.dedent(f"""
        import json
        import pytest
        from pytest_commerce_evals.runner._xdist_compat import xdist_queued

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
