"""Rules of the verdicts, the gold replay, approvals and stored records whose one-line mutation
no other test noticed: each test here fails when its rule is broken (pass^k over recorded
trials, an errored trial read as a failure, a set with nothing graded skipped, a blocked gold
action unlisted, a waiting call run or told twice, a schema-1 record's stored sets kept, a
read-only store migrated)."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from contextlib import closing

import pytest
from run_builders import run, trial

from pytest_commerce_evals.agent import AgentSession
from pytest_commerce_evals.cases.case import Case, GoldAction
from pytest_commerce_evals.events import Text, ToolCall, ToolResult
from pytest_commerce_evals.rates import CaseTally, set_verdict, tally_cases
from pytest_commerce_evals.results import Stopping
from pytest_commerce_evals.runner.summary import Summary
from pytest_commerce_evals.runs import SCHEMA_VERSION
from pytest_commerce_evals.store.aggregate import case_results, set_results
from pytest_commerce_evals.testing import FakeClient, FakeReply


def case(**extra) -> Case:
    return Case.model_validate(
        {"id": "ops-001-x", "priority": "low", "difficulty": "easy", "turns": ["x"], **extra}
    )


def play(agent, session, message):
    out = agent.run_turn(session, message)
    return asyncio.run(out) if asyncio.iscoroutine(out) else out


# -- pass^k, adaptive trials and the set verdict ----------------------------------------------


def test_pass_hat_k_counts_graded_trials_not_recorded_ones():
    # four passes and a judge error: every graded trial passed, so pass^1 is 1.0, not 4/5
    trials = [trial("cart-001-a", "pass", n=n, trials=5) for n in range(1, 5)]
    trials.append(trial("cart-001-a", "judge_error", n=5, trials=5))
    tally = tally_cases(trials)["cart-001-a"]
    assert (tally.recorded, tally.graded) == (5, 4)
    assert tally.pass_hat(1) == 1.0 and tally.pass_hat(4) == 1.0 and tally.pass_hat(5) is None
    [result] = case_results(trials)
    assert result.pass_hat_k == {"1": 1.0, "2": 1.0, "3": 1.0, "4": 1.0}
    summary = Summary()
    for t in trials:
        summary.add(t)
    assert summary.pass_hat_curve() == {1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0}


def test_under_adaptive_trials_an_errored_trial_is_no_evidence_not_a_failure():
    from pytest_commerce_evals.runner.adaptive import AdaptiveRun
    from pytest_commerce_evals.settings import AutoTrials
    from pytest_commerce_evals.stats import decide

    rule = Stopping(minimum=2, maximum=6, level=0.05, delta=0.1)
    tally = CaseTally("chat-001-a")
    for n, outcome in enumerate(["pass", "infra_error", "pass", "pass"], 1):
        tally.add(n, outcome, 0.8, rule)
    assert tally.outcomes == {1: True, 2: None, 3: True, 4: True}
    assert tally.rate() == 1  # every graded trial passed: the error is no failure
    adaptive = AdaptiveRun(AutoTrials(2, 6))
    for outcome in ["pass", "judge_error", "pass"]:
        decision = adaptive.record("chat-001-a", outcome)
    state = adaptive.cases["chat-001-a"]
    assert (state.passed, state.graded, state.ran) == (2, 2, 3)
    expected = decide(2, 2, 3, minimum=2, maximum=6, baseline=None, threshold=state.threshold)
    assert decision == expected


def test_a_set_with_trials_but_nothing_graded_is_undecided_and_fails_the_run():
    assert set_verdict(0, 0, 0.8, {"judge_error": 2}) == "undecided"
    assert set_verdict(0, 0, 0.8, {"skipped": 1, "infra_error": 1}) == "undecided"
    assert set_verdict(0, 0, 0.8, {"skipped": 2}) == "skipped"  # deliberately not run
    errored = [trial("cart-001-a", "judge_error"), trial("cart-001-b", "infra_error")]
    summary = Summary()
    for t in errored:
        summary.add(t)
    [group] = summary.sets.values()
    assert group.verdict == "undecided" and not group.met
    assert summary.undecided == [
        "cases/cart: no graded trial (pass or fail) to measure against the threshold 80%; "
        "trials: 1 infra_error, 1 judge_error"
    ]
    [stored] = set_results(errored)
    assert stored.met is False


# -- the gold replay through the agent's own tools --------------------------------------------


class RecordingAgent:
    """An integration's stand-in: `scripted(client)` answers each gold action's call with the
    status `status`, and remembers the sessions it ran in."""

    def __init__(self, status: str = "ok") -> None:
        self.status = status
        self.sessions: list[AgentSession] = []

    def scripted(self, client):
        return client

    def turn(self, client, session, message):
        self.sessions.append(session)
        [call] = (
            client.chat.completions.create(model="m", messages=[]).choices[0].message.tool_calls
        )
        name, arguments = call.function.name, json.loads(call.function.arguments)
        made = ToolCall(call_id="g1", name=name, arguments=arguments)
        if self.status == "ok":
            return [
                made,
                ToolResult(call_id="g1", name=name, result={"ok": True}),
                Text(text="Done."),
            ]
        reason = "approval: the catalog team must approve it"
        return [made, ToolResult(call_id="g1", name=name, status=self.status, reason=reason)]


def test_a_gold_action_whose_call_comes_back_blocked_is_a_failed_action():
    from pytest_commerce_evals.runner.gold import replay_through_agent

    agent = RecordingAgent("blocked")
    actions = [GoldAction(tool="apply_changes", arguments={"change_ids": ["ch1"]})]
    gold = replay_through_agent(agent, case(), None, actions, agent.turn, lambda: "state")
    assert gold.failed == [
        "action 1 (apply_changes): blocked: approval: the catalog team must approve it"
    ]
    ok = RecordingAgent("ok")
    assert replay_through_agent(ok, case(), None, actions, ok.turn, lambda: "s").failed == []


def test_the_gold_replays_session_starts_with_the_cases_seen_products():
    from pytest_commerce_evals.runner.gold import replay_through_agent

    agent = RecordingAgent()
    seen = case(state={"seen_products": ["shoe-001", "shoe-002"]})
    actions = [GoldAction(tool="add_to_cart", arguments={"product_id": "shoe-002"})]
    replay_through_agent(agent, seen, None, actions, agent.turn, lambda: None)
    [session] = agent.sessions
    assert session.seen_products == ["shoe-001", "shoe-002"] and session.approve_all


# -- approvals: a step where some gated calls wait, and the "not run" answer ------------------


def test_when_any_gated_call_of_a_step_waits_none_is_decided():
    from pytest_commerce_evals.adapters.integration import decisions_for

    session = AgentSession(
        case=case(approvals={"cancel_order": "approve", "apply_changes": "wait"}), backend=None
    )
    assert decisions_for(session, ["cancel_order", "apply_changes"]) is None
    assert decisions_for(session, ["apply_changes", "cancel_order"]) is None
    [approved] = decisions_for(session, ["cancel_order"]) or []
    assert approved.decision == "approve"


def gated_agent(client, ran):
    from pytest_commerce_evals.adapters import OpenAIChatAgent

    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        ran.append(("cancel_order", order_id))
        return "cancelled"

    def apply_changes(change_id: str) -> str:
        """Apply a staged change."""
        ran.append(("apply_changes", change_id))
        return "applied"

    return OpenAIChatAgent(
        client, "m", [cancel_order, apply_changes], needs_approval=["cancel_order", "apply_changes"]
    )


def test_a_step_where_one_gated_call_waits_runs_no_gated_call_and_ends_the_turn():
    # docs/plugging-in.md: left waiting, the turn ends there; the approved call of the same
    # step waits with it (the person has not finished deciding)
    both = FakeReply(
        tool_calls=[("cancel_order", {"order_id": "W1"}), ("apply_changes", {"change_id": "ch1"})]
    )
    client = FakeClient([both, "Anything else?"])
    ran: list = []
    agent = gated_agent(client, ran)
    approvals = {"cancel_order": "approve", "apply_changes": "wait"}
    session = AgentSession(case=case(approvals=approvals), backend=None)
    events = play(agent, session, "cancel W1 and publish ch1")
    assert ran == []  # the waiting call was not run, nor the other one of its step
    results = [(e.name, e.status) for e in events if isinstance(e, ToolResult)]
    assert results == [("cancel_order", "blocked"), ("apply_changes", "blocked")]
    assert len(client.requests) == 1  # the turn ended at the step that waits


def test_a_waiting_call_is_told_not_run_once_not_on_every_later_turn():
    from pytest_commerce_evals.adapters.integration import NOT_RUN

    cancel = FakeReply(tool_calls=[("cancel_order", {"order_id": "W1"})])
    client = FakeClient([cancel, "Next.", "Still here.", "Bye."])
    agent = gated_agent(client, [])
    session = AgentSession(case=case(), backend=None)  # nobody decides: the call waits
    for message in ("cancel W1", "and now?", "hello?", "bye"):
        play(agent, session, message)
    for request in client.requests[1:]:  # a repeated answer to one call a real API refuses
        answers = [m for m in request["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in answers] == [NOT_RUN]


def test_pydantic_ai_tells_a_waiting_call_not_run_once():
    pytest.importorskip("pydantic_ai")
    import pydantic_ai

    from pytest_commerce_evals.adapters import PydanticAIAgent
    from pytest_commerce_evals.adapters.integration import NOT_RUN

    agent = pydantic_ai.Agent("test")

    @agent.tool_plain(requires_approval=True)
    def cancel_order(order_id: str) -> str:
        """Cancel an order."""
        return "cancelled"

    cancel = FakeReply(tool_calls=[("cancel_order", {"order_id": "W1"})])
    client = FakeClient([cancel, "Next.", "Still here.", "Bye."], model="m")
    scripted = PydanticAIAgent(agent).scripted(client)
    session = AgentSession(case=case(), backend=None)
    for message in ("cancel W1", "and now?", "hello?", "bye"):
        play(scripted, session, message)
    for request in client.requests[1:]:
        answers = [m for m in request["messages"] if m["role"] == "tool"]
        assert [m["content"] for m in answers] == [NOT_RUN]


# -- stored records -----------------------------------------------------------------------------


def test_a_schema_1_json_record_computes_its_sets_from_its_trials(tmp_path):
    from pytest_commerce_evals.store.record_file import load_record

    record = run([trial("cart-001-a", "fail"), trial("cart-001-b", "pass")])
    data = json.loads(record.model_dump_json())
    for key in ("kind", "judge_fingerprints"):
        data.pop(key)
    data["schema_version"] = 1
    # what schema 1 stored for its sets is not trusted: a set "met" at 100% that its trials
    # (one of two passed, threshold 80%) do not bear out
    data["sets"] = [
        {
            "name": "cases/cart",
            "passed": 2,
            "graded": 2,
            "rate": 1.0,
            "threshold": 0.8,
            "met": True,
            "other": {},
        }
    ]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [found] = load_record(path).sets
    assert (found.passed, found.graded, found.rate, found.met) == (1, 2, 0.5, False)


# the trial columns a store at each older schema lacks (schemas 3 to SCHEMA_VERSION - 1)
_LATER = {4: ("stopping",), 5: ("ended",), 6: ("calls", "turn_s"), 7: ("cached",), 9: ("attack",)}


@pytest.mark.parametrize("version", range(3, SCHEMA_VERSION))
def test_a_read_only_open_of_an_older_store_says_it_must_be_migrated_and_changes_nothing(
    tmp_path, version
):
    from pytest_commerce_evals.errors import StoreError
    from pytest_commerce_evals.store.run_store import RunStore

    folder = tmp_path / "runs"
    RunStore(folder).import_record(run([trial("cart-001-a")]))
    db = folder / "runs.sqlite"
    with closing(sqlite3.connect(db)) as conn, conn:  # the store as that version left it
        for added, columns in _LATER.items():
            if added > version:
                for column in columns:
                    conn.execute(f"ALTER TABLE trials DROP COLUMN {column}")
        if version < 8:
            conn.execute("DROP TABLE shard_plans")
            conn.execute("DROP TABLE shards")
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(version),))
    with closing(sqlite3.connect(db)) as conn:
        before = conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall()
    with pytest.raises(StoreError) as info:
        RunStore(folder, read_only=True)
    assert str(info.value) == (
        f"{db}: run store schema_version {version} must be migrated to {SCHEMA_VERSION} before "
        "it can be read; run pytest once with write access to it"
    )  # never "damaged": nothing is wrong with it
    with closing(sqlite3.connect(db)) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone() == (
            str(version),
        )
        assert conn.execute("SELECT sql FROM sqlite_master ORDER BY name").fetchall() == before
