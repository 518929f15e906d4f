"""A τ²-bench retail backend: the domain's tools over its database (`db.json`: products with
variants, users with payment methods, orders), loaded fresh per trial, answering as τ²'s own tool
code does (`retail_tools`): a pending order can be cancelled, modified once in its items, in its
address or payment; a delivered order returned or exchanged once.

It implements the plugin's backend protocol (`load_state`, `snapshot`, `call_tool`). A tool's
result is what τ² returns, in the shape τ²'s models dump to (`retail_model`): `json.dumps` of it
is the text τ² records, and a refused call's `RetailError` message is the text τ² records after
`Error: `. The snapshot's `data` holds what the trial changed: each user and order that differs
from the database as loaded, in full (`{"users": {...}, "orders": {...}}`), so two runs compare
exactly when they leave the same database, and a record stays small. Money is computed as τ²
computes it, in floats (a gift card's balance rounded to cents after each change).

    backend = RetailBackend.load("path/to/tau2-bench/data/tau2/domains/retail/db.json")
    backend.call_tool("cancel_pending_order", {"order_id": "#W1", "reason": "ordered by mistake"})
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..backend import Snapshot
from ..errors import RetailError
from .database import Tau2Backend
from .retail_model import normalized
from .retail_tools import CANCEL_REASONS, RetailTools

__all__ = [
    "CANCEL_REASONS",
    "READ_TOOLS",
    "TOOLS",
    "WRITE_TOOLS",
    "RetailBackend",
    "RetailError",
    "RetailTools",
]


def _normalized(data: Any) -> dict[str, Any]:
    missing = {"products", "users", "orders"} - set(data if isinstance(data, dict) else ())
    if missing:
        raise RetailError(f"not a τ² retail database: no {', '.join(sorted(missing))}")
    try:
        return normalized(data)
    except ValidationError as exc:
        raise RetailError(f"not a τ² retail database: {str(exc)[:2000]}") from None


class RetailBackend(Tau2Backend):
    """One trial's copy of a τ² retail database and the domain's tools over it."""

    DOMAIN = "retail"
    normalize = staticmethod(_normalized)

    def __init__(self, db: dict[str, Any]) -> None:
        """A backend over `db`, a database in τ²'s shape (`retail_model.normalized`)."""
        super().__init__(db)
        self.touched: dict[str, set[str]] = {"users": set(), "orders": set()}
        self.tools = RetailTools(self.db, self.touched)

    # -- the backend protocol (`load_state`: `Tau2Backend`'s) -----------------------------------

    def snapshot(self) -> Snapshot:
        changed: dict[str, Any] = {}
        for table, ids in self.touched.items():
            rows = {
                i: copy.deepcopy(self.db[table][i])
                for i in sorted(ids)
                if self.db[table].get(i) != self.initial[table].get(i)
            }
            if rows:
                changed[table] = rows
        return Snapshot(data=changed)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run tool `name` with `arguments` as τ²'s environment runs it; whatever the tool
        raises (a refusal, a missing or unexpected argument, a value of the wrong type) comes
        back as a `RetailError` whose message is the text τ² shows after `Error: `."""
        if name not in TOOLS:
            raise RetailError(f"Tool '{name}' not found.")
        if not isinstance(arguments, dict):
            raise RetailError(f"{name}: arguments are a mapping; found {type(arguments).__name__}")
        try:
            return getattr(self.tools, name)(**arguments)
        except RetailError:
            raise
        except Exception as exc:  # τ²'s environment turns any exception into its message
            raise RetailError(str(exc)) from None

    # -- kept for tests that set a trial's data up by hand ------------------------------------

    def _user(self, user_id: str) -> dict[str, Any]:
        return self.tools._get_user(user_id)

    def _payment(self, user_id: str, method_id: str) -> dict[str, Any]:
        return self.tools._get_payment_method(user_id, method_id)


TOOLS: dict[str, Callable[..., Any]] = {
    name: getattr(RetailTools, name)
    for name in (
        "calculate",
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "find_user_id_by_name_zip",
        "find_user_id_by_email",
        "get_order_details",
        "get_product_details",
        "get_item_details",
        "get_user_details",
        "list_all_product_types",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
        "transfer_to_human_agents",
    )
}
"""The sixteen tools, by name: methods of `RetailTools` (their first parameter is `self`)."""
WRITE_TOOLS = frozenset(
    {
        "cancel_pending_order",
        "exchange_delivered_order_items",
        "modify_pending_order_address",
        "modify_pending_order_items",
        "modify_pending_order_payment",
        "modify_user_address",
        "return_delivered_order_items",
    }
)
READ_TOOLS = frozenset(TOOLS) - WRITE_TOOLS - {"calculate", "transfer_to_human_agents"}
