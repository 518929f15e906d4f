"""The records of τ²-bench's airline domain as plain dicts, and the checks τ² makes when it builds
one: each record's fields in τ²'s order (what its `model_dump()` gives: a missing optional field
as null, a gift card's or certificate's amount as a float, a payment's as an integer), and a
refused value reported in the text τ²'s agent reads (its data library's validation report, the
library's documentation version `DOCS_VERSION` in each entry's link).

    passenger = build("Passenger", {"first_name": "Ada", "last_name": "Byron", "dob": "1815-12-10"})
"""

from __future__ import annotations

import math
import re
from typing import Any

from ..errors import RetailError

__all__ = ["DOCS_VERSION", "LITERALS", "MODELS", "build", "coerce"]

DOCS_VERSION = "2.14"

LITERALS: dict[str, tuple[str, ...]] = {
    "flight_type": ("round_trip", "one_way"),
    "cabin": ("business", "economy", "basic_economy"),
    "insurance": ("yes", "no"),
    "membership": ("gold", "silver", "regular"),
}

# each model's fields in τ²'s order: (name, kind, default); a kind is "str", "int", "float",
# "literal:<name>", "model:<Model>", "list:<Model>", "raw" (kept as given) or "opt-str"
_REQUIRED = object()
MODELS: dict[str, list[tuple[str, str, Any]]] = {
    "Passenger": [
        ("first_name", "str", _REQUIRED),
        ("last_name", "str", _REQUIRED),
        ("dob", "str", _REQUIRED),
    ],
    "Payment": [("payment_id", "str", _REQUIRED), ("amount", "int", _REQUIRED)],
    "FlightInfo": [("flight_number", "str", _REQUIRED), ("date", "str", _REQUIRED)],
    "Certificate": [
        ("source", "literal:certificate", _REQUIRED),
        ("id", "str", _REQUIRED),
        ("amount", "float", _REQUIRED),
    ],
    "Reservation": [
        ("reservation_id", "str", _REQUIRED),
        ("user_id", "str", _REQUIRED),
        ("origin", "str", _REQUIRED),
        ("destination", "str", _REQUIRED),
        ("flight_type", "literal:flight_type", _REQUIRED),
        ("cabin", "literal:cabin", _REQUIRED),
        ("flights", "list:ReservationFlight", _REQUIRED),
        ("passengers", "list:Passenger", _REQUIRED),
        ("payment_history", "list:Payment", _REQUIRED),
        ("created_at", "str", _REQUIRED),
        ("total_baggages", "int", _REQUIRED),
        ("nonfree_baggages", "int", _REQUIRED),
        ("insurance", "literal:insurance", _REQUIRED),
        ("status", "raw", None),
    ],
    "ReservationFlight": [
        ("flight_number", "str", _REQUIRED),
        ("origin", "str", _REQUIRED),
        ("destination", "str", _REQUIRED),
        ("date", "str", _REQUIRED),
        ("price", "int", _REQUIRED),
    ],
    "Name": [("first_name", "str", _REQUIRED), ("last_name", "str", _REQUIRED)],
    "Address": [
        ("address1", "str", _REQUIRED),
        ("address2", "opt-str", None),
        ("city", "str", _REQUIRED),
        ("country", "str", _REQUIRED),
        ("state", "str", _REQUIRED),
        ("zip", "str", _REQUIRED),
    ],
    "User": [
        ("user_id", "str", _REQUIRED),
        ("name", "model:Name", _REQUIRED),
        ("address", "model:Address", _REQUIRED),
        ("email", "str", _REQUIRED),
        ("dob", "str", _REQUIRED),
        ("payment_methods", "raw", _REQUIRED),
        ("saved_passengers", "list:Passenger", _REQUIRED),
        ("membership", "literal:membership", _REQUIRED),
        ("reservations", "raw", _REQUIRED),
    ],
}

_INT = re.compile(r"[+-]?\d+(?:_\d+)*(?:\.0*)?")
_I64 = 2**63


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 50 else f"{text[:25]}...{text[-24:]}"


