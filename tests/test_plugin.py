"""The plugin end to end through pytester: collection, errors, trials, thresholds, selection."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from helpers import toy_conftest

HERE = Path(__file__).parent

ADD_OK = (
    '[tool_reply("search_products", query="trail"), '
    'tool_reply("add_to_cart", product_id="shoe-001"), text_reply("Added the Trail runner.")]'
)
ADD_WRONG = '[tool_reply("add_to_cart", product_id="shoe-002"), text_reply("Done!")]'

CART_CASES = """
- id: cart-001-add-single
  priority: high
  difficulty: easy
  tags: [cart, scenario:trail]
  turns: ["Add the trail runner to my cart"]
  expected:
    calls_tool: [add_to_cart]
    cart_contains: [shoe-001]
- id: cart-002-checkout-total
  priority: critical
  difficulty: medium
  tags: [cart, checkout]
  turns: ["Add the trail runner to my cart"]
  expected:
    first_tool: search_products
    cart_contains: [shoe-001]
"""


@pytest.fixture
def suite(pytester: pytest.Pytester):
    (pytester.path / "helpers.py").write_text((HERE / "helpers.py").read_text())
    pytester.syspathinsert(pytester.path)

    def make(cases: dict[str, str], scripts: str = "{}", ini: str = "") -> pytest.Pytester:
        pytester.makeconftest(toy_conftest(scripts))
        if ini:
            pytester.makeini(ini)
        for name, text in cases.items():
            path = pytester.path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        return pytester

    return make


def scripts(**by_id: str) -> str:
    return "{" + ", ".join(f"{k.replace('_', '-')!r}: {v}" for k, v in by_id.items()) + "}"


def test_passing_and_failing_cases_exit_by_threshold(suite):
    p = suite(
        {"cases/cart/add.yaml": CART_CASES},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_WRONG),
    )
    result = p.runpytest("cases")
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*cart-002-checkout-total trial 1/1: fail (critical priority, medium) at cases/cart/add.yaml:10",
            "*2 of 2 expectations failed:",
            "*✗ first_tool: expected the first call to be search_products; it was add_to_cart;*",
            "*✗ cart_contains: expected shoe-001 in the cart; final cart: shoe-002 ×1",
            "*SHORT cases/cart: 1/2 = 50.0% (threshold 80%)",
            "*cases/cart: 1/2 graded trials passed = 50.0%, threshold 80%, short by 30.0 points",
        ]
    )
    # the same failures under a 50% threshold: the set meets it, the run is green
    lenient = p.runpytest("cases", "--commerce-threshold=0.5")
    assert lenient.ret == 0
    lenient.stdout.fnmatch_lines(
        ["*ok    cases/cart: 1/2 = 50.0% (threshold 50%)", "*every set met its threshold"]
    )


def test_set_file_sets_the_threshold(suite):
    p = suite(
        {"cases/cart/add.yaml": CART_CASES, "cases/cart/_set.yaml": "threshold: 0.5\n"},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_WRONG),
    )
    assert p.runpytest("cases").ret == 0
    assert p.runpytest("cases", "--commerce-threshold=1.0").ret == 0  # the set's own wins


def test_bad_set_file_is_reported(suite):
    p = suite(
        {"cases/cart/add.yaml": CART_CASES, "cases/cart/_set.yaml": "threshold: 80\n"},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_OK),
    )
    result = p.runpytest("cases")
    result.stdout.fnmatch_lines(
        ["*cases/cart/_set.yaml:1: key 'threshold': expected a number from 0 to 1; found 80"]
    )
    assert result.ret == 1


def test_trials_are_separate_items_with_pass_rates(suite):
    p = suite(
        {"cases/cart/add.yaml": CART_CASES},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_WRONG),
    )
    result = p.runpytest("cases", "--commerce-trials=3", "-v")
    result.assert_outcomes(passed=3, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*cases/cart/add.yaml::cart-001-add-single[[]trial-1[]] PASSED*",
            "*cart-002-checkout-total*critical*medium*0/3*0%*0.00*",
            "*pass^k over cases: k=1: 0.500  k=2: 0.500  k=3: 0.500",
            "*by priority:",
            "*critical*0.0%*(3 fail)",
            "*high*100.0%*(3 pass)",
        ]
    )


def test_select_by_id_tag_and_marker(suite):
    p = suite(
        {
            "cases/cart/add.yaml": CART_CASES,
            "cases/memory/m.yaml": """
        id: memory-001-vegan-note
        priority: medium
        difficulty: hard
        tags: [memory, poisoned]
        turns: ["I only buy vegan leather"]
        expected: {never_calls: [add_to_cart]}
        """,
            "cases/memory/n.yaml": """
        id: memory-002-size-note
        priority: low
        difficulty: easy
        tags: [memory]
        turns: ["I wear size 42"]
        expected: {never_calls: [add_to_cart]}
        """,
        }
    )
    assert p.runpytest("cases", "-k", "checkout").parseoutcomes()["deselected"] == 3
    assert p.runpytest("cases", "-k", "checkout").parseoutcomes()["failed"] == 1
    r = p.runpytest("cases", "-k", "memory and not poisoned", "-v")
    r.stdout.fnmatch_lines(["*memory-002-size-note PASSED*"])
    r.assert_outcomes(passed=1, deselected=3)
    assert p.runpytest("cases", "-m", "critical").parseoutcomes()["deselected"] == 3
    p.runpytest("cases", "-m", "hard", "--strict-markers").assert_outcomes(passed=1, deselected=3)
    assert p.runpytest("cases", "-m", "scenario_trail").parseoutcomes()["deselected"] == 3


def test_skip_carries_its_reason(suite):
    p = suite(
        {
            "cases/orders/o.yaml": """
        id: orders-001-tracking
        priority: low
        difficulty: easy
        skip: the carrier API fixture is not recorded yet
        turns: ["Where is my order?"]
        expected: {calls_tool: [get_order]}
        """
        }
    )
    result = p.runpytest("cases", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*SKIPPED*the carrier API fixture is not recorded yet*"])
    assert result.ret == 0


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "id: cart-001-x\npriority: high\ndifficulty: easy\nturns: [hi\n",
            "*cases/bad.yaml:5: malformed YAML: while parsing a flow sequence, expected ',' or ']', but got '<stream end>'",
        ),
        (
            "id: cart-001-x\npriority: high\ndifficulty: easy\nturns: [hi]\nexpected:\n  cart_contain: [a]\n",
            "*cases/bad.yaml:6: key 'expected.cart_contain': case 'cart-001-x': unknown key; did you mean 'cart_contains'? allowed: budget, calls_one_of, *",
        ),
        (
            "id: cart-001-x\npriority: high\ndifficulty: easy\nturns: [hi]\nexpected:\n  max_tool_calls: lots\n",
            "*cases/bad.yaml:6: key 'expected.max_tool_calls': case 'cart-001-x': expected a whole number, unquoted (found \"lots\")",
        ),
        (
            "id: cart-001-x\npriority: urgent\ndifficulty: easy\nturns: [hi]\n",
            "*cases/bad.yaml:2: key 'priority': case 'cart-001-x': Input should be 'critical', 'high', 'medium' or 'low' (found \"urgent\")",
        ),
        (
            "id: Cart_One\npriority: high\ndifficulty: easy\nturns: [hi]\n",
            "*cases/bad.yaml:1: key 'id': case 'Cart_One': id 'Cart_One' does not match <flow>-<nnn>-<behavior>*",
        ),
        (
            "- id: cart-001-x\n  priority: high\n  difficulty: easy\n",
            "*cases/bad.yaml:1: case 'cart-001-x': the case has no customer: give turns (the "
            "customer's messages) or a user: block (a simulated customer), or both",
        ),
        (
            "just a string\n",
            "*cases/bad.yaml:1: expected a case (a mapping) or a list of cases; found str",
        ),
    ],
    ids=["malformed", "unknown-key", "wrong-type", "bad-enum", "bad-id", "missing", "not-a-case"],
)
def test_bad_input_is_a_located_error_and_others_still_run(suite, text, line):
    p = suite(
        {"cases/cart/add.yaml": CART_CASES, "cases/bad.yaml": text},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_OK),
    )
    result = p.runpytest("cases")
    result.stdout.fnmatch_lines([line])
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == 1


def test_duplicate_id_names_both_places(suite):
    dup = CART_CASES.split("- id: cart-002")[0]
    p = suite(
        {"cases/cart/add.yaml": CART_CASES, "cases/cart/z.yaml": dup},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_OK),
    )
    result = p.runpytest("cases")
    result.stdout.fnmatch_lines(
        [
            "*cases/cart/z.yaml:2: key 'id': duplicate id 'cart-001-add-single', first defined at cases/cart/add.yaml:2*",
        ]
    )
    result.assert_outcomes(passed=2, errors=1)


def test_one_bad_case_in_a_list_keeps_the_good_ones(suite):
    text = CART_CASES + "- id: cart-003-bad\n  priority: high\n  difficulty: easy\n  turns: []\n"
    p = suite(
        {"cases/cart/add.yaml": text},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_OK),
    )
    result = p.runpytest("cases")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*cases/cart/add.yaml:21: key 'turns': case 'cart-003-bad': List should have at least 1 item*"
        ]
    )


def test_which_files_are_cases(suite):
    p = suite(
        {
            "cases/cart/add.yaml": CART_CASES,
            "cases/cart/_set.yaml": "threshold: 0.5\n",
            "cases/cart/.hidden.yaml": "not: a case\n",
            "data/other.yaml": "not: a case\n",
            "data/explicit.json": json.dumps(
                {
                    "id": "cart-009-explicit",
                    "priority": "low",
                    "difficulty": "easy",
                    "turns": ["hi"],
                }
            ),
        },
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_OK),
    )
    result = p.runpytest("--collect-only", "-q", "cases", "data")
    result.stdout.fnmatch_lines(
        ["cases/cart/add.yaml::cart-001-add-single", "cases/cart/add.yaml::cart-002-checkout-total"]
    )
    assert "other.yaml" not in result.stdout.str() and "explicit" not in result.stdout.str()
    explicit = p.runpytest("--collect-only", "-q", "data/explicit.json")
    explicit.stdout.fnmatch_lines(["data/explicit.json::cart-009-explicit"])
    custom = p.runpytest("--collect-only", "-q", "-o", "commerce_case_dirs=data", "data")
    custom.stdout.fnmatch_lines(
        ["data/explicit.json::cart-009-explicit", "*data/other.yaml::*invalid*"]
    )


def test_a_case_folder_named_outside_the_case_dirs_is_named_with_what_to_pass(suite):
    """`pytest attacks/` (a folder a case was promoted into) collects nothing, as `data` above;
    the run says why and what to pass instead of ending in a silent exit 5."""
    p = suite({"attacks/a.yaml": CART_CASES}, scripts(cart_001_add_single=ADD_OK))
    result = p.runpytest("attacks", "-q")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    result.stdout.fnmatch_lines(
        [
            "commerce-evals: attacks is not one of the commerce_case_dirs (cases), so its 1 "
            ".yaml/.yml/.json file(s) were not collected as cases: run them with "
            "-o commerce_case_dirs=attacks, add the folder to commerce_case_dirs in the ini, "
            "or name the files"
        ]
    )
    ran = p.runpytest("--collect-only", "-q", "-o", "commerce_case_dirs=attacks", "attacks")
    ran.stdout.fnmatch_lines(["attacks/a.yaml::cart-001-add-single"])
    assert "commerce-evals: attacks" not in ran.stdout.str()


SPEC_EXAMPLE = {
    "id": "cart-014-add-both-shoes",
    "priority": "critical",
    "difficulty": "medium",
    "tags": ["cart", "scenario:trail"],
    "skip": "waiting for the variant picker",
    "state": {
        "seen_products": ["shoe-001"],
        "cart": [{"product_id": "bag-001", "quantity": 1}],
        "memory": ["wears size 42"],
        "staged_changes": [
            {"kind": "price_update", "product_id": "bag-001", "fields": {"price_minor": 2500}}
        ],
    },
    "turns": ["Add the trail runner too", "Now show me the cart"],
    "expected": {
        "calls_tool": ["add_to_cart"],
        "calls_one_of": ["add_to_cart", "update_cart"],
        "never_calls": ["apply_changes"],
        "first_tool": "add_to_cart",
        "first_tool_not": "save_memory",
        "ui_components": ["cart_summary"],
        "no_ui": False,
        "cart_contains": ["shoe-001"],
        "cart_item_count": 2,
        "cart_not_contains": ["shoe-002"],
        "staged_change_kinds": ["price_update"],
        "no_applied_changes": True,
        "memory_contains": ["42"],
        "memory_not_contains": ["@"],
        "skill_loaded": "sizing",
        "skill_not_loaded": "returns",
        "no_skill_load": False,
        "reply_includes": ["Trail runner"],
        "reply_omits": ["promo"],
        "max_tool_calls": 3,
        "rubric": "PASS if the reply lists both items with today's prices. FAIL if an item or price is missing or wrong.",
    },
    "notes": "The cart starts with the tote; the trail runner is the second item.",
}


def test_spec_json_example_is_accepted(suite):
    p = suite({"cases/cart/example.json": json.dumps(SPEC_EXAMPLE, indent=2)})
    result = p.runpytest("cases", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*waiting for the variant picker*"])


def test_sync_async_and_generator_agents(suite, pytester):
    suite(
        {
            "cases/a.yaml": """
        id: chat-001-hello
        priority: low
        difficulty: easy
        turns: ["hi", "and again"]
        expected: {reply_includes: ["hello 2"], reply_omits: ["hello 1"], memory_contains: ["seed"]}
        """
        }
    )
    pytester.makeconftest(
        textwrap.dedent("""
        import asyncio
        from helpers import ToyBackend
        from pytest_commerce_evals import Text

        class AsyncAgent:
            async def run_turn(self, session, message):
                await asyncio.sleep(0)
                yield Text(text=f"hello {session.turn + 1}")

        async def coroutine_agent(session, message):
            return [{"type": "text", "text": f"hello {session.turn + 1}"}]

        def list_agent(session, message):
            return [Text(text=f"hello {session.turn + 1}")]

        KIND = {"kind": None}

        def pytest_configure(config):
            KIND["kind"] = config.getoption("--agent-kind")

        def pytest_addoption(parser):
            parser.addoption("--agent-kind")

        def pytest_commerce_evals_make_backend(config, case):
            b = ToyBackend()
            return b

        def pytest_commerce_evals_make_agent(config, case, backend):
            return {"async": AsyncAgent(), "coro": coroutine_agent, "list": list_agent}[KIND["kind"]]
        """)
    )
    (pytester.path / "cases" / "a.yaml").write_text(
        (pytester.path / "cases" / "a.yaml")
        .read_text()
        .replace("turns:", "state: {memory: [seed fact]}\nturns:")
    )
    for kind in ("async", "coro", "list"):
        pytester.runpytest("cases", f"--agent-kind={kind}").assert_outcomes(passed=1)


def test_agent_errors_infra_errors_and_missing_wiring(suite, pytester):
    suite({"cases/a.yaml": "id: chat-001-x\npriority: low\ndifficulty: easy\nturns: [hi]\n"})
    pytester.makeconftest(
        textwrap.dedent("""
        import openai
        from helpers import ToyBackend
        from pytest_commerce_evals import InfraError

        def pytest_addoption(parser):
            parser.addoption("--mode")

        def pytest_commerce_evals_make_backend(config, case):
            return None if config.getoption("--mode") == "nobackend" else ToyBackend()

        def pytest_commerce_evals_make_agent(config, case, backend):
            mode = config.getoption("--mode")
            def agent(session, message):
                if mode == "infra":
                    from pytest_commerce_evals.models.http_client import http_library
                    raise openai.APIConnectionError(request=http_library().Request("POST", "http://127.0.0.1/v1/chat/completions"))
                if mode == "crash":
                    raise KeyError("price")
                return []
            return agent
        """)
    )
    infra = pytester.runpytest("cases", "--mode=infra")
    infra.stdout.fnmatch_lines(
        [
            "*chat-001-x trial 1/1: infra_error*",
            "*APIConnectionError: Connection error.*",
            "*1 infra_error*",
        ]
    )
    assert infra.ret == 1  # nothing graded in the set
    crash = pytester.runpytest("cases", "--mode=crash")
    crash.stdout.fnmatch_lines(
        ["*chat-001-x trial 1/1: fail*", "*the agent raised KeyError: 'price'*"]
    )
    missing = pytester.runpytest("cases", "--mode=nobackend")
    missing.stdout.fnmatch_lines(
        [
            "*no backend: pytest_commerce_evals_make_backend at conftest.py:* returned None; "
            "implement it returning a fresh backend with load_state() and snapshot()*"
        ]
    )
    assert missing.ret == 1


def test_a_case_outside_the_projects_conftest_names_the_conftest_it_needs(pytester):
    """A case promoted into a folder outside the project runs without the project's conftest
    (and ini): the glue error names the conftests loaded and the one that was not, and the
    header says the judge is the embedded default because nothing was read."""
    pytester.makeconftest(
        "def pytest_commerce_evals_make_backend(config, case):\n    return object()\n"
    )
    outside = pytester.path.parent / f"{pytester.path.name}-promoted"
    outside.mkdir()
    (outside / "a.yaml").write_text(
        "- id: chat-001-x\n  priority: low\n  difficulty: easy\n  turns: [hi]\n"
        "  expected: {max_tool_calls: 0}\n"
    )
    result = pytester.runpytest(str(outside / "a.yaml"), "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        [
            "commerce-evals judge: * (the default: nothing set a judge or agent model or URL; "
            "no configfile was read, rootdir *)",
            "*no backend: no conftest.py of this run implements "
            "pytest_commerce_evals_make_backend(config, case) (conftests loaded: none; rootdir "
            f"*); {pytester.path / 'conftest.py'} implements it but was not loaded: "
            "pytest loads a conftest.py only from the rootdir and the folders of the paths it "
            "collects*",
        ]
    )
    assert result.ret == 1


def test_an_endpoint_refusing_the_key_is_an_infra_error_not_the_glues_nor_the_agents(
    suite, pytester
):
    # EndpointError's outcome (errors.py): the endpoint's settings, not the conftest, not the agent
    suite({"cases/a.yaml": "id: chat-001-x\npriority: low\ndifficulty: easy\nturns: [hi]\n"})
    pytester.makeconftest(
        textwrap.dedent("""
        import openai
        from helpers import ToyBackend
        from pytest_commerce_evals.models.http_client import http_library
        from pytest_commerce_evals.models.clients import retrying_create
        from pytest_commerce_evals.testing import FakeClient

        def pytest_commerce_evals_make_backend(config, case):
            return ToyBackend()

        def pytest_commerce_evals_make_agent(config, case, backend):
            request = http_library().Request("POST", "http://127.0.0.1/v1/chat/completions")
            refused = openai.AuthenticationError(
                "HTTP 401", response=http_library().Response(401, request=request), body=None
            )
            fake = FakeClient([refused])
            def agent(session, message):
                retrying_create(fake, sleep=lambda s: None, model="m", messages=[])
                return []
            return agent
        """)
    )
    result = pytester.runpytest("cases")
    result.stdout.fnmatch_lines(
        [
            "*chat-001-x trial 1/1: infra_error*",
            "*EndpointError*HTTP 401 (AuthenticationError)*check the model name, base URL and API key*",
            "*1 infra_error*",
        ]
    )
    out = result.stdout.str()
    assert "commerce-evals glue error" not in out and "the agent raised" not in out
    assert result.ret == 1  # nothing graded in the set


def test_each_trial_gets_a_fresh_backend(suite):
    case = """
        id: cart-001-fresh
        priority: low
        difficulty: easy
        turns: ["add it"]
        expected: {cart_item_count: 1}
        """
    p = suite(
        {"cases/a.yaml": case},
        scripts(
            cart_001_fresh='[tool_reply("add_to_cart", product_id="shoe-001"), text_reply("ok")]'
        ),
    )
    p.runpytest("cases", "--commerce-trials=3").assert_outcomes(passed=3)


def test_rubric_verdicts_fold_into_outcomes(suite, pytester):
    suite(
        {
            "cases/a.yaml": """
        - id: chat-001-judged
          priority: low
          difficulty: easy
          turns: ["hi"]
          expected: {rubric: "PASS if it greets. FAIL if it does not."}
        """
        }
    )
    pytester.makeconftest(
        toy_conftest()
        + textwrap.dedent("""
        from pytest_commerce_evals import RubricVerdict

        def pytest_addoption(parser):
            parser.addoption("--verdict")

        def pytest_commerce_evals_grade_rubric(config, case, result):
            v = config.getoption("--verdict")
            if v == "error":
                return [RubricVerdict("rubric", "t", "judge_error", error="reply was not JSON: 'hmm'")]
            return [RubricVerdict("rubric", "t", v.lower(), verdict=v, reasoning="it said ok")]
        """)
    )
    assert pytester.runpytest("cases", "--verdict=PASS").ret == 0
    fail = pytester.runpytest("cases", "--verdict=FAIL")
    fail.stdout.fnmatch_lines(["*✗ rubric rubric: FAIL — it said ok"])
    assert fail.ret == 1
    error = pytester.runpytest("cases", "--verdict=error", "-rA")
    error.stdout.fnmatch_lines(
        ["*! rubric rubric: judge_error — reply was not JSON: 'hmm'", "*1 judge_error*"]
    )
    assert "1 failed" not in error.stdout.str()


def test_other_tests_failing_still_fail_the_run(suite, pytester):
    p = suite(
        {"cases/cart/add.yaml": CART_CASES},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_OK),
    )
    pytester.makepyfile(test_unit="def test_x():\n    assert False\n")
    assert p.runpytest("cases", "test_unit.py").ret == 1


def test_xdist_workers_aggregate_on_the_controller(suite):
    pytest.importorskip("xdist")
    p = suite(
        {"cases/cart/add.yaml": CART_CASES},
        scripts(cart_001_add_single=ADD_OK, cart_002_checkout_total=ADD_WRONG),
    )
    result = p.runpytest_subprocess(
        "cases", "-n", "2", "--commerce-trials=2", "-p", "no:cacheprovider"
    )
    result.stdout.fnmatch_lines(["*SHORT cases/cart: 2/4 = 50.0% (threshold 80%)"])
    assert result.ret == 1


def test_bad_options_are_usage_errors(suite):
    p = suite({"cases/cart/add.yaml": CART_CASES})
    result = p.runpytest("cases", "--commerce-threshold=3")
    result.stderr.fnmatch_lines(["*--commerce-threshold: expected 0..1; found 3.0"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
