"""Progress you can watch: the line's counts and ETA, when it is written, and a run that shows
it (and one under -q that does not)."""

from __future__ import annotations

import textwrap

import pytest

from pytest_commerce_evals.runner import progress as _progress
from pytest_commerce_evals.runner.progress import Progress, eta_text


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_counts_trials_and_estimates_the_rest_at_the_pace_seen():
    clock = Clock()
    p = Progress(lambda line: None, every_s=30, running=lambda: 8, calls=lambda: 6, clock=clock)
    p.start(500)
    assert p.line() == (
        "commerce-evals progress: 0/500 trials done, 0 passed, 8 running, "
        "6 model call(s) in flight, ETA after the first trial"
    )
    for outcome in ["pass"] * 98 + ["fail"] * 22:
        p.trial_reported(outcome)
    clock.now += 76.0  # 120 trials in 76 s: 380 more take 240.7 s
    assert p.line() == (
        "commerce-evals progress: 120/500 trials done, 98 passed, 8 running, "
        "6 model call(s) in flight, ETA 4m01s"
    )
    quiet = Progress(lambda line: None, every_s=30, clock=clock)  # no counts to show: left out
    quiet.start(2)
    quiet.trial_reported("pass")
    quiet.trial_reported("pass")
    assert quiet.line() == "commerce-evals progress: 2/2 trials done, 2 passed"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.4, "0s"), (45, "45s"), (59.6, "1m00s"), (190, "3m10s"), (3599, "59m59s"), (3600, "1h00m"),
     (3900, "1h05m")],
)  # fmt: skip
def test_eta_text(seconds, text):
    assert eta_text(seconds) == text


def test_the_thread_writes_after_the_first_delay_and_stops_when_all_are_done():
    import threading

    written: list[str] = []
    wrote = threading.Event()

    def write(line: str) -> None:
        written.append(line)
        wrote.set()

    p = Progress(write, every_s=0.01, first_s=0.01)
    p.start(1)
    assert wrote.wait(5)
    p.trial_reported("pass")
    p._thread.join(5)  # every trial reported: the thread ends by itself
    assert not p._thread.is_alive() and written[0].startswith("commerce-evals progress: 0/1")
    none = Progress(write, every_s=0.01)
    none.start(0)
    assert none._thread is None  # nothing to run, nothing written


def test_only_passes_count_as_passed_and_none_running_is_still_shown():
    clock = Clock()
    p = Progress(lambda line: None, every_s=30, running=lambda: 0, calls=lambda: 0, clock=clock)
    p.start(4)
    for outcome in ("pass", "fail", "infra_error"):
        p.trial_reported(outcome)
    clock.now += 30.0
    assert p.line() == (
        "commerce-evals progress: 3/4 trials done, 1 passed, 0 running, "
        "0 model call(s) in flight, ETA 10s"
    )


def test_the_pace_is_measured_from_the_start_not_from_collection():
    clock = Clock()
    p = Progress(lambda line: None, every_s=30, first_s=60, clock=clock)
    clock.now += 300.0  # collecting took five minutes
    p.start(2)
    clock.now += 10.0
    p.trial_reported("pass")
    assert p.line().endswith("ETA 10s")
    thread = p._thread
    p.start(2)  # a second start (another xdist worker's collection) runs no second thread
    assert p._thread is thread
    p.stop()


def test_the_first_line_comes_after_first_s_and_the_next_after_every_s():
    import threading
    import time

    written: list[str] = []
    wrote = threading.Event()

    def write(line: str) -> None:
        written.append(line)
        wrote.set()

    p = Progress(write, every_s=60, first_s=0.01)
    p.start(3)
    assert wrote.wait(2)
    time.sleep(0.2)
    p.stop()
    assert len(written) == 1


@pytest.mark.parametrize(
    ("tty", "every"), [(True, _progress.TTY_EVERY_S), (False, _progress.CI_EVERY_S)]
)
def test_a_terminal_gets_the_line_more_often_than_a_log(tty, every):
    from types import SimpleNamespace

    reporter = SimpleNamespace(isatty=tty, ensure_newline=lambda: None, write_line=print)
    verbose = {"verbose": 0, "capture": "no"}  # -s: the reporter itself writes the line
    config = SimpleNamespace(
        pluginmanager=SimpleNamespace(get_plugin=lambda name: reporter),
        getoption=lambda name, default=None: verbose.get(name, default),
        option=SimpleNamespace(collectonly=False),
    )
    progress = _progress.progress_for(config)
    assert progress is not None and progress.every_s == every
    verbose["verbose"] = -1
    assert _progress.progress_for(config) is None  # -q: no line


