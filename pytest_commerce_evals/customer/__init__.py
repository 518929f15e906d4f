"""The simulated customer: a model that plays the customer of a case's `user:` block, turn by
turn, with its replies cached (`simulator`); the hook that makes one per trial (`_plugin`)."""

from .attacker import AttackingCustomer
from .simulator import (
    Customer,
    CustomerMessage,
    SimulatedCustomer,
    UserError,
    check_message,
    conversation_of,
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
