"""τ² airline backend: every tool result byte-equal to what τ²-bench's own airline tools answered.

`tests/data/tau2/airline/results.json` holds simulations in τ²'s results format over a small
hand-made database (`db.json`): each tool call with the text τ²'s environment gave back (its
`Error: ` text for a failed call), computed by running τ²'s code on that database.
`expected_changes.json` holds, per simulation, each record of τ²'s database that differed from
the one loaded when it ended. The replay finds every result and every change equal."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_commerce_evals.cases.case import State
from pytest_commerce_evals.errors import CommerceEvalsError, RetailError
from pytest_commerce_evals.tau2.airline import (
    AIRLINE_TOOLS,
    READ_TOOLS,
    WRITE_TOOLS,
    AirlineBackend,
    normalize,
)
from pytest_commerce_evals.tau2.airline_models import build
from pytest_commerce_evals.tau2.simulations import load_results

DATA = Path(__file__).parent / "data" / "tau2" / "airline"
DB = DATA / "db.json"
RESULTS = load_results(DATA / "results.json")
CHANGES = json.loads((DATA / "expected_changes.json").read_text(encoding="utf-8"))

# τ²'s airline toolkit's tools (its `@is_tool` methods at a2c0247; `think` is commented out)
TAU2_TOOLS = {
    "book_reservation",
    "calculate",
    "cancel_reservation",
    "get_flight_status",
    "get_reservation_details",
    "get_user_details",
    "list_all_airports",
    "search_direct_flight",
    "search_onestop_flight",
    "send_certificate",
    "transfer_to_human_agents",
    "update_reservation_baggages",
    "update_reservation_flights",
    "update_reservation_passengers",
}


def seen(backend: AirlineBackend, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """The text τ²'s agent reads for a call, and whether it is an error."""
    try:
        found = backend.call_tool(name, json.loads(json.dumps(arguments)))
    except RetailError as exc:
        return f"Error: {exc}", True
    return (found if isinstance(found, str) else json.dumps(found)), False


def replay(simulation: dict[str, Any]) -> tuple[AirlineBackend, list[tuple[str, Any, Any]]]:
    """The simulation's calls replayed on a fresh backend: (what, ours, τ²'s) per difference."""
    backend = AirlineBackend.load(DB)
    calls: dict[str, dict[str, Any]] = {}
    diffs = []
    for message in simulation["messages"]:
        if message["role"] == "assistant":
            calls.update({c["id"]: c for c in message.get("tool_calls") or []})
        elif message["role"] == "tool":
            call = calls[message["id"]]
            ours = seen(backend, call["name"], call["arguments"])
            if ours != (message["content"], message["error"]):
                diffs.append((call["name"], ours, (message["content"], message["error"])))
    return backend, diffs


@pytest.mark.parametrize("simulation", RESULTS.simulations, ids=lambda s: s["id"])
def test_every_tool_result_and_database_change_is_tau2s(simulation: dict[str, Any]) -> None:
    backend, diffs = replay(simulation)
    assert diffs == []
    assert backend.snapshot().data == CHANGES[simulation["id"]]


def test_the_replays_cover_every_tool_and_many_errors() -> None:
    names: list[str] = []
    errors = 0
    for simulation in RESULTS.simulations:
        for message in simulation["messages"]:
            names += [c["name"] for c in message.get("tool_calls") or []]
            errors += message["role"] == "tool" and message["error"]
    assert set(names) - {"think"} == TAU2_TOOLS == set(AIRLINE_TOOLS)
    assert len(names) >= 140 and errors >= 60


def test_tools_are_tau2s_and_classified() -> None:
    assert set(AIRLINE_TOOLS) == TAU2_TOOLS
    assert WRITE_TOOLS < set(AIRLINE_TOOLS) and not WRITE_TOOLS & READ_TOOLS
    assert READ_TOOLS == {
        "get_flight_status",
        "get_reservation_details",
        "get_user_details",
        "list_all_airports",
        "search_direct_flight",
        "search_onestop_flight",
    }