CONFTEST = """
import time
from pytest_commerce_evals import Text


def pytest_commerce_evals_make_backend(config, case):
    from helpers import ToyBackend
    return ToyBackend()


def pytest_commerce_evals_make_agent(config, case, backend):
    def run_turn(session, message):
        time.sleep(0.3)
        return [Text(text="ok")]
    return run_turn
"""


@pytest.fixture
def slow_run(pytester: pytest.Pytester, monkeypatch):
    import sys
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    monkeypatch.setattr(_progress, "FIRST_S", 0.05)
    monkeypatch.setattr(_progress, "CI_EVERY_S", 0.2)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "cases").mkdir()
    cases = "".join(
        f"- {{id: cart-00{n}-x, priority: low, difficulty: easy, turns: [hi]}}\n" for n in range(4)
    )
    cases += '- {id: cart-009-skipped, priority: low, difficulty: easy, turns: [hi], skip: "no"}\n'
    (pytester.path / "cases" / "a.yaml").write_text(textwrap.dedent(cases))
    assert sys.modules  # the conftest imports helpers from tests/
    return lambda *args: pytester.runpytest(
        "cases", "-p", "no:cacheprovider", "--commerce-store=none", "--commerce-concurrency=1",
        *args,
    )  # fmt: skip


def test_the_line_reaches_the_terminal_while_a_trial_is_captured(pytester, monkeypatch):
    """In its own process with pytest's default fd capture, the line is written while trials
    run: on the terminal, never into a trial's captured output."""
    from pathlib import Path

    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))
    pytester.makeconftest(CONFTEST)
    (pytester.path / "cases").mkdir()
    cases = "".join(
        f"- {{id: cart-0{n:02d}-x, priority: low, difficulty: easy, turns: [hi]}}\n"
        for n in range(14)
    )
    (pytester.path / "cases" / "a.yaml").write_text(cases)
    result = pytester.runpytest_subprocess(
        "cases", "-p", "no:cacheprovider", "--commerce-store=none", "--commerce-concurrency=1"
    )
    assert result.ret == 0, result.stdout.str()
    # 14 trials of 0.3 s: the first line at 3 s, each on a line of its own
    result.stdout.fnmatch_lines(["commerce-evals progress: */14 trials done, * passed, *"])


def test_a_run_shows_its_progress_and_a_quiet_one_does_not(slow_run):
    shown = slow_run()
    assert shown.ret == 0, shown.stdout.str()
    shown.stdout.fnmatch_lines(["commerce-evals progress: ?/4 trials done, ? passed, 1 running*"])
    quiet = slow_run("-q")
    assert quiet.ret == 0 and "commerce-evals progress" not in quiet.stdout.str()


def test_the_embedded_model_says_it_is_starting_unless_quiet(pytestconfig, monkeypatch):
    from types import SimpleNamespace

    from pytest_commerce_evals.models import embedded

    lines: list[str] = []
    reporter = SimpleNamespace(ensure_newline=lambda: None, write_line=lines.append)
    verbose = {"verbose": 0, "capture": "no"}  # -s: the reporter itself writes the line
    config = SimpleNamespace(
        pluginmanager=SimpleNamespace(get_plugin=lambda name: reporter),
        getoption=lambda name: verbose[name],
    )
    monkeypatch.setattr(embedded, "model_id", lambda config: "SmolLM2-test")
    embedded._say_starting(config, "agent")
    assert lines == [
        "commerce-evals: starting the embedded model (SmolLM2-test) for the agent; loading it "
        "takes a few seconds to a minute"
    ]
    verbose["verbose"] = -1
    embedded._say_starting(config, "judge")
    assert len(lines) == 1


def test_trials_not_run_count_as_done_and_a_vacuity_run_shows_no_trial_count():
    from types import SimpleNamespace

    from pytest_commerce_evals.runner.progress import ProgressPlugin

    p = Progress(lambda line: None, every_s=30)
    plugin = ProgressPlugin(p)
    p.start(3)
    for kind, outcome in (("trial", "pass"), ("not_needed", None), ("not_started", None)):
        plugin.pytest_runtest_logreport(
            SimpleNamespace(commerce={"kind": kind, "outcome": outcome})
        )
    plugin.pytest_runtest_logreport(SimpleNamespace(commerce={"kind": "vacuity"}))
    assert (p.done, p.passed) == (3, 1)


