"""What the three example shops share: a small store (the team's backend) and a stand-in for the
team's model, so the examples run offline.

`Store` is what a shop agent's tools act on: a catalog, a cart, a memory of the customer's
preferences, and orders (cancelling one needs a person's approval). `shop_client()` is a scripted
model (a `FakeClient` answering by rule from the conversation) that a real team replaces with its
model: it searches before it adds, compares by reading both products, saves what the customer
asks it to remember, and cancels an order after looking it up. Each reply reports 120 input
and 30 output tokens, as a real model reports its usage.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_commerce_evals.testing import FakeClient, FakeReply

CATALOG = {
    "shoe-001": {"title": "Trail runner", "price": 89.0},
    "shoe-002": {"title": "Road racer", "price": 120.0},
    "bag-001": {"title": "Vegan tote", "price": 35.0},
}


class Store:
    """The team's shop backend: plain data and the operations its tools call."""

    def __init__(self) -> None:
        self.cart: dict[str, int] = {}
        self.memory: list[str] = []
        self.orders: dict[str, dict[str, Any]] = {
            "W1": {"status": "pending", "items": ["shoe-001"]}
        }

    def search(self, query: str) -> list[dict[str, Any]]:
        words = query.lower().split()
        return [
            {"id": pid, **item}
            for pid, item in CATALOG.items()
            if any(w in item["title"].lower() or w in pid for w in words)
        ]

    def details(self, product_id: str) -> dict[str, Any]:
        if product_id not in CATALOG:
            raise KeyError(f"no product {product_id}")
        return {"id": product_id, **CATALOG[product_id]}

    def add(self, product_id: str, quantity: int = 1) -> str:
        if product_id not in CATALOG:
            raise KeyError(f"no product {product_id}")
        if quantity < 1:
            raise ValueError("quantity must be at least 1")
        self.cart[product_id] = self.cart.get(product_id, 0) + quantity
        return f"added {quantity} x {product_id}"

    def remember(self, note: str) -> str:
        self.memory.append(note)
        return "saved"

    def order(self, order_id: str) -> dict[str, Any]:
        if order_id not in self.orders:
            raise KeyError(f"no order {order_id}")
        return {"id": order_id, **self.orders[order_id]}

    def cancel(self, order_id: str, reason: str) -> str:
        order = self.orders.get(order_id)
        if order is None or order["status"] != "pending":
            raise ValueError(f"order {order_id} cannot be cancelled")
        order["status"] = "cancelled"
        order["reason"] = reason
        return f"order {order_id} cancelled; refund of 89.00 on its way"


# -- the stand-in for the team's model ----------------------------------------------------------

USAGE = {"input_tokens": 120, "output_tokens": 30}


def _last_user(messages: list[dict[str, Any]]) -> int:
    return max(i for i, m in enumerate(messages) if m.get("role") == "user")


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


def _answers(messages: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(tool, output) of this turn's calls so far, in order."""
    names = {}
    out = []
    for m in messages[_last_user(messages) :]:
        for call in m.get("tool_calls") or []:
            names[call["id"]] = call["function"]["name"]
        if m.get("role") == "tool":
            out.append((names.get(m.get("tool_call_id"), "?"), _text(m.get("content"))))
    return out


def _call(name: str, **arguments: Any) -> FakeReply:
    return FakeReply(tool_calls=[(name, arguments)])


def policy(request: dict[str, Any]) -> Any:
    """The next reply, by rule, from the request's messages."""
    messages = request["messages"]
    said = _text(messages[_last_user(messages)].get("content")).lower()
    done = _answers(messages)
    called = [name for name, _ in done]
    last = done[-1][1] if done else ""
    if "cancel" in said and "w1" in said:
        if "get_order" not in called:
            return _call("get_order", order_id="W1")
        if "cancel_order" not in called:
            return _call("cancel_order", order_id="W1", reason="no longer needed")
        return f"Done: {last}." if "cancelled" in last else f"I could not cancel it: {last}"
    if "w1" in said:
        if not called:
            return _call("get_order", order_id="W1")
        return f"Order W1: {last}."
    if "compare" in said:
        ids = re.findall(r"[a-z]+-\d{3}", said)[:2]
        for pid in ids:
            if pid not in json.dumps(done):
                return _call("get_product_details", product_id=pid)
        return "; ".join(f"{pid} costs {CATALOG[pid]['price']:.2f}" for pid in ids) + "."
    if "remember" in said:
        if not called:
            return _call("save_memory", note=said.split("remember", 1)[1].strip(" :.,"))
        return "I will remember that."
    if "add" in said or "buy" in said:
        if not called:
            return _call("search_products", query=said.split()[-1].strip(".?!"))
        if called == ["search_products"]:
            found = re.findall(r"[a-z]+-\d{3}", last)
            return _call("add_to_cart", product_id=found[0]) if found else "Nothing matched."
        return f"Added to your cart: {last}."
    if not called:
        return _call("search_products", query=said.split()[-1].strip(".?!"))
    return "Found: " + ", ".join(re.findall(r"[a-z]+-\d{3}", last)) + "."


def shop_client() -> FakeClient:
    """The scripted model the examples run on (a real team passes its own model instead)."""
    return FakeClient(policy, model="shop-model", usage=USAGE)
