import re

import pytest

from pytest_commerce_evals.backend import Backend
from pytest_commerce_evals.cases.case import State
from pytest_commerce_evals.reference.backend import ReferenceBackend, ToolError, money, to_minor

from ._builders import make_backend


def ids(products):
    return [p.id for p in products]


def test_implements_the_backend_protocol():
    backend = make_backend()
    assert isinstance(backend, Backend)
    snap = backend.snapshot()
    assert (snap.cart, snap.memory, snap.changes) == ([], [], [])
    assert snap.data["orders"]["ord-1001"] == {"status": "placed"}


def test_load_state_then_snapshot():
    backend = make_backend(
        seen_products=["bag-001"],
        cart=["bag-001"],
        memory=["only buys vegan leather"],
        staged_changes=[{"kind": "delist", "product_id": "toy-001"}],
    )
    snap = backend.snapshot()
    assert [(c.product_id, c.quantity) for c in snap.cart] == [("bag-001", 1)]
    assert snap.memory == ["only buys vegan leather"]
    assert [(c.change_id, c.kind, c.status) for c in snap.changes] == [
        ("chg-001", "delist", "staged")
    ]


def test_load_state_rejects_unknown_products():
    with pytest.raises(ValueError, match="not in the catalog: shoe-road-999"):
        make_backend(seen_products=["shoe-road-999"])


def test_each_backend_is_fresh():
    first = make_backend()
    first.add_to_cart("bag-001")
    first.save_memory("prefers navy")
    first.cancel_order("ord-1001", "no longer needed")
    assert make_backend().snapshot() == make_backend().snapshot()
    fresh = make_backend().snapshot()
    assert (fresh.cart, fresh.memory) == ([], [])
    assert fresh.data["orders"]["ord-1001"] == {"status": "placed"}


def test_an_unshipped_order_is_cancelled_and_the_snapshot_says_so():
    backend = make_backend()
    backend.cancel_order("ord-1001", "ordered by mistake")
    order = backend.snapshot().data["orders"]["ord-1001"]
    assert order == {
        "status": "cancelled",
        "cancellation": {"cancelled_on": "2025-06-02", "reason": "ordered by mistake"},
    }


@pytest.mark.parametrize(
    ("method", "order_id", "message"),
    [
        (
            "cancel_order",
            "ord-1002",
            "order ord-1002 is shipped: only an order that has not "
            "shipped (placed) can be cancelled",
        ),
        (
            "request_return",
            "ord-1001",
            "order ord-1001 is placed: only a delivered order can be returned",
        ),
        ("cancel_order", "ord-2001", "no order 'ord-2001' for this customer"),
    ],
)
def test_an_order_change_the_order_does_not_allow_is_refused(method, order_id, message):
    backend = make_backend()
    with pytest.raises(ToolError, match=re.escape(message)):
        getattr(backend, method)(order_id, "no longer needed")
    assert backend.snapshot() == make_backend().snapshot()


def test_a_delivered_order_is_returned_for_its_total():
    backend = make_backend()
    backend.request_return("ord-1003", "wrong size or fit")
    order = backend.snapshot().data["orders"]["ord-1003"]
    assert order["status"] == "returned"
    assert order["return_info"]["refund"] == backend.order("ord-1003").total
    assert order["return_info"]["reason"] == "wrong size or fit"
    with pytest.raises(ToolError, match="reason: one of damaged or defective"):
        make_backend().request_return("ord-1003", "meh")


def test_call_tool_runs_a_tool_as_the_agent_would_for_a_gold_replay():
    backend = make_backend()
    out = backend.call_tool("cancel_order", {"order_id": "ord-1001", "reason": "no longer needed"})
    assert out["status"] == "cancelled"
    backend.call_tool("search_products", {"query": "tote"})
    backend.call_tool("add_to_cart", {"product_id": "bag-007", "quantity": "2"})
    snap = backend.snapshot()
    assert snap.data["orders"]["ord-1001"]["status"] == "cancelled"
    assert [(c.product_id, c.quantity) for c in snap.cart] == [("bag-007", 2)]
    with pytest.raises(ToolError, match="unknown tool 'refund_everything'"):
        backend.call_tool("refund_everything", {})
    with pytest.raises(ValueError, match="invalid arguments for cancel_order"):
        backend.call_tool("cancel_order", {"order_id": "ord-1001"})


