"""A τ²-bench airline backend: the domain's tools over its database (`db.json`: flights with
their status and seats by date, users with payment methods, reservations), loaded fresh per
trial, answering each call with what τ²-bench's own airline tools answer, to the byte: the same
records in the same shape (τ²'s field order, null for a missing optional field), the same
arithmetic (a gift card's balance a float, prices and payments integers) and the same refusals,
with the same database changes (a refused booking may have spent a gift card before it fails,
as τ²'s does).

It implements the plugin's backend protocol (`load_state`, `snapshot`, `call_tool`). A refused
call raises `RetailError` whose message is the text after τ²'s `Error: `. The snapshot's `data`
holds each flight, user and reservation that differs from the database as loaded, in full
(`{"flights": {...}, "reservations": {...}, "users": {...}}`).

    backend = AirlineBackend.load("path/to/tau2-bench/data/tau2/domains/airline/db.json")
    backend.call_tool("cancel_reservation", {"reservation_id": "ZFA04Y"})
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from ..backend import Snapshot
from ..errors import RetailError
from . import airline_tools as _tools
from .airline_models import build
from .database import Tau2Backend

__all__ = ["AIRLINE_TOOLS", "READ_TOOLS", "WRITE_TOOLS", "AirlineBackend", "RetailError"]

TABLES = ("flights", "users", "reservations")

_STATUS_FIELDS: dict[str, tuple[str, ...]] = {
    "available": ("available_seats", "prices"),
    "landed": ("actual_departure_time_est", "actual_arrival_time_est"),
    "cancelled": (),
    "delayed": ("estimated_departure_time_est", "estimated_arrival_time_est"),
    "flying": ("actual_departure_time_est", "estimated_arrival_time_est"),
    "on time": ("estimated_departure_time_est", "estimated_arrival_time_est"),
}
_METHOD_FIELDS: dict[str, tuple[str, ...]] = {
    "credit_card": ("brand", "last_four"),
    "gift_card": ("amount",),
    "certificate": ("amount",),
}


def _flight(raw: dict[str, Any]) -> dict[str, Any]:
    flight = {
        k: raw[k]
        for k in (
            "flight_number",
            "origin",
            "destination",
            "scheduled_departure_time_est",
            "scheduled_arrival_time_est",
        )
    }
    flight["dates"] = {
        date: {"status": s["status"], **{k: s[k] for k in _STATUS_FIELDS[s["status"]]}}
        for date, s in raw["dates"].items()
    }
    return flight


def _method(raw: dict[str, Any]) -> dict[str, Any]:
    method = {"source": raw["source"], "id": raw["id"]}
    for key in _METHOD_FIELDS[raw["source"]]:
        method[key] = float(raw[key]) if key == "amount" else raw[key]
    return method


def _user(raw: dict[str, Any]) -> dict[str, Any]:
    user = build("User", raw)
    user["payment_methods"] = {k: _method(m) for k, m in raw["payment_methods"].items()}
    user["reservations"] = list(raw["reservations"])
    return user


def normalize(data: Any) -> dict[str, Any]:
    """A τ² airline database as τ² holds it once read (each record in τ²'s shape); a
    `RetailError` when it is not one."""
    if not isinstance(data, dict):
        raise RetailError("not a τ² airline database: not an object")
    missing = set(TABLES) - set(data)
    if missing:
        raise RetailError(f"not a τ² airline database: no {', '.join(sorted(missing))}")
    try:
        return {
            "flights": {k: _flight(v) for k, v in data["flights"].items()},
            "users": {k: _user(v) for k, v in data["users"].items()},
            "reservations": {k: build("Reservation", v) for k, v in data["reservations"].items()},
        }
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        raise RetailError(f"not a τ² airline database: {type(exc).__name__}: {exc}") from None


class AirlineBackend(Tau2Backend):
    """One trial's copy of a τ² airline database and the domain's tools over it."""

    DOMAIN = "airline"
    normalize = staticmethod(normalize)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> AirlineBackend:
        """A fresh backend over a database given as data (a `db.json`'s content)."""
        return cls(normalize(copy.deepcopy(data)))

    # -- the backend protocol (`load_state`: `Tau2Backend`'s) -----------------------------------

    def snapshot(self) -> Snapshot:
        changed: dict[str, Any] = {}
        for table in TABLES:
            now, before = self.db[table], self.initial[table]
            rows = {
                i: copy.deepcopy(now[i])
                for i in sorted(set(now) | set(before))
                if i in now and now[i] != before.get(i)
            }
            if rows:
                changed[table] = rows
        return Snapshot(data=changed)

    def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        """Run tool `name` with `arguments`: its result as τ²'s tool returns it (a record, a list
        of them, or text); a call τ²'s tool fails raises `RetailError` with the text τ²'s agent
        reads after `Error: ` (an unknown tool or argument too)."""
        tool = AIRLINE_TOOLS.get(name)
        if tool is None:
            raise RetailError(f"Tool '{name}' not found.")
        if not isinstance(arguments, dict):
            raise RetailError(f"{name}: arguments are a mapping; found {type(arguments).__name__}")
        try:
            return tool(self, **arguments)
        except RetailError:
            raise
        except Exception as exc:  # τ²'s environment turns any exception into its message
            raise RetailError(str(exc)) from None


AIRLINE_TOOLS: dict[str, Callable[..., Any]] = {
    fn.__name__: fn
    for fn in (
        _tools.book_reservation,
        _tools.calculate,
        _tools.cancel_reservation,
        _tools.get_reservation_details,
        _tools.get_user_details,
        _tools.list_all_airports,
        _tools.search_direct_flight,
        _tools.search_onestop_flight,
        _tools.send_certificate,
        _tools.transfer_to_human_agents,
        _tools.update_reservation_baggages,
        _tools.update_reservation_flights,
        _tools.update_reservation_passengers,
        _tools.get_flight_status,
    )
}
WRITE_TOOLS = frozenset(
    {
        "book_reservation",
        "cancel_reservation",
        "send_certificate",
        "update_reservation_baggages",
        "update_reservation_flights",
        "update_reservation_passengers",
    }
)
READ_TOOLS = frozenset(AIRLINE_TOOLS) - WRITE_TOOLS - {"calculate", "transfer_to_human_agents"}
