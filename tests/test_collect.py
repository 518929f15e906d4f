"""Reading case files and `_set.yaml`: through the parse cache the same cases, lines and problems
as a fresh parse; bad input of every kind a problem with its file and line, never an exception."""

import hashlib
import json
import os
from pathlib import Path

import pytest
import yaml

from pytest_commerce_evals.cases import loader as _collect
from pytest_commerce_evals.cases.loader import (
    CACHE_MIN_CHARS,
    SetConfig,
    load_case_file,
    load_set_config,
)

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


# -- bad input: every problem with its file and line, nothing raised --------------------------

GOOD = """\
- id: cart-001-add-single
  priority: high
  difficulty: easy
  tags: [cart]
  turns: ["Add the trail runner to my cart"]
  expected:
    cart_contains: [shoe-001]
"""


def one_case(body: str = "", case_id: str = "cart-002-other", tags: str = "[cart]") -> str:
    return (
        f"- id: {case_id}\n  priority: high\n  difficulty: easy\n  tags: {tags}\n"
        f'  turns: ["Add the road runner"]\n{body}'
    )


def load(tmp_path, text: str | bytes, name: str = "cases.yaml"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return load_case_file(path, Path(name))


def problems(loaded):
    return [(p.line, p.key, p.message) for p in loaded.problems]


def ids(loaded):
    return [c.case.id for c in loaded.cases]


def test_a_duplicate_key_names_both_lines_and_the_other_cases_still_load(tmp_path):
    loaded = load(
        tmp_path,
        GOOD + one_case("  expected:\n    cart_contains: [a]\n  expected:\n    no_ui: true\n"),
    )
    assert ids(loaded) == ["cart-001-add-single"]
    ((line, key, message),) = problems(loaded)
    assert (line, key) == (15, "expected")
    assert "duplicate key 'expected': first on line 13, again on line 15" in message
    assert message.startswith("case 'cart-002-other': ")
    assert str(loaded.problems[0]).startswith("cases.yaml:15: key 'expected':")


def test_a_value_written_below_its_key_is_reported_at_the_keys_line(tmp_path):
    """A problem with a value is on the line of its key, wherever the value is written (here
    the plain text on the line after `priority:`)."""
    text = (
        "- id: cart-002-other\n"
        "  priority:\n"
        "    urgent\n"
        "  difficulty: easy\n"
        "  tags: [cart]\n"
        '  turns: ["Add the road runner"]\n'
    )
    ((line, key, message),) = problems(load(tmp_path, text))
    assert (line, key) == (2, "priority") and "urgent" in message


def test_a_duplicate_key_in_json_and_in_a_nested_mapping(tmp_path):
    text = (
        '{"id": "cart-001-json", "priority": "high", "difficulty": "easy",\n'
        ' "turns": ["hi"],\n'
        ' "expected": {"no_ui": true,\n'
        '              "no_ui": false}}\n'
    )
    ((line, key, message),) = problems(load(tmp_path, text, "case.json"))
    assert (line, key) == (4, "expected.no_ui")
    assert "first on line 3, again on line 4" in message


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("no_ui: 'yes'", 'expected true or false, unquoted (found "yes")'),
        ("no_ui: 'off'", 'expected true or false, unquoted (found "off")'),
        ("no_ui: 1", "expected true or false, unquoted (found 1)"),
        ("max_tool_calls: '3'", 'expected a whole number, unquoted (found "3")'),
        ("max_tool_calls: 3.0", "expected a whole number, unquoted (found 3.0)"),
        ("cart_item_count: true", "expected a whole number, unquoted (found true)"),
        ("calls_tool: add_to_cart", 'expected a list (found "add_to_cart")'),
    ],
)
def test_values_are_never_coerced(tmp_path, value, found):
    ((line, key, message),) = problems(load(tmp_path, one_case(f"  expected:\n    {value}\n")))
    assert (line, key) == (7, "expected." + value.split(":")[0])
    assert message == f"case 'cart-002-other': {found}"


