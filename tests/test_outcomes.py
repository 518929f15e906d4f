"""Outcomes that say whose fault it is: glue errors apart from agent failures, JUnit failure vs
error, undecided sets, the agent's name, and tags that can never break a session."""

from __future__ import annotations

import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import toy_conftest

HERE = Path(__file__).parent

ONE_CASE = """
id: chat-001-x
priority: low
difficulty: easy
turns: [hi]
expected: {no_ui: true}
"""

# one conftest, a --mode per way the glue can go wrong; its line numbers are asserted below
GLUE_CONFTEST = """\
from helpers import ToyBackend
from pytest_commerce_evals import Text


def pytest_addoption(parser):
    parser.addoption("--mode")


class DictSnapshot(ToyBackend):
    def snapshot(self):
        return {"cart": [], "memory": []}


def pytest_commerce_evals_make_backend(config, case):
    mode = config.getoption("--mode")
    if mode == "backend-raises":
        raise RuntimeError("fixtures folder missing")
    return DictSnapshot() if mode == "dict-snapshot" else ToyBackend()


class FrameworkMessage:
    content = "hi"


def pytest_commerce_evals_make_agent(config, case, backend):
    mode = config.getoption("--mode")
    if mode == "agent-raises":
        raise KeyError("OPENAI_API_KEY")

    def run_turn(session, message):
        if mode == "framework-objects":
            return [FrameworkMessage()]
        if mode == "returns-string":
            return "hello"
        if mode == "agent-crash":
            raise ValueError("the agent's own bug")
        return [Text(text="hello")]

    return run_turn
"""


