"""What τ²'s agent is shown, read from a checkout's source as τ²'s own builders read it: the
docstring rules (`docstring_parser`'s Google style), the annotations a schema may hold, and clear
errors for source that does not hold what is read."""

from __future__ import annotations

from pathlib import Path

import pytest
from tau2_checkout import make_checkout

from pytest_commerce_evals.tau2.__main__ import main as tau2_main
from pytest_commerce_evals.tau2.customer import customer_view
from pytest_commerce_evals.tau2.prompts import (
    CheckoutSourceError,
    agent_system_prompt,
    first_agent_message,
    parse_docstring,
    tool_schemas,
)


def test_a_docstrings_first_line_is_its_short_description_and_sections_end_its_text():
    doc = """
        Cancel a pending order. If it is already
        processed, it cannot be cancelled.

        More text.

        Args:
            order_id (str): The order id,
                with a '#'.
            reason: Why.
        Not part of the section.

        Returns:
            The order.
        """
    short, long, params = parse_docstring(doc)
    assert short == "Cancel a pending order. If it is already"
    assert long == "processed, it cannot be cancelled.\n\nMore text."
    assert params == {"order_id": "The order id,\nwith a '#'.", "reason": "Why."}
    assert parse_docstring("") == ("", "", {})
    assert parse_docstring("One line.") == ("One line.", "", {})


def _tools(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "src" / "tau2" / "domains" / "retail" / "tools.py"
    path.parent.mkdir(parents=True)
    path.write_text("class T:\n" + body)
    return tmp_path


def test_annotations_become_the_schema_types_and_unknown_ones_are_refused(tmp_path):
    root = _tools(
        tmp_path,
        "    @is_tool(ToolType.READ)\n"
        "    def f(self, a: int, b: 'float', c: Optional[List[str]] = None, d: bool = True,\n"
        "          e: Literal['x', 'y'] = 'x', g: str | None = None):\n"
        "        '''F.'''\n"
        "    def not_a_tool(self, x: Order): ...\n",
    )
    (schema,) = tool_schemas(root, "retail")
    props = schema["function"]["parameters"]["properties"]
    assert props["a"]["type"] == "integer" and props["b"]["type"] == "number"
    assert props["c"]["default"] is None and props["d"] == {
        "default": True,
        "title": "D",
        "type": "boolean",
    }
    assert props["e"]["enum"] == ["x", "y"]
    assert schema["function"]["parameters"]["required"] == ["a", "b"]
    assert schema["function"]["description"] == "F."
    other = _tools(tmp_path / "2", "    @is_tool(ToolType.READ)\n    def f(self, x: Order): ...\n")
    with pytest.raises(CheckoutSourceError, match=r"tools.py: f: an annotation .*: Order"):
        tool_schemas(other, "retail")


def test_a_tool_without_a_docstring_is_described_by_its_name(tmp_path):
    root = _tools(tmp_path, "    @is_tool(ToolType.READ)\n    def look(self): ...\n")
    assert tool_schemas(root, "retail")[0]["function"]["description"] == "look"


def test_a_checkout_whose_source_lacks_what_is_read_is_named(tmp_path):
    with pytest.raises(CheckoutSourceError, match="tools.py: cannot be read"):
        tool_schemas(tmp_path, "retail")
    with pytest.raises(CheckoutSourceError, match="tools.py: no @is_tool methods"):
        tool_schemas(_tools(tmp_path, "    x = 1\n"), "retail")
    agent = tmp_path / "src" / "tau2" / "agent" / "llm_agent.py"
    agent.parent.mkdir(parents=True)
    agent.write_text("SYSTEM_PROMPT = '{agent_instruction}|{domain_policy}'\n")
    with pytest.raises(CheckoutSourceError, match="no string AGENT_INSTRUCTION"):
        agent_system_prompt(tmp_path, "P")
    agent.write_text(
        "SYSTEM_PROMPT = '{agent_instruction}|{domain_policy}'\nAGENT_INSTRUCTION = ' I '.strip()\n"
    )
    assert agent_system_prompt(tmp_path, "P") == "I|P"
    with pytest.raises(CheckoutSourceError, match="orchestrator.py: cannot be read"):
        first_agent_message(tmp_path)
    orchestrator = tmp_path / "src" / "tau2" / "orchestrator" / "orchestrator.py"
    orchestrator.parent.mkdir(parents=True)
    orchestrator.write_text("DEFAULT_FIRST_AGENT_MESSAGE = AssistantMessage(role='assistant')\n")
    with pytest.raises(CheckoutSourceError, match="no DEFAULT_FIRST_AGENT_MESSAGE"):
        first_agent_message(tmp_path)


@pytest.mark.parametrize(
    "params",
    [
        "a: 'int['",  # a quoted annotation that is not Python
        "a: '\\x00'",  # one Python does not parse at all
        "a: str = foo()",  # a default that is not a literal
        "a: Dict[str]",  # type arguments the type does not take
        "a: Union[()]",
        "a: Literal[()]",  # a Literal without a value (pydantic asserts)
        "a: Literal",  # one pydantic makes no schema of
    ],
)
def test_a_tool_whose_parameters_make_no_schema_is_named(tmp_path, params):
    root = _tools(tmp_path, f"    @is_tool(ToolType.READ)\n    def f(self, {params}): ...\n")
    with pytest.raises(CheckoutSourceError, match=r"tools.py: f: "):
        tool_schemas(root, "retail")


def test_source_nested_past_what_python_parses_is_named(tmp_path):
    root = _tools(tmp_path, "    x = " + "1+" * 100_000 + "1\n")
    with pytest.raises(CheckoutSourceError, match="tools.py: not Python this reads"):
        tool_schemas(root, "retail")


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{agent_instruction}|{x}", r"not a template of .*KeyError"),
        ("{agent_instruction}|{domain_policy}}", r"not a template of .*ValueError"),
        ("{agent_instruction}|{0}", r"not a template of .*IndexError"),
        ("{agent_instruction}", r"does not take \{domain_policy\} whole"),  # the policy left out
        ("{agent_instruction}|{domain_policy:.9}", r"does not take \{domain_policy\} whole"),
    ],
)
def test_an_agent_prompt_that_does_not_take_the_policy_whole_is_named(tmp_path, template, why):
    agent = tmp_path / "src" / "tau2" / "agent" / "llm_agent.py"
    agent.parent.mkdir(parents=True)
    agent.write_text(f"SYSTEM_PROMPT = {template!r}\nAGENT_INSTRUCTION = 'I'\n")
    with pytest.raises(CheckoutSourceError, match="llm_agent.py: SYSTEM_PROMPT: " + why):
        agent_system_prompt(tmp_path, "P")


