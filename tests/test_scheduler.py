"""Concurrent trials: how many are in flight, faults on the way, xdist, async agents.

The reference agent and backend run against the loopback mock server; what is asserted is what
the server saw (requests, the most answered at once), never a time.
"""

from __future__ import annotations

import gc
import importlib.util
import json
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import STATELESS_SHOP

from pytest_commerce_evals.reference.backend import ReferenceBackend
from pytest_commerce_evals.runner._scheduler import TrialScheduler, gc_threshold, switch_interval
from pytest_commerce_evals.testing.mock_server import MockServer

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = [
    {"tool": "search_products", "arguments": {"query": "{title}"}},
    {"tool": "add_to_cart", "arguments": {"product_id": "{pid}", "quantity": 1}},
    {"text": "I added one {title} to your cart."},
]
PATTERN = r"add one (?P<title>.+) \((?P<pid>[a-z0-9-]+)\) to my cart"


def _write_cases(folder: Path, n: int) -> None:
    backend = ReferenceBackend.fresh()
    pool = [
        (p.id, p.title)
        for p in backend.products.values()
        if p.availability.status == "in_stock" and not p.variants
    ]
    lines = []
    for i in range(n):
        pid, title = pool[i % len(pool)]
        lines += [
            f"- id: cart-{i:03d}-concurrent-add",
            "  priority: high",
            "  difficulty: easy",
            f"  turns: [{json.dumps(f'Please add one {title} ({pid}) to my cart.')}]",
            "  expected:",
            "    calls_tool: [search_products, add_to_cart]",
            f"    cart_contains: [{pid}]",
            "    cart_item_count: 1",
        ]
    (folder / "cases").mkdir()
    (folder / "cases" / "adds.yaml").write_text("\n".join(lines) + "\n")
    shutil.copy(ROOT / "conftest.py", folder / "conftest.py")


@pytest.fixture
def mocked(pytester, monkeypatch):
    """A suite of reference-agent cases and a mock server for its model calls."""
    servers: list[MockServer] = []

    def make(n: int = 8, **mock_options) -> MockServer:
        _write_cases(pytester.path, n)
        server = MockServer(SCRIPT, pattern=PATTERN, **mock_options).start()
        servers.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_MODEL", "mock")
        monkeypatch.delenv("COMMERCE_CONCURRENCY", raising=False)
        return server

    yield make
    for server in servers:
        server.stop()


def test_trials_keep_the_concurrency_in_flight(mocked, pytester):
    server = mocked(8, latency_s=0.1)
    result = pytester.runpytest("cases", "--commerce-concurrency=4", "--commerce-store=none")
    result.assert_outcomes(passed=8)
    stats = server.stats()
    assert stats["requests"] == 24  # three model calls a trial
    assert stats["max_in_flight"] == 4


def test_concurrency_one_runs_one_trial_at_a_time(mocked, pytester):
    server = mocked(4, latency_s=0.05)
    result = pytester.runpytest("cases", "--commerce-concurrency=1", "--commerce-store=none")
    result.assert_outcomes(passed=4)
    assert server.stats()["max_in_flight"] == 1


def test_auto_keeps_eight_in_flight_against_a_remote_endpoint(mocked, pytester):
    server = mocked(10, latency_s=0.1)
    pytester.runpytest("cases", "--commerce-store=none").assert_outcomes(passed=10)
    assert server.stats()["max_in_flight"] == 8


def test_reports_come_in_item_order_with_every_trial(mocked, pytester):
    mocked(6, latency_s=0.02)
    result = pytester.runpytest("cases", "--commerce-concurrency=6", "-v", "--commerce-store=none")
    order = [ln.split("::")[1].split()[0] for ln in result.outlines if "::cart-" in ln]
    assert order == [f"cart-{i:03d}-concurrent-add" for i in range(6)]


def test_faults_are_retried_and_never_fail_the_agent(mocked, pytester):
    server = mocked(12, latency_s=0.01, fault_every=5, stall_s=1.5, retry_after_s=0.0)
    result = pytester.runpytest(
        "cases",
        "--commerce-concurrency=4",
        "--commerce-store=none",
        "-o",
        "commerce_request_timeout=0.5",
        "-o",
        "commerce_retry_wait_max=0",
    )
    result.assert_outcomes(passed=12)
    stats = server.stats()
    assert sum(stats.get(k, 0) for k in ("429", "500", "stall", "malformed")) >= 7
    assert stats["requests"] > 36


