"""The τ²-bench bridge on a small handmade fixture in τ²'s format (tests/data/tau2: a database of
one user, one product with three variants and two orders; three tasks; five simulations): the
retail backend's tools, tasks as cases, simulations as trials with their data defects, parity,
and the import command."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
import yaml

from pytest_commerce_evals.cases.case import Case
from pytest_commerce_evals.events import ToolResult
from pytest_commerce_evals.tau2.__main__ import main as tau2_main
from pytest_commerce_evals.tau2.parity import parity
from pytest_commerce_evals.tau2.retail import RetailBackend, RetailError
from pytest_commerce_evals.tau2.simulations import load_results, trial_of
from pytest_commerce_evals.tau2.tasks import TaskError, case_id, case_of

DATA = Path(__file__).parent / "data" / "tau2"
DB = DATA / "db.json"


def backend() -> RetailBackend:
    return RetailBackend.load(DB)


# -- the retail backend ------------------------------------------------------------------------


def test_cancelling_a_pending_order_refunds_a_gift_card_at_once():
    b = backend()
    b.call_tool("cancel_pending_order", {"order_id": "#W1", "reason": "ordered by mistake"})
    data = b.snapshot().data
    order = data["orders"]["#W1"]
    assert order["status"] == "cancelled" and order["cancel_reason"] == "ordered by mistake"
    assert order["payment_history"][-1] == {
        "transaction_type": "refund",
        "amount": 50.25,
        "payment_method_id": "gift_card_1",
    }
    assert data["users"]["ada_lee_1"]["payment_methods"]["gift_card_1"]["balance"] == 60.25
    assert backend().snapshot().data == {}  # a fresh backend: nothing changed


@pytest.mark.parametrize(
    ("tool", "arguments", "message"),
    [
        (
            "cancel_pending_order",
            {"order_id": "#W2", "reason": "ordered by mistake"},
            "Non-pending order cannot be cancelled",
        ),
        ("cancel_pending_order", {"order_id": "#W1", "reason": "too pricey"}, "Invalid reason"),
        (
            "cancel_pending_order",
            {"order_id": "#W9", "reason": "ordered by mistake"},
            "Order not found",
        ),
        (
            "return_delivered_order_items",
            {"order_id": "#W2", "item_ids": ["1001"], "payment_method_id": "paypal_9"},
            "Payment method not found",
        ),
        (
            "return_delivered_order_items",
            {"order_id": "#W2", "item_ids": ["1001", "1001"], "payment_method_id": "credit_card_1"},
            "Some item not found",
        ),
        (
            "exchange_delivered_order_items",
            {
                "order_id": "#W2",
                "item_ids": ["1001"],
                "new_item_ids": ["1003"],
                "payment_method_id": "credit_card_1",
            },
            "New item 1003 not found or available",
        ),
        (
            "modify_pending_order_items",
            {
                "order_id": "#W1",
                "item_ids": ["1001"],
                "new_item_ids": ["1002"],
                "payment_method_id": "gift_card_1",
            },
            None,
        ),  # allowed: the gift card covers the 5.25 difference
        (
            "modify_pending_order_payment",
            {"order_id": "#W1", "payment_method_id": "gift_card_1"},
            "The new payment method should be different from the current one",
        ),
        ("refund_everything", {}, "Tool 'refund_everything' not found."),
        (
            "get_user_details",
            {"user": "ada_lee_1"},
            "RetailTools.get_user_details() got an unexpected keyword argument 'user'",
        ),
        ("calculate", {"expression": "__import__('os')"}, "Invalid characters in expression"),
        (
            "calculate",
            {"expression": "(" * 100_000 + "1" + ")" * 100_000},
            "too many nested parentheses (<string>, line 1)",
        ),
        ("calculate", {"expression": "-" * 50_000 + "1"}, "^$"),  # τ²'s eval: a MemoryError
        ("calculate", {"expression": "9" * 400 + " * 1.5"}, "int too large to convert to float"),
        ("calculate", {"expression": "1e308 * 10"}, "Invalid characters"),
    ],
)
def test_a_tool_refuses_what_the_domain_does_not_allow(tool, arguments, message):
    b = backend()
    if message is None:
        b.call_tool(tool, arguments)
        return
    with pytest.raises(RetailError, match=message.replace("(", r"\(").replace(")", r"\)")):
        b.call_tool(tool, arguments)
    assert b.snapshot().data == {}  # a refused call changes nothing


def test_modifying_items_pays_the_difference_from_the_gift_card_once():
    b = backend()
    b.call_tool(
        "modify_pending_order_items",
        {
            "order_id": "#W1",
            "item_ids": ["1001"],
            "new_item_ids": ["1002"],
            "payment_method_id": "gift_card_1",
        },
    )
    data = b.snapshot().data
    order = data["orders"]["#W1"]
    assert order["status"] == "pending (item modified)"
    assert order["items"][0]["item_id"] == "1002" and order["items"][0]["price"] == 55.5
    assert order["payment_history"][-1]["amount"] == 5.25
    assert data["users"]["ada_lee_1"]["payment_methods"]["gift_card_1"]["balance"] == 4.75
    with pytest.raises(RetailError, match="Non-pending order cannot be modified"):
        b.call_tool(
            "modify_pending_order_items",
            {
                "order_id": "#W1",
                "item_ids": ["1002"],
                "new_item_ids": ["1001"],
                "payment_method_id": "gift_card_1",
            },
        )


def test_return_exchange_payment_and_addresses_record_what_they_change():
    b = backend()
    b.call_tool(
        "exchange_delivered_order_items",
        {
            "order_id": "#W2",
            "item_ids": ["1001"],
            "new_item_ids": ["1002"],
            "payment_method_id": "credit_card_1",
        },
    )
    order = b.snapshot().data["orders"]["#W2"]
    assert order["status"] == "exchange requested"
    assert order["exchange_price_difference"] == 5.25
    with pytest.raises(RetailError, match="Non-delivered order cannot be returned"):
        b.call_tool(
            "return_delivered_order_items",
            {"order_id": "#W2", "item_ids": ["1001"], "payment_method_id": "credit_card_1"},
        )
    b.call_tool(
        "modify_pending_order_payment", {"order_id": "#W1", "payment_method_id": "credit_card_1"}
    )
    w1 = b.snapshot().data["orders"]["#W1"]
    assert [p["transaction_type"] for p in w1["payment_history"]] == [
        "payment",
        "payment",
        "refund",
    ]
    address = {
        "address1": "2 Oak",
        "address2": "",
        "city": "Waco",
        "state": "TX",
        "country": "USA",
        "zip": "76701",
    }
    b.call_tool("modify_pending_order_address", {"order_id": "#W1", **address})
    b.call_tool("modify_user_address", {"user_id": "ada_lee_1", **address})
    data = b.snapshot().data
    assert data["orders"]["#W1"]["address"]["city"] == "Waco"
    assert data["users"]["ada_lee_1"]["address"]["zip"] == "76701"
    assert data["users"]["ada_lee_1"]["payment_methods"]["gift_card_1"]["balance"] == 60.25


def test_the_read_tools_answer_from_the_database():
    b = backend()
    assert (
        b.call_tool(
            "find_user_id_by_name_zip", {"first_name": "ada", "last_name": "LEE", "zip": "78701"}
        )
        == "ada_lee_1"
    )
    assert b.call_tool("find_user_id_by_email", {"email": "ADA@example.com"}) == "ada_lee_1"
    assert b.call_tool("get_item_details", {"item_id": "1002"})["price"] == 55.5
    assert json.loads(b.call_tool("list_all_product_types", {})) == {"Kettle": "100"}
    assert b.call_tool("calculate", {"expression": "(55.5 - 50.25) * 2"}) == "10.5"
    with pytest.raises(RetailError, match="User not found"):
        b.call_tool("find_user_id_by_email", {"email": "bob@example.com"})


# -- tasks as cases ------------------------------------------------------------------------------


def tasks() -> list[dict]:
    return json.loads((DATA / "tasks.json").read_text())


def test_a_task_becomes_a_case_with_a_simulated_customer_and_the_gold_state():
    case = Case.model_validate(case_of(tasks()[0], domain="retail"))
    assert case.id == "tau2_retail-000-task-0" and case.scope == "conversation"
    assert case.user is not None
    assert case.user.instructions == "You want to cancel order #W1: you ordered it by mistake."
    assert case.user.knows == "You are Ada Lee, zip 78701."
    assert case.user.unknown == "You do not remember your email."
    assert [a.tool for a in case.expected.same_state_as or []] == [
        "find_user_id_by_name_zip",
        "cancel_pending_order",
    ]
    said = Case.model_validate(case_of(tasks()[1], domain="retail"))
    assert said.expected.communicates == ["55.50"]


def test_only_the_reward_basis_decides_the_rest_is_reported():
    task = tasks()[1]
    task["evaluation_criteria"]["reward_basis"] = ["DB"]
    case = case_of(task, domain="retail")
    assert "communicates" not in case["expected"]
    assert (
        "Reported, not graded: communicate_info (not in reward_basis): ['55.50']" in case["notes"]
    )
    task["evaluation_criteria"]["reward_basis"] = ["DB", "VIBES"]
    with pytest.raises(TaskError, match=r"task '1': reward_basis \['VIBES'\]"):
        case_of(task, domain="retail")
    assert case_id("7", "airline") == "tau2_airline-007-task-7"


# -- simulations as trials, and parity -----------------------------------------------------------


def test_a_simulation_becomes_the_trial_a_run_would_record():
    results = load_results(DATA / "results.json")
    trial, defects = trial_of(results, results.simulations[0], backend)
    assert defects == []
    assert trial.messages[0].startswith("Cancel #W1") and trial.messages[-1] == "Thanks ###STOP###"
    assert len(trial.turns) == len(trial.messages) - 1 == 2
    assert trial.ended == "customer"
    assert trial.snapshot is not None
    assert trial.snapshot.data["orders"]["#W1"]["status"] == "cancelled"


def test_data_defects_are_found_and_named():
    results = load_results(DATA / "results.json")
    _, mislabelled = trial_of(results, results.simulations[3], backend)
    assert [d.kind for d in mislabelled] == ["task-id"]
    assert "not task 1's but task 2's" in mislabelled[0].evidence
    _, unflagged = trial_of(results, results.simulations[4], backend)
    assert [d.kind for d in unflagged] == ["unflagged-error"]
    assert "'Error: User not found' is not flagged as an error" in unflagged[0].evidence


def test_parity_on_the_handmade_results():
    found = parity(DATA / "results.json", DB)
    assert [(v.simulation, v.ours, v.theirs) for v in found.verdicts] == [
        ("sim-0-ok", True, True),
        ("sim-0-bad", False, False),
        ("sim-1-ok", True, True),
        ("sim-2-mislabelled", False, True),
        ("sim-0-unflagged", True, True),
    ]
    assert (found.agree, len(found.verdicts)) == (4, 5)
    bad = found.verdicts[1]
    assert any("cancel_reason" in f for f in bad.failures), bad.failures
    (left,) = found.disagreements()
    assert left.kind == "data defect" and left.relabelled is True  # ours against task 2: a pass


def test_the_parity_benchmark_prints_the_figures(capsys):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from bench_tau2_parity import main

    assert main(["--db", str(DB), str(DATA / "results.json")]) == 0
    out = capsys.readouterr().out
    assert "as labelled: ours = τ²'s on 4/5 (80.0%)" in out
    assert "data defects: 1 labelled with another task's id, 1 with a failed tool result" in out
    assert "graded against the task τ² graded: ours = τ²'s on 5/5 (100.0%)" in out


# -- the import command --------------------------------------------------------------------------


def test_the_import_command_writes_one_case_per_task_and_the_backend_hook(tmp_path, capsys):
    checkout = tmp_path / "tau2-bench"
    domain = checkout / "data" / "tau2" / "domains" / "retail"
    domain.mkdir(parents=True)
    shutil.copy(DB, domain / "db.json")
    shutil.copy(DATA / "tasks.json", domain / "tasks.json")
    shutil.copy(DATA / "policy.md", domain / "policy.md")
    out = tmp_path / "cases" / "tau2-retail"
    assert tau2_main(["import", str(checkout), "--domain", "retail", "--out", str(out)]) == 0
    assert "wrote 3 case(s)" in capsys.readouterr().out
    files = sorted(p.name for p in out.glob("*.yaml"))
    assert files == ["000-task-0.yaml", "001-task-1.yaml", "002-task-2.yaml", "_set.yaml"]
    for path in out.glob("0*.yaml"):
        Case.model_validate(yaml.safe_load(path.read_text()))
    conftest = (out / "conftest.py").read_text()
    assert "Checkout(__file__, '../../tau2-bench', domain='retail')" in conftest
    assert str(tmp_path) not in conftest  # no absolute path: the folder runs from any clone
    assert tau2_main(["import", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert "not found; give the root of a τ²-bench checkout" in capsys.readouterr().err
    (domain / "policy.md").unlink()  # the agent's instructions: refused, not left empty
    assert tau2_main(["import", str(checkout), "--out", str(out)]) == 2
    assert f"{domain / 'policy.md'}: not found" in capsys.readouterr().err


def test_published_simulations_are_stored_and_regraded_with_commerce_regrade(pytester):
    checkout = pytester.path / "tau2-bench" / "data" / "tau2" / "domains" / "retail"
    checkout.mkdir(parents=True)
    shutil.copy(DB, checkout / "db.json")
    shutil.copy(DATA / "tasks.json", checkout / "tasks.json")
    shutil.copy(DATA / "policy.md", checkout / "policy.md")
    assert (
        tau2_main(["import", str(pytester.path / "tau2-bench"), "--out", "cases/tau2-retail"]) == 0
    )
    run = pytester.path / "run.json"
    args = ["import-results", str(DATA / "results.json"), "--db", str(checkout / "db.json")]
    assert tau2_main([*args, "--out", str(run)]) == 0
    assert pytester.runpytest("-p", "no:cacheprovider", f"--commerce-store-import={run}").ret == 0
    result = pytester.runpytest(
        "cases/tau2-retail",
        "-p",
        "no:cacheprovider",
        "--commerce-regrade=tau2-results",
        "--commerce-no-judge",
        "--commerce-json=out.json",
    )
    result.stdout.fnmatch_lines(["*5 of its 5 stored trials graded again*the agent was not called"])
    trials = json.loads((pytester.path / "out.json").read_text())["trials"]
    ours = sorted((t["case_id"], t["trial"], t["outcome"]) for t in trials)
    assert ours == [
        ("tau2_retail-000-task-0", 1, "pass"),
        ("tau2_retail-000-task-0", 2, "fail"),  # τ² 0.0 too: the wrong cancel reason
        ("tau2_retail-000-task-0", 3, "pass"),
        ("tau2_retail-001-task-1", 1, "pass"),
        ("tau2_retail-001-task-1", 2, "fail"),  # mislabelled: τ² graded it as task 2 (a pass)
    ]


def test_pass_hat_k_is_in_the_json_record_and_the_html_report():
    from run_builders import run, trial

    from pytest_commerce_evals.reports.html import render_run_html
    from pytest_commerce_evals.runs import pass_k_curve
    from pytest_commerce_evals.store.aggregate import case_results

    trials = [
        trial("a-001-x", "pass", n=1, trials=4),
        trial("a-001-x", "pass", n=2, trials=4),
        trial("a-001-x", "fail", n=3, trials=4),
        trial("a-001-x", "pass", n=4, trials=4),
        trial("b-001-x", "pass", n=1, trials=4),
    ]
    cases = case_results(trials)
    assert cases[0].pass_hat_k == {"1": 0.75, "2": 0.5, "3": 0.25, "4": 0.0}
    assert cases[1].pass_hat_k == {"1": 1.0}
    assert pass_k_curve(cases) == {1: 0.875, 2: 0.5, 3: 0.25, 4: 0.0}
    record = run(trials).model_copy(update={"cases": cases})
    assert json.loads(record.model_dump_json())["cases"][0]["pass_hat_k"]["2"] == 0.5
    html = render_run_html(record)
    assert "pass^k over cases: k=1: 0.875 · k=2: 0.500 · k=3: 0.250 · k=4: 0.000" in html


# -- the τ² agent --------------------------------------------------------------------------------


def test_the_tau2_agent_calls_the_retail_tools_and_records_what_they_returned():
    from pytest_commerce_evals.agent import AgentSession
    from pytest_commerce_evals.tau2.agent import Tau2Agent, tool_schemas
    from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply

    schemas = {s["function"]["name"]: s["function"] for s in tool_schemas()}
    assert len(schemas) == 16
    assert schemas["exchange_delivered_order_items"]["parameters"]["properties"]["item_ids"] == {
        "type": "array",
        "items": {"type": "string"},
    }
    client = FakeClient(
        [
            tool_reply("find_user_id_by_name_zip", first_name="Ada", last_name="Lee", zip="78701"),
            tool_reply("cancel_pending_order", order_id="#W1", reason="no reason"),
            tool_reply("cancel_pending_order", order_id="#W1", reason="ordered by mistake"),
            text_reply("Order #W1 is cancelled."),
        ]
    )
    b = backend()
    case = Case.model_validate(case_of(tasks()[0], domain="retail"))
    session = AgentSession(case=case, backend=b)
    events = Tau2Agent(client, "m", policy="Be careful.").run_turn(session, "Cancel #W1")
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [r.status for r in results] == ["ok", "error", "ok"]
    assert results[0].result == "ada_lee_1" and results[1].reason == "Invalid reason"
    assert results[2].result["status"] == "cancelled"
    assert b.snapshot().data["orders"]["#W1"]["status"] == "cancelled"
    assert client.requests[0]["messages"][0] == {"role": "system", "content": "Be careful."}
    assert client.requests[2]["messages"][-1]["content"] == "Error: Invalid reason"


def test_imported_cases_run_with_the_generated_conftest_a_scripted_model_and_customer(pytester):
    checkout = pytester.path / "tau2-bench"
    domain = checkout / "data" / "tau2" / "domains" / "retail"
    domain.mkdir(parents=True)
    shutil.copy(DB, domain / "db.json")
    shutil.copy(DATA / "tasks.json", domain / "tasks.json")
    (domain / "policy.md").write_text("# Retail agent policy\n")
    assert tau2_main(["import", str(checkout), "--out", "cases/tau2-retail"]) == 0
    conftest = pytester.path / "cases" / "tau2-retail" / "conftest.py"
    text = conftest.read_text()
    assert 'session_client(config, "agent")' in text
    # the generated hooks as written, the model and the customer scripted
    text = text.replace(
        'client = session_client(config, "agent")',
        "client = SCRIPTED(case.id)",
    ) + textwrap.dedent(
        """
        from pytest_commerce_evals.testing import FakeClient, ScriptedCustomer, text_reply, tool_reply

        def SCRIPTED(case_id):
            client = FakeClient([
                tool_reply("find_user_id_by_name_zip", first_name="Ada", last_name="Lee", zip="78701"),
                tool_reply("cancel_pending_order", order_id="#W1", reason="ordered by mistake"),
                text_reply("Done: #W1 is cancelled."),
                text_reply("Anything else?"),
            ])
            client.endpoint = type("E", (), {"model": "scripted"})()
            return client

        def pytest_commerce_evals_make_user(config, case):
            return ScriptedCustomer(["Cancel #W1 please, I'm Ada Lee in 78701.", "Yes."])
        """
    )
    conftest.write_text(text)
    result = pytester.runpytest(
        "cases/tau2-retail/000-task-0.yaml",
        "cases/tau2-retail/002-task-2.yaml",
        "-p",
        "no:cacheprovider",
        "--commerce-no-judge",
        "--commerce-store=none",
        "--commerce-json=out.json",
    )
    trials = {
        t["case_id"]: t for t in json.loads((pytester.path / "out.json").read_text())["trials"]
    }
    assert trials["tau2_retail-000-task-0"]["outcome"] == "pass", trials["tau2_retail-000-task-0"]
    assert trials["tau2_retail-000-task-0"]["ended"] == "customer"
    # the same script on the return task leaves the wrong final state
    failed = trials["tau2_retail-002-task-2"]
    assert failed["outcome"] == "fail"
    assert any(f.startswith("same_state_as: the final state differs") for f in failed["failures"])
    assert result.ret == 0  # the set's threshold is 0 until the team sets one


SCRIPTED_TAU2 = textwrap.dedent(
    """
    from pytest_commerce_evals.testing import FakeClient, ScriptedCustomer, text_reply, tool_reply

    def SCRIPTED(case_id):
        client = FakeClient([
            tool_reply("find_user_id_by_name_zip", first_name="Ada", last_name="Lee", zip="78701"),
            tool_reply("cancel_pending_order", order_id="#W1", reason="ordered by mistake"),
            text_reply("Done: #W1 is cancelled."),
            text_reply("Anything else?"),
        ])
        client.endpoint = type("E", (), {"model": "scripted"})()
        return client

    def pytest_commerce_evals_make_user(config, case):
        return ScriptedCustomer(["Cancel #W1 please, I'm Ada Lee in 78701.", "Yes."])
    """
)


def test_an_imported_folder_runs_from_wherever_the_repository_is_cloned(pytester, monkeypatch):
    """Written outside `commerce_case_dirs` and moved with its checkout, the folder's cases are
    still collected and run; moved alone, $COMMERCE_TAU2_CHECKOUT names the checkout, and with
    neither a trial says where it looked and what to set."""
    repo = pytester.path / "repo"
    checkout = repo / "vendor" / "tau2-bench"
    domain = checkout / "data" / "tau2" / "domains" / "retail"
    domain.mkdir(parents=True)
    for name in ("db.json", "tasks.json", "policy.md"):
        shutil.copy(DATA / name, domain / name)
    (checkout / ".git" / "refs" / "heads").mkdir(parents=True)
    (checkout / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (checkout / ".git" / "refs" / "heads" / "main").write_text("ab" * 20 + "\n")
    out = repo / "evals" / "tau2"  # not under `cases`: the plugin alone would collect nothing
    assert tau2_main(["import", str(checkout), "--out", str(out)]) == 0
    case_text = (out / "000-task-0.yaml").read_text()
    assert f"τ²-bench commit {'ab' * 20}" in case_text  # each case says where it came from
    conftest = out / "conftest.py"
    conftest.write_text(
        conftest.read_text().replace(
            'client = session_client(config, "agent")', "client = SCRIPTED(case.id)"
        )
        + SCRIPTED_TAU2
    )
    clone = pytester.path / "elsewhere" / "clone"
    shutil.copytree(repo, clone)
    shutil.rmtree(repo)  # nothing of the first location is left to find
    args = ["-p", "no:cacheprovider", "--commerce-no-judge", "--commerce-store=none"]
    json_out = pytester.path / "out.json"

    def outcomes(result):
        assert json_out.exists(), result.stdout.str()
        trials = json.loads(json_out.read_text())["trials"]
        json_out.unlink()
        return {t["case_id"]: (t["outcome"], t.get("error") or "") for t in trials}

    pytester.chdir()
    result = pytester.runpytest(str(clone / "evals" / "tau2"), *args, f"--commerce-json={json_out}")
    found = outcomes(result)
    assert found["tau2_retail-000-task-0"][0] == "pass"
    assert len(found) == 3  # every case of the folder collected, once
    # the folder alone, the checkout named by the environment
    moved = pytester.path / "moved"
    shutil.copytree(clone / "evals" / "tau2", moved)
    monkeypatch.setenv("COMMERCE_TAU2_CHECKOUT", str(clone / "vendor" / "tau2-bench"))
    result = pytester.runpytest(str(moved), *args, f"--commerce-json={json_out}")
    assert outcomes(result)["tau2_retail-000-task-0"][0] == "pass"
    monkeypatch.delenv("COMMERCE_TAU2_CHECKOUT")
    result = pytester.runpytest(str(moved), *args, f"--commerce-json={json_out}")
    outcome, error = outcomes(result)["tau2_retail-000-task-0"]
    assert outcome != "pass"
    assert "db.json" in error and "not found" in error and "COMMERCE_TAU2_CHECKOUT" in error
