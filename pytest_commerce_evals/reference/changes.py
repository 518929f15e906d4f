"""The operator's staged catalog changes: the fields each kind of change takes, checked when it is
staged, and the product an approved change leaves once it is applied."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ..events import Change
from .catalog import Availability, Product
from .units import ToolError, to_minor

__all__ = ["check_fields", "edited"]


def check_fields(kind: str, product: Product, fields: dict[str, Any]) -> dict[str, Any]:
    """Validate and normalise a staged change's fields; the error names what is allowed."""
    allowed = {
        "price_change": {"price", "reason"},
        "availability_change": {"status", "count", "available_on", "reason"},
        "title_change": {"title", "reason"},
        "description_change": {"description", "reason"},
        "attribute_change": {"attributes", "reason"},
        "delist": {"reason"},
    }[kind]
    extra = sorted(set(fields) - allowed)
    if extra:
        raise ToolError(f"{kind} takes fields {sorted(allowed)}; found {extra}")
    if kind == "price_change":
        if "price" not in fields:
            raise ToolError('price_change needs fields.price, in dollars, e.g. "89.99"')
        cents = to_minor(fields["price"], "fields.price")
        if cents == 0:
            raise ToolError("fields.price: a price of zero is not a price change; use delist")
        fields["price"] = f"{Decimal(cents) / 100:.2f}"
        fields["previous_price"] = f"{Decimal(product.price.today) / 100:.2f}"
    elif kind == "availability_change":
        try:
            Availability(**{k: v for k, v in fields.items() if k != "reason"})
        except ValueError as exc:
            raise ToolError(f"availability_change fields: {exc}") from None
    elif kind in ("title_change", "description_change"):
        key = kind.removesuffix("_change")
        if not str(fields.get(key, "")).strip():
            raise ToolError(f"{kind} needs fields.{key}")
    elif kind == "attribute_change" and not isinstance(fields.get("attributes"), dict):
        raise ToolError("attribute_change needs fields.attributes, a mapping")
    return {k: (str(v) if isinstance(v, Decimal) else v) for k, v in fields.items()}


def edited(product: Product, change: Change) -> Product:
    """The product as an applied change of any kind but `delist` leaves it (a delisted product
    is not edited: the backend stops listing it)."""
    f = change.fields
    update: dict[str, Any] = {}
    if change.kind == "price_change":
        today = to_minor(f["price"])
        update["price"] = product.price.model_copy(
            update={"today": today, "list": max(today, product.price.list)}
        )
    elif change.kind == "availability_change":
        update["availability"] = Availability(**{k: v for k, v in f.items() if k != "reason"})
    elif change.kind == "title_change":
        update["title"] = f["title"]
    elif change.kind == "description_change":
        update["description"] = f["description"]
    elif change.kind == "attribute_change":
        update["attributes"] = {**product.attributes, **f["attributes"]}
    return product.model_copy(update=update)
