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
from tau2_checkout import domain_folder, make_checkout

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
    assert "graded against the 3 tasks the file carries" in out


def test_parity_grades_a_file_against_its_own_tasks_and_a_checkouts_only_without(tmp_path):
    newer = json.loads((DATA / "tasks.json").read_text())
    newer[0]["evaluation_criteria"]["actions"][1]["arguments"]["reason"] = "no longer needed"
    (tmp_path / "tasks.json").write_text(json.dumps(newer))
    own = parity(DATA / "results.json", DB, tmp_path / "tasks.json")  # its own win
    assert own.tasks == "the 3 tasks the file carries" and own.agree == 4
    bare = json.loads((DATA / "results.json").read_text())
    del bare["tasks"]
    (tmp_path / "bare.json").write_text(json.dumps(bare))
    fallback = parity(tmp_path / "bare.json", DB, tmp_path / "tasks.json")
    assert fallback.tasks.startswith("the file carries no tasks: the 3 of ")
    # task 0's three simulations turn over against the newer gold cancel reason
    assert [v.ours for v in fallback.verdicts[:2]] == [False, True]
    with pytest.raises(ValueError, match="carries no tasks; give a checkout's tasks.json"):
        parity(tmp_path / "bare.json", DB)


# -- the import command --------------------------------------------------------------------------


def test_the_import_command_writes_one_case_per_task_and_the_backend_hook(tmp_path, capsys):
    checkout = make_checkout(tmp_path / "tau2-bench")
    domain = domain_folder(checkout)
    out = tmp_path / "cases" / "tau2-retail"
    assert tau2_main(["import", str(checkout), "--domain", "retail", "--out", str(out)]) == 0
    assert "wrote 3 case(s)" in capsys.readouterr().out
    files = sorted(p.name for p in out.glob("*.yaml"))
    assert files == [
        "000-task-0.yaml",
        "001-task-1.yaml",
        "002-task-2.yaml",
        "_set.yaml",
        "_tau2_agent.yaml",
        "_tau2_customer.yaml",
    ]
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
    checkout = domain_folder(make_checkout(pytester.path / "tau2-bench"))
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
    checkout = make_checkout(pytester.path / "tau2-bench", files=("db.json", "tasks.json"))
    (domain_folder(checkout) / "policy.md").write_text("# Retail agent policy\n")
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
    checkout = make_checkout(repo / "vendor" / "tau2-bench")
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


def test_a_results_file_is_regraded_against_the_tasks_it_carries(pytester, capsys):
    """τ²'s tasks change between commits: the checkout's task 0 here wants the other cancel
    reason. Regraded against the tasks the file carries, the verdicts are τ²'s; the importer
    says which tasks it used, and falls back to the checkout's for a file that carries none."""
    newer = json.loads((DATA / "tasks.json").read_text())
    newer[0]["evaluation_criteria"]["actions"][1]["arguments"]["reason"] = "no longer needed"
    checkout = make_checkout(
        pytester.path / "tau2-bench", files=("db.json", "policy.md"), tasks=newer
    )
    domain = domain_folder(checkout)
    base = ["import-results", str(DATA / "results.json"), "--db", str(domain / "db.json")]
    assert tau2_main([*base, "--out", "plain.json"]) == 0
    assert "results.json carries the 3 tasks it was graded with: give --cases" in (
        capsys.readouterr().out
    )
    assert tau2_main([*base, "--out", "run.json", "--cases", "cases/tau2-graded"]) == 0
    out = capsys.readouterr().out
    assert (
        "graded with the 3 tasks results.json carries: wrote 3 case(s) to cases/tau2-graded" in out
    )
    assert "pytest cases/tau2-graded --commerce-regrade" in out  # the set is the folder
    notes = yaml.safe_load(
        (pytester.path / "cases" / "tau2-graded" / "000-task-0.yaml").read_text()
    )["notes"]
    assert "τ²-bench commit handmade" in notes and "The tasks results.json carries." in notes
    assert tau2_main(["import", str(pytester.path / "tau2-bench"), "--out", "cases/tau2-now"]) == 0
    assert pytester.runpytest("-p", "no:cacheprovider", "--commerce-store-import=run.json").ret == 0

    def regraded(folder: str) -> list[tuple[str, int, str]]:
        pytester.runpytest(
            folder,
            "-p",
            "no:cacheprovider",
            "--commerce-regrade=tau2-results",
            "--commerce-no-judge",
            "--commerce-json=out.json",
        )
        trials = json.loads((pytester.path / "out.json").read_text())["trials"]
        return sorted(
            (t["case_id"], t["trial"], t["outcome"]) for t in trials if "000" in t["case_id"]
        )

    assert regraded("cases/tau2-graded") == [
        ("tau2_retail-000-task-0", 1, "pass"),
        ("tau2_retail-000-task-0", 2, "fail"),  # τ² 0.0 too: the wrong cancel reason
        ("tau2_retail-000-task-0", 3, "pass"),
    ]
    assert regraded("cases/tau2-now") == [  # the newer task: the verdicts turn over
        ("tau2_retail-000-task-0", 1, "fail"),
        ("tau2_retail-000-task-0", 2, "pass"),
        ("tau2_retail-000-task-0", 3, "fail"),
    ]
    bare = json.loads((DATA / "results.json").read_text())
    del bare["tasks"]
    (pytester.path / "bare.json").write_text(json.dumps(bare))
    args = ["import-results", "bare.json", "--db", str(domain / "db.json"), "--out", "b.json"]
    tau2_main([*args, "--cases", "cases/tau2-bare"])
    assert "bare.json carries no tasks: the checkout's 3" in capsys.readouterr().out
    kept = (pytester.path / "cases" / "tau2-bare" / "000-task-0.yaml").read_text()
    assert "no longer needed" in kept