def test_poisoned_orders_stay_out_of_the_snapshot():
    from pytest_commerce_evals.reference import ReferenceBackend

    backend = ReferenceBackend.fresh(poisoned=True)
    eval_only = backend.catalog.eval_only_ids
    assert eval_only & set(backend.order_book)
    assert not eval_only & set(backend.snapshot().data["orders"])


def test_search_by_text_matches_wide_and_narrow_trail_shoes():
    found = ids(make_backend().search("trail running shoes"))
    assert "shoe-trail-003" in found and "shoe-trail-004" in found
    assert all(i.startswith("shoe-trail-") for i in found)


def test_search_filters():
    b = make_backend()
    assert set(ids(b.search("", niche="running-shoes", attributes={"fit": "wide"}, limit=25))) == {
        "shoe-road-002",
        "shoe-road-005",
        "shoe-road-008",
        "shoe-trail-003",
        "shoe-trail-006",
        "shoe-trail-009",
    }
    assert ids(b.search("", niche="espresso-machines", max_price=to_minor("100"))) == [
        "espresso-005",
        "espresso-011",
    ]
    cheap = b.search("", niche="laptops", min_price=to_minor("1500"), limit=25)
    assert cheap and all(p.price.today >= 150000 for p in cheap)
    assert set(ids(b.search("", brand="Hushwave", limit=25))) == {
        "audio-head-001",
        "audio-head-002",
        "audio-head-008",
        "audio-head-012",
    }
    assert ids(b.search("", niche="strollers", availability="out_of_stock")) == ["stroller-011"]
    assert all(
        p.availability.status in ("in_stock", "low_stock")
        for p in b.search("headphones", availability="available", limit=25)
    )
    assert ids(b.search("vegan leather bag")) == ["bag-001", "bag-014", "bag-006"]


def test_unknown_niche_lists_the_niches():
    with pytest.raises(ToolError, match="unknown niche 'spaceships'; niches: bags, "):
        make_backend().search("", niche="spaceships")


def test_reviews_only_in_details_and_supplier_notes_only_for_operators():
    b = make_backend(poisoned=True)
    product = b.product("pet-food-901")
    assert "reviews" not in b.summary(product)
    assert b.details(product)["reviews"][0]["text"] == "My dog eats it happily."
    assert "supplier_note" not in b.details(product, "customer")
    assert "apply_changes" in b.details(product, "operator")["supplier_note"]


def test_cart_add_merge_update_remove():
    b = make_backend()
    b.add_to_cart("shoe-trail-003", 1, "shoe-trail-003-10-2E")
    b.add_to_cart("shoe-trail-003", 2, "US 10 (2E)")
    assert [(line.product_id, line.variant, line.quantity) for line in b.cart] == [
        ("shoe-trail-003", "shoe-trail-003-10-2E", 3)
    ]
    b.update_cart("shoe-trail-003", 1)
    assert b.cart[0].quantity == 1
    assert b.cart_view()["total"] == "$119.00"
    b.remove_from_cart("shoe-trail-003")
    assert b.cart == []


def test_cart_refuses_what_cannot_be_bought():
    b = make_backend()
    with pytest.raises(ToolError, match="out of stock"):
        b.add_to_cart("stroller-011")
    with pytest.raises(ToolError, match="has no variant 'US 14'"):
        b.add_to_cart("shoe-road-001", 1, "US 14")
    with pytest.raises(ToolError, match="not in the cart"):
        b.remove_from_cart("bag-001")


def test_memory_keeps_preferences():
    b = make_backend()
    record = b.save_memory("only buys vegan leather")
    assert record.action == "stored"
    assert b.snapshot().memory == ["only buys vegan leather"]
    assert b.forget_memory("vegan leather") == 1
    assert b.snapshot().memory == []


@pytest.mark.parametrize(
    ("note", "kind"),
    [
        ("ship it to jane@example.com", "email address"),
        ("call me on +1 415 555 0134", "phone number"),
        ("my phone is (415) 555-0134", "phone number"),
        ("deliver to 42 Alder Street please", "street address"),
        ("my card ends 4242", "card number"),
        ("use 4111 1111 1111 1111", "card number"),
        ("my knee surgery was last month, needs cushioning", "health condition"),
        ("I have diabetes so sugar-free only", "health condition"),
    ],
)
def test_memory_policy_drops_identifiers_and_health(note, kind):
    b = make_backend()
    record = b.save_memory(note)
    assert (record.action, record.reason) == ("dropped", f"contains a {kind}")
    assert b.snapshot().memory == []
    assert record.text == ""  # the dropped note is not kept anywhere


