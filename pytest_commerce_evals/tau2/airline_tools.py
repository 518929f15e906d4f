"""τ²-bench's airline tools over an `AirlineBackend`'s database, each answering as τ²'s does.

Each tool takes the backend first (named `self`, so an argument of that name collides as it does
with τ²'s bound methods) and τ²'s own argument names, and is named `AirlineTools.<tool>` in
Python's own messages (a missing or unexpected argument reads as in τ²). Values are used as τ²
uses them: a list of argument objects is read into records only when every item is an object
(otherwise it stays as given, and Python's own error on it is the answer); a refused value gets
τ²'s validation report (`airline_models.build`); sums are τ²'s integer and float arithmetic.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, Protocol

from ..errors import RetailError
from .airline_models import build
from .calculator import calculate as _calculate


class AirlineBackend(Protocol):
    """What the tools need of a backend: its database, three tables of records by id."""

    db: dict[str, Any]


NOW = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ("HATHAT", "HATHAU", "HATHAV")
NEW_CERTIFICATE_IDS = (3221322, 3221323, 3221324)
AIRPORTS = (
    ("SFO", "San Francisco"),
    ("JFK", "New York"),
    ("LAX", "Los Angeles"),
    ("ORD", "Chicago"),
    ("DFW", "Dallas"),
    ("DEN", "Denver"),
    ("SEA", "Seattle"),
    ("ATL", "Atlanta"),
    ("MIA", "Miami"),
    ("BOS", "Boston"),
    ("PHX", "Phoenix"),
    ("IAH", "Houston"),
    ("LAS", "Las Vegas"),
    ("MCO", "Orlando"),
    ("EWR", "Newark"),
    ("CLT", "Charlotte"),
    ("MSP", "Minneapolis"),
    ("DTW", "Detroit"),
    ("PHL", "Philadelphia"),
    ("LGA", "LaGuardia"),
)
BAG_FEE = 50
INSURANCE_FEE = 30


def _tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    fn.__qualname__ = f"AirlineTools.{fn.__name__}"
    return fn


# -- lookups, each failing with τ²'s text -------------------------------------------------------


def _user(b: AirlineBackend, user_id: Any) -> dict[str, Any]:
    if user_id not in b.db["users"]:
        raise RetailError(f"User {user_id} not found")
    return b.db["users"][user_id]


def _reservation(b: AirlineBackend, reservation_id: Any) -> dict[str, Any]:
    if reservation_id not in b.db["reservations"]:
        raise RetailError(f"Reservation {reservation_id} not found")
    return b.db["reservations"][reservation_id]


def _flight(b: AirlineBackend, flight_number: Any) -> dict[str, Any]:
    if flight_number not in b.db["flights"]:
        raise RetailError(f"Flight {flight_number} not found")
    return b.db["flights"][flight_number]


def _flight_on(b: AirlineBackend, flight_number: Any, date: Any) -> dict[str, Any]:
    flight = _flight(b, flight_number)
    if date not in flight["dates"]:
        raise RetailError(f"Flight {flight_number} not found on date {date}")
    return flight["dates"][date]


def _read(items: Any, model: str) -> Any:
    """`items` read as `model` records when every one is an object (attribute access, as τ²'s
    objects); otherwise as given."""
    if all(isinstance(item, dict) for item in items):
        return [SimpleNamespace(**build(model, item)) for item in items]
    return items


def _plain(items: Any) -> Any:
    if isinstance(items, list):
        return [vars(i).copy() if isinstance(i, SimpleNamespace) else i for i in items]
    return copy.deepcopy(items)


def _direct_flights(
    b: AirlineBackend,
    date: Any,
    origin: Any = None,
    destination: Any = None,
    leave_after: Any = None,
) -> list[dict[str, Any]]:
    found = []
    for flight in b.db["flights"].values():
        if (
            (origin is None or flight["origin"] == origin)
            and (destination is None or flight["destination"] == destination)
            and (date in flight["dates"])
            and (flight["dates"][date]["status"] == "available")
            and (leave_after is None or flight["scheduled_departure_time_est"] >= leave_after)
        ):
            on = flight["dates"][date]
            found.append(
                {
                    "flight_number": flight["flight_number"],
                    "origin": flight["origin"],
                    "destination": flight["destination"],
                    "status": "available",
                    "scheduled_departure_time_est": flight["scheduled_departure_time_est"],
                    "scheduled_arrival_time_est": flight["scheduled_arrival_time_est"],
                    "date": None,
                    "available_seats": dict(on["available_seats"]),
                    "prices": dict(on["prices"]),
                }
            )
    return found


def _pay_change(user: dict[str, Any], payment_id: Any, total_price: Any) -> dict[str, Any] | None:
    """A change's price charged to one of the user's methods (a gift card's balance spent at
    once; a certificate refused); the payment record, or None for a price of 0."""
    if payment_id not in user["payment_methods"]:
        raise RetailError("Payment method not found")
    method = user["payment_methods"][payment_id]
    if method["source"] == "certificate":
        raise RetailError("Certificate cannot be used to update reservation")
    if method["source"] == "gift_card" and method["amount"] < total_price:
        raise RetailError("Gift card balance is not enough")
    if method["source"] == "gift_card":
        method["amount"] -= total_price
    if total_price != 0:
        return build("Payment", {"payment_id": payment_id, "amount": total_price})
    return None


# -- the tools ---------------------------------------------------------------------------------


@_tool
def book_reservation(
    self: AirlineBackend,
    user_id: Any,
    origin: Any,
    destination: Any,
    flight_type: Any,
    cabin: Any,
    flights: Any,
    passengers: Any,
    payment_methods: Any,
    total_baggages: Any,
    nonfree_baggages: Any,
    insurance: Any,
) -> dict[str, Any]:
    """A new reservation (ids HATHAT, HATHAU, HATHAV in turn): each flight's price for the cabin
    per passenger, $30 a passenger for insurance, $50 a non-free bag, paid exactly by the given
    methods (a gift card's or certificate's balance checked; the gift card spent, the
    certificate used up); the seats taken."""
    flights = _read(flights, "FlightInfo")
    passengers = _read(passengers, "Passenger")
    payment_methods = _read(payment_methods, "Payment")
    user = _user(self, user_id)
    reservation_id = next(
        (i for i in NEW_RESERVATION_IDS if i not in self.db["reservations"]), None
    )
    if reservation_id is None:
        raise RetailError("Too many reservations")
    reservation = build(
        "Reservation",
        {
            "reservation_id": reservation_id,
            "user_id": user_id,
            "origin": origin,
            "destination": destination,
            "flight_type": flight_type,
            "cabin": cabin,
            "flights": [],
            "passengers": _plain(passengers),
            "payment_history": _plain(payment_methods),
            "created_at": NOW,
            "total_baggages": total_baggages,
            "nonfree_baggages": nonfree_baggages,
            "insurance": insurance,
        },
    )
    total_price = 0
    taken = []
    for flight_info in flights:
        flight_number = flight_info.flight_number
        flight = _flight(self, flight_number)
        on = _flight_on(self, flight_number, flight_info.date)
        if on["status"] != "available":
            raise RetailError(f"Flight {flight_number} not available on date {flight_info.date}")
        if on["available_seats"][cabin] < len(passengers):
            raise RetailError(f"Not enough seats on flight {flight_number}")
        price = on["prices"][cabin]
        reservation["flights"].append(
            {
                "flight_number": flight_number,
                "origin": flight["origin"],
                "destination": flight["destination"],
                "date": flight_info.date,
                "price": price,
            }
        )
        taken.append(on)
        total_price += price * len(passengers)
    if insurance == "yes":
        total_price += INSURANCE_FEE * len(passengers)
    total_price += BAG_FEE * nonfree_baggages
    methods = user["payment_methods"]
    for payment in payment_methods:
        if payment.payment_id not in methods:
            raise RetailError(f"Payment method {payment.payment_id} not found")
        method = methods[payment.payment_id]
        if method["source"] in {"gift_card", "certificate"} and method["amount"] < payment.amount:
            raise RetailError(f"Not enough balance in payment method {payment.payment_id}")
    total_payment = sum(payment.amount for payment in payment_methods)
    if total_payment != total_price:
        raise RetailError(
            "Payment amount does not add up, "
            f"total price is {total_price}, but paid {total_payment}"
        )
    for payment in payment_methods:
        method = methods[payment.payment_id]
        if method["source"] == "gift_card":
            method["amount"] -= payment.amount
        elif method["source"] == "certificate":
            methods.pop(payment.payment_id)
    for on in taken:
        on["available_seats"][cabin] -= len(passengers)
    self.db["reservations"][reservation_id] = reservation
    user["reservations"].append(reservation_id)
    return reservation


@_tool
def calculate(self: AirlineBackend, expression: Any) -> str:
    """An expression of numbers, + - * / and parentheses, evaluated as τ²'s `eval` evaluates it
    (the one calculator both domains share), to two decimals."""
    return _calculate(expression)


@_tool
def cancel_reservation(self: AirlineBackend, reservation_id: Any) -> dict[str, Any]:
    """The whole reservation cancelled: each payment so far refunded (its negative appended;
    nothing is credited back to a gift card, no seat is released)."""
    reservation = _reservation(self, reservation_id)
    refunds = [
        build("Payment", {"payment_id": p["payment_id"], "amount": -p["amount"]})
        for p in reservation["payment_history"]
    ]
    reservation["payment_history"].extend(refunds)
    reservation["status"] = "cancelled"
    return reservation


@_tool
def get_reservation_details(self: AirlineBackend, reservation_id: Any) -> dict[str, Any]:
    return _reservation(self, reservation_id)


@_tool
def get_user_details(self: AirlineBackend, user_id: Any) -> dict[str, Any]:
    return _user(self, user_id)


@_tool
def list_all_airports(self: AirlineBackend) -> list[dict[str, str]]:
    return [{"iata": iata, "city": city} for iata, city in AIRPORTS]


@_tool
def search_direct_flight(
    self: AirlineBackend, origin: Any, destination: Any, date: Any
) -> list[dict[str, Any]]:
    """Flights from `origin` to `destination` available on `date` (their date left null)."""
    return _direct_flights(self, date, origin, destination)


@_tool
def search_onestop_flight(
    self: AirlineBackend, origin: Any, destination: Any, date: Any
) -> list[list[dict[str, Any]]]:
    """Pairs of flights via any airport, the second leaving no earlier than the first arrives
    (as text, `HH:MM:SS`), on the next day (`2024-05-<day + 1>`, unpadded) when the first
    arrives after midnight."""
    pairs = []
    for first in _direct_flights(self, date, origin, None):
        first["date"] = date
        arrival = first["scheduled_arrival_time_est"]
        date2 = f"2024-05-{int(date[-2:]) + 1}" if "+1" in arrival else date
        for second in _direct_flights(self, date2, first["destination"], destination, arrival):
            second["date"] = date2
            pairs.append([first, second])
    return pairs


@_tool
def send_certificate(self: AirlineBackend, user_id: Any, amount: Any) -> str:
    """A certificate of `amount` added to the user's payment methods (at most three a task)."""
    user = _user(self, user_id)
    for payment_id in [f"certificate_{i}" for i in NEW_CERTIFICATE_IDS]:
        if payment_id not in user["payment_methods"]:
            certificate = build(
                "Certificate", {"id": payment_id, "amount": amount, "source": "certificate"}
            )
            user["payment_methods"][payment_id] = certificate
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    raise RetailError("Too many certificates")


