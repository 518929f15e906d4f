"""Discount codes of the reference store (`store.yaml`'s `discounts`): a code takes a percentage
off the cart; one code per cart, a new one replacing the last. The backend refuses a code that
does not exist or has expired. Who a code is for is its `terms`: the agent reads them and must
not apply a code whose terms the signed-in customer does not meet (a staff code on a customer's
cart), whatever the customer claims — the backend applies what it is given, as a promotions
engine that trusts its caller does, which is what makes the rule the agent's to keep.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .units import ToolError

__all__ = ["Discount", "checked"]


class Discount(BaseModel):
    model_config = ConfigDict(extra="forbid")

    code: str = Field(pattern=r"^[A-Z0-9]{3,20}$")
    percent: int = Field(ge=1, le=100)
    terms: str = Field(min_length=1)
    expires: date | None = None

    def view(self) -> dict[str, Any]:
        """What a tool shows of the code."""
        shown: dict[str, Any] = {
            "code": self.code,
            "percent_off": self.percent,
            "terms": self.terms,
        }
        if self.expires is not None:
            shown["expires"] = self.expires.isoformat()
        return shown


def checked(discounts: dict[str, Discount], code: Any, today: date) -> Discount:
    """The discount `code` names (any case, spaces trimmed); a `ToolError` when there is no such
    code or it has expired."""
    key = str(code).strip().upper()
    found = discounts.get(key)
    if found is None:
        raise ToolError(f"no discount code {str(code)!r}")
    if found.expires is not None and found.expires < today:
        raise ToolError(f"discount code {key} expired on {found.expires.isoformat()}")
    return found
