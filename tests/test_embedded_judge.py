"""The embedded judge is asked only where its verdict could decide: below its κ bar (the shipped
calibration is κ 0.06 against auto's 0.4) a rubric is reported as not judged, and the judge's
server never starts; `--commerce-judge-min-kappa=none`, or a calibration of its own that clears
the bar, asks it again."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from helpers import toy_conftest

from pytest_commerce_evals.judge.calibrated import MIN_LABELS
from pytest_commerce_evals.judge.judge import Judge, JudgeParams
from pytest_commerce_evals.judge.verdict_store import StoredCalibration, VerdictStore
from pytest_commerce_evals.models.embedded import DEFAULT_MODEL, PACKAGED_MODELS

HERE = Path(__file__).parent

# the built-in judge, on a scripted client: counts the judges built and the calls made
FAKE_JUDGE = """
import json as _json

from pytest_commerce_evals.judge import _plugin as _judge_plugin
from pytest_commerce_evals.judge.judge import Judge, JudgeParams
from pytest_commerce_evals.testing.fake import FakeClient, text_reply

BUILT = []


def _build(config, with_store=True):
    from pytest_commerce_evals.models.endpoint import resolve_endpoint

    resolved = resolve_endpoint(config, "judge")
    verdict = _json.dumps({"verdict": "FAIL", "reasoning": "quotes the wrong price"})
    judge = Judge(
        client=FakeClient([text_reply(verdict) for _ in range(10)]),
        model=resolved.model,
        params=_judge_plugin.judge_params(config, resolved),
    )
    BUILT.append(judge)
    return judge


_judge_plugin.build_judge = _build


def pytest_terminal_summary(terminalreporter):
    calls = sum(len(j.client.requests) for j in BUILT)
    terminalreporter.write_line(f"judges built: {len(BUILT)}, judge calls: {calls}")
"""


@pytest.fixture
def embedded_run(pytester: pytest.Pytester, monkeypatch) -> pytest.Pytester:
    for name in (
        "OPENAI_BASE_URL",
        "OPENAI_MODEL",
        "COMMERCE_JUDGE_MODEL",
        "COMMERCE_JUDGE_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(toy_conftest() + textwrap.dedent(FAKE_JUDGE))
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        "- {id: shop-001-price, priority: low, difficulty: easy, turns: [hi], "
        "expected: {rubric: {price_accurate: standard}}}\n"
    )
    return pytester


def test_below_its_bar_the_embedded_judge_is_not_asked_and_the_run_says_why(embedded_run):
    result = embedded_run.runpytest("cases", "--commerce-trials=1")
    result.assert_outcomes(passed=1, warnings=None)
    result.stdout.fnmatch_lines(
        [
            "commerce-evals judge verdicts advisory: embedded * < 0.4 *; the embedded judge is "
            "not asked for a case none of whose dimensions it could decide*",
            "judges built: 0, judge calls: 0",
            "*rubrics not judged on 1 trial(s) (the embedded judge is below its κ bar, so its "
            "verdicts would decide nothing and it was not asked; --commerce-judge-min-kappa=none "
            "asks it)*",
        ]
    )


def test_with_no_bar_the_embedded_judge_is_asked_and_decides(embedded_run):
    result = embedded_run.runpytest(
        "cases", "--commerce-trials=1", "--commerce-judge-min-kappa=none"
    )
    result.assert_outcomes(failed=1, warnings=None)
    result.stdout.fnmatch_lines(
        ["*rubric price_accurate: FAIL*", "judges built: 1, judge calls: 1"]
    )


def test_a_calibration_that_clears_the_bar_brings_its_calls_back(embedded_run):
    model = PACKAGED_MODELS[DEFAULT_MODEL].model_id
    # the embedded judge's fingerprint: its model, json_object, the default parameters
    params = JudgeParams(response_format="json_object")
    fingerprint = Judge(client=None, model=model, params=params).fingerprint
    store = VerdictStore(embedded_run.path / ".commerce" / "verdicts.sqlite")
    store.put_calibration(
        StoredCalibration(
            judge_fingerprint=fingerprint, dimension="price_accurate", set_id="s" * 64,
            judge_model=model, n=MIN_LABELS + 10, agreement=0.9, kappa=0.8, set_items=40,
        )
    )  # fmt: skip
    store.close()
    result = embedded_run.runpytest("cases", "--commerce-trials=1")
    result.assert_outcomes(failed=1, warnings=None)
    result.stdout.fnmatch_lines(
        ["judges built: 1, judge calls: 1", "price_accurate: κ 0.80 (n=20), 1 verdict(s), decides"]
    )


def test_a_live_run_asks_the_embedded_judge_whatever_its_bar(embedded_run):
    """Verdicts are what a live run is for: the embedded judge is asked there (advisory); a
    regrade too (tests/test_regrade.py runs one)."""
    from pytest_commerce_evals.judge import skipping as judge_plugin

    (embedded_run.path / "traffic.jsonl").write_text("")
    config = embedded_run.parseconfigure("--commerce-live=traffic.jsonl")
    assert judge_plugin.embedded_judge_decides(config) is None
    decides = judge_plugin.embedded_judge_decides(embedded_run.parseconfigure())
    assert decides is not None and not decides("price_accurate")


def test_a_regrade_asks_the_embedded_judge_whatever_its_bar(embedded_run, monkeypatch):
    from types import SimpleNamespace

    from pytest_commerce_evals.judge import skipping as judge_plugin

    config = embedded_run.parseconfigure()
    real = judge_plugin.settings(config)
    regrading = SimpleNamespace(**{**vars(real), "regrade": "20261206-000000-abcdef"})
    monkeypatch.setattr(judge_plugin, "settings", lambda config: regrading)
    assert judge_plugin.embedded_judge_decides(config) is None
