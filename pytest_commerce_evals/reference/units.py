"""What the reference backend and its tools share: the error a tool raises, money as integer minor
units, and the change kinds the operator may stage."""

from __future__ import annotations

from decimal import Decimal, InvalidOperation
from typing import Any

__all__ = ["CHANGE_KINDS", "ToolError", "money", "to_minor"]

CHANGE_KINDS = (
    "price_change",
    "availability_change",
    "title_change",
    "description_change",
    "attribute_change",
    "delist",
)
_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£"}


class ToolError(Exception):
    """A tool could not do what was asked; the message goes back to the model as an error."""


def money(amount: int, currency: str = "USD") -> str:
    """Integer minor units as a display string: 12999 -> "$129.99"."""
    sign = "-" if amount < 0 else ""
    amount = abs(amount)
    symbol = _SYMBOLS.get(currency)
    figure = f"{amount // 100:,}.{amount % 100:02d}"
    return f"{sign}{symbol}{figure}" if symbol else f"{sign}{figure} {currency}"


def to_minor(value: Any, field: str = "price") -> int:
    """A price in major units (Decimal, int or numeric string; never float) as minor units."""
    if isinstance(value, bool) or isinstance(value, float):
        raise ToolError(
            f'{field}: give prices as a number of dollars like "89.99"; found {value!r}'
        )
    try:
        amount = Decimal(str(value).strip().lstrip("$"))
    except (InvalidOperation, ValueError):
        raise ToolError(f"{field}: not a price; found {value!r}") from None
    if amount < 0:
        raise ToolError(f"{field}: a price cannot be negative; found {value}")
    if amount != amount.quantize(Decimal("0.01")):
        raise ToolError(f"{field}: at most two decimals; found {value}")
    return int(amount * 100)