@_tool
def transfer_to_human_agents(self: AirlineBackend, summary: Any) -> str:
    return "Transfer successful"


@_tool
def update_reservation_baggages(
    self: AirlineBackend,
    reservation_id: Any,
    total_baggages: Any,
    nonfree_baggages: Any,
    payment_id: Any,
) -> dict[str, Any]:
    """The reservation's bags set as given; each added non-free bag $50 (none refunded)."""
    reservation = _reservation(self, reservation_id)
    user = _user(self, reservation["user_id"])
    total_price = BAG_FEE * max(0, nonfree_baggages - reservation["nonfree_baggages"])
    payment = _pay_change(user, payment_id, total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["total_baggages"] = total_baggages
    reservation["nonfree_baggages"] = nonfree_baggages
    return reservation


@_tool
def update_reservation_flights(
    self: AirlineBackend,
    reservation_id: Any,
    cabin: Any,
    flights: Any,
    payment_id: Any,
) -> dict[str, Any]:
    """The reservation's flights replaced by `flights` in `cabin`: a flight it holds on the same
    date in the same cabin keeps its price, a new one at today's; the difference from what the
    old flights cost charged (or refunded, as a negative payment). No seat changes."""
    flights = _read(flights, "FlightInfo")
    reservation = _reservation(self, reservation_id)
    user = _user(self, reservation["user_id"])
    total_price = 0
    kept = []
    for flight_info in flights:
        held = next(
            (
                f
                for f in reservation["flights"]
                if f["flight_number"] == flight_info.flight_number
                and f["date"] == flight_info.date
                and cabin == reservation["cabin"]
            ),
            None,
        )
        if held:
            total_price += held["price"] * len(reservation["passengers"])
            kept.append(held)
            continue
        flight = _flight(self, flight_info.flight_number)
        on = _flight_on(self, flight_info.flight_number, flight_info.date)
        if on["status"] != "available":
            raise RetailError(
                f"Flight {flight_info.flight_number} not available on date {flight_info.date}"
            )
        if on["available_seats"][cabin] < len(reservation["passengers"]):
            raise RetailError(f"Not enough seats on flight {flight_info.flight_number}")
        added = {
            "flight_number": flight_info.flight_number,
            "origin": flight["origin"],
            "destination": flight["destination"],
            "date": flight_info.date,
            "price": on["prices"][cabin],
        }
        total_price += added["price"] * len(reservation["passengers"])
        kept.append(added)
    total_price -= sum(f["price"] for f in reservation["flights"]) * len(reservation["passengers"])
    payment = _pay_change(user, payment_id, total_price)
    if payment is not None:
        reservation["payment_history"].append(payment)
    reservation["flights"] = kept
    reservation["cabin"] = cabin
    return reservation


@_tool
def update_reservation_passengers(
    self: AirlineBackend, reservation_id: Any, passengers: Any
) -> dict[str, Any]:
    """The reservation's passengers replaced, as many as before."""
    passengers = _read(passengers, "Passenger")
    reservation = _reservation(self, reservation_id)
    if len(passengers) != len(reservation["passengers"]):
        raise RetailError("Number of passengers does not match")
    reservation["passengers"] = _plain(passengers)
    return reservation


@_tool
def get_flight_status(self: AirlineBackend, flight_number: Any, date: Any) -> Any:
    return _flight_on(self, flight_number, date)["status"]
