"""The memory policy has one classifier, shared by the guardrail and the backend."""

import pytest

from pytest_commerce_evals.reference import Guardrails, memory_policy, memory_policy_violation

from ._builders import make_backend


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("email me at ana@example.com", "email address"),
        ("my card is 4111 1111 1111 1111", "card number"),
        ("call +1 415 555 0134", "phone number"),
        ("ship to 12 Harbour Road", "street address"),
        ("has plantar fasciitis", "health condition"),
        ("prefers navy over black", None),
    ],
)
def test_the_guardrail_and_the_backend_agree_on_every_note(text, kind):
    backend = make_backend()
    blocked = Guardrails(backend).memory_policy("save_memory", {"fact": text})
    record = backend.save_memory(text)
    assert memory_policy.violation(text) == kind
    assert memory_policy_violation(text) == kind  # the public name answers the same
    assert (blocked is not None) == (kind is not None)
    assert (record.action == "dropped") == (kind is not None)


def test_both_enforcers_ask_the_one_classifier(monkeypatch):
    # a rule added to the classifier reaches the guardrail and the backend alike
    monkeypatch.setattr(
        memory_policy, "violation", lambda text: "colour" if "teal" in text else None
    )
    backend = make_backend()
    blocked = Guardrails(backend).memory_policy("save_memory", {"fact": "likes teal"})
    assert blocked is not None and blocked.reason == (
        "memory_policy: the note contains a colour; it was not stored"
    )
    assert backend.save_memory("likes teal").action == "dropped"
    assert "likes teal" not in backend.memory
    assert backend.save_memory("likes navy").action == "stored"