def test_float_arithmetic_is_tau2s() -> None:
    # a gift card's balance is a float: 127.35 - 127 is not 0.35 in binary, and τ² keeps it so
    backend = AirlineBackend.load(DB)
    simulation = next(s for s in RESULTS.simulations if s["id"] == "book")
    call = simulation["messages"][1]["tool_calls"][0]
    seen(backend, call["name"], call["arguments"])
    balance = backend.db["users"]["mia_chen_101"]["payment_methods"]["gift_card_1102"]["amount"]
    assert balance == 127.35 - 127 and repr(balance) == "0.3499999999999943"
    # an amount loaded as an integer is held as a float, a payment's as an integer
    cert = AirlineBackend.load(DB).db["users"]["omar_diaz_202"]["payment_methods"]
    assert cert["certificate_2202"]["amount"] == 100.0
    assert isinstance(cert["certificate_2202"]["amount"], float)


def test_snapshot_holds_only_changed_records_and_a_fresh_backend_is_unchanged() -> None:
    backend = AirlineBackend.load(DB)
    assert backend.snapshot().data == {}
    backend.call_tool("get_user_details", {"user_id": "mia_chen_101"})
    assert backend.snapshot().data == {}
    backend.call_tool("cancel_reservation", {"reservation_id": "MC0002"})
    assert set(backend.snapshot().data) == {"reservations"}
    assert set(backend.snapshot().data["reservations"]) == {"MC0002"}
    assert AirlineBackend.load(DB).snapshot().data == {}  # each load is its own copy


def test_load_state_refuses_state_and_load_refuses_what_is_not_a_database(tmp_path: Path) -> None:
    backend = AirlineBackend.load(DB)
    backend.load_state(State())
    with pytest.raises(RetailError, match="give it no state"):
        backend.load_state(State(memory=["x"]))
    bad = tmp_path / "db.json"
    bad.write_text('{"flights": {}}', encoding="utf-8")
    with pytest.raises(RetailError, match="no reservations, users"):
        AirlineBackend.load(bad)
    bad.write_text("not json", encoding="utf-8")
    with pytest.raises(RetailError, match="not a τ² airline database"):
        AirlineBackend.load(bad)
    with pytest.raises(RetailError, match="not an object"):
        normalize([])
    data = json.loads(DB.read_text(encoding="utf-8"))
    del data["flights"]["HAT010"]["origin"]
    with pytest.raises(RetailError, match="KeyError"):
        AirlineBackend.from_data(data)
    assert issubclass(RetailError, CommerceEvalsError)


def test_from_data_normalizes_as_tau2_reads_a_database() -> None:
    data = json.loads(DB.read_text(encoding="utf-8"))
    backend = AirlineBackend.from_data(data)
    user = backend.db["users"]["omar_diaz_202"]
    assert user["address"]["address2"] is None  # a missing optional field: null
    assert list(user["address"]) == ["address1", "address2", "city", "country", "state", "zip"]
    assert backend.db["reservations"]["MC0001"]["status"] is None
    assert list(backend.db["flights"]["HAT010"])[0] == "flight_number"


def test_call_tool_refuses_arguments_that_are_not_a_mapping() -> None:
    with pytest.raises(RetailError, match="arguments are a mapping"):
        AirlineBackend.load(DB).call_tool("get_user_details", ["mia_chen_101"])  # type: ignore[arg-type]


def test_validation_reports_shorten_long_values_as_tau2_does() -> None:
    with pytest.raises(RetailError) as info:
        build("Passenger", {"first_name": "A", "last_name": "B", "dob": ["x"] * 40})
    assert (
        "input_value=['x', 'x', 'x', 'x', 'x',...'x', 'x', 'x', 'x', 'x'], input_type=list"
        in str(info.value)
    )
    assert str(info.value).startswith("1 validation error for Passenger\ndob\n")


