"""What an imported folder's `conftest.py` reads when a trial asks: the checkout it finds
(`$COMMERCE_TAU2_CHECKOUT`, else the path written at import), and the `_tau2_agent.yaml` and
`_tau2_customer.yaml` the importer wrote beside the cases. Whatever is wrong with either is a
`ConfigurationError` naming the path, never another exception from inside."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from tau2_checkout import domain_folder, make_checkout

from pytest_commerce_evals.errors import ConfigurationError
from pytest_commerce_evals.tau2.__main__ import main as tau2_main
from pytest_commerce_evals.tau2.imported import AGENT_VIEW, CHECKOUT_ENV, CUSTOMER_VIEW, Checkout

CASE = SimpleNamespace(id="tau2_retail-000-task-0", user=None)
USER = SimpleNamespace(endpoint=SimpleNamespace(model="m"))


@pytest.fixture
def imported(tmp_path, monkeypatch, capsys) -> Checkout:
    monkeypatch.delenv(CHECKOUT_ENV, raising=False)
    root = make_checkout(tmp_path / "tau2-bench")
    assert tau2_main(["import", str(root), "--out", str(tmp_path / "cases")]) == 0
    capsys.readouterr()
    return Checkout(tmp_path / "cases" / "conftest.py", "../tau2-bench")


def _edit(path: Path, key: str, value: str) -> None:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data[key] = value
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def test_the_files_the_importer_writes_are_read_back(imported):
    agent = imported.agent(USER, "m")
    assert "<policy>\n# Retail agent policy" in agent.system_prompt
    assert agent.greeting == "Hello! What can I do for you?"
    customer = imported.customer(None, CASE, USER)
    assert "You want to cancel order #W1" in customer.system_prompt


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("[" * 1_000, "cannot be read"),  # nested past Python's limit
        ("tools: !!int abc\n", "cannot be read"),  # what PyYAML's constructors refuse
        ("tools: 2025-02-30\n", "cannot be read"),
        (b"\xff\xfe", "cannot be read"),
        ("- a\n", "expected the keys"),
    ],
)
@pytest.mark.parametrize("name", [AGENT_VIEW, CUSTOMER_VIEW])
def test_a_view_that_is_not_one_is_a_configuration_error_naming_it(imported, name, text, why):
    path = imported.folder / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigurationError, match="cannot be read|expected the keys") as caught:
        imported.customer(None, CASE, USER)  # reads both
    assert str(path) in str(caught.value) and why in str(caught.value)


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{agent_instruction} {nope} {domain_policy}", "KeyError"),
        ("{agent_instruction} { {domain_policy}", "ValueError"),
        ("{0} {agent_instruction} {domain_policy}", "IndexError"),
        ("{agent_instruction}", r"does not take \{domain_policy\} whole"),  # no policy at all
        ("{agent_instruction} {domain_policy!r}", r"does not take \{domain_policy\} whole"),
    ],
)
def test_an_agent_prompt_that_does_not_take_the_policy_whole_is_refused(imported, template, why):
    _edit(imported.folder / AGENT_VIEW, "system_prompt", template)
    with pytest.raises(ConfigurationError, match=f"{AGENT_VIEW}: system_prompt: .*{why}"):
        imported.agent(USER, "m")


@pytest.mark.parametrize(
    "template",
    [
        "{global_user_sim_guidelines_with_persona} {instructions} {x}",
        "{global_user_sim_guidelines_with_persona} {instructions.upper}",
        "{global_user_sim_guidelines_with_persona}",  # the scenario left out
    ],
)
def test_a_customer_prompt_that_does_not_take_the_scenario_whole_is_refused(imported, template):
    _edit(imported.folder / CUSTOMER_VIEW, "system_prompt", template)
    with pytest.raises(ConfigurationError, match=f"{CUSTOMER_VIEW}: system_prompt: "):
        imported.customer(None, CASE, USER)


@pytest.mark.parametrize(
    "given",
    [
        "~no-such-user-here/tau2-bench",  # a home folder that cannot be told
        "/" + "a" * 5_000,  # a name too long for the file system
        "loop",  # a link to itself
    ],
)
def test_a_checkout_variable_this_cannot_follow_is_a_configuration_error(
    imported, monkeypatch, tmp_path, given
):
    if given == "loop":
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
        given = str(tmp_path / "loop")
    monkeypatch.setenv(CHECKOUT_ENV, given)
    for read in (lambda: imported.db, imported.policy, imported.backend):
        with pytest.raises(ConfigurationError, match=CHECKOUT_ENV):
            read()


def test_a_policy_that_is_not_text_is_a_configuration_error(imported, tmp_path):
    policy = domain_folder(tmp_path / "tau2-bench") / "policy.md"
    policy.write_bytes(b"# Policy \xff\n")
    with pytest.raises(ConfigurationError, match=f"{policy}: cannot be read"):
        imported.agent(USER, "m")
    if getattr(os, "geteuid", lambda: 0)() != 0:  # root reads any file
        policy.write_text("# Policy\n")
        policy.chmod(0)
        with pytest.raises(ConfigurationError, match=f"{policy}: cannot be read"):
            imported.policy()
