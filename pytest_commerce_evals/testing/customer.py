"""Scripted simulated customers, for tests and for running conversational cases without a model:
`ScriptedCustomer` says its messages in order, then the case's stop marker; `BriefCustomer`
says what the case's own `user:` block says, so nothing is kept apart from the case."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["BriefCustomer", "ScriptedCustomer"]


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


class BriefCustomer:
    """A customer with no model that plays the case's own brief: its first message (when neither
    `turns` nor `opening` gives one) is `user.instructions` (an attacker's: its `user.attack.goal`),
    the next `user.knows` (when the
    case has it), then it ends the conversation (`user.stop`). The vacuity check plays every
    degenerate agent against it; a team's offline runs and tests can too, with nothing to keep
    in step with the case. Make one per trial."""

    def __init__(self) -> None:
        self.told = False

    def reply(self, case: Any, conversation: Sequence[Any]) -> str:
        spec = case.user
        if not any(m.role == "customer" for m in conversation):
            # an attacker says its goal: what the attack must not get is what it asks for
            return str(spec.attack.goal if spec.attack is not None else spec.instructions)
        if not self.told and spec.knows:
            self.told = True
            return str(spec.knows)
        return str(spec.stop)