def test_faults_past_the_retries_are_infra_errors_not_failures(mocked, pytester):
    server = mocked(4, fault_every=1, faults=("500",))
    result = pytester.runpytest(
        "cases",
        "--commerce-concurrency=2",
        "--commerce-store=none",
        "-o",
        "commerce_retry_attempts=2",
        "-o",
        "commerce_retry_wait_max=0",
    )
    outcomes = result.parseoutcomes()
    assert outcomes.get("infra_error") == 4
    assert "failed" not in outcomes and "passed" not in outcomes
    assert server.stats()["500"] == 8  # two attempts for each trial's first call
    result.stdout.fnmatch_lines(
        ["*gave up after 2 attempts: InternalServerError: Error code: 500*"]
    )


def test_stopping_early_abandons_the_queued_trials(mocked, pytester):
    server = mocked(20, latency_s=0.05)
    cases = pytester.path / "cases" / "adds.yaml"
    # the first case expects a product the agent will not add: it fails, -x stops the run
    cases.write_text(cases.read_text().replace("cart_item_count: 1", "cart_item_count: 2", 1))
    result = pytester.runpytest("cases", "-x", "--commerce-concurrency=2", "--commerce-store=none")
    result.assert_outcomes(failed=1)
    assert server.stats()["requests"] < 60


@pytest.mark.parametrize(
    "value, message",
    [
        ("0", "--commerce-concurrency: expected 1..1024 or 'auto'; found 0"),
        (
            "many",
            "--commerce-concurrency: expected a whole number of trials in flight*found 'many'",
        ),
    ],
)
def test_a_bad_concurrency_is_a_usage_error(pytester, value, message):
    pytester.makefile(".yaml", **{"cases/x": "id: x\n"})
    result = pytester.runpytest(f"--commerce-concurrency={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}*"])


def test_async_agents_share_one_event_loop_across_concurrent_trials(pytester):
    pytester.makefile(
        ".yaml",
        **{
            "cases/chat": "\n".join(
                f"- {{id: chat-{i:03d}-hello, priority: low, difficulty: easy, turns: [hi], "
                "expected: {reply_includes: [hello]}}"
                for i in range(6)
            )
        },
    )
    pytester.makeconftest(
        textwrap.dedent("""
        import asyncio
        from helpers import ToyBackend
        from pytest_commerce_evals import Text

        LOOPS = set()

        class AsyncAgent:
            async def run_turn(self, session, message):
                LOOPS.add(id(asyncio.get_running_loop()))
                await asyncio.sleep(0.05)
                return [Text(text="hello")]

        def pytest_commerce_evals_make_backend(config, case):
            return ToyBackend()

        def pytest_commerce_evals_make_agent(config, case, backend):
            return AsyncAgent()

        def pytest_sessionfinish(session):
            print(f"\\nloops used: {len(LOOPS)}")
        """)
    )
    shutil.copy(ROOT / "tests" / "helpers.py", pytester.path / "helpers.py")
    result = pytester.runpytest_subprocess("cases", "--commerce-concurrency=3", "-s")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*loops used: 1*"])


@pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="needs pytest-xdist")
def test_xdist_workers_each_run_trials_concurrently(mocked, pytester):
    server = mocked(16, latency_s=0.1)
    result = pytester.runpytest(
        "cases",
        "-n",
        "2",
        "-p",
        "no:benchmark",
        "--commerce-concurrency=4",
        "--commerce-store=none",
    )
    result.assert_outcomes(passed=16)
    assert server.stats()["requests"] == 48
    assert server.stats()["max_in_flight"] > 2  # more than one trial per worker at a time


def test_a_debugger_session_runs_one_trial_at_a_time(mocked, pytester):
    server = mocked(4, latency_s=0.05)
    result = pytester.runpytest(
        "cases", "--pdb", "--commerce-concurrency=4", "--commerce-store=none"
    )
    result.assert_outcomes(passed=4)
    assert server.stats()["max_in_flight"] == 1


def test_waits_count_overlapping_intervals_once():
    from pytest_commerce_evals.runner._scheduler import Waits

    waits = Waits()
    waits.add(1.0, 1.5)
    waits.add(1.2, 1.7)  # overlaps the first: only 1.5 to 1.7 is new
    waits.add(2.0, 2.1)
    waits.add(2.05, 2.05)  # inside the last: nothing
    assert waits.total == pytest.approx(0.5 + 0.2 + 0.1)


def test_a_turn_waiting_behind_other_work_on_the_shared_loop_records_the_wait():
    # the agent's time leaves out the time its steps stood ready while the loop ran other work
    import asyncio
    import time

    from pytest_commerce_evals.runner._scheduler import run_coroutine, shared_loop, waited

    async def turn():
        waits = waited()

        async def agent():
            await asyncio.sleep(0)  # yields: its next step is queued behind the busy callback
            return "done"

        task = asyncio.ensure_future(agent())
        asyncio.get_running_loop().call_soon(time.sleep, 0.05)  # another trial's CPU work
        return await task, waits.total

    result, waited_s = run_coroutine(turn())
    assert result == "done" and waited_s >= 0.05
    # with nothing else on the loop a step waits (almost) nothing
    assert run_coroutine(_quiet())[1] < 0.05
    assert shared_loop().is_running()