def test_calculate_is_the_calculator_both_domains_share() -> None:
    # τ²'s airline and retail `calculate` are the same code: `**`, `//` and Python's own
    # errors answer as τ²'s eval gives them, in either domain
    from pytest_commerce_evals.tau2.retail import RetailBackend

    airline = AirlineBackend.load(DB)
    retail = RetailBackend.load(DATA.parent / "db.json")
    for expression, answer in (("2**3", "8.0"), ("7//2", "3.0"), ("(1 + 2) * 3 / 4", "2.25")):
        assert airline.call_tool("calculate", {"expression": expression}) == answer
        assert retail.call_tool("calculate", {"expression": expression}) == answer
    for expression, text in (
        ("2 x 3", "Invalid characters in expression"),
        ("1/0", "division by zero"),
        ("2(3)", "'int' object is not callable"),
    ):
        for backend in (airline, retail):
            with pytest.raises(RetailError) as info:
                backend.call_tool("calculate", {"expression": expression})
            assert str(info.value) == text
    with pytest.raises(RetailError, match="unexpected EOF|invalid syntax|was never closed"):
        airline.call_tool("calculate", {"expression": "(1 +"})


def test_a_database_is_cached_per_domain(tmp_path: Path) -> None:
    # one file read as retail and as airline: each domain normalizes (and refuses) it itself
    from pytest_commerce_evals.tau2.retail import RetailBackend

    retail_db = DATA.parent / "db.json"
    RetailBackend.load(retail_db)
    with pytest.raises(RetailError, match="not a τ² airline database"):
        AirlineBackend.load(retail_db)
    first, second = AirlineBackend.load(DB), AirlineBackend.load(DB)
    assert first.initial is second.initial and first.db is not second.db


def test_the_airline_database_is_rebuilt_from_tau_benchs_data(tmp_path: Path) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "tau2_airline_db", Path(__file__).parents[1] / "benchmarks" / "tau2_airline_db.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ours = json.loads(DB.read_text(encoding="utf-8"))
    # τ-bench's layout: one file per table, records keyed by id without it
    data = tmp_path / "tau_bench" / "envs" / "airline" / "data"
    data.mkdir(parents=True)
    flights = {k: {f: v for f, v in r.items() if f != "flight_number"}
               for k, r in ours["flights"].items()}  # fmt: skip
    flight = next(iter(flights.values()))
    flights["HAT018"] = {**flight, "dates": {"2024-05-11": {
        "status": "landed", "actual_departure_time_est": "2024-05-11T16:00:00",
        "actual_arrival_time_est": "2024-05-11T18:35:00"}}}  # fmt: skip
    reservation = dict(next(iter(ours["reservations"].values())))
    del reservation["reservation_id"]
    reservations = {"Z7GOZK": {**reservation, "destination": "EWR", "flight_type": "one_way"}}
    users = {k: {f: v for f, v in r.items() if f != "user_id"} for k, r in ours["users"].items()}
    for name, table in (("flights", flights), ("reservations", reservations), ("users", users)):
        (data / f"{name}.json").write_text(json.dumps(table), encoding="utf-8")
    db = module.rebuild(tmp_path)
    assert db["users"]["omar_diaz_202"]["user_id"] == "omar_diaz_202"
    assert db["flights"]["HAT018"]["flight_number"] == "HAT018"
    assert db["flights"]["HAT018"]["dates"]["2024-05-11"] == {
        "status": "delayed",
        "estimated_departure_time_est": "2024-05-11T16:00:00",
        "estimated_arrival_time_est": "2024-05-11T18:35:00",
    }
    trip = db["reservations"]["Z7GOZK"]
    assert (trip["destination"], trip["flight_type"], trip["reservation_id"]) == (
        "IAH", "round_trip", "Z7GOZK")  # fmt: skip
    backend = AirlineBackend.from_data(db)
    assert backend.call_tool("get_flight_status", {"flight_number": "HAT018",
                                                   "date": "2024-05-11"}) == "delayed"  # fmt: skip
