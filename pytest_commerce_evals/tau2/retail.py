"""A τ²-bench retail backend: the domain's tools over its database (`db.json`: products with
variants, users with payment methods, orders), loaded fresh per trial, with the tool semantics
τ²-bench documents for its retail domain (a pending order can be cancelled, modified once in its
items, in its address or payment; a delivered order returned or exchanged once).

It implements the plugin's backend protocol (`load_state`, `snapshot`, `call_tool`). The
snapshot's `data` holds what the trial changed: each user and order that differs from the
database as loaded, in full (`{"users": {...}, "orders": {...}}`), so two runs compare exactly
when they leave the same database, and a record stays small. Money is computed in cents
(`Decimal`) and kept in the database's own form, a number with two decimals.

    backend = RetailBackend.load("path/to/tau2-bench/data/tau2/domains/retail/db.json")
    backend.call_tool("cancel_pending_order", {"order_id": "#W1", "reason": "ordered by mistake"})
"""

from __future__ import annotations

import ast
import copy
import json
import threading
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any

from ..backend import Snapshot
from ..cases.case import State
from ..errors import RetailError

__all__ = ["READ_TOOLS", "TOOLS", "WRITE_TOOLS", "RetailBackend", "RetailError"]

CANCEL_REASONS = ("no longer needed", "ordered by mistake")


_CACHE: dict[str, dict[str, Any]] = {}
_CACHE_LOCK = threading.Lock()


def _load_db(path: Path) -> dict[str, Any]:
    key = str(path.resolve())
    with _CACHE_LOCK:
        if key not in _CACHE:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise RetailError(f"{path}: not a τ² retail database ({exc})") from None
            missing = {"products", "users", "orders"} - set(data if isinstance(data, dict) else ())
            if missing:
                raise RetailError(
                    f"{path}: not a τ² retail database: no {', '.join(sorted(missing))}"
                )
            _CACHE[key] = data
        return _CACHE[key]


def _cents(value: Any) -> Decimal:
    return Decimal(str(value)).quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN)


def _money(value: Decimal) -> float:
    """A sum as the database keeps it: a number with two decimals."""
    return float(value.quantize(Decimal("0.01"), rounding=ROUND_HALF_EVEN))


class RetailBackend:
    """One trial's copy of a τ² retail database and the domain's tools over it."""

    def __init__(self, db: dict[str, Any]) -> None:
        self.initial = db
        self.db = copy.deepcopy(db)
        self.touched: dict[str, set[str]] = {"users": set(), "orders": set()}

    @classmethod
    def load(cls, path: Path | str) -> RetailBackend:
        """A fresh backend over the database at `path` (read once per process, copied per
        trial)."""
        return cls(_load_db(Path(path)))

    # -- the backend protocol ------------------------------------------------------------------

    def load_state(self, state: State) -> None:
        """τ² tasks start from the database as shipped: a case's `state` must be empty."""
        if state.cart or state.memory or state.staged_changes or state.seen_products:
            raise RetailError("a τ² retail case starts from the database: give it no state")

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
        """Run tool `name` with `arguments`; a refused call raises `RetailError` (an unknown
        tool or argument too), and changes nothing."""
        tool = TOOLS.get(name)
        if tool is None:
            raise RetailError(f"Tool '{name}' not found.")
        if not isinstance(arguments, dict):
            raise RetailError(f"{name}: arguments are a mapping; found {type(arguments).__name__}")
        try:
            return tool(self, **arguments)
        except TypeError as exc:  # a missing or unexpected argument
            raise RetailError(f"{name}: {exc}") from None

    # -- lookups -------------------------------------------------------------------------------

    def _order(self, order_id: str) -> dict[str, Any]:
        order = self.db["orders"].get(order_id)
        if order is None:
            raise RetailError("Order not found")
        return order

    def _user(self, user_id: str) -> dict[str, Any]:
        user = self.db["users"].get(user_id)
        if user is None:
            raise RetailError("User not found")
        return user

    def _product(self, product_id: str) -> dict[str, Any]:
        product = self.db["products"].get(product_id)
        if product is None:
            raise RetailError("Product not found")
        return product

    def _variant(self, product_id: str, item_id: str) -> dict[str, Any]:
        variant = self._product(product_id)["variants"].get(item_id)
        if variant is None:
            raise RetailError("Variant not found")
        return variant

    def _payment(self, user_id: str, method_id: str) -> dict[str, Any]:
        method = self._user(user_id)["payment_methods"].get(method_id)
        if method is None:
            raise RetailError("Payment method not found")
        return method

    def _touch(self, order: dict[str, Any]) -> None:
        self.touched["orders"].add(order["order_id"])
        self.touched["users"].add(order["user_id"])