async def _quiet():
    import asyncio

    from pytest_commerce_evals.runner._scheduler import waited

    waits = waited()
    await asyncio.ensure_future(asyncio.sleep(0))
    return None, waits.total


def test_an_async_agents_time_leaves_out_other_trials_work_on_the_loop():
    import asyncio
    import contextvars
    import time

    from pytest_commerce_evals.runner._scheduler import run_coroutine
    from pytest_commerce_evals.runner.trial import _timed

    async def agent():
        loop = asyncio.get_running_loop()
        # another trial's work, from a context of its own, queued before this agent's next step
        contextvars.Context().run(loop.call_soon, time.sleep, 0.06)
        await asyncio.sleep(0)
        return "events"

    took: list[float] = []
    began = time.perf_counter()
    assert run_coroutine(_timed(agent(), took)) == "events"
    assert time.perf_counter() - began >= 0.06  # the turn's wall time holds the other work
    assert took and took[0] < 0.06  # the agent's time does not


def test_a_generator_agents_time_holds_its_whole_run(pytester):
    # the agent's code runs while its events are read: its turn is timed around that too
    pytester.makeconftest(
        STATELESS_SHOP
        + """
import time

from pytest_commerce_evals import Text


def pytest_commerce_evals_make_agent(config, case, backend):
    def run_turn(session, message):
        time.sleep(0.2)
        yield Text(text="hi")

    return run_turn
"""
    )
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        "- {id: chat-001-x, priority: low, difficulty: easy, turns: [hi], "
        "expected: {max_tool_calls: 0}}\n"
    )
    result = pytester.runpytest("cases", "-p", "no:cacheprovider", "--commerce-json=r.json")
    assert result.ret == 0, result.stdout.str()
    [trial] = json.loads((pytester.path / "r.json").read_text())["trials"]
    assert trial["turn_s"][0] >= 0.2


PLAIN = """
import os

def test_capfd_reads_its_own(capfd):
    os.write(1, b"via-fd\\n")
    print("via-print")
    out = capfd.readouterr().out
    assert "via-fd" in out and "via-print" in out

def test_a_write_to_the_descriptor():
    os.write(1, b"PLAIN-FD" + b"-WRITTEN\\n")

def test_a_print_is_captured():
    print("PLAIN" + "-PRINTED")
    assert False
"""


@pytest.mark.parametrize("concurrency, by_fd", [(1, True), (3, False)])
def test_concurrent_trials_capture_through_sys_and_plain_tests_keep_their_capture(
    mocked, pytester, concurrency, by_fd
):
    """With trials in flight at once, pytest's capture moves from file descriptors to
    `sys.stdout` for the rest of the session (what concurrent trials print lands in whichever
    item is reporting either way); `capfd` and printed output are captured as before."""
    mocked(3, latency_s=0.01)
    pytester.makepyfile(test_plain=PLAIN)
    result = pytester.runpytest_subprocess(
        "cases", "test_plain.py", f"--commerce-concurrency={concurrency}", "--commerce-store=none"
    )
    result.assert_outcomes(passed=5, failed=1)
    out = result.stdout.str()
    assert "Captured stdout call" in out and out.count("PLAIN-PRINTED") == 1
    assert ("PLAIN-FD-WRITTEN" in out) is not by_fd


SWITCH_PROBE = """
import gc
import sys

SEEN = set()

def pytest_commerce_evals_trial_done(config, result):
    SEEN.add((sys.getswitchinterval(), gc.get_threshold()[0]))

def pytest_terminal_summary(terminalreporter):  # the end of the session: still as in the run
    SEEN.add((sys.getswitchinterval(), gc.get_threshold()[0]))

def pytest_unconfigure(config):
    (config.rootpath / "seen.txt").write_text(repr(sorted(SEEN)))
"""


