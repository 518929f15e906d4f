"""A customer's orders: why one may be cancelled or returned, the order a cancellation or a return
leaves, and what a snapshot records of an order."""

from __future__ import annotations

from datetime import date
from typing import Any

from .catalog import Cancellation, Order, ReturnInfo
from .units import ToolError

__all__ = ["CANCEL_REASONS", "RETURN_REASONS", "cancelled", "order_state", "returned"]

CANCEL_REASONS = ("no longer needed", "ordered by mistake", "found a better price")
"""Why a customer cancels an order, as the order records it (a fixed list, so a gold action's
final state can be compared exactly)."""
RETURN_REASONS = (
    "damaged or defective",
    "wrong size or fit",
    "not as described",
    "changed my mind",
)
"""Why a customer returns an order, as the order records it."""


def cancelled(order: Order, reason: str, today: date) -> Order:
    """The order cancelled on `today` for one of `CANCEL_REASONS`; a `ToolError` when it has
    shipped (only a `placed` order can be cancelled) or the reason is not on the list."""
    if order.status != "placed":
        raise ToolError(
            f"order {order.id} is {order.status}: only an order that has not shipped "
            "(placed) can be cancelled"
        )
    if reason not in CANCEL_REASONS:
        raise ToolError(f"reason: one of {', '.join(CANCEL_REASONS)}; found {reason!r}")
    return order.model_copy(
        update={
            "status": "cancelled",
            "cancellation": Cancellation(cancelled_on=today, reason=reason),
        }
    )


def returned(order: Order, reason: str, today: date) -> Order:
    """The order returned in full on `today`, refunded in full, for one of `RETURN_REASONS`; a
    `ToolError` when it is not delivered or the reason is not on the list."""
    if order.status != "delivered":
        raise ToolError(
            f"order {order.id} is {order.status}: only a delivered order can be returned"
        )
    if reason not in RETURN_REASONS:
        raise ToolError(f"reason: one of {', '.join(RETURN_REASONS)}; found {reason!r}")
    return order.model_copy(
        update={
            "status": "returned",
            "return_info": ReturnInfo(requested_on=today, reason=reason, refund=order.total),
        }
    )


def order_state(order: Order) -> dict[str, Any]:
    """What a snapshot records of an order: its status, and its cancellation or return."""
    state: dict[str, Any] = {"status": order.status}
    if order.cancellation is not None:
        state["cancellation"] = order.cancellation.model_dump(mode="json")
    if order.return_info is not None:
        state["return_info"] = order.return_info.model_dump(mode="json")
    return state