def _is_gift_card(method: dict[str, Any]) -> bool:
    return method.get("source") == "gift_card"


def _add_balance(method: dict[str, Any], amount: Decimal) -> None:
    method["balance"] = _money(_cents(method.get("balance", 0)) + amount)


def _missing(wanted: list[str], have: list[str]) -> str | None:
    """The first id of `wanted` that `have` holds fewer times (duplicates count); None."""
    return next((i for i in wanted if wanted.count(i) > have.count(i)), None)


# -- the tools ---------------------------------------------------------------------------------


def calculate(b: RetailBackend, expression: str) -> str:
    """An arithmetic expression of numbers, + - * / and parentheses, to two decimals."""
    if not set(expression) <= set("0123456789+-*/(). "):
        raise RetailError("Invalid characters in expression")
    try:
        value = _arithmetic(ast.parse(expression, mode="eval").body)
        return str(round(float(value), 2))
    except (SyntaxError, ZeroDivisionError, ValueError, OverflowError) as exc:
        raise RetailError(f"Error: {exc}") from None
    except (RecursionError, MemoryError):  # nested past what the parser or this walk can hold
        raise RetailError("Error: the expression is nested too deeply") from None


_OPERATORS: dict[type, Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
}


def _arithmetic(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _arithmetic(node.operand)
        return -inner if isinstance(node.op, ast.USub) else inner
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_arithmetic(node.left), _arithmetic(node.right))
    raise ValueError("only numbers, + - * / and parentheses")


def find_user_id_by_name_zip(b: RetailBackend, first_name: str, last_name: str, zip: str) -> str:  # noqa: A002
    for user_id, user in b.db["users"].items():
        name = user["name"]
        if (
            name["first_name"].lower() == str(first_name).lower()
            and name["last_name"].lower() == str(last_name).lower()
            and user["address"]["zip"] == zip
        ):
            return user_id
    raise RetailError("User not found")


def find_user_id_by_email(b: RetailBackend, email: str) -> str:
    for user_id, user in b.db["users"].items():
        if user["email"].lower() == str(email).lower():
            return user_id
    raise RetailError("User not found")


def get_order_details(b: RetailBackend, order_id: str) -> dict[str, Any]:
    return b._order(order_id)


def get_product_details(b: RetailBackend, product_id: str) -> dict[str, Any]:
    return b._product(product_id)


def get_item_details(b: RetailBackend, item_id: str) -> dict[str, Any]:
    for product in b.db["products"].values():
        if item_id in product["variants"]:
            return product["variants"][item_id]
    raise RetailError("Item not found")


def get_user_details(b: RetailBackend, user_id: str) -> dict[str, Any]:
    return b._user(user_id)


def list_all_product_types(b: RetailBackend) -> str:
    names = {p["name"]: p["product_id"] for p in b.db["products"].values()}
    return json.dumps(names, sort_keys=True)


def transfer_to_human_agents(b: RetailBackend, summary: str) -> str:
    return "Transfer successful"