def test_a_quantity_in_quotes_is_refused(tmp_path):
    body = '  state:\n    cart:\n      - {product_id: shoe-001, quantity: "2"}\n'
    ((line, key, message),) = problems(load(tmp_path, one_case(body)))
    assert (line, key) == (8, "state.cart[0].quantity")
    assert 'expected a whole number, unquoted (found "2")' in message


@pytest.mark.parametrize(
    ("value", "line", "message"),
    [
        ("notes: 2025-02-30", 6, "'2025-02-30' is not a valid date (day is out of range"),
        ("expected: {max_tool_calls: !!int abc}", 6, "'abc' is not a valid integer"),
        ("expected: {no_ui: !!bool maybe}", 6, "'maybe' is not a valid true/false"),
        ("notes: !!float xyz", 6, "'xyz' is not a valid number"),
        ("notes: !!timestamp xyz", 6, "'xyz' is not a valid date"),
        ("notes: !!binary aGVsbG8=", 6, "the tag !!binary is not allowed"),
        ("notes: !!set {a, b}", 6, "the tag !!set is not allowed"),
        ("notes: !!omap [{a: 1}]", 6, "the tag !!omap is not allowed"),
        ("notes: !!python/name:os.system x", 6, "the tag !!python/name:os.system is not"),
        ("notes: !mine x", 6, "the tag !mine is not allowed"),
        ("expected: {max_tool_calls: .nan}", 6, ".nan is not a finite number"),
        ("expected: {max_tool_calls: -.inf}", 6, "-.inf is not a finite number"),
        ("expected: {max_tool_calls: 1" + "0" * 1200 + "}", 6, "of 1,201 characters is too long"),
        ("expected: {1: x}", 6, "a key must be text; found 1 (int): quote it"),
        ("expected: {[a]: x}", 6, "a key must be text; found a list: quote it"),
        ("notes: *nowhere", 6, "alias *nowhere has no anchor &nowhere before it"),
        ("state: &s {memory: *s}", 6, "alias *s is inside the value its anchor &s names"),
        ("notes: <<", 6, "<< merges a mapping into one; as a value, quote it"),
    ],
)
def test_values_yaml_cannot_build_are_problems_with_their_line(tmp_path, value, line, message):
    loaded = load(tmp_path, GOOD + one_case(f"  {value}\n").replace("\n- id", "\n- id", 1))
    assert ids(loaded) == ["cart-001-add-single"], "the good case in the file still loads"
    (problem,) = loaded.problems
    assert problem.line == line + 7
    assert message in problem.message, problem.message
    assert problem.entry == 1 and problem.case_id == "cart-002-other"


def test_an_anchor_defined_twice_is_a_problem(tmp_path):
    text = one_case("  state: {memory: &m [a], seen_products: &m [b]}\n")
    ((line, key, message),) = problems(load(tmp_path, text))
    assert line == 6 and "anchor &m is defined twice (lines 6 and 6)" in message


def test_deep_nesting_stops_the_read_with_the_line(tmp_path):
    for text, line in (
        ("- id: x\n  notes: " + "[" * 100_000, 2),  # libyaml's own composer crashes here
        ("[" * 3000 + "]" * 3000, 1),
        ("".join("  " * i + "- \n" for i in range(200)), 65),
        ("- " * 5000 + "x\n", 1),
    ):
        (problem,) = load(tmp_path, text).problems
        assert problem.line == line
        assert "nest deeper than 64 levels" in problem.message
    (problem,) = load(tmp_path, "[" * 3000 + "]" * 3000, "deep.json").problems
    assert "nest deeper than 64 levels" in problem.message


def _libyaml_stops_at(monkeypatch, line: int, column: int):
    """libyaml as PyYAML 6.0.4's wheels build it: its scanner stops at its own nesting limit
    before the builder sees MAX_DEPTH levels (older releases have no limit)."""
    real = _collect._build
    calls = []

    def build(text, loader_cls):
        calls.append(text)
        if len(calls) == 1:
            mark = yaml.Mark("<unicode string>", 0, line, column, None, None)
            raise yaml.MarkedYAMLError(
                "while increasing flow level", mark, _collect.LIBYAML_TOO_DEEP, mark
            )
        return real(text, loader_cls)

    monkeypatch.setattr(_collect, "_build", build)
    return calls


