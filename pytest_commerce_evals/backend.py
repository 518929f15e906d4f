"""What the plugin needs from a backend: state in before the first turn, final state out after."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .cases.case import State
from .events import CartLine, Change

__all__ = ["Backend", "Snapshot"]


@dataclass
class Snapshot:
    """The backend's state after the last turn, which the state graders read.

    - `cart`: `CartLine(product_id, quantity=1, variant=None)` per line;
    - `memory`: the memory store's entries, as text;
    - `changes`: the operator's change queue, `Change(change_id, kind, product_id, fields,
      status)` with status `staged | approved | applied | rejected`, injected changes included
      (the graders tell them apart from the trial's own);
    - `data`: any other state of the domain, as JSON-like data (orders, users, addresses...),
      which `state_at` reads by path. Recorded with the trial only when it holds something.
    """

    cart: list[CartLine] = field(default_factory=list)
    memory: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_data(
        cls,
        *,
        cart: Iterable[str | Mapping[str, Any] | CartLine] | Mapping[str, int] = (),
        memory: Iterable[str] = (),
        changes: Iterable[Mapping[str, Any] | Change] = (),
        data: Mapping[str, Any] | None = None,
    ) -> Snapshot:
        """A snapshot from plain data, as a backend keeps it: cart lines as product IDs or
        mappings (`{"product_id": "shoe-1", "quantity": 2}`), or the whole cart as a mapping of
        product ID to quantity (`{"shoe-1": 2}`); memory as strings, changes as mappings, the
        domain's other state as a mapping. Raises `pydantic.ValidationError`
        naming the bad field (`TypeError` for memory that is not text or data that is not a
        mapping)."""
        if data is not None and not isinstance(data, Mapping):
            raise TypeError(f"data is a mapping; got {type(data).__name__}")
        if isinstance(cart, Mapping):
            cart = [{"product_id": pid, "quantity": quantity} for pid, quantity in cart.items()]
        lines = [
            line
            if isinstance(line, CartLine)
            else CartLine(product_id=line)
            if isinstance(line, str)
            else CartLine.model_validate(dict(line))
            for line in cart
        ]
        entries = list(memory)
        for entry in entries:
            if not isinstance(entry, str):
                raise TypeError(f"memory entries are strings; got {type(entry).__name__}")
        queue = [c if isinstance(c, Change) else Change.model_validate(dict(c)) for c in changes]
        return cls(cart=lines, memory=entries, changes=queue, data=dict(data or {}))


@runtime_checkable
class Backend(Protocol):
    """A fresh backend per trial: nothing leaks between trials or cases."""

    def load_state(self, state: State) -> None:
        """Inject the case's precondition (seen products, cart, memory, staged changes)."""

    def snapshot(self) -> Snapshot:
        """The final cart, memory store and change queue."""
