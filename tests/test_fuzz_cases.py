"""Bad input never stops the suite: property tests over the case and set loaders, and the worst
inputs found so far kept as files under tests/data/bad_inputs/cases/.

Whatever a case file or `_set.yaml` holds, reading it ends as cases or as problems naming the file
and a line, within a few seconds, and never raises. An accepted case can always be stored (valid
Unicode, finite numbers). Through the parse cache a file reads exactly as parsed.

The default run spends a bounded budget (`COMMERCE_FUZZ_EXAMPLES` examples per property, 200
unless set); docs/fuzzing.md says how to run a long campaign.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from unittest import mock

import pytest
import yaml
from helpers import toy_conftest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_commerce_evals.cases import loader as _collect
from pytest_commerce_evals.cases.case import (
    ATTACK_CATEGORIES,
    CASE_ID_PATTERN,
    AttackSpec,
    Case,
    Expected,
    State,
    UserSpec,
)
from pytest_commerce_evals.cases.loader import LoadedFile, load_case_file, load_set_config
from pytest_commerce_evals.events import CartLine

DATA = Path(__file__).parent / "data" / "bad_inputs" / "cases"
EXAMPLES = int(os.environ.get("COMMERCE_FUZZ_EXAMPLES", "200"))
SECONDS = 5.0
"""The most one load may take: the loaders bound their work (nesting, aliases) well inside it."""

# hypothesis's failure report imports a module that warns; the failure must show, not that
pytestmark = pytest.mark.filterwarnings(
    "ignore:mypy_extensions.TypedDict is deprecated:DeprecationWarning"
)

FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,  # nothing written into the checkout; a failure prints its reproduction
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# -- what the generated files are made of -----------------------------------------------------

CASE_KEYS = list(Case.model_fields)
EXPECTED_KEYS = list(Expected.model_fields)
STATE_KEYS = list(State.model_fields)
LINE_KEYS = list(CartLine.model_fields)
SCALARS = [
    # YAML 1.1 spellings and numbers
    "yes", "no", "on", "off", "true", "false", "~", "null", "0", "3", "-1", "3.0", "1e5",
    ".nan", "-.inf", "0x1f", "0o17", "017", "1:30", "1_000", "=", "<<",
    # values PyYAML's constructors refuse after parsing
    "2025-02-30", "2025-01-01", "2025-01-01T10:00:00Z", "!!int abc", "!!bool maybe",
    "!!float x", "!!timestamp x", "!!binary aGVsbG8=", "!!str 3", "!!null x", "!mine x",
    "!!python/name:os.system x", "!!set {a, b}", "!!omap [{a: 1}]", "!!pairs [{a: 1}]",
    # text that is hard to read or to keep
    "''", '""', "' '", '"\\ud83e"', '"\\ud83e\\udd14"', '"\\udd14\\ud83e"', '"\\U0010ffff"',
    '"\\x07"', '"\\0"', "cart-001-add", "cart-\u0660\u0660\u0661-add", '"cart-001-add\\n"',
    "'#tag'", "'@at'", "-dash", "_under", "3d", "\U0001f389", "\u00fcn\u00efc\u00f6de",
    "1" * 1200, "*a0", "*a1", "*nowhere", "[]", "{}", "shoe-001", "add_to_cart",
    "PASS if it adds shoe-001. FAIL if not.",
]  # fmt: skip
GOOD = {
    "id": "cart-001-add-single",
    "priority": "high",
    "difficulty": "easy",
    "tags": ["cart", "scenario:trail"],
    "state": {"cart": [{"product_id": "shoe-001", "quantity": 2}], "memory": ["vegan"]},
    "turns": ["Add the trail runner to my cart"],
    "expected": {"cart_contains": ["shoe-001"], "max_tool_calls": 3, "rubric": "PASS if a."},
}

plain_text = st.text(st.characters(codec="utf-8"), max_size=12)
scalar = st.one_of(
    st.sampled_from(SCALARS),
    plain_text,
    plain_text.map(lambda s: json.dumps(s, ensure_ascii=False)),
    plain_text.map(json.dumps),
    st.integers(-(2**70), 2**70).map(str),
    st.floats().map(repr),
)
key = st.one_of(st.sampled_from(CASE_KEYS + EXPECTED_KEYS + STATE_KEYS + ["<<"]), scalar)


def _flow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(children, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(st.tuples(key, children), max_size=4).map(
            lambda kvs: "{" + ", ".join(f"{k}: {v}" for k, v in kvs) + "}"
        ),
    )


anchor = st.sampled_from(["", "", "", "&a0 ", "&a1 "])
value = st.tuples(anchor, st.recursive(scalar, _flow, max_leaves=6)).map("".join)


def _block(keys: list[str], draw, indent: str) -> str:
    chosen = draw(st.lists(st.sampled_from([*keys, "<<", "junk"]), max_size=4))
    return "".join(f"{indent}{k}: {draw(value)}\n" for k in chosen)


@st.composite
def case_yaml(draw) -> str:
    """A list of cases in block style: the real keys (some twice), random values."""
    cases = []
    for _ in range(draw(st.integers(0, 2))):
        lines = _block(CASE_KEYS, draw, "  ")
        if draw(st.booleans()):
            lines += "  expected:\n" + _block(EXPECTED_KEYS, draw, "    ")
        if draw(st.booleans()):
            lines += "  state:\n" + _block(STATE_KEYS, draw, "    ")
            lines += "    cart:\n      - " + _block(LINE_KEYS, draw, "        ").lstrip()
        cases.append(draw(anchor) + "\n" + lines if lines else "{}\n")
    return "".join(f"- {c}" for c in cases) or draw(st.sampled_from(["", "[]\n", "{}\n", "x\n"]))


def sections(data: dict) -> list[dict]:
    return [d for d in (data, data.get("expected"), data.get("state")) if isinstance(d, dict)]


@st.composite
def mostly_good_yaml(draw) -> str:
    """A good case with a few keys given random values: many of these load."""
    data = json.loads(json.dumps(GOOD))
    for _ in range(draw(st.integers(0, 2))):
        section = draw(st.sampled_from(sections(data)))
        section[draw(st.sampled_from(list(section) + ["junk"]))] = "\0VALUE"
    text = yaml.safe_dump([data], sort_keys=False, allow_unicode=True)
    while "\0VALUE" in text:
        text = text.replace("'\\0VALUE'", draw(value), 1).replace('"\\0VALUE"', draw(value), 1)
    return text


# PyYAML's emitter writes NEL and the Unicode line separators raw inside quotes, where its reader
# folds them: a text it cannot round-trip (test_json_is_read_as_json covers them in JSON)
words = st.text(
    st.characters(codec="utf-8", exclude_characters="\x85\u2028\u2029"), min_size=1, max_size=20
).filter(str.strip)
LOWER, DIGITS = "abcdefghijklmnopqrstuvwxyz", "0123456789"
case_id = st.builds(
    "{}{}-{:03d}-{}".format,
    st.sampled_from(LOWER),
    st.text(LOWER + DIGITS + "_", max_size=6),
    st.integers(0, 999),
    st.lists(st.text(LOWER + DIGITS, min_size=1, max_size=5), min_size=1, max_size=3).map("-".join),
)
valid_case = st.fixed_dictionaries(
    {
        "id": case_id,
        "priority": st.sampled_from(["critical", "high", "medium", "low"]),
        "difficulty": st.sampled_from(["easy", "medium", "hard"]),
        "turns": st.lists(words, min_size=1, max_size=3),
    },
    optional={
        "tags": st.lists(words, max_size=4),
        "skip": words,
        "notes": words,
        "state": st.fixed_dictionaries(
            {},
            optional={
                "memory": st.lists(words, max_size=2),
                "cart": st.lists(
                    st.one_of(
                        words,
                        st.fixed_dictionaries(
                            {"product_id": words}, optional={"quantity": st.integers(1, 10**6)}
                        ),
                    ),
                    max_size=2,
                ),
            },
        ),
        "expected": st.fixed_dictionaries(
            {},
            optional={
                "calls_tool": st.lists(words, max_size=2),
                "no_ui": st.booleans(),
                "cart_item_count": st.integers(0, 10**6),
                "max_tool_calls": st.integers(0, 50),
                "rubric": st.one_of(words, st.dictionaries(words, words, min_size=1, max_size=2)),
            },
        ),
    },
)


@st.composite
def valid_cases(draw) -> tuple[str, list[dict], str]:
    """Cases right by construction, written as YAML (block or flow) or JSON: all of them load."""
    cases = draw(st.lists(valid_case, min_size=1, max_size=3, unique_by=lambda c: c["id"]))
    form = draw(st.sampled_from(["block", "flow", "json", "json-ascii"]))
    if form.startswith("json"):
        return json.dumps(cases, ensure_ascii=form == "json-ascii", indent=2), cases, ".json"
    text = yaml.safe_dump(
        cases, default_flow_style=form == "flow", allow_unicode=draw(st.booleans()), width=60
    )
    return text, cases, ".yaml"


INSERTS = [
    "\x00", "\x07", "\x1b", "\t", "\r", "\x85", "\u2028", "\ufeff", "\ud7ff", "[", "{", "]",
    "}", ": ", "- ", "&a0 ", "*a0", "<<: ", "#", "'", '"', "\\", "\\u", "\\ud83e", "\n", "\n  ",
    "\u00e9", "\U0001f389", "---\n", "...\n", "%YAML 1.1\n", "!!", "? ",
]  # fmt: skip


@st.composite
def mutated(draw, base: st.SearchStrategy[str]) -> str:
    """A text with random inserts, deletions and repeated lines."""
    text = draw(base)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "repeat"]))
        if action == "insert":
            text = text[:at] + draw(st.sampled_from(INSERTS)) + text[at:]
        elif action == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 8)) :]
        else:
            lines = text.splitlines(keepends=True) or [""]
            i = at % len(lines)
            text = "".join(lines[: i + 1] + lines[i:])
    return text


@st.composite
def nested(draw) -> str:
    depth = draw(st.one_of(st.integers(0, 80), st.integers(0, 20_000)))
    style = draw(st.sampled_from(["flow", "map", "block", "dash", "json"]))
    closed = draw(st.booleans())
    if style == "flow":
        return "[" * depth + ("]" * depth if closed else "")
    if style == "map":
        return "{a: " * depth + "1" + ("}" * depth if closed else "")
    if style == "json":
        return '{"a": ' * depth + "1" + ("}" * depth if closed else "")
    if style == "dash":
        return "- " * depth + "x\n"
    return "".join("  " * i + "- \n" for i in range(min(depth, 300)))


@st.composite
def aliases(draw) -> str:
    """Anchors that repeat earlier anchors, in lists or merged: small ones load, large ones are
    bombs; sometimes an alias inside its own anchor."""
    fanout = draw(st.integers(1, 12))
    levels = draw(st.integers(1, 9))
    if draw(st.booleans()):
        text = "a0: &a0 {" + ", ".join(f"k{i}: lol" for i in range(fanout)) + "}\n"
        for n in range(1, levels):
            refs = ", ".join([f"*a{n - 1}"] * fanout)
            text += f"a{n}: &a{n} {{<<: [{refs}], own{n}: [{refs}]}}\n"
    else:
        text = "a0: &a0 [" + ", ".join(["lol"] * fanout) + "]\n"
        for n in range(1, levels):
            text += f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * fanout) + "]\n"
    if draw(st.booleans()):
        text += f"self: &s [*s, *a{levels - 1}]\n"
    return text


json_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), plain_text),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(plain_text, c, max_size=3)),
    max_leaves=6,
)


@st.composite
def case_json(draw) -> str:
    data = json.loads(json.dumps(GOOD))
    for _ in range(draw(st.integers(0, 3))):
        section = draw(st.sampled_from(sections(data)))
        section[draw(st.sampled_from([*section, "junk"]))] = draw(json_value)
    text = json.dumps(
        draw(st.sampled_from([data, [data], [data, data]])),
        ensure_ascii=draw(st.booleans()),
        indent=draw(st.sampled_from([None, 2, "\t"])),
    )
    if draw(st.booleans()):  # a key given twice, or an escape that is half a character
        text = text.replace('"priority"', '"priority": "low", "priority"', 1)
    if draw(st.booleans()):
        text = text.replace(
            "trail runner", draw(st.sampled_from(["\\ud83e", "\\udd14\\ud83e", "\\ud83e\\udd14"]))
        )
    return text


texts = st.one_of(
    case_yaml(),
    mostly_good_yaml(),
    mutated(mostly_good_yaml()),
    mutated(case_yaml()),
    nested(),
    aliases(),
)


# -- the invariant ----------------------------------------------------------------------------


def view(loaded: LoadedFile):
    cases = [
        (c.case.model_dump(), c.line, sorted(c.key_lines.items(), key=repr)) for c in loaded.cases
    ]
    return cases, [(p.line, p.key, p.message) for p in loaded.problems], loaded.warnings


def line_count(content: str | bytes) -> int:
    """Lines as YAML counts them (it breaks lines at \\r, NEL and the Unicode separators too)."""
    if isinstance(content, bytes):
        try:
            content = content.decode("utf-8")
        except UnicodeDecodeError:
            return content.count(b"\n") + 1
    return sum(content.count(c) for c in "\n\r\x85\u2028\u2029") + 1


def check_loaded(loaded: LoadedFile, shown: Path, lines: int) -> None:
    assert isinstance(loaded, LoadedFile)
    for problem in loaded.problems:
        assert problem.path == shown
        assert isinstance(problem.line, int) and 1 <= problem.line <= lines + 1, problem
        assert problem.message.strip()
    for entry in loaded.cases:
        assert isinstance(entry.case, Case) and entry.line >= 1
        # what a run stores of it is valid JSON and valid UTF-8
        json.dumps(entry.case.model_dump(mode="json"), allow_nan=False).encode("utf-8")
    assert loaded.cases or loaded.problems or loaded.warnings


def load_timed(path: Path, shown: Path) -> LoadedFile:
    start = time.perf_counter()
    loaded = load_case_file(path, shown)
    took = time.perf_counter() - start
    assert took < SECONDS, f"{took:.1f} s to read {shown}"
    return loaded


def check_file(folder: Path, content: str | bytes, suffix: str = ".yaml") -> LoadedFile:
    """Load `content` as a case file three ways (parsed, written to the cache, read from it)
    and check each ends the same, cleanly."""
    path = folder / f"case{suffix}"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    lines = line_count(content)
    shown = Path("cases") / path.name
    with mock.patch.dict(os.environ, {"COMMERCE_CACHE_DIR": "off"}):
        parsed = load_timed(path, shown)
    check_loaded(parsed, shown, lines)
    with mock.patch.object(_collect, "CACHE_MIN_CHARS", 0):
        written = load_timed(path, shown)
        cached = load_timed(path, shown)
    assert view(written) == view(parsed)
    assert view(cached) == view(parsed), "the parse cache changed what the file says"
    return parsed


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


# -- properties -------------------------------------------------------------------------------


@FUZZ
@given(text=texts)
def test_any_yaml_text_loads_or_is_a_problem_with_a_line(folder, text):
    check_file(folder, text)


@FUZZ
@given(written=valid_cases())
def test_a_right_case_always_loads_as_written(folder, written):
    text, cases, suffix = written
    assert all(CASE_ID_PATTERN.fullmatch(c["id"]) for c in cases)
    loaded = check_file(folder, text, suffix)
    assert loaded.problems == []
    assert [c.case for c in loaded.cases] == [Case.model_validate(c) for c in cases]


USER_KEYS = list(UserSpec.model_fields)
ATTACK_KEYS = list(AttackSpec.model_fields)


@st.composite
def attack_yaml(draw) -> str:
    """A case with a `user:` block and an `attack:` inside it: mostly right (a category, a
    goal, a strategy), with any of the real keys added with random values."""
    attack = ""
    if draw(st.integers(0, 4)):
        attack += f"      category: {draw(st.sampled_from([*ATTACK_CATEGORIES, 'refund']))}\n"
    if draw(st.integers(0, 4)):
        attack += "      goal: get what is not yours\n"
    if draw(st.booleans()):
        strategy = draw(st.sampled_from(["direct", "crescendo", "persona", "x"]))
        attack += f"      strategy: {strategy}\n"
    if draw(st.booleans()):
        attack += _block(ATTACK_KEYS, draw, "      ")
    user = _block(USER_KEYS, draw, "    ") if draw(st.booleans()) else ""
    return (
        "- id: attacks-001-x\n  priority: high\n  difficulty: hard\n  user:\n"
        + user
        + "    attack:\n"
        + (attack or "      {}\n")
    )


@FUZZ
@given(text=attack_yaml())
def test_any_attack_block_loads_or_is_a_problem_with_a_line(folder, text):
    loaded = check_file(folder, text)
    for entry in loaded.cases:  # an attack that loads is tagged with its category
        attack = entry.case.attack
        assert attack is not None and f"attack:{attack.category}" in entry.case.tags


@FUZZ
@given(text=st.one_of(case_json(), mutated(case_json()), nested()))
def test_any_json_text_loads_or_is_a_problem_with_a_line(folder, text):
    check_file(folder, text, ".json")


@FUZZ
@given(
    content=st.one_of(
        st.binary(max_size=200),
        st.tuples(mostly_good_yaml(), st.binary(min_size=1, max_size=4), st.integers(0, 400)).map(
            lambda t: t[0].encode()[: t[2]] + t[1] + t[0].encode()[t[2] :]
        ),
    )
)
def test_any_bytes_load_or_are_a_problem_with_a_line(folder, content):
    check_file(folder, content)


set_value = st.one_of(value, st.floats().map(repr), st.integers(-3, 3).map(str))
set_text = st.one_of(
    st.lists(
        st.tuples(
            st.sampled_from(["threshold", "description", "treshold", "<<", "junk"]), set_value
        ),
        max_size=4,
    ).map(lambda kvs: "".join(f"{k}: {v}\n" for k, v in kvs)),
    nested(),
    aliases(),
    mutated(st.just("threshold: 0.5\ndescription: Cart flows.\n")),
)


@FUZZ
@given(content=st.one_of(set_text, st.binary(max_size=100)))
def test_any_set_file_reads_or_is_a_problem_with_a_line(folder, content):
    target = folder / "sets" / "_set.yaml"
    target.parent.mkdir(exist_ok=True)
    if isinstance(content, bytes):
        target.write_bytes(content)
    else:
        target.write_text(content, encoding="utf-8")
    lines = line_count(content)
    start = time.perf_counter()
    config, problem = load_set_config(target.parent, folder)
    assert time.perf_counter() - start < SECONDS
    if problem is None:
        assert config.threshold is None or (
            type(config.threshold) in (int, float) and 0 <= config.threshold <= 1
        )
        assert config.description is None or isinstance(config.description, str)
    else:
        assert problem.path == Path("sets/_set.yaml")
        assert isinstance(problem.line, int) and 1 <= problem.line <= lines + 1, problem
        assert config == _collect.SetConfig()


@settings(FUZZ, max_examples=max(1, EXAMPLES // 2))
@given(text=st.one_of(case_yaml(), mostly_good_yaml(), aliases()))
def test_what_loads_is_what_pyyaml_reads(text):
    """Where the reader finds nothing wrong, its data is PyYAML's (which keeps the last of two
    keys, and builds what the reader refuses: the reader only ever says less)."""
    try:
        built = _collect._parse_yaml(text)
    except (yaml.YAMLError, _collect.DocumentTooLarge):
        return
    if built.problems:
        return
    try:
        theirs = yaml.load(text, Loader=_collect._Loader)  # noqa: S506 (a safe loader)
    except yaml.YAMLError:
        assert "=" in text, "only a plain = is read here (as text) and refused by PyYAML"
        return
    assert built.data == theirs


# -- the regression files ---------------------------------------------------------------------

E = "expected"
REGRESSIONS: dict[str, list[tuple[int, str | None, str]] | str] = {
    # file: the problems (line, key, part of the message), or what loads instead
    "alias-bomb.yaml": [(5, None, "aliases repeat more than 100,000 values (here *d)")],
    "bool-tag-maybe.yaml": [(14, f"{E}.no_ui", "'maybe' is not a valid true/false")],
    "control-character.yaml": [(13, None, "character #x0007 at column 17 cannot appear")],
    "deep-nesting-unclosed.yaml": [(1, None, "nest deeper than 64 levels")],
    "deep-nesting.json": [(1, None, "nest deeper than 64 levels")],
    "deep-nesting.yaml": [(3, None, "nest deeper than 64 levels")],
    "duplicate-key.json": [(8, E, "duplicate key 'expected': first on line 7, again on line 8")],
    "duplicate-key.yaml": [(15, E, "duplicate key 'expected': first on line 13, again on line 15")],
    "empty-list.yaml": "warning",
    "empty-rubric.yaml": [
        (7, f"{E}.rubric", "the rubric is empty"),
        (14, f"{E}.rubric", "rubric dimension 'shoe_named' is empty"),
    ],
    "empty-tag.yaml": [(11, "tags", "tag 2 is empty"), (16, "tags", "tag 2 is empty")],
    "id-trailing-newline.yaml": [(1, "id", "does not match <flow>-<nnn>-<behavior>")],
    "impossible-date.yaml": [(13, "notes", "'2025-02-30' is not a valid date")],
    "int-tag-abc.yaml": [(14, f"{E}.max_tool_calls", "'abc' is not a valid integer")],
    "key-not-text.yaml": [(14, E, "a key must be text; found 1 (int)")],
    "lax-types.yaml": [
        (7, f"{E}.no_ui", 'expected true or false, unquoted (found "yes")'),
        (14, f"{E}.no_ui", 'expected true or false, unquoted (found "off")'),
        (21, f"{E}.no_ui", "expected true or false, unquoted (found 1)"),
        (28, f"{E}.max_tool_calls", 'expected a whole number, unquoted (found "3")'),
        (35, f"{E}.max_tool_calls", "expected a whole number, unquoted (found 3.0)"),
        (42, f"{E}.cart_item_count", "expected a whole number, unquoted (found true)"),
        (50, "state.cart[0].quantity", 'expected a whole number, unquoted (found "2")'),
    ],
    "lone-surrogate-cached.json": [(21, "turns[0]", "half of a surrogate pair")],
    "lone-surrogate.json": [(5, "turns[0]", "half of a surrogate pair")],
    "not-finite.yaml": [(15, "state.staged_changes[0].fields.price", ".nan is not a finite")],
    "not-utf8.yaml": [(13, None, "not UTF-8: byte 0xe9 at column 13")],
    "odd-tags.yaml": "cases",
    "recursive-alias-in-case.yaml": [(14, "state.memory", "alias *s is inside the value")],
    "recursive-alias.yaml": [(1, None, "alias *a is inside the value its anchor &a names")],
    "surrogate-pair.json": "cases",
    "tag-binary.yaml": [(13, "notes", "the tag !!binary is not allowed")],
    "tag-python.yaml": [(13, "notes", "the tag !!python/object/apply:os.system is not allowed")],
    "tag-set.yaml": [(11, "tags", "the tag !!set is not allowed")],
    "undefined-alias.yaml": [(14, f"{E}.cart_contains", "alias *nowhere has no anchor")],
    "unicode-digits-id.yaml": [(1, "id", "does not match <flow>-<nnn>-<behavior>")],
}
SET_REGRESSIONS = {
    "set-bad-date": (2, "description", "'2025-02-30' is not a valid date"),
    "set-bomb": (5, None, "aliases repeat more than 100,000 values"),
    "set-bool-threshold": (1, "threshold", "expected a number from 0 to 1; found true"),
    "set-deep": (1, None, "nest deeper than 64 levels"),
    "set-duplicate-key": (3, "threshold", "first on line 1, again on line 3"),
    "set-folder": (None, None, "is a folder; expected a file holding threshold and description"),
    "set-list": (1, None, "expected a mapping with threshold and description; found a list"),
    "set-nan": (2, "threshold", ".nan is not a finite number"),
    "set-not-utf8": (2, None, "not UTF-8: byte 0xe9 at column 17"),
    "set-out-of-range": (1, "threshold", "expected a number from 0 to 1; found 1.5"),
    "set-syntax": (3, None, "malformed YAML: while parsing a flow sequence"),
    "set-text-threshold": (1, "threshold", 'expected a number from 0 to 1; found "0.8"'),
    "set-typo": (1, "treshold", "unknown key; did you mean 'threshold'?"),
}


def test_every_regression_file_has_its_expectation():
    files = sorted(p.name for p in DATA.iterdir() if p.is_file())
    assert files == sorted(REGRESSIONS)
    assert sorted(p.name for p in (DATA / "sets").iterdir()) == sorted(SET_REGRESSIONS)


@pytest.mark.parametrize("name", sorted(REGRESSIONS))
def test_regression_file(name, tmp_path, monkeypatch):
    monkeypatch.setenv("COMMERCE_CACHE_DIR", str(tmp_path / "cache"))
    path = DATA / name
    for _ in range(2):  # parsed, then (when large enough and clean) from the cache
        loaded = load_timed(path, Path(name))
        check_loaded(loaded, Path(name), line_count(path.read_bytes()))
        expected = REGRESSIONS[name]
        if expected == "warning":
            assert loaded.warnings and not loaded.problems and not loaded.cases
        elif expected == "cases":
            assert loaded.cases and not loaded.problems
        else:
            found = [(p.line, p.key, p.message) for p in loaded.problems]
            assert len(found) == len(expected), found
            for (line, key, message), want in zip(found, expected, strict=True):
                assert (line, key) == want[:2] and want[2] in message, (line, key, message)


def test_a_pair_of_surrogate_escapes_is_one_character():
    (entry,) = load_case_file(DATA / "surrogate-pair.json").cases
    assert entry.case.turns == ["Add this \U0001f914 to my cart"]


def test_odd_tags_are_tags():
    (entry,) = load_case_file(DATA / "odd-tags.yaml").cases
    assert entry.case.tags[:3] == ["#hash", "@at", "-dash"] and "\U0001f389" in entry.case.tags


@pytest.mark.parametrize("name", sorted(SET_REGRESSIONS))
def test_set_regression_file(name):
    config, problem = load_set_config(DATA / "sets" / name, DATA)
    line, key, message = SET_REGRESSIONS[name]
    assert config == _collect.SetConfig()
    assert problem.path == Path("sets") / name / "_set.yaml"
    assert (problem.line, problem.key) == (line, key) and message in problem.message, problem


# -- through pytest ---------------------------------------------------------------------------

GOOD_CASE = """\
- id: cart-900-still-runs
  priority: high
  difficulty: easy
  tags: [cart]
  turns: ["Add the trail runner to my cart"]
  expected:
    calls_tool: [add_to_cart]