def test_libyamls_own_nesting_limit_still_gets_the_readers_error_and_line(tmp_path, monkeypatch):
    text = "- id: x\n  notes: " + "[" * 3000
    calls = _libyaml_stops_at(monkeypatch, 1, 1007)  # where PyYAML 6.0.4's libyaml stops
    (problem,) = load(tmp_path, text).problems
    assert (problem.line, problem.message) == (
        2,
        "lists and mappings nest deeper than 64 levels here; the file was read no further "
        "(a case needs about six)",
    )
    assert calls[1] == "- id: x\n  notes: " + "[" * 998  # read again up to libyaml's mark


def test_libyamls_nesting_error_stands_when_the_text_before_it_is_not_too_deep(
    tmp_path, monkeypatch
):
    _libyaml_stops_at(monkeypatch, 1, 12)
    (problem,) = load(tmp_path, "- id: x\n  notes: " + "[" * 3000).problems
    assert problem.line == 2
    assert "exceeded maximum nesting depth" in problem.message


def test_nesting_to_the_limit_still_reads(tmp_path):
    depth = _collect.MAX_DEPTH
    (problem,) = load(tmp_path, "[" * depth + "]" * depth).problems
    assert "list item 1: expected a case (a mapping); found list" in problem.message
    (problem,) = load(tmp_path, "[" * (depth + 1) + "]" * (depth + 1)).problems
    assert "nest deeper than 64 levels" in problem.message


def test_an_alias_bomb_stops_at_the_repeat_limit(tmp_path):
    names = "abcdefghi"
    text = (
        "a: &a ["
        + ", ".join(["lol"] * 10)
        + "]\n"
        + "".join(
            f"{c}: &{c} [" + ", ".join([f"*{p}"] * 10) + "]\n"
            for p, c in zip(names, names[1:], strict=False)
        )
    )
    assert len(text) < 500
    (problem,) = load(tmp_path, text).problems
    assert problem.line == 5
    assert "aliases repeat more than 100,000 values (here *d)" in problem.message


def test_aliases_and_merge_keys_that_stay_small_still_work(tmp_path):
    text = (
        "- &base\n  id: cart-001-base\n  priority: high\n  difficulty: easy\n"
        "  turns: [hi]\n  state:\n    memory: [vegan]\n"
        "- <<: *base\n  id: cart-002-merged\n  expected:\n    no_ui: true\n"
    )
    loaded = load(tmp_path, text)
    assert problems(loaded) == []
    merged = loaded.cases[1]
    assert merged.case.state.memory == ["vegan"] and merged.case.expected.no_ui is True
    assert merged.line_of("state", "memory") == 7, "a merged key keeps the line it was written on"
    assert merged.line_of("expected", "no_ui") == 11


def test_a_problem_inside_a_repeated_value_has_the_line_it_was_written_on(tmp_path, monkeypatch):
    text = GOOD.replace("  expected:\n", "  expected: &checks\n").replace(
        "[shoe-001]", "[shoe-001]\n    no_ui: 'yes'"
    ) + one_case("  expected: *checks\n")
    loaded = load(tmp_path, text)
    assert [(p.line, p.key) for p in loaded.problems] == [
        (8, "expected.no_ui"),
        (8, "expected.no_ui"),
    ]
    monkeypatch.setattr(_collect, "MAX_ALIAS_LINES", 0)
    loaded = load(tmp_path, text)
    assert [p.line for p in loaded.problems] == [8, 14], "past the limit: the alias's line"


