"""τ²-bench's sixteen retail tools over one trial's database, answering as τ²'s tool code (commit
a2c0247) answers: the same results, the same error messages, the same state left behind.

The database is plain dicts in the shape τ²'s models dump to (`retail_model.normalized`), so a
tool returns the row itself and its JSON text is τ²'s. What τ² computes, this computes the same
way, in the same order: sums of float prices (an exchange's difference rounded to cents, an item
modification's not: `74.11999999999995` is an answer), gift card balances rounded to cents after
each change, checks in τ²'s order (the first one that fails gives the error). Values the agent
passes are used as given, so a wrong type fails as it fails in τ² (`email=None`: "'NoneType'
object has no attribute 'lower'").

Where τ²'s code and its documentation differ, this follows the code, as τ²'s rewards do (they
replay gold actions with the same code): `modify_pending_order_items` writes the price and
options of the *last* new variant onto every item it modifies.

The tools are methods of `RetailTools`, so a call with a missing or unexpected argument fails
with Python's message naming `RetailTools.<tool>()`, as τ²'s does.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..errors import RetailError
from .calculator import calculate as _calculate
from .retail_model import UserAddress, payment

__all__ = ["CANCEL_REASONS", "RetailTools"]

CANCEL_REASONS = frozenset({"no longer needed", "ordered by mistake"})


def _is_gift_card(method: dict[str, Any]) -> bool:
    return bool(method["source"] == "gift_card")


def _check_held(wanted: Any, held: list[Any], message: Callable[[Any], str]) -> None:
    """Each id of `wanted` at most as often as `held` holds it (duplicates count)."""
    for item_id in wanted:
        if wanted.count(item_id) > held.count(item_id):
            raise RetailError(message(item_id))


def _address(**fields: Any) -> dict[str, Any]:
    return UserAddress(**fields).model_dump()


class RetailTools:
    """The tools over `db` (changed in place); `touched` collects the ids of the users and
    orders a tool changed (`{"users": set(), "orders": set()}`)."""

    def __init__(self, db: dict[str, Any], touched: dict[str, set[str]]) -> None:
        self.db = db
        self.touched = touched

    # -- lookups, with τ²'s messages ----------------------------------------------------------

    def _get_order(self, order_id: Any) -> dict[str, Any]:
        orders = self.db["orders"]
        if order_id not in orders:
            raise RetailError("Order not found")
        return orders[order_id]

    def _get_user(self, user_id: Any) -> dict[str, Any]:
        users = self.db["users"]
        if user_id not in users:
            raise RetailError("User not found")
        return users[user_id]

    def _get_variant(self, product_id: Any, item_id: Any) -> dict[str, Any]:
        products = self.db["products"]
        if product_id not in products:
            raise RetailError("Product not found")
        variants = products[product_id]["variants"]
        if item_id not in variants:
            raise RetailError("Variant not found")
        return variants[item_id]

    def _get_payment_method(self, user_id: Any, method_id: Any) -> dict[str, Any]:
        methods = self._get_user(user_id)["payment_methods"]
        if method_id not in methods:
            raise RetailError("Payment method not found")
        return methods[method_id]

    def _touch(self, order: dict[str, Any]) -> None:
        self.touched["orders"].add(order["order_id"])
        self.touched["users"].add(order["user_id"])

    def _item(self, order: dict[str, Any], item_id: Any) -> dict[str, Any]:
        """The order's first item with id `item_id`."""
        item = next((i for i in order["items"] if i["item_id"] == item_id), None)
        if item is None:
            raise RetailError(f"Item {item_id} not found")
        return item

    def _price_difference(
        self, order: dict[str, Any], item_ids: Any, new_item_ids: Any, *, same_id_refused: bool
    ) -> tuple[Any, dict[str, Any]]:
        """What the new variants cost more than the items they replace (a float sum in pair
        order, starting from the integer 0), and the last new variant ({} for no pairs)."""
        difference: Any = 0
        variant: dict[str, Any] = {}
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            if same_id_refused and item_id == new_item_id:
                raise RetailError("The new item id should be different from the old item id")
            item = self._item(order, item_id)
            variant = self._get_variant(item["product_id"], new_item_id)
            if not variant["available"]:
                raise RetailError(f"New item {new_item_id} not found or available")
            difference += variant["price"] - item["price"]
        return difference, variant

    # -- the tools ------------------------------------------------------------------------------

    def calculate(self, expression: str) -> str:
        """An arithmetic expression of numbers, + - * / and parentheses, to two decimals."""
        return _calculate(expression)

    def cancel_pending_order(self, order_id: str, reason: str) -> dict[str, Any]:
        """A pending order, cancelled for one of `CANCEL_REASONS`; every payment refunded (at
        once to a gift card)."""
        order = self._get_order(order_id)
        if order["status"] != "pending":
            raise RetailError("Non-pending order cannot be cancelled")
        if reason not in CANCEL_REASONS:
            raise RetailError("Invalid reason")
        self._touch(order)
        refunds = []
        for paid in order["payment_history"]:
            refunds.append(payment("refund", paid["amount"], paid["payment_method_id"]))
            user = self._get_user(order["user_id"])
            method = self._get_payment_method(user["user_id"], paid["payment_method_id"])
            if _is_gift_card(method):
                method["balance"] = round(method["balance"] + paid["amount"], 2)
        order["status"] = "cancelled"
        order["cancel_reason"] = reason
        order["payment_history"].extend(refunds)
        return order

    def exchange_delivered_order_items(
        self,
        order_id: str,
        item_ids: list[str],
        new_item_ids: list[str],
        payment_method_id: str,
    ) -> dict[str, Any]:
        """A delivered order's items, each for another variant of the same product; the order
        becomes `exchange requested` (once: a later exchange or return is refused)."""
        order = self._get_order(order_id)
        if order["status"] != "delivered":
            raise RetailError("Non-delivered order cannot be exchanged")
        held = [item["item_id"] for item in order["items"]]
        _check_held(item_ids, held, lambda i: f"Number of {i} not found.")
        if len(item_ids) != len(new_item_ids):
            raise RetailError("The number of items to be exchanged should match.")
        difference, _ = self._price_difference(order, item_ids, new_item_ids, same_id_refused=False)
        difference = round(difference, 2)
        method = self._get_payment_method(order["user_id"], payment_method_id)
        if _is_gift_card(method) and method["balance"] < difference:
            raise RetailError("Insufficient gift card balance to pay for the price difference")
        self._touch(order)
        order["status"] = "exchange requested"
        order["exchange_items"] = sorted(item_ids)
        order["exchange_new_items"] = sorted(new_item_ids)
        order["exchange_payment_method_id"] = payment_method_id
        order["exchange_price_difference"] = difference
        return order

    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        for user_id, user in self.db["users"].items():
            name = user["name"]
            if (
                name["first_name"].lower() == first_name.lower()
                and name["last_name"].lower() == last_name.lower()
                and user["address"]["zip"] == zip
            ):
                return str(user_id)
        raise RetailError("User not found")

    def find_user_id_by_email(self, email: str) -> str:
        for user_id, user in self.db["users"].items():
            if user["email"].lower() == email.lower():
                return str(user_id)
        raise RetailError("User not found")

    def get_order_details(self, order_id: str) -> dict[str, Any]:
        return self._get_order(order_id)

    def get_product_details(self, product_id: str) -> dict[str, Any]:
        products = self.db["products"]
        if product_id not in products:
            raise RetailError("Product not found")
        return products[product_id]

    def get_item_details(self, item_id: str) -> dict[str, Any]:
        for product in self.db["products"].values():
            if item_id in product["variants"]:
                return product["variants"][item_id]
        raise RetailError("Item not found")

    def get_user_details(self, user_id: str) -> dict[str, Any]:
        return self._get_user(user_id)

    def list_all_product_types(self) -> str:
        names = {p["name"]: p["product_id"] for p in self.db["products"].values()}
        return json.dumps(names, sort_keys=True)

    def modify_pending_order_address(
        self,
        order_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> dict[str, Any]:
        order = self._get_order(order_id)
        if "pending" not in order["status"]:
            raise RetailError("Non-pending order cannot be modified")
        address = _address(
            address1=address1,
            address2=address2,
            city=city,
            state=state,
            country=country,
            zip=zip,
        )
        self._touch(order)
        order["address"] = address
        return order

    def modify_pending_order_items(
        self,
        order_id: str,
        item_ids: list[str],
        new_item_ids: list[str],
        payment_method_id: str,
    ) -> dict[str, Any]:
        """A pending order's items, each for another variant of the same product (once: the
        order becomes `pending (item modified)`), the difference paid or refunded."""
        order = self._get_order(order_id)
        if order["status"] != "pending":
            raise RetailError("Non-pending order cannot be modified")
        held = [item["item_id"] for item in order["items"]]
        _check_held(item_ids, held, lambda i: f"{i} not found")
        if len(item_ids) != len(new_item_ids):
            raise RetailError("The number of items to be exchanged should match")
        difference, variant = self._price_difference(
            order, item_ids, new_item_ids, same_id_refused=True
        )
        method = self._get_payment_method(order["user_id"], payment_method_id)
        if _is_gift_card(method) and method["balance"] < difference:
            raise RetailError("Insufficient gift card balance to pay for the new item")
        self._touch(order)
        order["payment_history"].append(
            payment("payment" if difference > 0 else "refund", abs(difference), payment_method_id)
        )
        if _is_gift_card(method):
            method["balance"] = round(method["balance"] - difference, 2)
        for item_id, new_item_id in zip(item_ids, new_item_ids, strict=False):
            # looked up again: an item renamed by an earlier pair may be the one found
            item = self._item(order, item_id)
            item["item_id"] = new_item_id
            # τ²'s code writes the last pair's variant onto every item (its docstring says each
            # item becomes its own new variant; its rewards replay the code)
            item["price"] = variant["price"]
            item["options"] = dict(variant["options"])
        order["status"] = "pending (item modified)"
        return order

    def modify_pending_order_payment(self, order_id: str, payment_method_id: str) -> dict[str, Any]:
        """A pending order paid with another of the user's methods: paid anew, the old
        refunded."""
        order = self._get_order(order_id)
        if "pending" not in order["status"]:
            raise RetailError("Non-pending order cannot be modified")
        method = self._get_payment_method(order["user_id"], payment_method_id)
        history = order["payment_history"]
        if len(history) != 1 or history[0]["transaction_type"] != "payment":
            raise RetailError("There should be exactly one payment for a pending order")
        if history[0]["payment_method_id"] == payment_method_id:
            raise RetailError("The new payment method should be different from the current one")
        amount = history[0]["amount"]
        if _is_gift_card(method) and method["balance"] < amount:
            raise RetailError("Insufficient gift card balance to pay for the order")
        self._touch(order)
        old_id = history[0]["payment_method_id"]
        history.extend(
            [payment("payment", amount, payment_method_id), payment("refund", amount, old_id)]
        )
        if _is_gift_card(method):
            method["balance"] = round(method["balance"] - amount, 2)
        old = self._get_payment_method(order["user_id"], old_id)
        if _is_gift_card(old):
            old["balance"] = round(old["balance"] + amount, 2)
        return order

    def modify_user_address(
        self,
        user_id: str,
        address1: str,
        address2: str,
        city: str,
        state: str,
        country: str,
        zip: str,
    ) -> dict[str, Any]:
        user = self._get_user(user_id)
        address = _address(
            address1=address1,
            address2=address2,
            city=city,
            state=state,
            country=country,
            zip=zip,
        )
        self.touched["users"].add(user["user_id"])
        user["address"] = address
        return user

    def return_delivered_order_items(
        self, order_id: str, item_ids: list[str], payment_method_id: str
    ) -> dict[str, Any]:
        """A delivered order's items returned, refunded to the original payment method or a
        gift card; the order becomes `return requested`."""
        order = self._get_order(order_id)
        if order["status"] != "delivered":
            raise RetailError("Non-delivered order cannot be returned")
        user = self._get_user(order["user_id"])
        method = self._get_payment_method(user["user_id"], payment_method_id)
        if (
            not _is_gift_card(method)
            and payment_method_id != order["payment_history"][0]["payment_method_id"]
        ):
            raise RetailError("Payment method should be the original payment method")
        held = [item["item_id"] for item in order["items"]]
        _check_held(item_ids, held, lambda _: "Some item not found")
        self._touch(order)
        order["status"] = "return requested"
        order["return_items"] = sorted(item_ids)
        order["return_payment_method_id"] = payment_method_id
        return order

    def transfer_to_human_agents(self, summary: str) -> str:
        return "Transfer successful"
