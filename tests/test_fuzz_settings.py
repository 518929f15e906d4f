"""Bad settings never get past configure: property tests over every setting of the table and every
store URL. Whatever value a setting is given, from the command line, the ini or the environment,
resolving it ends as a value or as a `UsageError` naming the setting; never anything else. The
values the docs allow nowhere (empty on the command line, nan and inf, other scripts' digits,
upper-case keywords, spaces around a value) are refused wherever the setting is not text.

The default run spends a bounded budget (`COMMERCE_FUZZ_EXAMPLES` examples per property, 200
unless set); docs/fuzzing.md says how to run a long campaign.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_commerce_evals.settings import TABLE
from pytest_commerce_evals.settings._resolve import _parse
from pytest_commerce_evals.store import database

EXAMPLES = int(os.environ.get("COMMERCE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
PARSED = [s for s in TABLE if s.stored and s.kind != "flag"]
"""Every setting a value is given to (a switch takes none)."""
SCALAR = [
    s for s in PARSED if s.kind not in ("list", "paths", "patterns", "str", "store", "run_id")
]
"""The settings whose value is not free text: a number, a keyword, a URL, a file to write."""


def _origins(s):
    """Where `s` may be given, in its order."""
    return [o for o in s.order if {"option": s.option, "ini": s.ini, "env": s.env}[o]]


def _resolve(s, origin, raw, tmp_path):
    try:
        return _parse(s, origin, raw, tmp_path, tmp_path)
    except pytest.UsageError as exc:
        where = s.where(origin)
        assert str(exc).startswith(where), (s.name, raw, str(exc))
        return exc


TEXT = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"]), max_size=40
) | st.sampled_from(
    ["", " ", "nan", "NaN", "inf", "-inf", "1e999", "٣", "٠.٥", "AUTO", " auto", "auto ", "None",
     "none", "0", "-1", "1.5", "10001", "auto:0:0", "auto:٢:٣", "http://", "ftp://x", ",", ":"]
)  # fmt: skip


@pytest.mark.parametrize("setting", PARSED, ids=lambda s: s.name)
@FUZZ
@given(raw=TEXT)
def test_any_text_for_any_setting_is_a_value_or_a_usage_error(tmp_path, setting, raw):
    for origin in _origins(setting):
        value = raw if setting.kind not in ("list", "paths", "patterns", "dimensions") else [raw]
        if setting.kind == "dimensions" and origin == "option":
            value = raw
        _resolve(setting, origin, value, tmp_path)


@pytest.mark.parametrize("setting", SCALAR, ids=lambda s: s.name)
@pytest.mark.parametrize(
    "raw", ["nan", "inf", "-inf", "NaN", "1e999", "٣", "٠.٥", "AUTO", "NONE", "", " auto"]
)
def test_what_no_setting_allows_is_refused(tmp_path, setting, raw):
    if setting.kind == "output" and raw not in ("", " auto"):
        pytest.skip("a file to write may be named nan")
    origin = "option" if setting.option else _origins(setting)[0]
    if origin != "option" and raw in ("", " auto"):
        pytest.skip("an ini key or a variable set to an empty value counts as not set")
    found = _resolve(setting, origin, raw, tmp_path)
    assert isinstance(found, pytest.UsageError), (setting.name, raw, found)


URL_PART = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="/?#"), max_size=12
)


@FUZZ
@given(
    user=URL_PART,
    host=URL_PART,
    port=URL_PART,
    path=URL_PART,
    query=st.lists(st.tuples(st.sampled_from(["schema", "sslmode", "x"]), URL_PART), max_size=3),
)
@example(user="[", host="]", port="", path="", query=[])  # a bracketed "host" holding the password
@example(user="", host="[", port="", path="", query=[])
def test_any_store_url_is_a_store_or_a_usage_error_without_its_password(
    tmp_path, user, host, port, path, query
):
    if not database.driver_available():
        pytest.skip("psycopg is in the [postgres] extra")
    password = "s3cret-Pa55"
    text = "&".join(f"{k}={v}" for k, v in query)
    url = f"postgresql://{user}:{password}@{host}:{port}/{path}?{text}"
    for s in (s for s in TABLE if s.kind == "store"):
        found = _resolve(s, "option", url, tmp_path)
        if isinstance(found, pytest.UsageError):
            assert password not in str(found)
        shown = database.public_url(url)
        assert password not in shown


DIGITS = st.sampled_from(["0", "1", "5", "9", "٣", "𝟓", "²", "½", "_", ".", "e", "-", "+", " ",
                          "$", "0x1", "９"])  # fmt: skip
NUMBER = st.lists(DIGITS, min_size=0, max_size=8).map("".join) | st.sampled_from(
    ["9" * 5000, "1e30", "1_000", "nan", "inf", "0.0000001", "1000000001", "1000000000"]
)
KEYWORD = st.sampled_from(["calls", "tokens", "cost", "CALLS", "Cost", "cost ", " calls", "ｃalls",
                           "money", ""])  # fmt: skip
BUDGET = st.lists(st.tuples(KEYWORD, st.sampled_from([":", "=", ""]), NUMBER), min_size=1,
                  max_size=3).map(lambda items: ",".join(k + s + v for k, s, v in items))  # fmt: skip
PRICES = st.lists(
    st.tuples(st.sampled_from(["m", "gpt-4.1", "M", "m2"]), st.lists(NUMBER, max_size=4)),
    min_size=1,
    max_size=3,
).map(lambda lines: [f"{model} = {' '.join(numbers)}" for model, numbers in lines])


def _ascii_amount(text: str) -> bool:
    import re

    return re.fullmatch(r"[0-9]*\.?[0-9]+|[0-9]+\.", text) is not None


@FUZZ
@given(raw=BUDGET)
def test_any_budget_is_the_ascii_limits_it_names_or_a_usage_error(tmp_path, raw):
    setting = next(s for s in TABLE if s.name == "budget")
    for origin in _origins(setting):
        found = _resolve(setting, origin, raw, tmp_path)
        if isinstance(found, pytest.UsageError):
            continue
        items = [item.strip() for item in raw.split(",") if item.strip()]
        for item in items:  # every limit accepted was written in lower case and ASCII digits
            key, _, value = item.partition(":")
            assert key.strip() in ("calls", "tokens", "cost"), raw
            value = value.strip().removeprefix("$").strip()
            assert value.isascii() and _ascii_amount(value), raw
        assert found.cost is None or 0 < found.cost <= 10**9


@FUZZ
@given(lines=PRICES)
def test_any_price_list_is_prices_in_ascii_digits_or_a_usage_error(tmp_path, lines):
    setting = next(s for s in TABLE if s.name == "prices")
    for origin in _origins(setting):
        value = "\n".join(lines) if origin != "ini" else lines
        found = _resolve(setting, origin, value, tmp_path)
        if isinstance(found, pytest.UsageError):
            continue
        models = [line.split("=", 1)[0].strip() for line in lines]
        assert len(set(models)) == len(models), lines  # a model listed twice is refused
        for line in lines:
            numbers = line.split("=", 1)[1].split()
            assert 2 <= len(numbers) <= 3 and all(n.isascii() and _ascii_amount(n) for n in numbers)


def test_the_property_tests_see_every_kind_of_setting():
    kinds = {s.kind for s in PARSED}
    assert {"int", "float", "trials", "concurrency", "min_kappa", "url", "store", "output",
            "choice", "list", "dimensions", "patterns", "str", "budget", "prices"} <= kinds  # fmt: skip
    assert Path(__file__).name in (Path(__file__).parent / "..").resolve().joinpath(
        "docs", "fuzzing.md"
    ).read_text(encoding="utf-8")