class _Invalid(Exception):
    def __init__(self, kind: str, message: str) -> None:
        self.kind = kind
        self.message = message


def coerce(kind: str, value: Any) -> Any:
    """`value` as a field of `kind` holds it (τ²'s lax conversions); `_Invalid` when refused."""
    if kind == "raw":
        return value
    if kind == "str" or (kind == "opt-str" and value is not None):
        if not isinstance(value, str):
            raise _Invalid("string_type", "Input should be a valid string")
        return value
    if kind == "opt-str":
        return value
    if kind == "int":
        return _int(value)
    if kind == "float":
        return _float(value)
    if kind.startswith("literal:"):
        options = LITERALS.get(kind[8:], (kind[8:],))
        if not isinstance(value, str) or value not in options:
            quoted = [f"'{o}'" for o in options]
            listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
            raise _Invalid("literal_error", f"Input should be {listed}")
        return value
    raise AssertionError(kind)


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Invalid("finite_number", "Input should be a finite number")
        if value != int(value):
            raise _Invalid(
                "int_from_float",
                "Input should be a valid integer, got a number with a fractional part",
            )
        if abs(value) >= _I64:
            raise _Invalid(
                "int_parsing_size",
                "Unable to parse input string as an integer, exceeded maximum size",
            )
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if _INT.fullmatch(text):
            return int(text.split(".")[0])
        raise _Invalid(
            "int_parsing", "Input should be a valid integer, unable to parse string as an integer"
        )
    raise _Invalid("int_type", "Input should be a valid integer")


def _float(value: Any) -> float:
    if isinstance(value, bool | float):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            raise _Invalid("float_type", "Input should be a valid number") from None
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:
            raise _Invalid(
                "float_parsing",
                "Input should be a valid number, unable to parse string as a number",
            ) from None
    raise _Invalid("float_type", "Input should be a valid number")


def _fields(
    model: str, values: dict[str, Any], where: str, errors: list[tuple[str, str, str, Any]]
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, kind, default in MODELS[model]:
        loc = f"{where}{name}"
        if name not in values:
            if default is _REQUIRED:
                errors.append((loc, "missing", "Field required", values))
            else:
                out[name] = default
            continue
        value = values[name]
        if kind.startswith("list:"):
            if not isinstance(value, list):
                errors.append((loc, "list_type", "Input should be a valid list", value))
                continue
            out[name] = [_nested(kind[5:], v, f"{loc}.{i}.", errors) for i, v in enumerate(value)]
        elif kind.startswith("model:"):
            out[name] = _nested(kind[6:], value, f"{loc}.", errors)
        else:
            try:
                out[name] = coerce(kind, value)
            except _Invalid as exc:
                errors.append((loc, exc.kind, exc.message, value))
    return out


def _nested(model: str, value: Any, where: str, errors: list[tuple[str, str, str, Any]]) -> Any:
    if not isinstance(value, dict):
        errors.append(
            (
                where.rstrip("."),
                "model_type",
                f"Input should be a valid dictionary or instance of {model}",
                value,
            )
        )
        return value
    return _fields(model, value, where, errors)


def build(model: str, values: dict[str, Any]) -> dict[str, Any]:
    """The record `model` made of `values`, as τ² dumps it; a refused value raises `RetailError`
    with τ²'s validation report."""
    errors: list[tuple[str, str, str, Any]] = []
    record = _fields(model, values, "", errors)
    if errors:
        n = len(errors)
        lines = [f"{n} validation error{'s' if n > 1 else ''} for {model}"]
        for loc, kind, message, value in errors:
            lines.append(loc)
            lines.append(
                f"  {message} [type={kind}, input_value={_shown(value)}, "
                f"input_type={type(value).__name__}]"
            )
            lines.append(
                f"    For further information visit https://errors.pydantic.dev/{DOCS_VERSION}/v/{kind}"
            )
        raise RetailError("\n".join(lines))
    return record
