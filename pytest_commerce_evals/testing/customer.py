"""A scripted simulated customer, for tests and for running conversational cases without a model:
its messages in order, then the case's stop marker."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["ScriptedCustomer"]


class ScriptedCustomer:
    """`reply` gives `messages` one by one, then `case.user.stop` (the customer ends the
    conversation). `messages` may instead be a function `(case, conversation) -> str`, for a
    customer that answers what the assistant said. Make one per trial (it counts what it said):
    `pytest_commerce_evals_make_user` is called once per trial."""

    def __init__(self, messages: Sequence[str] | Callable[[Any, Sequence[Any]], str]) -> None:
        self._script = messages
        self.said = 0

    def reply(self, case: Any, conversation: Sequence[Any]) -> str:
        if callable(self._script):
            return self._script(case, conversation)
        script = list(self._script)
        self.said += 1
        if self.said <= len(script):
            return script[self.said - 1]
        return case.user.stop
