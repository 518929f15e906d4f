"""The shape of τ²'s retail database, as τ²'s tools read it and show it: every table's rows with
the fields τ²'s data model declares, in its order, the optional ones present (null when unset),
every price, amount and balance a float (a `100` in `db.json` reads as `100.0`), and keys τ²'s
models ignore dropped. `normalized(data)` gives the database in that shape, as plain dicts: the
form `RetailBackend` keeps, returns (so a result's JSON text is the one τ² writes) and snapshots.

`UserAddress` is the address a tool builds from its arguments, checked as τ²'s tools check it (a
value that is not a string is refused with pydantic's message, which names `UserAddress`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["UserAddress", "normalized", "payment"]


class _Variant(BaseModel):
    item_id: str
    options: dict[str, str]
    available: bool
    price: float


class _Product(BaseModel):
    name: str
    product_id: str
    variants: dict[str, _Variant]


class _UserName(BaseModel):
    first_name: str
    last_name: str


class UserAddress(BaseModel):
    """An address: the six fields, in the order τ² shows them."""

    address1: str
    address2: str
    city: str
    country: str
    state: str
    zip: str


class _Method(BaseModel):
    source: str
    id: str


class _CreditCard(_Method):
    source: Literal["credit_card"]
    brand: str
    last_four: str


class _Paypal(_Method):
    source: Literal["paypal"]


class _GiftCard(_Method):
    source: Literal["gift_card"]
    balance: float


class _User(BaseModel):
    user_id: str
    name: _UserName
    address: UserAddress
    email: str
    payment_methods: dict[str, _CreditCard | _GiftCard | _Paypal]
    orders: list[str]


class _Fulfilment(BaseModel):
    tracking_id: list[str]
    item_ids: list[str]


class _OrderItem(BaseModel):
    name: str
    product_id: str
    item_id: str
    price: float
    options: dict[str, str]


class _Payment(BaseModel):
    transaction_type: Literal["payment", "refund"]
    amount: float
    payment_method_id: str


class _Order(BaseModel):
    order_id: str
    user_id: str
    address: UserAddress
    items: list[_OrderItem]
    status: Literal[
        "processed",
        "pending",
        "pending (item modified)",
        "delivered",
        "cancelled",
        "exchange requested",
        "return requested",
    ]
    fulfillments: list[_Fulfilment]
    payment_history: list[_Payment]
    cancel_reason: Literal["no longer needed", "ordered by mistake"] | None = None
    exchange_items: list[str] | None = None
    exchange_new_items: list[str] | None = None
    exchange_payment_method_id: str | None = None
    exchange_price_difference: float | None = None
    return_items: list[str] | None = None
    return_payment_method_id: str | None = None


class _Database(BaseModel):
    model_config = ConfigDict(extra="forbid")

    products: dict[str, _Product]
    users: dict[str, _User]
    orders: dict[str, _Order]


def normalized(data: Any) -> dict[str, Any]:
    """`data` (a parsed `db.json`) in the shape τ²'s tools show; a pydantic `ValidationError`
    (a `ValueError`) when τ² would not load it either."""
    return _Database.model_validate(data).model_dump()


def payment(transaction_type: str, amount: Any, payment_method_id: Any) -> dict[str, Any]:
    """A payment-history entry as τ²'s tools write one (the amount read as a float)."""
    return _Payment(
        transaction_type=transaction_type,  # type: ignore[arg-type]
        amount=amount,
        payment_method_id=payment_method_id,
    ).model_dump()
