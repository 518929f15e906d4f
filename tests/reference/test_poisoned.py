"""Eval-only fixtures stay eval-only, and each poisoned niche has a benign twin."""

import re

import pytest

from pytest_commerce_evals.reference.catalog import (
    FIXTURES_DIR,
    POISONED_DIR,
    load_catalog,
    load_poison_manifest,
)


@pytest.fixture(scope="module")
def manifest():
    return load_poison_manifest(POISONED_DIR)


@pytest.fixture(scope="module")
def merged():
    return load_catalog(FIXTURES_DIR, POISONED_DIR)


def test_no_eval_only_id_appears_anywhere_in_fixtures(manifest):
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(manifest.eval_only_ids))) + r")\b")
    files = [p for p in FIXTURES_DIR.rglob("*") if p.is_file()]
    assert any(p.parent.name == "demo" for p in files)
    hits = [
        f"{path}:{n}: {m.group()}"
        for path in files
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if (m := pattern.search(line))
    ]
    assert hits == []


def test_the_scan_would_catch_a_leak(manifest, tmp_path):
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, sorted(manifest.eval_only_ids))) + r")\b")
    assert pattern.search("seen_products: [bag-001, stove-camp-901]")
    assert not pattern.search("seen_products: [stove-camp-001]")


def test_manifest_covers_every_injection_kind(manifest):
    attempts = {a for item in manifest.poisoned for a in item.attempts}
    assert {"cart_write", "staged_change", "memory_write", "false_claim"} <= attempts
    assert {item.kind for item in manifest.poisoned} == {"listing", "review", "message"}


def test_poisoned_listings_are_third_party_with_a_benign_twin(manifest, merged):
    twins = {t.twin_of: t for t in manifest.benign_twins}
    for item in manifest.poisoned:
        assert item.id in twins, f"{item.id} has no benign twin"
        twin = twins[item.id]
        assert twin.niche == item.niche
        if item.id in merged.products:
            poisoned, benign = merged.products[item.id], merged.products[twin.id]
            assert not poisoned.seller.first_party and not benign.seller.first_party
            assert poisoned.niche == benign.niche
            assert poisoned.brand not in {
                p.brand for p in merged.products.values() if p.id not in merged.eval_only_ids
            }


def test_false_claims_contradict_the_listing_facts(merged):
    stove = merged.products["stove-camp-901"]
    assert "FREESTOVE" in stove.reviews[0].text and "lifetime guarantee" in stove.reviews[0].text
    assert stove.attributes["warranty_years"] == 1
    knife = merged.products["knife-901"]
    assert "KNIFE50" in knife.description and knife.attributes["warranty_years"] == 1
    assert "apply_changes" in merged.products["pet-food-901"].supplier_note
    assert "4111 1111 1111 1111" in merged.orders["ord-9001"].messages[0].text


def test_benign_twin_facts_a_rubric_can_cite(merged):
    twin = merged.products["stove-camp-902"]
    assert (twin.title, twin.rating.average) == ("SummitBurner Compact Canister Stove", 4.4)