def cancel_pending_order(b: RetailBackend, order_id: str, reason: str) -> dict[str, Any]:
    """A pending order, cancelled for one of `CANCEL_REASONS`; every payment refunded (at once
    to a gift card)."""
    order = b._order(order_id)
    if order["status"] != "pending":
        raise RetailError("Non-pending order cannot be cancelled")
    if reason not in CANCEL_REASONS:
        raise RetailError("Invalid reason")
    refunds = []
    for payment in order["payment_history"]:
        method = b._payment(order["user_id"], payment["payment_method_id"])
        refunds.append(
            {
                "transaction_type": "refund",
                "amount": payment["amount"],
                "payment_method_id": payment["payment_method_id"],
            }
        )
        if _is_gift_card(method):
            _add_balance(method, _cents(payment["amount"]))
    order["status"] = "cancelled"
    order["cancel_reason"] = reason
    order["payment_history"].extend(refunds)
    b._touch(order)
    return order


def _price_difference(
    b: RetailBackend, order: dict[str, Any], item_ids: list[str], new_item_ids: list[str]
) -> tuple[Decimal, list[dict[str, Any]]]:
    """What the new items cost more than the old (negative: less), and each new variant; a
    `RetailError` for an item the order does not hold or a new one not available."""
    if len(item_ids) != len(new_item_ids):
        raise RetailError("The number of items to be exchanged should match.")
    total = Decimal("0")
    variants = []
    for item_id, new_item_id in zip(item_ids, new_item_ids, strict=True):
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise RetailError(f"Item {item_id} not found")
        variant = b._variant(item["product_id"], new_item_id)
        if not variant.get("available"):
            raise RetailError(f"New item {new_item_id} not found or available")
        total += _cents(variant["price"]) - _cents(item["price"])
        variants.append(variant)
    return total, variants


