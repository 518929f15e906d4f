"""The simulated customer: a model that plays the customer of a case's `user:` block, turn by
turn, with its replies cached (`simulator`); the attacking customer (`attacker`); the hook that
makes one per trial (`_plugin`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exports import lazy

if TYPE_CHECKING:
    from .attacker import AttackingCustomer
    from .simulator import (
        Customer,
        CustomerMessage,
        SimulatedCustomer,
        UserError,
        check_message,
        conversation_of,
    )

__getattr__, __dir__ = lazy(
    __name__,
    {
        "AttackingCustomer": "attacker",
        "Customer": "simulator",
        "CustomerMessage": "simulator",
        "SimulatedCustomer": "simulator",
        "UserError": "simulator",
        "check_message": "simulator",
        "conversation_of": "simulator",
    },
)

__all__ = [
    "AttackingCustomer",
    "Customer",
    "CustomerMessage",
    "SimulatedCustomer",
    "UserError",
    "check_message",
    "conversation_of",
]