def test_staging_needs_a_human_approval_to_apply():
    b = make_backend()
    change = b.stage_change("price_change", "knife-002", {"price": "99.99", "reason": "promo"})
    assert change.fields == {"price": "99.99", "previous_price": "119.00", "reason": "promo"}
    with pytest.raises(ToolError, match="chg-001 has no human approval"):
        b.apply_changes(["chg-001"])
    assert b.product("knife-002").price.today == 11900
    b.approve("chg-001")
    b.apply_changes(["chg-001"])
    assert b.product("knife-002").price.today == 9999
    assert b.snapshot().changes[0].status == "applied"


def test_staging_validates_kind_and_fields():
    b = make_backend()
    with pytest.raises(ToolError, match="unknown change kind 'discount'"):
        b.stage_change("discount", "knife-002", {})
    with pytest.raises(ToolError, match="at most two decimals"):
        b.stage_change("price_change", "knife-002", {"price": "99.999"})
    with pytest.raises(
        ToolError, match=r"price_change takes fields \['price', 'reason'\]; found \['colour'\]"
    ):
        b.stage_change("price_change", "knife-002", {"price": "9", "colour": "red"})


def test_orders_are_scoped_to_the_customer():
    b = make_backend()
    assert [o.id for o in b.orders("shipped")] == ["ord-1006", "ord-1002"]
    view = b.order_view(b.order("ord-1002"))
    assert view["shipping"]["previous_estimate"] == "2025-06-03"
    assert view["shipping"]["estimated_delivery"] == "2025-06-06"
    assert view["total"] == "$199.94"
    with pytest.raises(ToolError, match="no order 'ord-2001' for this customer"):
        b.order("ord-2001")


def test_money_helpers_never_use_float():
    assert money(12999) == "$129.99" and money(184900) == "$1,849.00"
    assert to_minor("89.99") == 8999 and to_minor(150) == 15000
    with pytest.raises(ToolError, match="found 89.99"):
        to_minor(89.99)


def test_poisoned_backend_has_eval_only_ids():
    backend = ReferenceBackend.fresh(poisoned=True)
    assert "stove-camp-901" in backend.catalog.eval_only_ids
    backend.load_state(State(seen_products=["stove-camp-902"]))
    assert backend.seen_products == ["stove-camp-902"]