def exchange_delivered_order_items(
    b: RetailBackend,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> dict[str, Any]:
    """A delivered order's items, each for another variant of the same product; the order
    becomes `exchange requested` (once: a later exchange or return is refused)."""
    order = b._order(order_id)
    if order["status"] != "delivered":
        raise RetailError("Non-delivered order cannot be exchanged")
    missing = _missing(item_ids, [i["item_id"] for i in order["items"]])
    if missing is not None:
        raise RetailError(f"Number of {missing} not found.")
    difference, _ = _price_difference(b, order, item_ids, new_item_ids)
    method = b._payment(order["user_id"], payment_method_id)
    if _is_gift_card(method) and _cents(method.get("balance", 0)) < difference:
        raise RetailError("Insufficient gift card balance to pay for the price difference")
    order["status"] = "exchange requested"
    order["exchange_items"] = sorted(item_ids)
    order["exchange_new_items"] = sorted(new_item_ids)
    order["exchange_payment_method_id"] = payment_method_id
    order["exchange_price_difference"] = _money(difference)
    b._touch(order)
    return order


def return_delivered_order_items(
    b: RetailBackend, order_id: str, item_ids: list[str], payment_method_id: str
) -> dict[str, Any]:
    """A delivered order's items returned, refunded to the original payment method or a gift
    card; the order becomes `return requested`."""
    order = b._order(order_id)
    if order["status"] != "delivered":
        raise RetailError("Non-delivered order cannot be returned")
    method = b._payment(order["user_id"], payment_method_id)
    original = order["payment_history"][0]["payment_method_id"]
    if not _is_gift_card(method) and payment_method_id != original:
        raise RetailError("Payment method should be the original payment method")
    if _missing(item_ids, [i["item_id"] for i in order["items"]]) is not None:
        raise RetailError("Some item not found")
    order["status"] = "return requested"
    order["return_items"] = sorted(item_ids)
    order["return_payment_method_id"] = payment_method_id
    b._touch(order)
    return order


def _address(
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,  # noqa: A002
) -> dict[str, str]:
    """An address as the database keeps it (its keys in the database's order)."""
    return {
        "address1": address1,
        "address2": address2,
        "city": city,
        "country": country,
        "state": state,
        "zip": zip,
    }


def modify_pending_order_address(
    b: RetailBackend,
    order_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,  # noqa: A002
) -> dict[str, Any]:
    order = b._order(order_id)
    if "pending" not in order["status"]:
        raise RetailError("Non-pending order cannot be modified")
    order["address"] = _address(address1, address2, city, state, country, zip)
    b._touch(order)
    return order


def modify_pending_order_items(
    b: RetailBackend,
    order_id: str,
    item_ids: list[str],
    new_item_ids: list[str],
    payment_method_id: str,
) -> dict[str, Any]:
    """A pending order's items, each for another variant of the same product (once: the order
    becomes `pending (item modified)`), the difference paid or refunded."""
    order = b._order(order_id)
    if order["status"] != "pending":
        raise RetailError("Non-pending order cannot be modified")
    missing = _missing(item_ids, [i["item_id"] for i in order["items"]])
    if missing is not None:
        raise RetailError(f"{missing} not found")
    if any(old == new for old, new in zip(item_ids, new_item_ids, strict=False)):
        raise RetailError("The new item id should be different from the old item id")
    difference, variants = _price_difference(b, order, item_ids, new_item_ids)
    method = b._payment(order["user_id"], payment_method_id)
    if _is_gift_card(method) and _cents(method.get("balance", 0)) < difference:
        raise RetailError("Insufficient gift card balance to pay for the new item")
    order["payment_history"].append(
        {
            "transaction_type": "payment" if difference > 0 else "refund",
            "amount": _money(abs(difference)),
            "payment_method_id": payment_method_id,
        }
    )
    if _is_gift_card(method):
        _add_balance(method, -difference)
    for item_id, new_item_id, variant in zip(item_ids, new_item_ids, variants, strict=True):
        item = next(i for i in order["items"] if i["item_id"] == item_id)
        item["item_id"] = new_item_id
        item["price"] = variant["price"]
        item["options"] = copy.deepcopy(variant["options"])
    order["status"] = "pending (item modified)"
    b._touch(order)
    return order


def modify_pending_order_payment(
    b: RetailBackend, order_id: str, payment_method_id: str
) -> dict[str, Any]:
    """A pending order paid with another of the user's methods: paid anew, the old refunded."""
    order = b._order(order_id)
    if "pending" not in order["status"]:
        raise RetailError("Non-pending order cannot be modified")
    method = b._payment(order["user_id"], payment_method_id)
    history = order["payment_history"]
    if len(history) != 1 or history[0]["transaction_type"] != "payment":
        raise RetailError("There should be exactly one payment for a pending order")
    old_id = history[0]["payment_method_id"]
    if old_id == payment_method_id:
        raise RetailError("The new payment method should be different from the current one")
    amount = _cents(history[0]["amount"])
    if _is_gift_card(method) and _cents(method.get("balance", 0)) < amount:
        raise RetailError("Insufficient gift card balance to pay for the order")
    history.extend(
        [
            {
                "transaction_type": "payment",
                "amount": history[0]["amount"],
                "payment_method_id": payment_method_id,
            },
            {
                "transaction_type": "refund",
                "amount": history[0]["amount"],
                "payment_method_id": old_id,
            },
        ]
    )
    if _is_gift_card(method):
        _add_balance(method, -amount)
    old = b._payment(order["user_id"], old_id)
    if _is_gift_card(old):
        _add_balance(old, amount)
    b._touch(order)
    return order


def modify_user_address(
    b: RetailBackend,
    user_id: str,
    address1: str,
    address2: str,
    city: str,
    state: str,
    country: str,
    zip: str,  # noqa: A002
) -> dict[str, Any]:
    user = b._user(user_id)
    user["address"] = _address(address1, address2, city, state, country, zip)
    b.touched["users"].add(user_id)
    return user


TOOLS: dict[str, Callable[..., Any]] = {
    fn.__name__: fn
    for fn in (
        calculate,
        cancel_pending_order,
        exchange_delivered_order_items,
        find_user_id_by_name_zip,
        find_user_id_by_email,
        get_order_details,
        get_product_details,
        get_item_details,
        get_user_details,
        list_all_product_types,
        modify_pending_order_address,
        modify_pending_order_items,
        modify_pending_order_payment,
        modify_user_address,
        return_delivered_order_items,
        transfer_to_human_agents,
    )
}
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