@pytest.fixture
def glue(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(GLUE_CONFTEST)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(textwrap.dedent(ONE_CASE))
    return pytester


@pytest.mark.parametrize(
    "mode, lines",
    [
        (
            "dict-snapshot",
            [
                "*chat-001-x trial 1/1: error (low priority, easy) at cases/a.yaml:*",
                "*commerce-evals glue error (not counted against the agent): DictSnapshot.snapshot() "
                "(at conftest.py:10) must return pytest_commerce_evals.Snapshot*got dict",
            ],
        ),
        (
            "framework-objects",
            [
                "*glue error*the agent's run_turn (at conftest.py:30) gave item 1 of 1 as "
                "FrameworkMessage*not an event*run_turn must return or yield "
                "pytest_commerce_evals events*",
            ],
        ),
        (
            "returns-string",
            ["*glue error*the agent's run_turn (at conftest.py:30) returned str 'hello'*"],
        ),
        (
            "agent-raises",
            [
                "*glue error*pytest_commerce_evals_make_agent raised KeyError: 'OPENAI_API_KEY' "
                "(at conftest.py:28); it should return an object with run_turn(session, message)",
            ],
        ),
        (
            "backend-raises",
            [
                "*glue error*pytest_commerce_evals_make_backend raised RuntimeError: fixtures "
                "folder missing (at conftest.py:17)*",
            ],
        ),
    ],
)
def test_glue_errors_are_their_own_outcome_never_fail(glue, mode, lines):
    result = glue.runpytest("cases", f"--mode={mode}", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(lines)
    out = result.stdout.str()
    assert ": fail (" not in out
    result.stdout.fnmatch_lines(
        [
            "*UNDECIDED cases: 0/0 = n/a (threshold 80%, 1 error)",
            "*glue errors: 1 trial(s)*",
            "*verdict: fail — 1 set(s) undecided, 1 glue error(s)",
        ]
    )
    result.assert_outcomes(errors=1)
    assert result.ret == 1


def test_an_exception_inside_the_agents_turn_stays_an_agent_failure(glue):
    result = glue.runpytest("cases", "--mode=agent-crash")
    result.stdout.fnmatch_lines(
        ["*chat-001-x trial 1/1: fail*", "*the agent raised ValueError: the agent's own bug*"]
    )
    result.assert_outcomes(failed=1)
    assert "glue error" not in result.stdout.str()


def test_unknown_fixture_id_in_state_is_one_clear_glue_line(pytester: pytest.Pytester):
    pytester.makeconftest(
        textwrap.dedent("""
        from pytest_commerce_evals.reference import ReferenceAgent, ReferenceBackend
        from pytest_commerce_evals.testing import FakeClient, text_reply

        def pytest_commerce_evals_make_backend(config, case):
            return ReferenceBackend.fresh()

        def pytest_commerce_evals_make_agent(config, case, backend):
            return ReferenceAgent(FakeClient([text_reply("hi")]), "fake")
        """)
    )
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        "id: cart-001-ghost\npriority: low\ndifficulty: easy\n"
        "state: {seen_products: [shoe-ghost-404]}\nturns: [hi]\n"
    )
    result = pytester.runpytest("cases")
    result.stdout.fnmatch_lines(
        [
            "*glue error (not counted against the agent): ReferenceBackend.load_state() for case "
            "'cart-001-ghost' raised ValueError: state names products that are not in the "
            "catalog: shoe-ghost-404 (at *reference/backend.py:*); check the case's state*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    result.assert_outcomes(errors=1)


def test_junit_tells_failure_from_error(suite_two_ways):
    pytester, xml_path = suite_two_ways
    tree = ET.parse(xml_path)
    cases = {tc.get("name"): tc for tc in tree.iter("testcase")}
    props = {
        name: {p.get("name"): p.get("value") for p in tc.iter("property")}
        for name, tc in cases.items()
    }
    assert cases["chat-001-fails"].find("failure") is not None
    assert cases["chat-001-fails"].find("error") is None
    assert props["chat-001-fails"]["outcome"] == "fail"
    for name, outcome in (("chat-002-judge", "judge_error"), ("chat-003-glue", "error")):
        assert cases[name].find("failure") is None, name
        error = cases[name].find("error")
        assert error is not None and error.get("message").startswith(f"{outcome}: "), name
        assert props[name]["outcome"] == outcome
    assert props["chat-004-passes"]["outcome"] == "pass"
    suite = next(tree.iter("testsuite"))
    assert (suite.get("failures"), suite.get("errors"), suite.get("tests")) == ("1", "2", "4")


@pytest.fixture
def suite_two_ways(pytester: pytest.Pytester):
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(
        toy_conftest()
        + textwrap.dedent("""
        from pytest_commerce_evals import RubricVerdict

        _make_agent = pytest_commerce_evals_make_agent

        def pytest_commerce_evals_make_agent(config, case, backend):
            if case.id == "chat-003-glue":
                return lambda session, message: [{"role": "assistant", "content": "hi"}]
            return _make_agent(config, case, backend)

        def pytest_commerce_evals_grade_rubric(config, case, result):
            return [RubricVerdict("rubric", "t", "judge_error", error="not JSON")]
        """)
    )
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        textwrap.dedent("""
        - {id: chat-001-fails, priority: low, difficulty: easy, turns: [hi], expected: {no_ui: false}}
        - {id: chat-002-judge, priority: low, difficulty: easy, turns: [hi], expected: {rubric: "PASS if a. FAIL if b."}}
        - {id: chat-003-glue, priority: low, difficulty: easy, turns: [hi]}
        - {id: chat-004-passes, priority: low, difficulty: easy, turns: [hi], expected: {no_ui: true}}
        """)
    )
    xml_path = pytester.path / "junit.xml"
    result = pytester.runpytest("cases", f"--junitxml={xml_path}")
    assert result.ret == 1
    return pytester, xml_path


def test_a_set_with_no_graded_trial_is_undecided_not_short(suite_two_ways):
    pytester, _ = suite_two_ways
    (pytester.path / "cases" / "only").mkdir()
    (pytester.path / "cases" / "only" / "b.yaml").write_text(
        "id: chat-009-judge\npriority: low\ndifficulty: easy\nturns: [hi]\n"
        'expected: {rubric: "PASS if a. FAIL if b."}\n'
    )
    result = pytester.runpytest("cases/only")
    result.stdout.fnmatch_lines(
        [
            "*UNDECIDED cases/only: 0/0 = n/a (threshold 80%, 1 judge_error)",
            "*sets undecided (nothing graded to measure):",
            "*cases/only: no graded trial (pass or fail) to measure against the threshold 80%; "
            "trials: 1 judge_error",
            "*verdict: fail — 1 set(s) undecided",
        ]
    )
    assert "SHORT" not in result.stdout.str()
    assert "below their threshold" not in result.stdout.str()
    assert result.ret == 1


def test_four_passes_and_a_judge_error_meet_a_90_percent_threshold():
    from pytest_commerce_evals.results import TrialRecord
    from pytest_commerce_evals.runner.summary import Summary

    summary = Summary()
    for trial, outcome in enumerate(["pass"] * 4 + ["judge_error"], 1):
        summary.add(
            TrialRecord(
                case_id="a-001-x",
                trial=trial,
                trials=5,
                set_name="cases/a",
                threshold=0.9,
                priority="low",
                difficulty="easy",
                outcome=outcome,
            )
        )
    [stats] = summary.sets.values()
    assert (stats.passed, stats.graded, stats.verdict) == (4, 4, "ok")
    assert summary.shortfalls == [] and summary.undecided == []


def test_all_green_summary_says_so(pytester: pytest.Pytester):
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(toy_conftest())
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(textwrap.dedent(ONE_CASE))
    result = pytester.runpytest("cases")
    assert result.ret == 0
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.strip("= ") == "commerce-evals")
    first = next(line for line in lines[start + 1 :] if line.strip())
    assert first == "all 1 cases passed every graded trial (1 graded trials)"
    result.stdout.fnmatch_lines(
        ["*every set met its threshold", "verdict: pass — all 1 set(s) met their thresholds"]
    )


# -- tags -------------------------------------------------------------------------------------

TAGS = [
    "#promo",
    "@mobile",
    "_wip",
    "-legacy",
    "1st",
    "two words",
    "ünïcode",
    "🎁",
    "skip",
    "xfail",
    "critical",
    "usefixtures",
    "scenario:trail",
]


def test_any_tag_text_collects_and_runs(pytester: pytest.Pytester):
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(toy_conftest())
    (pytester.path / "cases").mkdir()
    import yaml

    case = {
        "id": "chat-001-tags",
        "priority": "low",
        "difficulty": "easy",
        "tags": TAGS,
        "turns": ["hi"],
        "expected": {"no_ui": True},
    }
    (pytester.path / "cases" / "a.yaml").write_text(yaml.safe_dump(case, allow_unicode=True))
    result = pytester.runpytest("cases", "--strict-markers")
    result.assert_outcomes(passed=1)  # a tag `skip` or `xfail` changes nothing
    # usable markers, by the tag's word characters; colliding ones are namespaced
    for expr in (
        "promo",
        "mobile",
        "wip",
        "legacy",
        "1st",
        "two_words",
        "ünïcode",
        "tag_skip",
        "tag_xfail",
        "scenario_trail",
    ):
        pytester.runpytest("cases", "-m", expr).assert_outcomes(passed=1, warnings=None)
    # the plugin's own priority marker keeps its meaning: this low-priority case is not critical
    assert pytester.runpytest("cases", "-m", "critical").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    pytester.runpytest("cases", "-m", "tag_critical").assert_outcomes(passed=1, warnings=None)
    # -k matches the tag's own text
    pytester.runpytest("cases", "-k", "mobile").assert_outcomes(passed=1, warnings=None)


def test_tag_marker_names():
    from pytest_commerce_evals.cases.markers import _marker_name

    assert _marker_name("#promo") == "promo"
    assert _marker_name("scenario:trail-shoes") == "scenario_trail_shoes"
    assert _marker_name("🎁") is None
    assert _marker_name("--") is None


# -- concurrency: each trial reports its own result ------------------------------------------

CONCURRENT_CONFTEST = """
import threading, time
from helpers import ToyBackend
from pytest_commerce_evals import Text

LOCK = threading.Lock()
STATE = {"now": 0, "max": 0}

def pytest_commerce_evals_make_backend(config, case):
    return ToyBackend()

def pytest_commerce_evals_make_agent(config, case, backend):
    number = int(case.id.split("-")[1])
    def run_turn(session, message):
        with LOCK:
            STATE["now"] += 1
            STATE["max"] = max(STATE["max"], STATE["now"])
        time.sleep(0.02 * (8 - number))  # the first items finish last
        with LOCK:
            STATE["now"] -= 1
        word = "yes" if case.id.endswith("pass") else "no"
        return [Text(text=f"{case.id} says {word}")]
    return run_turn

def pytest_sessionfinish(session):
    print(f"\\nmost in flight: {STATE['max']}")
"""


def _concurrent_suite(pytester: pytest.Pytester) -> None:
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    pytester.makeconftest(CONCURRENT_CONFTEST)
    (pytester.path / "cases").mkdir()
    lines = []
    for i in range(8):
        kind = "pass" if i % 3 else "fail"
        lines.append(
            f"- {{id: chat-{i:03d}-{kind}, priority: low, difficulty: easy, turns: [hi], "
            'expected: {reply_includes: ["yes"]}}'
        )
    (pytester.path / "cases" / "a.yaml").write_text("\n".join(lines) + "\n")


def test_concurrent_trials_each_report_their_own_result(pytester: pytest.Pytester):
    _concurrent_suite(pytester)
    result = pytester.runpytest("cases", "--commerce-concurrency=4", "-v", "-s")
    result.assert_outcomes(passed=5, failed=3)
    verdicts = {
        line.split("::")[1].split()[0]: line.split()[1]
        for line in result.outlines
        if line.startswith("cases/a.yaml::chat-")
    }
    assert verdicts == {
        f"chat-{i:03d}-{'pass' if i % 3 else 'fail'}": "PASSED" if i % 3 else "FAILED"
        for i in range(8)
    }
    # each failure carries its own case's reply, not another trial's
    for i in (0, 3, 6):
        result.stdout.fnmatch_lines([f"*reply: 'chat-{i:03d}-fail says no'"])
    result.stdout.fnmatch_lines(["*most in flight: 4*"])


def test_auto_concurrency_is_remote_when_the_agent_brings_its_own_client(pytester):
    _concurrent_suite(pytester)
    result = pytester.runpytest("cases", "-s", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=5, failed=3)
    # the first trial runs alone, then 8 at once: the embedded model was never started
    result.stdout.fnmatch_lines(["*most in flight: 7*"])


def test_auto_concurrency_is_one_once_the_embedded_model_started(pytester):
    _concurrent_suite(pytester)
    conftest = pytester.path / "conftest.py"
    conftest.write_text(
        conftest.read_text().replace(
            "def pytest_commerce_evals_make_agent(config, case, backend):",
            "class Started:\n    def stop(self):\n        pass\n\n"
            "def pytest_commerce_evals_make_agent(config, case, backend):\n"
            "    from pytest_commerce_evals.models import embedded as _local_model\n"
            "    config.stash.setdefault(_local_model._SERVERS, {})['agent'] = Started()",
        )
    )
    result = pytester.runpytest("cases", "-s")
    result.assert_outcomes(passed=5, failed=3)
    result.stdout.fnmatch_lines(["*most in flight: 1*"])


# -- the agent's name, and settings that cannot work -----------------------------------------


def test_a_hosted_model_without_a_key_stops_the_run(pytester, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _concurrent_suite(pytester)
    result = pytester.runpytest("cases", "--commerce-model=gpt-4o-mini")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*commerce-evals agent: agent model 'gpt-4o-mini' (from cli) would go to hosted "
            "OpenAI, but OPENAI_API_KEY is not set: set the key, or point at another server "
            "with --commerce-base-url*"
        ]
    )
    assert "PASSED" not in result.stdout.str() and "passed" not in result.stdout.str()