def test_the_agent_sends_what_tau2s_own_agent_sends(pytester, monkeypatch):
    """On an imported folder the agent's first request is τ²'s: the system prompt its agent
    builds around the policy, its opening greeting, the customer's message, and the tool schemas
    its toolkit builds. `tools_tau2_built.json` is what τ²-bench's own tool builder (a2c0247)
    made of the stand-in source in `tests/data/tau2/src`."""
    checkout = make_checkout(pytester.path / "tau2-bench")
    assert tau2_main(["import", str(checkout), "--out", "cases/tau2-retail"]) == 0
    conftest = pytester.path / "cases" / "tau2-retail" / "conftest.py"
    conftest.write_text(
        conftest.read_text().replace(
            'client = session_client(config, "agent")', "client = SCRIPTED(case.id)"
        )
        + SCRIPTED_TAU2
        + textwrap.dedent(
            """
            import json, os
            _made = SCRIPTED

            def SCRIPTED(case_id):
                client = _made(case_id)
                _create = client.chat.completions.create

                def create(**request):
                    with open(os.environ["REQUESTS_OUT"], "a") as out:
                        out.write(json.dumps(request) + "\\n")
                    return _create(**request)

                client.chat.completions.create = create
                return client
            """
        )
    )
    requests = pytester.path / "requests.jsonl"
    monkeypatch.setenv("REQUESTS_OUT", str(requests))
    result = pytester.runpytest(
        "cases/tau2-retail/000-task-0.yaml",
        "-p",
        "no:cacheprovider",
        "--commerce-no-judge",
        "--commerce-store=none",
    )
    assert result.ret == 0, result.stdout.str()
    first = json.loads(requests.read_text().splitlines()[0])
    policy = (DATA / "policy.md").read_text()
    assert first == {
        "model": "scripted",
        "messages": [
            {
                "role": "system",
                "content": "<instructions>\nHelp the customer by the <policy> below, one message "
                "or one tool call at a time.\n</instructions>\n<policy>\n" + policy + "\n</policy>",
            },
            {"role": "assistant", "content": "Hello! What can I do for you?"},
            {"role": "user", "content": "Cancel #W1 please, I'm Ada Lee in 78701."},
        ],
        "tools": json.loads((DATA / "tools_tau2_built.json").read_text()),
        "temperature": 0.0,
    }


