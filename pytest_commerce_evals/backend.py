"""What the plugin needs from a backend: state in before the first turn, final state out after."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from .case import State
from .events import CartLine, Change

__all__ = ["Backend", "Snapshot"]


@dataclass
class Snapshot:
    """The backend's state after the last turn, which the state graders read."""

    cart: list[CartLine] = field(default_factory=list)
    memory: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)


@runtime_checkable
class Backend(Protocol):
    """A fresh backend per trial: nothing leaks between trials or cases."""

    def load_state(self, state: State) -> None:
        """Inject the case's precondition (seen products, cart, memory, staged changes)."""

    def snapshot(self) -> Snapshot:
        """The final cart, memory store and change queue."""