def test_the_header_names_the_agent_and_does_not_claim_the_embedded_model(pytester, monkeypatch):
    monkeypatch.delenv("COMMERCE_AGENT", raising=False)
    _concurrent_suite(pytester)
    result = pytester.runpytest("cases", "--commerce-agent=shop-bot v2", "-k", "chat-001")
    result.stdout.fnmatch_lines(
        [
            "commerce-evals agent: shop-bot v2",
            "commerce-evals agent model: * (when the agent asks the plugin for a client)",
        ]
    )


def test_a_hosted_model_without_a_key_stops_an_xdist_run_too(pytester, monkeypatch):
    pytest.importorskip("xdist")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    _concurrent_suite(pytester)
    result = pytester.runpytest(
        "cases", "-n", "2", "-p", "no:benchmark", "--commerce-model=gpt-4o-mini"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*commerce-evals agent: agent model 'gpt-4o-mini' (from cli)*"])


def test_tags_named_like_expression_words_or_ini_markers(pytester: pytest.Pytester):
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    # a marker the conftest (as any plugin) registers has its own meaning: a tag steps aside
    pytester.makeconftest(
        toy_conftest()
        + "\n\ndef pytest_configure(config):\n"
        + '    config.addinivalue_line("markers", "nightly: the conftest\'s own marker")\n'
    )
    # an ini that also declares `critical` cannot give a tag the plugin's priority marker
    pytester.makeini("[pytest]\nmarkers =\n    slow: long-running cases\n    critical: x\n")
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        "id: chat-001-words\npriority: low\ndifficulty: easy\n"
        "tags: [and, not, slow, critical, nightly]\nturns: [hi]\nexpected: {no_ui: true}\n"
    )
    assert pytester.runpytest("cases", "-m", "nightly").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    for expr in ("tag_and", "tag_not", "slow", "tag_critical", "tag_nightly"):
        result = pytester.runpytest("cases", "-m", expr)
        result.assert_outcomes(passed=1, warnings=None)
        # read without a pytest API that the newest release deprecates (config.inicfg in 9.2)
        assert "PytestRemovedIn" not in result.stdout.str()
    assert pytester.runpytest("cases", "-m", "critical").ret == pytest.ExitCode.NO_TESTS_COLLECTED


def test_the_plugins_own_errors_share_one_base_class():
    import pytest_commerce_evals as ce
    from pytest_commerce_evals.errors import StoreError
    from pytest_commerce_evals.judge.calibration import CalibrationError
    from pytest_commerce_evals.models.embedded import LocalModelUnavailable
    from pytest_commerce_evals.models.endpoint import EndpointError

    for error in (ce.ConfigurationError, ce.InfraError, EndpointError, LocalModelUnavailable,
                  StoreError, CalibrationError):  # fmt: skip
        assert issubclass(error, ce.CommerceEvalsError), error
    assert issubclass(ce.InfraError, RuntimeError) and issubclass(CalibrationError, ValueError)