def test_a_lone_surrogate_escape_is_a_problem_and_a_pair_is_one_character(tmp_path):
    case = '{{"id": "cart-001-x", "priority": "low", "difficulty": "easy",\n "turns": ["{}"]}}\n'
    (problem,) = load(tmp_path, case.format("\\ud83e alone"), "c.json").problems
    assert (problem.line, problem.key) == (2, "turns[0]")
    assert "half of a surrogate pair" in problem.message
    (pair,) = load(tmp_path, case.format("\\ud83e\\udd14 pair"), "c.json").cases
    assert pair.case.turns == ["\U0001f914 pair"]
    literal = load(tmp_path, case.format("\\\\ud83e\\\\udd14 kept"), "c.json").cases[0]
    assert literal.case.turns == ["\\ud83e\\udd14 kept"], "escaped backslashes stay text"
    (yaml_problem,) = load(tmp_path, one_case().replace("road runner", "\\ud83e")).problems
    assert yaml_problem.line == 5 and "half of a surrogate pair" in yaml_problem.message


def test_json_is_read_as_json(tmp_path):
    long_key = "k" * 2000  # YAML allows a key of 1,024 characters at most
    text = json.dumps(
        {
            "id": "cart-001-x",
            "priority": "low",
            "difficulty": "easy",
            "turns": ["a\x85b\u2028c\x7f"],  # line breaks or refused characters in YAML
            "state": {"staged_changes": [{"kind": "k", "fields": {long_key: 1e5, "n": -0}}]},
        },
        ensure_ascii=False,
        indent=2,
    )
    (case,) = load(tmp_path, text, "c.json").cases
    assert case.case.turns == ["a\x85b\u2028c\x7f"]
    assert case.case.state.staged_changes[0].fields == {long_key: 100000.0, "n": 0}
    (problem,) = load(tmp_path, text.replace("100000.0", "NaN"), "c.json").problems
    assert problem.key == "state.staged_changes[0].fields." + long_key
    assert "NaN is not a finite number" in problem.message
    (problem,) = load(tmp_path, text.replace("100000.0", "1" * 5000), "c.json").problems
    assert "an integer of 5,000 characters is too long" in problem.message
    (problem,) = load(tmp_path, "[1, 2,]", "c.json").problems
    assert problem.message == "malformed JSON: Expecting value (column 7)"


def test_a_lone_surrogate_through_the_parse_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("COMMERCE_CACHE_DIR", str(tmp_path / "cache"))
    rows = ",\n".join(
        f'{{"id": "cart-{n:03d}-x", "priority": "low", "difficulty": "easy", "turns": ["{n}"]}}'
        for n in range(1, 30)
    )
    text = f'[{rows},\n{{"id": "cart-099-x", "priority": "low", "difficulty": "easy", "turns": ["\\udd14"]}}]\n'
    assert len(text) >= CACHE_MIN_CHARS
    for _ in range(2):
        (problem,) = load(tmp_path, text, "c.json").problems
        assert problem.line == 30 and "surrogate" in problem.message
    assert not list((tmp_path / "cache").rglob("*.json"))
    # and a YAML file whose text reaches the builder with a surrogate (the pure-Python parser)
    monkeypatch.setattr(_collect, "_Loader", yaml.SafeLoader)
    yaml_text = "".join(one_case(case_id=f"cart-{n:03d}-x") for n in range(1, 20))
    yaml_text += one_case(case_id="cart-099-x").replace("road runner", "\\ud83e")
    (problem,) = load(tmp_path, yaml_text).problems
    assert problem.line == 5 * 19 + 5 and "half of a surrogate pair" in problem.message
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_bytes_that_are_not_utf8_give_line_and_column(tmp_path):
    text = (GOOD + "  notes: caf\xe9\n").encode("latin-1")
    (problem,) = load(tmp_path, text).problems
    assert problem.line == 8
    assert "not UTF-8: byte 0xe9 at column 13" in problem.message


def test_a_control_character_gives_line_and_column(tmp_path):
    (problem,) = load(tmp_path, GOOD + "  notes: a \x07 bell\n").problems
    assert problem.line == 8
    assert "character #x0007 at column 12 cannot appear" in problem.message
    (wide,) = load(tmp_path, GOOD + "  notes: \u00e9\u00e9\u00e9 \x1b\n").problems
    assert wide.line == 8
    assert "#x001b at column 14 cannot" in wide.message, "columns count characters, not bytes"


