"""What the reference tools show of a product and of an order: the summary a search lists, a
product's full details, its availability and delivery in words, and an order with its money
written out."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from .catalog import Availability, Order, Product
from .units import money

__all__ = ["availability_text", "delivery_text", "order_view", "product_details", "product_summary"]


def product_summary(product: Product, today: date) -> dict[str, Any]:
    """What a search result shows: no reviews (those come only from the details)."""
    out: dict[str, Any] = {
        "id": product.id,
        "title": product.title,
        "brand": product.brand,
        "niche": product.niche,
        "seller": product.seller.name,
        "first_party": product.seller.first_party,
        "price": money(product.price.today, product.price.currency),
    }
    if product.price.list != product.price.today:
        out["list_price"] = money(product.price.list, product.price.currency)
    out["availability"] = availability_text(product.availability)
    out["delivery"] = delivery_text(product, today)
    out["rating"] = f"{product.rating.average} of 5 ({product.rating.count} ratings)"
    out["attributes"] = dict(product.attributes)
    out["description"] = product.description
    return out


def product_details(product: Product, today: date, role: str = "customer") -> dict[str, Any]:
    """Everything about one product, reviews included; the supplier note only for operators."""
    out = product_summary(product, today)
    out["price_cents"] = {
        "today": product.price.today,
        "list": product.price.list,
        "currency": product.price.currency,
    }
    out["variants"] = [
        {
            "sku": v.sku,
            "label": v.label,
            **v.options,
            "availability": availability_text(v.availability or product.availability),
        }
        for v in product.variants
    ]
    out["reviews"] = [r.model_dump() for r in product.reviews]
    out["tags"] = list(product.tags)
    if role == "operator" and product.supplier_note:
        out["supplier_note"] = product.supplier_note
    return out


def availability_text(availability: Availability) -> str:
    """A product's or a variant's availability in words."""
    match availability.status:
        case "in_stock":
            return "in stock"
        case "low_stock":
            return f"low stock: {availability.count} left"
        case "out_of_stock":
            return "out of stock"
        case _:
            assert availability.available_on is not None  # a backorder has its date
            return f"backorder: ships {availability.available_on.isoformat()}"


def delivery_text(product: Product, today: date) -> str:
    """When a product ordered `today` arrives, in words."""
    if product.delivery is None:
        return "unavailable while out of stock"
    if product.delivery.days is not None:
        if product.delivery.days == 0:
            return "instant (by email)"
        by = today + timedelta(days=product.delivery.days)
        return f"{product.delivery.days} days (arrives by {by.isoformat()})"
    assert product.delivery.date is not None  # an estimate has its days or its date
    return f"arrives by {product.delivery.date.isoformat()}"


def order_view(order: Order, *, full: bool = True) -> dict[str, Any]:
    """An order as a tool shows it, its money written out; without its messages unless `full`."""
    data = order.model_dump(mode="json", by_alias=True, exclude_none=True)
    for line in data["lines"]:
        line["unit_price"] = money(line["unit_price"], order.currency)
    data["total"] = money(order.total, order.currency)
    if "return_info" in data:
        assert order.return_info is not None  # dumped without its None fields
        data["return_info"]["refund"] = money(order.return_info.refund, order.currency)
    if order.shipping is not None and order.shipping.previous_estimate is not None:
        data["shipping"]["delivery_date_changed"] = True
    if not full:
        data.pop("messages", None)
    return data
