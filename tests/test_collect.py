"""Case files through the parse cache: the same cases, lines and problems as a fresh parse."""

import pytest

from pytest_commerce_evals import _collect
from pytest_commerce_evals._collect import CACHE_MIN_CHARS, load_case_file

CASE = """\
- id: cart-{n:03d}-cached-add
  priority: high
  difficulty: easy
  tags: [cart]
  turns: ["Please add the walnut desk (desk-walnut-001) to my cart, number {n}."]
  expected:
    calls_tool: [search_products, add_to_cart]
    cart_contains: [desk-walnut-001]
"""
BAD = """\
- id: cart-099-cached-bad
  priority: high
  difficulty: easy
  tags: [cart]
  turns: ["hi"]
  expected:
    cart_item_count: many
"""


def view(loaded):
    cases = [(c.case.model_dump(), c.line, c.key_lines) for c in loaded.cases]
    problems = [(p.line, p.key, p.message, p.case_id, p.entry) for p in loaded.problems]
    return cases, problems


@pytest.fixture
def case_file(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMERCE_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "cases.yaml"
    path.write_text("".join(CASE.format(n=n) for n in range(6)) + BAD)
    assert len(path.read_text()) >= CACHE_MIN_CHARS
    return path


def test_a_cached_case_file_loads_exactly_as_parsed(case_file, monkeypatch):
    parsed = view(load_case_file(case_file))
    assert len(parsed[0]) == 6
    assert parsed[1] == [
        (
            55,
            "expected.cart_item_count",
            parsed[1][0][2],
            "cart-099-cached-bad",
            6,
        )
    ]
    assert parsed[0][5][1] == 41, "the sixth case starts on line 41"
    assert parsed[0][5][2][("expected", "cart_contains")] == 48

    def no_parse(text):
        raise AssertionError("parsed again although the text is cached")

    monkeypatch.setattr(_collect, "_parse_yaml", no_parse)
    assert view(load_case_file(case_file)) == parsed


def test_an_edited_case_file_is_parsed_again(case_file):
    load_case_file(case_file)
    case_file.write_text(case_file.read_text().replace("number 5", "number five"))
    (case,) = [c for c in load_case_file(case_file).cases if c.case.id == "cart-005-cached-add"]
    assert "number five" in case.case.turns[0]


def test_a_syntax_error_is_reported_and_never_cached(case_file, monkeypatch):
    case_file.write_text(case_file.read_text() + "- id: [unclosed\n")
    first = load_case_file(case_file)
    assert first.cases == [] and "malformed YAML" in first.problems[0].message
    assert not list((case_file.parent / "cache").rglob("*.json"))