def test_a_folder_named_like_a_case_file_is_a_problem(tmp_path):
    (tmp_path / "odd.yaml").mkdir()
    (problem,) = load_case_file(tmp_path / "odd.yaml", Path("odd.yaml")).problems
    assert problem.message == "is a folder; expected a file"


def test_a_pipe_or_a_file_too_large_is_not_read(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "pipe.yaml")  # reading it would wait for a writer forever
    (problem,) = load_case_file(tmp_path / "pipe.yaml", Path("pipe.yaml")).problems
    assert problem.message == "is not a regular file"
    monkeypatch.setattr(_collect, "MAX_FILE_BYTES", 100)
    (problem,) = load(tmp_path, GOOD).problems
    assert problem.message == f"is {len(GOOD):,} bytes; a case file holds at most 100"


def test_an_empty_list_is_a_warning_not_a_problem(tmp_path):
    loaded = load(tmp_path, "# nothing yet\n[]\n")
    assert (loaded.cases, loaded.problems) == ([], [])
    assert loaded.warnings == ["cases.yaml:1: the file holds an empty list; no cases to collect"]
    assert load(tmp_path, GOOD).warnings == []


def test_tags_blank_is_a_problem_and_odd_text_is_a_tag(tmp_path):
    (problem,) = load(tmp_path, one_case(tags='[cart, "  "]')).problems
    assert (problem.line, problem.key) == (4, "tags")
    odd = '["#x", "@y", "-z", "_a", " b", "3d", "\U0001f389", "\u00fcn\u00efc\u00f6de"]'
    (case,) = load(tmp_path, one_case(tags=odd)).cases
    assert case.case.tags[0] == "#x" and case.case.tags[-1] == "\u00fcn\u00efc\u00f6de"


def test_unknown_keys_still_get_suggestions(tmp_path):
    (problem,) = load(tmp_path, one_case("  expected:\n    cart_contain: [a]\n")).problems
    assert problem.key == "expected.cart_contain" and problem.line == 7
    assert "did you mean 'cart_contains'?" in problem.message


@pytest.mark.parametrize(
    "entry",
    [
        '{"data": [{}, {}], "lines": [], "problems": []}',
        '{"data": [], "lines": []}',
        '{"data": {}, "lines": [[]], "problems": [[[], 1, "x"]]}',
        "[]",
        '{"$date": 5}',
    ],
)
def test_a_cached_entry_of_the_wrong_shape_is_parsed_again(case_file, entry):
    first = view(load_case_file(case_file))
    (cached,) = (case_file.parent / "cache").rglob("*.json")
    cached.write_text(entry)
    assert view(load_case_file(case_file)) == first
    assert len(json.loads(cached.read_text())["data"]) == 7, "the entry was replaced"


def test_a_file_with_problems_is_never_cached(case_file):
    case_file.write_text(case_file.read_text() + one_case("  notes: 2025-02-30\n"))
    assert load_case_file(case_file).problems
    assert not list((case_file.parent / "cache").rglob("*.json"))


# -- _set.yaml ---------------------------------------------------------------------------------


def set_problem(tmp_path, text: str | bytes | None):
    folder = tmp_path / "cases" / "cart"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "_set.yaml"
    if text is None:
        target.mkdir()
    elif isinstance(text, bytes):
        target.write_bytes(text)
    else:
        target.write_text(text)
    return load_set_config(folder, tmp_path)