def test_only_items_that_record_a_trial_are_counted():
    from types import SimpleNamespace

    from pytest_commerce_evals.authoring.vacuity import VacuityItem
    from pytest_commerce_evals.runner.items import CaseItem
    from pytest_commerce_evals.runner.progress import ProgressPlugin

    def item(cls, skip=None, turns=(), user=None):
        made = object.__new__(type(cls.__name__, (cls,), {"nodeid": f"{cls.__name__}-{skip}"}))
        case = SimpleNamespace(skip=skip, turns=list(turns), user=user)
        made.__dict__["spec"] = SimpleNamespace(case=case)
        return made

    p = Progress(lambda line: None, every_s=30, first_s=30)
    items = [item(CaseItem, turns=["a", "b"]), item(CaseItem, skip="not yet"), item(VacuityItem)]
    ProgressPlugin(p).pytest_collection_finish(SimpleNamespace(items=items))
    p.stop()
    assert p.total == 1  # a skipped case and a vacuity check run no trial
    assert p.weights == {"CaseItem-None": 3.0}  # one for the trial, one for each turn


def test_the_eta_weighs_trials_by_their_turns():
    clock = Clock()
    weights = {f"conv{i}": 6.0 for i in range(2)} | {f"one{i}": 2.0 for i in range(8)}
    p = Progress(lambda line: None, every_s=30, clock=clock)
    p.start(10, weights)
    for key in ("conv0", "conv1"):  # two conversations of five turns, 30 s each
        clock.now += 30.0
        p.trial_reported("pass", key, 30.0)
    # 5 s a unit: eight single-turn trials of two units each take 80 s, not 8 x 30 s
    assert p.eta() == pytest.approx(80.0)
    assert p.line().endswith("ETA 1m20s")
    unweighted = Progress(lambda line: None, every_s=30, clock=clock)
    unweighted.start(10)
    for _ in range(2):
        unweighted.trial_reported("pass", "x", 30.0)
    clock.now += 60.0
    assert unweighted.eta() == pytest.approx(240.0)  # without weights: 30 s each


def test_a_long_running_trial_does_not_make_the_eta_climb_and_is_named_after_a_minute():
    clock = Clock()
    running: list[tuple[str, str, float]] = []
    p = Progress(lambda line: None, every_s=30, running_trials=lambda: running, clock=clock)
    p.start(4, {"a": 2.0, "b": 2.0, "c": 2.0, "d": 2.0})
    clock.now += 10.0
    p.trial_reported("pass", "a", 10.0)  # 5 s a unit
    running.append(("b", "attacks-005-surprise", clock.now))
    etas = []
    for _ in range(12):  # b runs for two minutes, far past its 10 s
        etas.append(p.eta())
        clock.now += 10.0
    assert etas[0] == pytest.approx(30.0)  # b's 10 s, then c and d
    assert all(later <= earlier for earlier, later in zip(etas, etas[1:], strict=False))
    assert etas[-1] == pytest.approx(20.0)  # past its estimate b adds nothing: c and d are left
    line = p.line()
    assert line.endswith("; running attacks-005-surprise for 2m00s")
    running[0] = ("b", "attacks-005-surprise", clock.now - 59.0)
    assert "running attacks-005" not in p.line()  # under a minute: not named


def test_the_eta_divides_the_work_left_by_the_trials_run_at_once():
    clock = Clock()
    running: list[tuple[str, str, float]] = []
    p = Progress(lambda line: None, every_s=30, running_trials=lambda: running, clock=clock)
    p.start(10)
    clock.now += 10.0
    for key in "abcd":  # four trials of 10 s each, in 10 s: four at once
        p.trial_reported("pass", key, 10.0)
    # six trials of 10 s left, four at once
    assert p.eta() == pytest.approx(15.0)
    running.extend([("e", "e", clock.now), ("f", "f", clock.now)])
    clock.now += 5.0
    # e and f half done (5 s each left), four pending: (2 x 5 + 4 x 10) / ((40 + 10) / 15)
    assert p.eta() == pytest.approx(50 / (50 / 15))


def test_the_running_registry_says_which_trials_run_since_when():
    from pytest_commerce_evals.runner.running import _Running

    clock = Clock()
    running = _Running(clock)
    with running.trial("cases/a.yaml::a", "a"):
        clock.now += 5.0
        with pytest.raises(KeyError), running.trial("cases/b.yaml::b", "b"):
            assert running.n == 2
            assert running.snapshot() == [
                ("cases/a.yaml::a", "a", 100.0),
                ("cases/b.yaml::b", "b", 105.0),
            ]
            raise KeyError("the trial failed")
        assert running.snapshot() == [("cases/a.yaml::a", "a", 100.0)]  # gone, though it raised
    assert running.n == 0 and running.snapshot() == []