"""


def test_a_suite_full_of_bad_files_still_runs_its_good_cases(pytester):
    """Every bad regression file in one suite: each is an error naming its file and line, the
    good cases beside them run and pass, nothing aborts or hangs."""
    (pytester.path / "helpers.py").write_text((Path(__file__).parent / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    reply = '[tool_reply("add_to_cart", product_id="shoe-001"), text_reply("Added.")]'
    scripts = f"{{'cart-900-still-runs': {reply}, 'cart-901-still-runs': {reply}}}"
    pytester.makeconftest(toy_conftest(scripts))
    cases = pytester.path / "cases"
    for folder in ("bad", "good", "setdir", "setdir/_set.yaml"):
        (cases / folder).mkdir(parents=True)
    bad = {name: v for name, v in REGRESSIONS.items() if isinstance(v, list)}
    for name in bad:
        shutil.copyfile(DATA / name, cases / "bad" / name)
    (cases / "good" / "add.yaml").write_text(GOOD_CASE)
    (cases / "setdir" / "other.yaml").write_text(GOOD_CASE.replace("900", "901"))
    shutil.copyfile(DATA / "odd-tags.yaml", cases / "good" / "odd-tags.yaml")
    shutil.copyfile(DATA / "empty-list.yaml", cases / "good" / "empty-list.yaml")
    result = pytester.runpytest(
        "cases",
        "-v",
        "-p",
        "no:cacheprovider",
        "-W",
        "default::pytest_commerce_evals.cases.case.CaseFileWarning",
    )
    text = result.stdout.str()
    assert "INTERNALERROR" not in text and "Traceback" not in text
    result.stdout.fnmatch_lines_random(
        [
            "cases/good/add.yaml::cart-900-still-runs PASSED*",
            "cases/setdir/other.yaml::cart-901-still-runs PASSED*",
            "cases/good/odd-tags.yaml::cart-001-odd-tags *",  # odd tags never stop the session
            "*CaseFileWarning: cases/good/empty-list.yaml:1: the file holds an empty list; no "
            "cases to collect",
            "*invalid case: cases/setdir/_set.yaml: is a folder; expected a file*",
            *(
                f"*invalid case: cases/bad/{name}:{problems[0][0]}: *"
                for name, problems in bad.items()
            ),
        ]
    )
    assert result.ret == 1


def _empty_beside_good(pytester) -> None:
    """A suite of one empty case file beside one good case, on the toy agent."""
    (pytester.path / "helpers.py").write_text((Path(__file__).parent / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)
    reply = '[tool_reply("add_to_cart", product_id="shoe-001"), text_reply("Added.")]'
    pytester.makeconftest(toy_conftest(f"{{'cart-900-still-runs': {reply}}}"))
    cases = pytester.path / "cases"
    cases.mkdir()
    (cases / "empty.yaml").write_text("[]\n")
    (cases / "add.yaml").write_text(GOOD_CASE)


def test_an_empty_case_file_under_warnings_as_errors_errs_alone(pytester):
    """With warnings as errors the empty-list warning is an error item for that file; the session and
    the other files go on."""
    _empty_beside_good(pytester)
    # only this warning as an error: pytester may warn of its own (an already imported plugin)
    result = pytester.runpytest(
        "cases",
        "-p",
        "no:cacheprovider",
        "-W",
        "error::pytest_commerce_evals.cases.case.CaseFileWarning",
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*invalid case: cases/empty.yaml:1: the file holds an empty list; no cases to "
            "collect (a warning made an error)"
        ]
    )


def test_the_empty_list_warning_reaches_the_summary_under_xdist(pytester):
    pytest.importorskip("xdist")
    _empty_beside_good(pytester)
    result = pytester.runpytest(
        "cases", "-n", "2", "-p", "no:benchmark", "-p", "no:cacheprovider",
        "-W", "default::pytest_commerce_evals.cases.case.CaseFileWarning",
    )  # fmt: skip
    result.assert_outcomes(passed=1, warnings=None)
    result.stdout.fnmatch_lines(
        ["*CaseFileWarning: cases/empty.yaml:1: the file holds an empty list; no cases to collect"]
    )


# -- the newer keys: approvals and a budget's cost ---------------------------------------------

decision = st.one_of(
    st.sampled_from(["approve", "refuse", "wait", "Approve", "", "yes"]),
    st.fixed_dictionaries({"refuse": st.one_of(plain_text, json_value)}),
    json_value,
)
cost = st.one_of(
    st.integers(),
    st.floats(),
    st.sampled_from(["$0.02", "5", "1e30", "١", "1_000", " $ 1.50 ", "nan", "", "$"]),
    plain_text,
)


@FUZZ
@given(
    approvals=st.one_of(
        st.dictionaries(st.one_of(plain_text, st.just("default")), decision, max_size=4),
        json_value,
    ),
    spend=cost,
)
def test_approvals_and_a_budget_cost_load_or_are_a_problem_naming_the_key(folder, approvals, spend):
    data = json.loads(json.dumps(GOOD))
    data["approvals"] = approvals
    data.setdefault("expected", {})["budget"] = {"cost": spend}
    loaded = check_file(folder, json.dumps(data), ".json")
    for problem in loaded.problems:
        assert problem.key, problem  # every refusal names the key it is about
    for entry in loaded.cases:  # what loads answers for every tool, as the integrations ask
        for tool in [*(entry.case.approvals or {}), "any_other_tool"]:
            assert entry.case.approval_for(str(tool)).decision in {"approve", "refuse", "wait"}