@pytest.mark.parametrize(
    ("text", "line", "key", "message"),
    [
        ("threshold: 80\n", 1, "threshold", "expected a number from 0 to 1; found 80"),
        ("description: x\nthreshold: .nan\n", 2, "threshold", ".nan is not a finite number"),
        ("threshold: -0.1\n", 1, "threshold", "expected a number from 0 to 1; found -0.1"),
        ('threshold: "0.8"\n', 1, "threshold", 'found "0.8"'),
        ("threshold: yes\n", 1, "threshold", "found true"),
        ("threshold: 0.5\nthreshold: 0.9\n", 2, "threshold", "first on line 1, again on line 2"),
        ("treshold: 0.5\n", 1, "treshold", "unknown key; did you mean 'threshold'?"),
        ("description: [a]\n", 1, "description", 'expected text; found ["a"]'),
        ("description: 2025-02-30\n", 1, "description", "is not a valid date"),
        ("- threshold: 0.5\n", 1, None, "expected a mapping with threshold and description"),
        ("threshold: [unclosed\n", 2, None, "malformed YAML"),
        ("threshold: 0.5\ndescription: \x01\n", 2, None, "#x0001 at column 14"),
        (b"threshold: 0.5\ndescription: caf\xe9\n", 2, None, "byte 0xe9 at column 17"),
        ("threshold: " + "[" * 5000, 1, None, "nest deeper than 64 levels"),
        (None, None, None, "is a folder; expected a file holding threshold and description"),
    ],
)
def test_set_file_problems_name_the_line_and_the_path_from_the_rootdir(
    tmp_path, text, line, key, message
):
    config, problem = set_problem(tmp_path, text)
    assert config == SetConfig()
    assert problem.path == Path("cases/cart/_set.yaml")
    assert (problem.line, problem.key) == (line, key)
    assert message in problem.message, problem.message


def test_a_good_set_file_and_an_empty_one(tmp_path):
    assert set_problem(tmp_path, "threshold: 1\ndescription: Cart.\n") == (
        SetConfig(1, "Cart."),
        None,
    )
    (tmp_path / "cases" / "cart" / "_set.yaml").write_text("")
    assert load_set_config(tmp_path / "cases" / "cart", tmp_path) == (SetConfig(), None)
    assert load_set_config(tmp_path / "nowhere") == (SetConfig(), None)


def test_an_entry_the_previous_reader_wrote_is_never_served(case_file):
    """The reader before this one cached a file with a second `expected:` as clean data."""
    text = case_file.read_text() + one_case(
        "  expected:\n    no_ui: true\n  expected:\n    no_ui: false\n"
    )
    case_file.write_text(text)
    digest = hashlib.blake2b(text.encode(), digest_size=20)
    digest.update(f"\0{_collect._yaml_cache._VERSION}:case-file".encode())
    old = case_file.parent / "cache" / "yaml" / f"{digest.hexdigest()}.json"
    old.parent.mkdir(parents=True)
    old.write_text(json.dumps({"data": [], "lines": []}))
    loaded = load_case_file(case_file)
    assert any("duplicate key 'expected'" in p.message for p in loaded.problems)


def test_a_case_reports_twenty_problems_and_counts_the_rest(tmp_path):
    many = one_case("  state:\n    memory: [" + ", ".join(["[1]"] * 50) + "]\n")
    loaded = load(tmp_path, many)
    assert len(loaded.problems) == 21
    assert loaded.problems[0].key == "state.memory[0]"
    last = loaded.problems[-1]
    assert (last.line, last.key, last.entry) == (7, None, 0)
    assert last.message == "case 'cart-002-other': and 30 more problems"
    tags = one_case(tags="\n" + "".join("  - !!int x\n" for _ in range(30)))
    problems = load(tmp_path, tags).problems
    assert len(problems) == 21 and problems[-1].message.endswith("and 10 more problems")


def test_a_list_of_many_items_that_are_not_cases_is_a_bounded_list_of_problems(tmp_path):
    from pytest_commerce_evals.cases.loader import MAX_PROBLEMS

    path = tmp_path / "many.yaml"
    path.write_text("[" + ",".join(["1"] * 5000) + "]")
    loaded = load_case_file(path, Path("many.yaml"))
    assert len(loaded.problems) == MAX_PROBLEMS + 1
    assert loaded.problems[0].message == "list item 1: expected a case (a mapping); found int"
    assert loaded.problems[-1].message == (
        f"and {5000 - MAX_PROBLEMS:,} more list items that are not cases (a mapping each); only "
        "the first are listed"
    )