@pytest.mark.parametrize(
    "concurrency, during",
    [(1, (0.005, 700)), (8, (0.005, 1600)), (256, (0.02, 51_200))],
)
def test_trials_in_flight_raise_the_switch_interval_and_the_gc_threshold_for_the_run(
    mocked, pytester, concurrency, during
):
    """Past 64 trials in flight the interpreter's switch interval is raised while they run (a
    thread waiting for the interpreter's lock wakes once per interval), and with trials in
    flight the young generation's threshold (their objects are not scanned and promoted by one
    young collection after another); both kept through the end of the session (its results
    are built from every trial), restored after."""
    mocked(4, latency_s=0.01)
    pytester.makepyfile(switch_probe=SWITCH_PROBE)
    pytester.syspathinsert(pytester.path)
    before = (sys.getswitchinterval(), gc.get_threshold())
    assert before[0] == pytest.approx(0.005) and before[1][0] == 700
    result = pytester.runpytest(
        "cases", "-p", "switch_probe", f"--commerce-concurrency={concurrency}",
        "--commerce-store=none",
    )  # fmt: skip
    result.assert_outcomes(passed=4)
    [(interval, threshold)] = eval((pytester.path / "seen.txt").read_text())
    assert (interval, threshold) == (pytest.approx(during[0]), during[1])
    assert (sys.getswitchinterval(), gc.get_threshold()) == before


def test_the_switch_interval_grows_with_the_trials_in_flight_up_to_a_cap():
    assert switch_interval(1) < switch_interval(64) == pytest.approx(0.005)
    assert switch_interval(128) == pytest.approx(0.01)
    assert switch_interval(256) == switch_interval(1024) == pytest.approx(0.02)


def test_a_scheduler_restores_the_interval_it_raised_unless_it_was_changed_since():
    before = sys.getswitchinterval()
    try:
        scheduler = TrialScheduler(16)
        assert sys.getswitchinterval() == before  # below the default: left as it is
        scheduler.restore()
        scheduler = TrialScheduler(512)
        assert sys.getswitchinterval() == pytest.approx(0.02)
        scheduler.close()  # the end of the session still runs with the trials' settings
        assert sys.getswitchinterval() == pytest.approx(0.02)
        scheduler.restore()
        assert sys.getswitchinterval() == before
        scheduler.restore()  # once
        assert sys.getswitchinterval() == before
        scheduler = TrialScheduler(512)
        sys.setswitchinterval(0.03)  # the run's own code set one: kept
        scheduler.restore()
        assert sys.getswitchinterval() == pytest.approx(0.03)
        sys.setswitchinterval(0.05)
        scheduler = TrialScheduler(512)  # higher already: not lowered
        assert sys.getswitchinterval() == pytest.approx(0.05)
        scheduler.restore()
        assert sys.getswitchinterval() == pytest.approx(0.05)
    finally:
        sys.setswitchinterval(before)


def test_the_gc_threshold_grows_with_the_trials_in_flight_up_to_a_cap():
    assert gc_threshold(2) < gc_threshold(16) == 3_200 < gc_threshold(256) == 51_200
    assert gc_threshold(500) == gc_threshold(1024) == 100_000


def test_a_scheduler_restores_the_gc_threshold_it_raised_unless_it_was_changed_since():
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        scheduler = TrialScheduler(256)
        assert gc.get_threshold() == (51_200, 10, 10)  # the older generations' are kept
        scheduler.restore()
        assert gc.get_threshold() == (700, 10, 10)
        scheduler = TrialScheduler(256)
        gc.set_threshold(2_000, 10, 10)  # the run's own code set one: kept
        scheduler.restore()
        assert gc.get_threshold() == (2_000, 10, 10)
        gc.set_threshold(200_000, 10, 10)
        TrialScheduler(256).restore()  # higher already: not lowered
        assert gc.get_threshold() == (200_000, 10, 10)
        gc.set_threshold(0, 10, 10)
        scheduler = TrialScheduler(256)  # automatic collection off: left off
        assert gc.get_threshold() == (0, 10, 10)
        scheduler.restore()
    finally:
        gc.set_threshold(*before)


def test_waiting_for_a_trial_still_running_does_the_idle_work_first_and_only_then():
    """`wait(item, idle)` calls `idle` once, on the waiting thread, when the trial is still
    running; never when its result is already there."""
    import threading

    release = threading.Event()

    class Item:
        def __init__(self, blocks: bool) -> None:
            self.blocks = blocks

        def compute(self) -> str:
            if self.blocks:
                release.wait(10)
            return "done"

    scheduler = TrialScheduler(2)
    try:
        quick, slow = Item(False), Item(True)
        scheduler.submit([quick, slow])
        calls: list[str] = []
        while not scheduler._futures[quick].done():
            threading.Event().wait(0.01)
        assert scheduler.wait(quick, lambda: calls.append("quick")) == "done"
        assert calls == []  # its result was there: nothing to do while waiting

        def idle() -> None:
            calls.append(threading.current_thread().name)
            release.set()

        assert scheduler.wait(slow, idle) == "done"
        assert calls == [threading.main_thread().name]
    finally:
        release.set()
        scheduler.close()
        scheduler.restore()
