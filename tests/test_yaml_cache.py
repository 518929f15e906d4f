import datetime as dt
import json
import os

import pytest
import yaml

from pytest_commerce_evals.cases import yaml_cache as _yaml_cache
from pytest_commerce_evals.cases.yaml_cache import MIN_CHARS, cache_dir, load

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def big(extra: str = "") -> str:
    """A YAML text over the caching threshold, with dates and a datetime in it."""
    rows = "".join(
        f"  - id: p-{i:04d}\n    title: 'Product {i}'\n    price: {i * 100}\n"
        f"    ratio: {i / 7:.4f}\n    added: 2026-01-{i % 28 + 1:02d}\n    tags: [a, b]\n"
        for i in range(MIN_CHARS // 60)
    )
    return f"stamp: 2026-11-30 10:20:30+01:00\nnote: {extra or 'none'}\nempty: null\nrows:\n{rows}"


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMERCE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "yaml"


def entries(folder):
    return sorted(folder.glob("*.json")) if folder.exists() else []


def test_second_load_reads_the_entry_and_equals_the_parse(folder, monkeypatch):
    text = big()
    first = load(text, LOADER)
    assert first == yaml.load(text, Loader=LOADER)
    assert isinstance(first["rows"][0]["added"], dt.date)
    assert first["stamp"].tzinfo is not None
    assert len(entries(folder)) == 1

    def no_parse(*a, **k):
        raise AssertionError("parsed although an entry exists")

    monkeypatch.setattr(_yaml_cache.yaml, "load", no_parse)
    second = load(text, LOADER)
    assert second == first
    assert type(second["rows"][3]["added"]) is dt.date
    assert type(second["stamp"]) is dt.datetime


def test_an_edited_text_is_parsed_again_never_stale(folder):
    load(big("one"), LOADER)
    again = load(big("two"), LOADER)
    assert again["note"] == "two"
    assert len(entries(folder)) == 2


def test_small_texts_are_not_cached(folder):
    assert load("a: 1\n", LOADER) == {"a": 1}
    assert entries(folder) == []


def test_data_json_cannot_hold_is_parsed_and_not_cached(folder):
    text = big() + "\nnumbers: {1: one, 2: two}\n"
    assert load(text, LOADER)["numbers"] == {1: "one", 2: "two"}
    lookalike = big() + "\nodd: {$date: not-a-date}\n"
    assert load(lookalike, LOADER)["odd"] == {"$date": "not-a-date"}
    assert load(lookalike, LOADER)["odd"] == {"$date": "not-a-date"}
    assert entries(folder) == []


def test_a_yaml_error_propagates_and_leaves_no_entry(folder):
    with pytest.raises(yaml.YAMLError):
        load(big() + "\nbroken: [unclosed\n", LOADER)
    assert entries(folder) == []


def test_a_corrupt_entry_is_replaced(folder):
    text = big()
    load(text, LOADER)
    (entry,) = entries(folder)
    entry.write_text('{"truncated": ')
    assert load(text, LOADER) == yaml.load(text, Loader=LOADER)
    assert json.loads(entry.read_text())["note"] == "none"


def test_off_and_unwritable_folders_still_load(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMERCE_CACHE_DIR", "off")
    assert cache_dir() is None
    assert load(big(), LOADER)["note"] == "none"
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("COMMERCE_CACHE_DIR", str(blocker))
    assert load(big(), LOADER)["note"] == "none"


def test_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("COMMERCE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert cache_dir() == tmp_path / "commerce-evals"


def test_prune_keeps_the_newest_entries_once_a_process(folder, monkeypatch):
    monkeypatch.setattr(_yaml_cache, "MAX_ENTRIES", 3)
    monkeypatch.setattr(_yaml_cache, "_pruned", set())
    for i in range(5):
        load(big(f"v{i}"), LOADER)
        newest = max(entries(folder), key=lambda p: p.stat().st_mtime_ns)
        os.utime(newest, ns=(i * 10**9, i * 10**9))
    assert len(entries(folder)) == 5, "pruned at the first write only, when there was one entry"
    _yaml_cache._pruned.clear()  # a new process
    load(big("v5"), LOADER)
    kept = entries(folder)
    assert sorted(json.loads(p.read_text())["note"] for p in kept) == ["v3", "v4", "v5"]


def test_memo_caches_any_computation_by_kind(folder):
    calls = []

    def lines(text):
        calls.append(text)
        return {"lines": [[["a", 0], 3]], "n": len(text)}

    text = "x" * 50
    assert _yaml_cache.memo(text, "test", lines, min_chars=10) == {
        "lines": [[["a", 0], 3]],
        "n": 50,
    }
    assert _yaml_cache.memo(text, "test", lines, min_chars=10)["n"] == 50
    assert len(calls) == 1
    _yaml_cache.memo(text, "other", lines, min_chars=10)
    assert len(calls) == 2, "another kind never reads this kind's entry"


def test_catalog_through_the_cache_equals_a_fresh_parse(folder, monkeypatch):
    from pytest_commerce_evals.reference import catalog

    def dump(c):
        return {pid: p.model_dump() for pid, p in c.products.items()}, {
            oid: o.model_dump() for oid, o in c.orders.items()
        }

    catalog._load_catalog.cache_clear()
    parsed = dump(catalog.load_catalog(catalog.FIXTURES_DIR, catalog.POISONED_DIR))
    assert entries(folder), "the catalog files are large enough to be cached"
    catalog._load_catalog.cache_clear()
    parse = yaml.load
    parsed_sizes = []

    def counting(text, Loader):  # noqa: N803 (yaml's own keyword)
        parsed_sizes.append(len(text))
        return parse(text, Loader=Loader)

    monkeypatch.setattr(_yaml_cache.yaml, "load", counting)
    try:
        cached = dump(catalog.load_catalog(catalog.FIXTURES_DIR, catalog.POISONED_DIR))
    finally:
        catalog._load_catalog.cache_clear()
    assert cached == parsed
    assert parsed_sizes, "the small files are still parsed"
    poisoned = {len(p.read_text()) for p in catalog.POISONED_DIR.glob("*.yaml")}
    again = [n for n in parsed_sizes if n >= MIN_CHARS and n not in poisoned]
    assert again == [], "no large ordinary fixture file is parsed twice"


def test_poisoned_fixture_ids_never_reach_the_cache(folder):
    from pytest_commerce_evals.reference import catalog

    catalog._load_catalog.cache_clear()
    try:
        loaded = catalog.load_catalog(catalog.FIXTURES_DIR, catalog.POISONED_DIR)
    finally:
        catalog._load_catalog.cache_clear()
    assert loaded.eval_only_ids, "the poisoned fixtures were merged"
    cached = "".join(p.read_text() for p in entries(folder))
    assert cached, "the ordinary fixtures were cached"
    assert not [i for i in loaded.eval_only_ids if i in cached]


def test_a_value_with_a_lone_surrogate_is_returned_and_never_written(folder):
    value = _yaml_cache.memo("x" * 50, "test", lambda t: {"turn": "\ud83e alone"}, min_chars=10)
    assert value == {"turn": "\ud83e alone"}
    assert entries(folder) == []
    text = big() + '\nturn: "\\ud83e"\n'  # the pure-Python loader builds the lone surrogate
    assert load(text, yaml.SafeLoader)["turn"] == "\ud83e"
    assert entries(folder) == []


def test_a_text_with_a_lone_surrogate_gets_a_key(folder):
    assert _yaml_cache.memo("\udd14" * 20, "test", len, min_chars=10) == 20


def test_valid_decides_what_is_written_and_what_is_read(folder):
    calls = []

    def compute(text):
        calls.append(text)
        return {"ok": len(calls) > 1}

    def valid(v):
        return isinstance(v, dict) and v.get("ok") is True

    text = "y" * 50
    assert _yaml_cache.memo(text, "test", compute, min_chars=10, valid=valid) == {"ok": False}
    assert entries(folder) == [], "a value valid refuses is not written"
    assert _yaml_cache.memo(text, "test", compute, min_chars=10, valid=valid) == {"ok": True}
    (entry,) = entries(folder)
    assert _yaml_cache.memo(text, "test", compute, min_chars=10, valid=valid) == {"ok": True}
    assert len(calls) == 2, "a valid entry is read"
    entry.write_text('{"ok": "tampered"}')
    assert _yaml_cache.memo(text, "test", compute, min_chars=10, valid=valid) == {"ok": True}
    assert len(calls) == 3, "an entry valid refuses is computed again"
    assert json.loads(entry.read_text()) == {"ok": True}


def test_an_entry_with_a_date_that_is_not_a_string_is_computed_again(folder):
    text = big()
    load(text, LOADER)
    (entry,) = entries(folder)
    entry.write_text('{"stamp": {"$date": 5}}')
    assert load(text, LOADER) == yaml.load(text, Loader=LOADER)


@pytest.mark.parametrize(
    ("value", "cached"),
    [
        ({"turns": ["Add the $5 mug"], "rows": [["id", 1]], "n": 1.5, "ok": None}, True),
        ({"turn": "the $date key is ours", "when": dt.date(2026, 1, 2)}, True),
        ({"stamp": dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.UTC)}, True),
        ({"odd": {"$date": "2026-01-02"}}, False),  # would read back as a date
        ({"odd": {"$datetime": "2026-01-02T03:04:00"}}, False),
        ({"odd": {"$date": 5}}, False),
        ({"blob": b"bytes"}, False),
    ],
)
def test_values_with_text_keys_read_back_as_they_were_written(folder, value, cached):
    """`text_keys` (the case reader's values) writes with one `json.dumps`; a value with a date
    or a mapping that would read back as one takes the full check, and what that refuses is not
    written. Either way the second read equals the first, with its types."""
    calls = []

    def compute(text):
        calls.append(text)
        return value

    for _ in range(2):
        got = _yaml_cache.memo("x" * 50, "test", compute, min_chars=10, text_keys=True)
        assert got == value and json.dumps(got, default=repr) == json.dumps(value, default=repr)
    assert len(calls) == (1 if cached else 2)
    assert len(entries(folder)) == (1 if cached else 0)


def test_an_entry_written_with_text_keys_is_the_one_the_full_check_writes(folder):
    value = {"data": [{"id": "cart-001-a", "turns": ["hi", "café"]}], "lines": [[["id", 1]]]}
    assert _yaml_cache._entry(value, True) == _yaml_cache._entry(value, False)