def test_nested_anchors_keep_the_lines_an_alias_replays(tmp_path):
    path = tmp_path / "anchors.yaml"
    path.write_text(
        "- &case\n"
        "  id: cart-001-a\n"
        "  priority: high\n"
        "  difficulty: easy\n"
        "  turns: &turns [hi]\n"
        "  expected: &exp\n"
        "    cart_contain: [x]\n"
        "- id: cart-002-b\n"
        "  priority: high\n"
        "  difficulty: easy\n"
        "  turns: *turns\n"
        "  expected: *exp\n"
    )
    loaded = load_case_file(path, Path("anchors.yaml"))
    assert [(p.line, p.key) for p in loaded.problems] == [
        (7, "expected.cart_contain"),
        (7, "expected.cart_contain"),  # the alias replays the anchor's lines
    ]


def test_a_merge_of_two_anchors_takes_a_key_from_the_earlier_one(tmp_path):
    # YAML's merge key: "keys in mapping nodes earlier in the sequence override keys specified
    # in later mapping nodes" (PyYAML's own constructor takes the later one's)
    loaded = load(
        tmp_path,
        "- &a {id: chat-001-a, priority: high, difficulty: easy, turns: [hi], "
        "expected: {reply_includes: [a]}}\n"
        "- &b {id: chat-002-b, priority: low, difficulty: hard, turns: [yo], "
        "expected: {reply_includes: [b]}, tags: [from-b]}\n"
        "- <<: [*a, *b]\n"
        "  id: chat-003-c\n"
        "  difficulty: medium\n",
    )
    assert loaded.problems == []
    merged = loaded.cases[2].case
    assert (merged.id, merged.priority, merged.turns) == ("chat-003-c", "high", ["hi"])
    assert merged.difficulty == "medium"  # the mapping's own key beats every merged one
    assert merged.tags == ["from-b"]  # a key only the later anchor has is still merged


GC_PROBE = """
import gc

SEEN = {}

def pytest_configure(config):
    SEEN["configure"] = gc.get_threshold()[0]

def pytest_itemcollected(item):
    SEEN.setdefault("collecting", gc.get_threshold()[0])

def pytest_collectstart(collector):
    SEEN.setdefault("collectstart", gc.get_threshold()[0])

def pytest_runtestloop(session):
    SEEN["after"] = gc.get_threshold()[0]

def pytest_unconfigure(config):
    (config.rootpath / "gc_seen.txt").write_text(repr(SEEN))
"""


@pytest.mark.parametrize("with_cases", [True, False])
def test_a_session_with_case_folders_collects_with_a_raised_gc_threshold(pytester, with_cases):
    """What collection builds lives for the session: while a session with case folders
    collects, young collections wait for 50,000 new objects; after, the threshold is back.
    A session without case folders collects as before."""
    import gc

    pytester.makepyfile(gc_probe=GC_PROBE, test_plain="def test_ok():\n    pass\n")
    pytester.syspathinsert(pytester.path)
    if with_cases:
        (pytester.path / "cases").mkdir()
        (pytester.path / "cases" / "a.yaml").write_text(CASE.format(n=1))
    before = gc.get_threshold()
    result = pytester.runpytest("-p", "gc_probe", "--co", "-q")
    assert result.ret == 0, result.stdout.str()
    seen = eval((pytester.path / "gc_seen.txt").read_text())
    assert seen["configure"] == 50_000  # the plugins load and configure with it raised
    assert seen["collectstart"] == (50_000 if with_cases else before[0])
    assert seen["collecting"] == (50_000 if with_cases else before[0])
    assert seen["after"] == before[0] and gc.get_threshold() == before


@pytest.mark.parametrize("args", [["--no-such-option"], ["--commerce-trials=0"], ["--help"]])
def test_a_session_that_ends_before_collection_puts_the_gc_threshold_back(pytester, args):
    """The threshold raised while the plugin loads is put back by a session that never
    collects: an unknown option, a setting refused at configure time, `--help`."""
    import gc

    before = gc.get_threshold()
    result = pytester.runpytest(*args)
    assert result.ret in (0, pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR)
    assert gc.get_threshold() == before
