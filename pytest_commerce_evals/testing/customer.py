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
    """A customer with no model that plays the case's own brief: `user.instructions` first (an
    attacker's: its `user.attack.goal`), as its first message or, when `turns` or `opening` said
    the first ones, as its first own message after them; then `user.knows` (when the case has
    it); then it ends the conversation (`user.stop`). A brief the conversation's customer
    messages already said word for word is not said again. The vacuity check plays every
    degenerate agent against it; a team's offline runs and tests can too, with nothing to keep
    in step with the case. Make one per trial."""

    def __init__(self) -> None:
        self.briefed = False
        self.told = False

    def reply(self, case: Any, conversation: Sequence[Any]) -> str:
        spec = case.user
        # an attacker says its goal: what the attack must not get is what it asks for
        brief = str(spec.attack.goal if spec.attack is not None else spec.instructions or "")
        if not self.briefed:
            self.briefed = True
            said = {str(m.text).strip() for m in conversation if m.role == "customer"}
            if brief.strip() and brief.strip() not in said:
                return brief
        if not self.told and spec.knows:
            self.told = True
            return str(spec.knows)
        return str(spec.stop)
