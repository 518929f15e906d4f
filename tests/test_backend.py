"""The backend's snapshot built from plain data (`Snapshot.from_data`)."""

from __future__ import annotations

import pydantic
import pytest

from pytest_commerce_evals import Snapshot


def lines(snapshot):
    return [(c.product_id, c.quantity) for c in snapshot.cart]


def test_a_cart_reads_from_lines_bare_ids_or_a_mapping_of_id_to_quantity():
    listed = Snapshot.from_data(cart=[{"product_id": "shoe-001", "quantity": 2}, "bag-003"])
    mapped = Snapshot.from_data(cart={"shoe-001": 2, "bag-003": 1})
    assert lines(listed) == lines(mapped) == [("shoe-001", 2), ("bag-003", 1)]


def test_a_mapping_cart_with_a_bad_quantity_names_the_field():
    with pytest.raises(pydantic.ValidationError, match="quantity"):
        Snapshot.from_data(cart={"shoe-001": 0})


def test_memory_and_data_are_checked():
    with pytest.raises(TypeError, match="memory entries are strings"):
        Snapshot.from_data(memory=[1])
    with pytest.raises(TypeError, match="data is a mapping"):
        Snapshot.from_data(data=[1])  # type: ignore[arg-type]


def test_trials_starting_together_load_the_catalog_once_and_later_ones_take_no_lock(monkeypatch):
    import functools
    import threading
    import time

    from pytest_commerce_evals.reference import catalog

    loads: list[tuple] = []

    @functools.lru_cache(maxsize=8)
    def slow(fixtures, poisoned):
        loads.append((fixtures, poisoned))
        time.sleep(0.05)
        return object()

    monkeypatch.setattr(catalog, "_load_catalog", slow)
    monkeypatch.setattr(catalog, "_loaded", set())
    got: list[object] = []
    threads = [
        threading.Thread(target=lambda: got.append(catalog.load_catalog("f", "p")))
        for _ in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(loads) == 1 and len(got) == 16 and len({id(g) for g in got}) == 1
    with catalog._load_lock:  # held elsewhere: a catalog already loaded is still handed out
        later = threading.Thread(target=lambda: got.append(catalog.load_catalog("f", "p")))
        later.start()
        later.join(timeout=2)
        assert not later.is_alive() and got[-1] is got[0]
    assert len(loads) == 1
