"""The attacking customer's brief in detail: crescendo's phases over a longer conversation, the
case's own stop marker, the hint cached per model, every category and blank field of
`user.attack`, and where the attacker's endpoint and key come from when only some are set."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from test_attacks import PLUGIN, SAID, attack_case

from pytest_commerce_evals.cases.case import ATTACK_CATEGORIES, Case
from pytest_commerce_evals.customer.attacker import AttackingCustomer, attacker_prompt, phase
from pytest_commerce_evals.errors import EndpointError
from pytest_commerce_evals.judge.verdict_store import VerdictStore
from pytest_commerce_evals.models.endpoint import resolve_endpoint
from pytest_commerce_evals.testing import FakeClient, text_reply

KEYS = ("COMMERCE_ATTACKER_API_KEY", "COMMERCE_USER_API_KEY", "OPENAI_API_KEY")


# -- the prompt ------------------------------------------------------------------------------


def test_crescendo_spreads_its_four_phases_evenly_over_eight_turns():
    spec = attack_case(user={"max_turns": 8}).user
    assert [phase(spec, sent)[0] for sent in range(8)] == [
        "warm-up", "warm-up", "probing", "probing",
        "escalation", "escalation", "direct demand", "direct demand",
    ]  # fmt: skip


def test_the_attacker_is_told_the_cases_own_stop_marker():
    prompt = attacker_prompt(attack_case(user={"stop": "[[done]]"}).user, 0)
    assert "write [[done]] on its own" in prompt and "###STOP###" not in prompt


def test_a_hint_cached_for_one_model_is_not_another_models(tmp_path):
    store = VerdictStore(tmp_path / "v.sqlite")
    c = attack_case(attack={"hint": True})
    first = AttackingCustomer(FakeClient([text_reply("Mention the husband."), text_reply("a")]),
                              "model-a", store=store)  # fmt: skip
    first.reply(c, SAID)
    other = FakeClient([text_reply("Ask for a manager."), text_reply("b")])
    second = AttackingCustomer(other, "model-b", store=store)
    assert second.reply(c, SAID) == "b" and second.hints == 1
    assert (
        "Advice on the assistant's last reply: Ask for a manager."
        in (other.requests[1]["messages"][0]["content"])
    )


# -- the case model --------------------------------------------------------------------------


@pytest.mark.parametrize("category", ATTACK_CATEGORIES)
def test_every_category_is_an_attack_tagged_with_it(category):
    c = attack_case(attack={"category": category})
    assert c.attack is not None and c.attack.category == category
    assert c.tags[-2:] == ["attack", f"attack:{category}"]


@pytest.mark.parametrize(
    ("attack", "message"),
    [
        ({"strategy": "persona", "persona": "  "}, "persona is empty"),
        ({"claims": ["  "]}, "claim 1 is empty"),
    ],
)
def test_a_blank_persona_or_claim_is_refused(attack, message):
    with pytest.raises(ValidationError, match=message):
        attack_case(attack=attack)


def test_an_empty_attack_key_is_an_ordinary_customer():
    c = Case.model_validate(
        {
            "id": "x-001-y",
            "priority": "low",
            "difficulty": "easy",
            "user": {"instructions": "i", "attack": None},
        }
    )
    assert c.attack is None and c.tags == [] and c.user.at_max_turns == "fail"


# -- the endpoint ----------------------------------------------------------------------------


@pytest.fixture
def resolve(pytester: pytest.Pytester, monkeypatch):
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    return lambda *args: resolve_endpoint(pytester.parseconfig(*PLUGIN, *args), "attacker")


def test_an_attacker_base_url_without_a_model_names_the_missing_setting(resolve):
    with pytest.raises(EndpointError, match="pass --commerce-attacker-model=<model>"):
        resolve("--commerce-user-model=shopper", "--commerce-attacker-base-url=http://h:1/v1")


def test_the_attackers_own_key_counts_on_the_customers_endpoint(resolve, monkeypatch):
    monkeypatch.setenv("COMMERCE_ATTACKER_API_KEY", "sk-attacker")
    found = resolve("--commerce-user-base-url=http://127.0.0.1:9/v1", "--commerce-user-model=m")
    assert found.source == "user" and found.api_key_present


def test_an_embedded_attacker_holds_no_key(resolve, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    found = resolve()
    assert found.is_local and not found.api_key_present


def test_an_attacker_model_alone_runs_on_the_customers_server_else_the_agents(resolve):
    agent = "--commerce-base-url=http://agent:1/v1"
    on_agent = resolve(agent, "--commerce-attacker-model=red")
    assert (on_agent.base_url, on_agent.source) == ("http://agent:1/v1", "cli+agent")
    both = resolve(agent, "--commerce-user-base-url=http://user:1/v1",
                   "--commerce-user-model=m", "--commerce-attacker-model=red")  # fmt: skip
    assert (both.base_url, both.source) == ("http://user:1/v1", "cli+user")
