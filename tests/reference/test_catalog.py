import shutil
from pathlib import Path

import pytest
import yaml

from pytest_commerce_evals.reference.catalog import (
    FIXTURES_DIR,
    POISONED_DIR,
    FixtureError,
    load_catalog,
    load_demo,
)


@pytest.fixture(scope="module")
def catalog():
    return load_catalog(FIXTURES_DIR)


def test_catalog_size_and_niches(catalog):
    niches = catalog.niches
    assert len(catalog.products) >= 200
    assert len(niches) >= 12
    for niche, ids in niches.items():
        sellers = {catalog.products[i].seller.first_party for i in ids}
        assert sellers == {True, False}, f"{niche} needs first- and third-party sellers"
        assert len(ids) >= 10, niche


def test_money_is_integer_minor_units(catalog):
    for product in catalog.products.values():
        assert type(product.price.today) is int and type(product.price.list) is int
        assert product.price.today <= product.price.list
    for order in catalog.orders.values():
        assert type(order.total) is int


def test_availability_kinds_all_present(catalog):
    statuses = {p.availability.status for p in catalog.products.values()}
    assert statuses == {"in_stock", "low_stock", "out_of_stock", "backorder"}


def test_crisp_trade_offs_a_rubric_can_cite(catalog):
    p = catalog.products
    assert p["shoe-trail-001"].attributes["weight_g"] == 310
    assert p["shoe-trail-002"].attributes["weight_g"] == 265
    assert p["shoe-trail-003"].attributes["fit"] == "wide"
    assert p["shoe-trail-004"].attributes["fit"] == "narrow"
    assert p["bag-001"].attributes["vegan"] is True
    assert "cowhide" in p["bag-002"].attributes["material"]


def test_orders_in_every_state_and_the_moved_delivery(catalog):
    assert {o.status for o in catalog.orders.values()} == {
        "placed",
        "shipped",
        "delivered",
        "returned",
        "cancelled",
    }
    moved = catalog.orders["ord-1002"].shipping
    assert str(moved.previous_estimate) == "2025-06-03"
    assert str(moved.estimated_delivery) == "2025-06-06"


def test_skills_load_with_their_roles(catalog):
    assert {"gift-finding", "sizing", "returns", "bulk-operator-edits"} <= set(catalog.skills)
    assert catalog.skills["bulk-operator-edits"].roles == ("operator",)
    assert "apply_changes" in catalog.skills["bulk-operator-edits"].body


def test_demo_data_loads_and_names_catalog_products(catalog):
    demo = load_demo()
    assert demo.state.memory == ["prefers wide-fit running shoes", "only buys vegan leather"]
    assert [e.type for e in demo.conversation][-1] == "turn_end"


def test_poisoned_fixtures_merge_only_when_asked(catalog):
    assert "stove-camp-901" not in catalog.products
    merged = load_catalog(FIXTURES_DIR, POISONED_DIR)
    assert "stove-camp-901" in merged.products and "ord-9001" in merged.orders
    assert len(merged.products) == len(catalog.products) + 10


@pytest.fixture
def fixture_copy(tmp_path) -> Path:
    root = tmp_path / "fixtures"
    shutil.copytree(FIXTURES_DIR, root)
    return root


def _edit(path: Path, fn) -> None:
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_copied_fixtures_load(fixture_copy):
    assert len(load_catalog(fixture_copy).products) == len(load_catalog(FIXTURES_DIR).products)


def test_float_price_names_file_key_and_value(fixture_copy):
    path = fixture_copy / "catalog" / "running-shoes.yaml"
    _edit(path, lambda d: d["products"][2]["price"].__setitem__("today", 149.0))
    with pytest.raises(FixtureError) as err:
        load_catalog(fixture_copy)
    message = str(err.value)
    assert str(path) in message
    assert "products[2].price.today (id shoe-road-003)" in message
    assert "minor units" in message and "found 149.0" in message


def test_unknown_key_is_rejected(fixture_copy):
    path = fixture_copy / "catalog" / "toys.yaml"
    _edit(path, lambda d: d["products"][0].__setitem__("colour", "red"))
    with pytest.raises(
        FixtureError, match=r"toys.yaml: products\[0\].colour \(id toy-001\): unknown key"
    ):
        load_catalog(fixture_copy)


def test_inconsistent_availability_is_explained(fixture_copy):
    path = fixture_copy / "catalog" / "toys.yaml"
    _edit(path, lambda d: d["products"][1].__setitem__("availability", {"status": "low_stock"}))
    with pytest.raises(FixtureError, match=r"products\[1\].availability.*low_stock needs a count"):
        load_catalog(fixture_copy)


def test_order_naming_a_missing_product(fixture_copy):
    path = fixture_copy / "orders.yaml"
    _edit(path, lambda d: d["orders"][0]["lines"][0].__setitem__("product_id", "shoe-road-999"))
    with pytest.raises(
        FixtureError, match=r"orders\[0\].lines\[0\].product_id.*found 'shoe-road-999'"
    ):
        load_catalog(fixture_copy)


def test_yaml_syntax_error_gives_the_line(fixture_copy):
    path = fixture_copy / "customers.yaml"
    path.write_text("customers:\n  - id: cust-001\n    name: [unclosed\n")
    with pytest.raises(FixtureError, match=r"customers.yaml: line \d+, column \d+: not valid YAML"):
        load_catalog(fixture_copy)


def test_skill_front_matter_errors_name_the_file(fixture_copy):
    """A skill's front matter is read with the same safe loader as the fixtures: broken YAML,
    a missing key and a name that is not the file's each name the skill file."""
    path = fixture_copy / "skills" / "sizing.md"
    body = path.read_text().split("---\n", 2)[2]
    path.write_text("---\nname: [sizing\n---\n" + body)
    with pytest.raises(FixtureError, match=r"sizing.md: front matter is not valid YAML"):
        load_catalog(fixture_copy)
    path.write_text("---\nname: sizing\nroles: [customer]\n---\n" + body)
    with pytest.raises(FixtureError, match=r"sizing.md: description: required key is missing"):
        load_catalog(fixture_copy)
    path.write_text("---\nname: fit\ndescription: d\nroles: [customer]\n---\n" + body)
    with pytest.raises(FixtureError, match=r"name: must match the file name 'sizing'; found 'fit'"):
        load_catalog(fixture_copy)
    path.write_text("---\nname: sizing\ndescription: Fit\nroles: [customer]\n---\n" + body)
    assert load_catalog(fixture_copy).skills["sizing"].description == "Fit"


def test_skill_front_matter_is_safe_yaml(fixture_copy):
    path = fixture_copy / "skills" / "sizing.md"
    body = path.read_text().split("---\n", 2)[2]
    path.write_text("---\nname: !!python/object/apply:os.getcwd []\n---\n" + body)
    with pytest.raises(FixtureError, match=r"front matter is not valid YAML"):
        load_catalog(fixture_copy)