def test_an_import_from_a_checkout_whose_source_it_cannot_read_says_so(tmp_path, capsys):
    checkout = make_checkout(tmp_path / "tau2-bench", source=False, simulator=False)
    out = tmp_path / "cases"
    assert tau2_main(["import", str(checkout), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "_tau2_agent.yaml not written:" in err and "llm_agent.py: cannot be read" in err
    assert len(list(out.glob("0*.yaml"))) == 3  # the cases are written all the same
    assert not (out / "_tau2_agent.yaml").exists()


def test_a_turn_may_take_as_many_steps_as_a_tau2_simulation():
    """τ²'s bound is the simulation's 200 steps, not a dozen a turn: a gold that needs 13
    actions fits in one turn; past the bound the turn ends with the step-limit reply."""
    from pytest_commerce_evals.agent import AgentSession
    from pytest_commerce_evals.events import Text
    from pytest_commerce_evals.tau2.agent import MAX_STEPS, STEP_LIMIT_REPLY, Tau2Agent
    from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply

    assert MAX_STEPS == 200
    lookup = tool_reply("find_user_id_by_email", email="ada@example.com")
    client = FakeClient([lookup] * 13 + [text_reply("Done.")])
    case = Case.model_validate(case_of(tasks()[0], domain="retail"))
    session = AgentSession(case=case, backend=backend())
    events = Tau2Agent(client, "m").run_turn(session, "Hi")
    assert sum(isinstance(e, ToolResult) for e in events) == 13
    assert [e.text for e in events if isinstance(e, Text)] == ["Done."]
    client = FakeClient([lookup] * 3)
    session = AgentSession(case=case, backend=backend())
    events = Tau2Agent(client, "m", max_steps=3).run_turn(session, "Hi")
    assert [e.text for e in events if isinstance(e, Text)] == [STEP_LIMIT_REPLY]


def test_the_customer_is_tau2s_user_simulator(pytester):
    """On an imported folder the customer's requests are τ²'s user simulator's: its guidelines
    and the task's scenario as τ² writes it, the conversation with the roles flipped from the
    agent's greeting on; τ²'s transfer marker ends the conversation like its stop."""
    checkout = make_checkout(pytester.path / "tau2-bench")
    assert tau2_main(["import", str(checkout), "--out", "cases/tau2-retail"]) == 0
    conftest = pytester.path / "cases" / "tau2-retail" / "conftest.py"
    text = conftest.read_text()
    assert "return CHECKOUT.customer(config, case)" in text
    text = text.replace('client = session_client(config, "agent")', "client = SCRIPTED(case.id)")
    text = text.replace(
        "return CHECKOUT.customer(config, case)",
        "return CHECKOUT.customer(config, case, client=USER)",
    )
    conftest.write_text(
        text
        + textwrap.dedent(
            """
            from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply

            USER = FakeClient(["Cancel #W1 please, I'm Ada Lee in 78701.", "Thanks! ###TRANSFER###"])
            USER.endpoint = type("E", (), {"model": "user-model"})()

            def SCRIPTED(case_id):
                client = FakeClient([
                    tool_reply("find_user_id_by_name_zip", first_name="Ada", last_name="Lee", zip="78701"),
                    tool_reply("cancel_pending_order", order_id="#W1", reason="ordered by mistake"),
                    text_reply("Done: #W1 is cancelled."),
                ])
                client.endpoint = type("E", (), {"model": "scripted"})()
                return client

            def pytest_commerce_evals_trial_done(config, result):
                import json, os
                with open(os.environ["USER_REQUESTS"], "w") as out:
                    json.dump(USER.requests, out)
            """
        )
    )
    requests = pytester.path / "user.json"
    import os

    os.environ["USER_REQUESTS"] = str(requests)
    try:
        result = pytester.runpytest(
            "cases/tau2-retail/000-task-0.yaml",
            "-p",
            "no:cacheprovider",
            "--commerce-no-judge",
            "--commerce-store=none",
            "--commerce-json=out.json",
        )
    finally:
        del os.environ["USER_REQUESTS"]
    (trial,) = json.loads((pytester.path / "out.json").read_text())["trials"]
    assert trial["outcome"] == "pass" and trial["ended"] == "customer", result.stdout.str()
    first, second = json.loads(requests.read_text())
    task = json.loads((DATA / "tasks.json").read_text())[0]
    reason = task["user_scenario"]["instructions"]["reason_for_call"]
    assert first["model"] == "user-model" and first["temperature"] == 0.0
    system = first["messages"][0]
    assert system["role"] == "system"
    assert system["content"].startswith(
        "# Playing the customer (a hand-made stand-in)\n"
        "Speak as the customer in the scenario, one short message at a time.\n"
        "When your task is done, write ###STOP###.\n\n\n<scenario>\nInstructions:\n\tDomain: retail\n"
        "\tReason for call:\n\t\t" + reason.replace("\n", "\n\t\t")
    )
    assert system["content"].endswith("\n</scenario>")
    assert first["messages"][1:] == [{"role": "user", "content": "Hello! What can I do for you?"}]
    assert second["messages"][1:] == [
        {"role": "user", "content": "Hello! What can I do for you?"},
        {"role": "assistant", "content": "Cancel #W1 please, I'm Ada Lee in 78701."},
        {"role": "user", "content": "Done: #W1 is cancelled."},
    ]
    assert trial["messages"][-1] == "Thanks! ###TRANSFER### ###STOP###"


def test_a_scenario_is_written_out_as_tau2_writes_it():
    from pytest_commerce_evals.tau2.customer import scenario_text

    structured = {
        "persona": "Calm.\nPolite.",
        "instructions": {
            "domain": "retail",
            "reason_for_call": "Return a lamp.",
            "known_info": None,
            "unknown_info": "The order id.",
            "task_instructions": "Be brief.\nSay thanks.",
        },
    }
    assert scenario_text(structured) == (
        "Persona:\n\tCalm.\n\tPolite.\nInstructions:\n\tDomain: retail\n\tReason for call:\n"
        "\t\tReturn a lamp.\n\tUnknown info:\n\t\tThe order id.\n\tTask instructions:\n"
        "\t\tBe brief.\n\t\tSay thanks."
    )
    assert scenario_text({"instructions": "Just this."}) == "Instructions:\n\tJust this."
    with pytest.raises(ValueError, match="reason_for_call is NoneType"):
        scenario_text({"instructions": {"domain": "retail", "task_instructions": "x"}})
    with pytest.raises(ValueError, match="no instructions"):
        scenario_text({"persona": "x"})


def test_airline_tasks_import_and_run_on_the_airline_backend(pytester):
    """`--domain airline`: the same converter, the airline backend and its tools; a trial that
    makes the gold change passes, one that leaves it undone fails."""
    checkout = make_checkout(
        pytester.path / "tau2-bench",
        domain="airline",
        files=("db.json", "tasks.json"),
        data=DATA / "airline",
    )
    (domain_folder(checkout, "airline") / "policy.md").write_text("# Airline agent policy\n")
    args = ["import", str(checkout), "--domain", "airline", "--out", "cases/tau2-airline"]
    assert tau2_main(args) == 0
    view = yaml.safe_load(
        (pytester.path / "cases" / "tau2-airline" / "_tau2_agent.yaml").read_text()
    )
    assert [t["function"]["name"] for t in view["tools"]] == [
        "get_reservation_details",
        "cancel_reservation",
    ]
    conftest = pytester.path / "cases" / "tau2-airline" / "conftest.py"

    def run(actions: str) -> dict:
        conftest.write_text(
            conftest.read_text()
            .replace('client = session_client(config, "agent")', "client = SCRIPTED(case.id)")
            .split("\nfrom pytest_commerce_evals.testing")[0]
            + textwrap.dedent(
                f"""
                from pytest_commerce_evals.testing import FakeClient, ScriptedCustomer, text_reply, tool_reply

                def SCRIPTED(case_id):
                    client = FakeClient([{actions} text_reply("Done."), text_reply("Bye.")])
                    client.endpoint = type("E", (), {{"model": "scripted"}})()
                    return client

                def pytest_commerce_evals_make_user(config, case):
                    return ScriptedCustomer(["Cancel MC0001 please.", "Yes."])
                """
            )
        )
        pytester.runpytest(
            "cases/tau2-airline",
            "-p",
            "no:cacheprovider",
            "--commerce-no-judge",
            "--commerce-store=none",
            "--commerce-json=out.json",
        )
        (trial,) = json.loads((pytester.path / "out.json").read_text())["trials"]
        return trial

    done = run('tool_reply("cancel_reservation", reservation_id="MC0001"),')
    assert done["case_id"] == "tau2_airline-000-task-0" and done["outcome"] == "pass", done
    assert done["snapshot"]["data"]["reservations"]["MC0001"]["status"] == "cancelled"
    undone = run('tool_reply("get_reservation_details", reservation_id="MC0001"),')
    assert undone["outcome"] == "fail"
    assert any(f.startswith("same_state_as") for f in undone["failures"])


def test_a_simulation_that_ended_in_the_agents_error_fails_as_tau2_rewards_it(tmp_path):
    # τ² rewards a simulation terminated prematurely 0, whatever its final state: a passing
    # trajectory that ended in an agent error is graded a failure, in parity and in a regrade
    data = json.loads((DATA / "results.json").read_text(encoding="utf-8"))
    [ok] = [s for s in data["simulations"] if s["id"] == "sim-0-ok"]
    ok["termination_reason"] = "agent_error"
    ok["reward_info"] = {**(ok.get("reward_info") or {}), "reward": 0.0}
    data["simulations"] = [ok]
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    [verdict] = parity(path, DB).verdicts
    assert (verdict.ours, verdict.theirs) == (False, False)
    assert any("ended in the agent's error" in f for f in verdict.failures), verdict.failures


def _results_file(tmp_path: Path, simulations: list, tasks: list | None = None) -> Path:
    data = json.loads((DATA / "results.json").read_text(encoding="utf-8"))
    data["simulations"] = simulations
    if tasks is not None:
        data["tasks"] = tasks
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_simulation_without_a_termination_reason_is_graded_as_tau2_graded_it(tmp_path):
    # τ²'s earlier results files record no termination_reason (nor task_id): τ²'s evaluator of
    # that time gave a reward without grading only to a simulation terminated prematurely, and
    # noted it in the reward; any other was graded on its task's criteria, and so it is here
    simulations = json.loads((DATA / "results.json").read_text(encoding="utf-8"))["simulations"]
    for simulation in simulations:
        del simulation["termination_reason"]
    labelled = parity(_results_file(tmp_path, simulations), DB)
    assert [(v.simulation, v.ours, v.theirs) for v in labelled.verdicts] == [
        ("sim-0-ok", True, True),
        ("sim-0-bad", False, False),
        ("sim-1-ok", True, True),
        ("sim-2-mislabelled", False, True),
        ("sim-0-unflagged", True, True),
    ]
    results = load_results(tmp_path / "results.json")
    assert trial_of(results, results.simulations[0], backend)[0].ended == "customer"
    for simulation in simulations:  # the earlier files' format: no task ids either
        del simulation["task_id"]
    unlabelled = parity(_results_file(tmp_path, simulations), DB)
    assert [v.relabelled for v in unlabelled.verdicts] == [True, False, True, True, True]
    assert all(v.relabelled == v.theirs for v in unlabelled.verdicts)


@pytest.mark.parametrize(
    "note, ended",
    [
        ("TerminationReason.MAX_STEPS", "max_turns"),  # τ²'s first evaluator wrote the enum
        ("too_many_errors", "agent_error"),  # its later one the value
        ("agent_error", "agent_error"),
    ],
)
def test_a_premature_ending_noted_in_the_reward_fails_without_a_termination_reason(
    tmp_path, note, ended
):
    simulations = json.loads((DATA / "results.json").read_text(encoding="utf-8"))["simulations"]
    [ok] = [s for s in simulations if s["id"] == "sim-0-ok"]  # a trajectory that passes
    del ok["termination_reason"]
    ok["reward_info"] = {
        "reward": 0.0,
        "info": {"note": f"Simulation terminated prematurely. Termination reason: {note}"},
    }
    path = _results_file(tmp_path, [ok])
    results = load_results(path)
    assert trial_of(results, ok, backend)[0].ended == ended
    [verdict] = parity(path, DB).verdicts
    assert (verdict.ours, verdict.theirs, verdict.defects) == (False, False, [])


def _no_actions_task(tasks: list) -> dict:
    # a task without gold actions: its gold state is the database as loaded
    task = json.loads(json.dumps(tasks[1]))
    task["id"] = "3"
    task["evaluation_criteria"].update(actions=[], communicate_info=[])
    return task


def test_the_relabel_check_covers_a_simulation_tau2_recorded_no_gold_actions_for(tmp_path):
    # τ²'s action evaluator records no action_checks for a task without gold actions, and notes
    # it: a simulation labelled with a task that has some was graded against another task
    data = json.loads((DATA / "results.json").read_text(encoding="utf-8"))
    tasks = [*data["tasks"], _no_actions_task(data["tasks"])]
    [look] = [s for s in data["simulations"] if s["id"] == "sim-1-ok"]  # changes nothing
    look.update(id="sim-0-no-actions", task_id="0")
    look["reward_info"] = {
        "reward": 1.0,
        "db_check": {"db_match": True, "db_reward": 1.0},
        "action_checks": None,
        "communicate_checks": [],
        "reward_basis": ["DB", "COMMUNICATE"],
        "info": {
            "env": None,
            "nl": None,
            "communicate": {"note": "No communicate_info to evaluate"},
            "action": {"note": "No actions to evaluate"},
        },
    }
    # a simulation τ² did not grade on its criteria records no action check: nothing to compare
    [premature] = [s for s in data["simulations"] if s["id"] == "sim-0-bad"]
    premature.update(termination_reason="max_steps")
    premature["reward_info"] = {
        "reward": 0.0,
        "reward_basis": None,
        "info": {"note": "Simulation terminated prematurely. Termination reason: max_steps"},
    }
    path = _results_file(tmp_path, [look, premature], tasks)
    results = load_results(path)
    _, defects = trial_of(results, look, backend)
    assert [(d.kind, d.evidence) for d in defects] == [
        (
            "task-id",
            "τ² graded it against no gold actions, not task 0's 2 "
            "(the file's tasks without any: 3)",
        )
    ]
    assert trial_of(results, premature, backend)[1] == []
    relabelled, cut = parity(path, DB).verdicts
    assert (relabelled.ours, relabelled.theirs, relabelled.relabelled) == (False, True, True)
    assert relabelled.kind == "data defect"
    assert (cut.ours, cut.theirs, cut.relabelled, cut.defects) == (False, False, None, [])