def test_a_customer_prompt_that_does_not_take_the_scenario_whole_is_named(tmp_path):
    simulator = tmp_path / "src" / "tau2" / "user" / "user_simulator.py"
    simulator.parent.mkdir(parents=True)
    simulator.write_text("SYSTEM_PROMPT = '{global_user_sim_guidelines_with_persona}'\n")
    with pytest.raises(
        CheckoutSourceError, match=r"user_simulator.py: SYSTEM_PROMPT: does not take \{instr"
    ):
        customer_view(tmp_path)


def test_a_string_that_is_not_unicode_text_is_named_not_written(tmp_path, capsys):
    root = make_checkout(tmp_path / "tau2-bench")
    agent = root / "src" / "tau2" / "agent" / "llm_agent.py"
    agent.write_text(  # Python, and the escape makes a lone surrogate
        "AGENT_INSTRUCTION = '\\ud800'.strip()\n"
        "SYSTEM_PROMPT = '{agent_instruction}|{domain_policy}'\n"
    )
    with pytest.raises(CheckoutSourceError, match="llm_agent.py: line 1: a string that is not"):
        agent_system_prompt(root, "P")
    # the import said `error: 'utf-8' codec can't encode ...` and stopped half-way
    assert tau2_main(["import", str(root), "--out", str(tmp_path / "cases")]) == 1
    assert f"_tau2_agent.yaml not written: {agent}: line 1" in capsys.readouterr().err