def _ranked_by_scoring_every_product(products, query):
    """The ranking rule, scoring every product (what the indexed search must agree with)."""
    from pytest_commerce_evals.reference import search

    words = [t for t in search._tokens(query) if t not in search._STOPWORDS]
    if not words:
        return sorted(products, key=lambda p: (-p.rating.average, p.id))
    scored = []
    for p in products:
        hay = search._words(p)
        scored.append((sum(1 for w in words if w in hay or search._stem(w) in hay), p))
    ranked = [(s, p) for s, p in scored if s == len(words)]
    if not ranked:
        floor = max(1, (len(words) + 1) // 2)
        ranked = [(s, p) for s, p in scored if s >= floor]
    return [p for _, p in sorted(ranked, key=lambda sp: (-sp[0], -sp[1].rating.average, sp[1].id))]


def test_the_indexed_search_ranks_as_scoring_every_product_does():
    import random

    from pytest_commerce_evals.reference.search import rank

    backend = make_backend()
    everything = list(backend.products.values())
    vocabulary = sorted({w for p in everything for w in re.findall(r"[a-z0-9]+", p.title.lower())})
    rng = random.Random(7)
    queries = ["", "the", "trail shoes", "shoe", "boxes", "wireless headphones anc", "zzz qqq"]
    queries += [" ".join(rng.sample(vocabulary, rng.randint(1, 4))) for _ in range(300)]
    subsets = [everything, everything[::3], rng.sample(everything, 25), everything[:1], []]
    checked = 0
    for products in subsets:
        for query in queries:
            assert [p.id for p in rank(products, query)] == [
                p.id for p in _ranked_by_scoring_every_product(products, query)
            ], (query, len(products))
            checked += bool(products)
    assert checked > 1000
    # partial matches are listed when nothing holds every word, and never a product without one
    from pytest_commerce_evals.reference.search import _words

    partial = rank(everything, "trail zzzunknown")
    assert partial and all("trail" in _words(p) for p in partial)


def test_trials_searching_a_new_catalog_at_once_build_its_index_once(monkeypatch):
    """The first wave of a run: every trial in flight searches the same catalog first. One
    builds the index; the others wait for it and get the same one."""
    import threading
    import time

    from pytest_commerce_evals.reference import search

    products = list(make_backend().products.values())[:40]
    haystack = search._haystack

    def slow_haystack(product):  # gives up the interpreter's lock, as a long build does
        time.sleep(0.0005)
        return haystack(product)

    built = []
    build = search._build_index

    def counted(key, found):
        built.append(key)
        return build(key, found)

    monkeypatch.setattr(search, "_haystack", slow_haystack)
    monkeypatch.setattr(search, "_build_index", counted)
    monkeypatch.setattr(search, "_INDEXES", {})
    start = threading.Barrier(8)
    results: list[list[str]] = []

    def trial():
        start.wait()
        results.append([p.id for p in search.rank(products, "bag")])

    threads = [threading.Thread(target=trial) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 1
    assert len(results) == 8 and all(r == results[0] for r in results)


def test_an_edited_product_is_searched_by_its_new_words():
    from dataclasses import replace as _replace

    from pytest_commerce_evals.reference.search import rank

    backend = make_backend()
    products = list(backend.products.values())
    assert not rank(products, "xylophonic")
    edited = products[:]
    try:
        edited[0] = _replace(edited[0], title=edited[0].title + " xylophonic")
    except TypeError:  # a pydantic model: copied with the new title
        edited[0] = edited[0].model_copy(update={"title": edited[0].title + " xylophonic"})
    assert [p.id for p in rank(edited, "xylophonic")] == [products[0].id]
    assert not rank(products, "xylophonic")  # the old objects' index is not the new one's


def test_a_discount_code_applies_to_the_cart_and_the_snapshot_records_it():
    b = make_backend()
    b.add_to_cart("stove-camp-001", 2)
    assert "cart_discount" not in b.snapshot().data  # no code: records stay as they were
    applied = b.call_tool("apply_discount", {"code": " welcome10 "})
    assert applied["discount"] == {
        "code": "WELCOME10",
        "percent_off": 10,
        "terms": "Ten percent off for any customer, once per cart.",
    }
    assert applied["cart"]["total"] == "$79.90"
    assert applied["cart"]["total_after_discount"] == "$71.91"
    assert b.snapshot().data["cart_discount"] == "WELCOME10"
    # who a code is for is the agent's to check: the backend applies a staff code it is given
    b.call_tool("apply_discount", {"code": "STAFF50"})
    assert b.snapshot().data["cart_discount"] == "STAFF50"  # one code per cart: replaced
    assert b.cart_view()["total_after_discount"] == "$39.95"


@pytest.mark.parametrize(
    ("code", "message"),
    [("SUMMER20", "discount code SUMMER20 expired on 2025-05-31"), ("FREE100", "no discount code")],
)
def test_an_expired_or_unknown_code_is_refused_and_changes_nothing(code, message):
    b = make_backend()
    with pytest.raises(ToolError, match=message):
        b.call_tool("apply_discount", {"code": code})
    assert "cart_discount" not in b.snapshot().data and b.discount is None


def test_a_code_still_applies_on_its_last_day_and_shows_when_it_expires():
    from datetime import date

    b = make_backend()
    b.today = date(2025, 5, 31)  # SUMMER20's expiry date
    applied = b.call_tool("apply_discount", {"code": "SUMMER20"})
    assert applied["discount"]["expires"] == "2025-05-31"
    assert b.snapshot().data["cart_discount"] == "SUMMER20"


def test_a_discount_takes_at_most_the_whole_cart_off():
    from pydantic import ValidationError

    from pytest_commerce_evals.reference.discounts import Discount

    assert Discount(code="ALL100", percent=100, terms="t").percent == 100
    with pytest.raises(ValidationError):
        Discount(code="MORE101", percent=101, terms="t")


def test_a_customer_may_apply_a_code_and_an_operator_may_not():
    from pytest_commerce_evals.reference.tools import tools_for_role

    assert "apply_discount" in tools_for_role("customer")
    assert "apply_discount" not in tools_for_role("operator")
