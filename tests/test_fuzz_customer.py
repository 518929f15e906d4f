"""The simulated customer's hook never makes the agent fail: property tests over what
`pytest_commerce_evals_make_user` returns or raises and over what a customer's `reply` gives or
raises, turn after turn. A conversation ends as the customer's (`ended`: `customer` or
`max_turns`), every message recorded as plain text, or as a `UserError` saying what the customer
did; never anything else, so a broken customer is never counted against the agent.

The default run spends a bounded budget (`COMMERCE_FUZZ_EXAMPLES` examples per property, 200
unless set); docs/fuzzing.md says how to run a long campaign.
"""

from __future__ import annotations

import os
import types

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_commerce_evals import Text, TurnEnd
from pytest_commerce_evals.cases.case import Case
from pytest_commerce_evals.customer import UserError
from pytest_commerce_evals.results import TrialRecord, TrialSpec
from pytest_commerce_evals.runner.trial import converse, make_customer

EXAMPLES = int(os.environ.get("COMMERCE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


class _Sly(str):
    """Text whose methods misbehave."""

    def strip(self, *args):
        raise RuntimeError("sly")

    def __contains__(self, other):
        raise RuntimeError("sly")


class _Odd(BaseException):
    pass


class _Broken:
    """An object whose every use raises."""

    def __str__(self):
        raise RuntimeError("no str")

    __repr__ = __str__

    def __eq__(self, other):
        raise RuntimeError("no eq")

    __hash__ = None  # type: ignore[assignment]


EXCEPTIONS = [ValueError("v"), RuntimeError("r"), _Odd("odd"), RecursionError(), MemoryError(),
              UnicodeError("u"), StopIteration(), GeneratorExit()]  # fmt: skip
text = st.text(max_size=40) | st.sampled_from(
    ["", "  ", "###STOP###", "ok ###STOP###", "Assistant: done", "Which order?", "\ud800",
     '{"tool_calls": []}', "x" * 5000]
)  # fmt: skip
said = st.one_of(
    text,
    text.map(_Sly),
    st.none(),
    st.integers(),
    st.floats(),
    st.lists(text, max_size=2),
    st.dictionaries(text, text, max_size=2),
    st.just(_Broken()),
    st.sampled_from(EXCEPTIONS).map(lambda e: ("raise", e)),
)
reused = st.one_of(st.none(), st.integers(-2, 2), st.just("1"), st.just(True), st.just(_Broken()))

CASE = Case.model_validate(
    {
        "id": "orders-001-fuzz",
        "priority": "high",
        "difficulty": "easy",
        "user": {"instructions": "You want to cancel W1.", "max_turns": 3},
    }
)


@FUZZ
@given(replies=st.lists(said, min_size=1, max_size=4), counts=st.lists(reused, max_size=4))
def test_whatever_a_customer_says_or_raises_ends_as_the_customers(replies, counts):
    class Customer:
        def __init__(self):
            self.reused = counts[0] if counts else None
            self.n = 0

        def reply(self, case, conversation):
            given_back = replies[min(self.n, len(replies) - 1)]
            self.n += 1
            if counts:  # a cache count that moves any way, or is no count at all
                self.reused = counts[min(self.n, len(counts) - 1)]
            if isinstance(given_back, tuple):
                raise given_back[1]
            return given_back

    record = TrialRecord.begin(TrialSpec(CASE, trial=1, trials=1, set_name="s", threshold=0.8))

    def turn(message):
        record.turns.append([Text(text="Which order?"), TurnEnd(turn=len(record.turns))])

    try:
        converse(CASE, record, Customer(), turn)
    except UserError as exc:
        assert str(exc).startswith("the simulated customer"), str(exc)
        return
    assert record.ended in ("customer", "max_turns")
    assert all(type(m) is str for m in record.messages)
    assert all(0 <= n < len(record.messages) for n in record.cached)
    TrialRecord.model_validate(record.model_dump())  # what it recorded is a valid record


made = st.one_of(
    st.none(),
    st.integers(),
    text,
    st.just(types.SimpleNamespace(reply="not callable")),
    st.just(types.SimpleNamespace(reply=lambda case, conversation: "hi")),
    st.sampled_from(EXCEPTIONS).map(lambda e: ("raise", e)),
)


@FUZZ
@given(what=made)
def test_whatever_the_hook_returns_or_raises_is_a_customer_or_a_user_error(what):
    def hook(config, case):
        if isinstance(what, tuple):
            raise what[1]
        return what

    config = types.SimpleNamespace(hook=types.SimpleNamespace(pytest_commerce_evals_make_user=hook))
    try:
        customer = make_customer(config, CASE)  # type: ignore[arg-type]
    except UserError as exc:
        assert "pytest_commerce_evals_make_user" in str(exc)
        return
    assert callable(customer.reply) and not isinstance(what, tuple)
