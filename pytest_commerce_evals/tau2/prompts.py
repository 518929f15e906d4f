"""What τ²-bench's own agent is shown, read from a τ²-bench checkout: the tool schemas its toolkit
builds from the domain's tool methods, the system prompt its `LLMAgent` builds around the policy,
and the greeting its orchestrator opens every conversation with.

τ²'s code is the user's data here: the checkout's source is parsed (`ast`), never imported or
run, and nothing of it is kept in this package. The schemas are built as τ²'s `Tool` builds them:
each `@is_tool` method's parameters (in the order written, `self` left out) become a pydantic
model named `parameters` whose JSON schema is the tool's `parameters`, each described by its
docstring's `Args:` entry; the description is the docstring's first line, then a blank line and
the rest of its text before the first section when there is more (as `docstring_parser` splits a
Google-style docstring); the tools come in the order the class defines them.

    schemas = tool_schemas(checkout, "retail")
    prompt = agent_system_prompt(checkout, policy)
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Any, Literal, Optional, Union

from pydantic import Field, PydanticUserError, create_model

from ..errors import CheckoutSourceError

__all__ = [
    "CheckoutSourceError",
    "agent_system_prompt",
    "agent_view",
    "first_agent_message",
    "tool_schemas",
]


_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns|Return|Yields|Raises|Exceptions|Example|"
    r"Examples|Attributes)\s*:\s*$",
    re.M,
)
_TYPED_ARG = re.compile(r"\s*(.+?)\s*\(\s*(.*[^\s]+)\s*\)")
_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "dict": dict,
    "list": list,
    "Dict": dict,
    "List": list,
    "Any": Any,
    "Optional": Optional,
    "Union": Union,
    "Literal": Literal,
    "None": None,
}


def _source(path: Path) -> ast.Module:
    try:
        module = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except OSError as exc:
        raise CheckoutSourceError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:  # nested too deep
        raise CheckoutSourceError(
            f"{path}: not Python this reads ({type(exc).__name__}: {exc})"[:400]
        ) from None
    for node in ast.walk(module):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node.value.encode("utf-8")
            except UnicodeEncodeError:  # an escape such as '\ud800': no file can hold it
                raise CheckoutSourceError(
                    f"{path}: line {node.lineno}: a string that is not Unicode text"
                ) from None
    return module


def _string(node: ast.AST | None) -> str | None:
    """A string constant, or one with `.strip()` called on it (τ²'s prompts are written so)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "strip"
        and not node.args
    ):
        inner = _string(node.func.value)
        return inner.strip() if inner is not None else None
    return None


def _constants(module: ast.Module) -> dict[str, str]:
    found: dict[str, str] = {}
    for node in module.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            text = _string(node.value)
            if isinstance(target, ast.Name) and text is not None:
                found[target.id] = text
    return found


def unfilled(template: str, fields: tuple[str, ...]) -> str | None:
    """Why `template` is not a `str.format` template that takes each of `fields` whole (a field
    left out, cut, converted or indexed, an unknown or positional one, a stray brace); None when
    it is. Each field is filled with a probe of its own that must come out unchanged."""
    probes = {name: f"\x00{name}\x00" for name in fields}
    named = " and ".join("{" + name + "}" for name in fields)
    try:
        filled = template.format(**probes)
    except (KeyError, IndexError, ValueError, AttributeError, TypeError) as exc:
        return f"not a template of {named} ({type(exc).__name__}: {str(exc)[:100]})"
    missing = ["{" + name + "}" for name, probe in probes.items() if probe not in filled]
    return f"does not take {' and '.join(missing)} whole" if missing else None


AGENT_FIELDS = ("agent_instruction", "domain_policy")
"""What the agent's `SYSTEM_PROMPT` is filled with: its instruction, the domain's policy."""


def _prompt_parts(checkout: Path) -> tuple[str, str]:
    path = Path(checkout) / "src" / "tau2" / "agent" / "llm_agent.py"
    found = _constants(_source(path))
    missing = [n for n in ("SYSTEM_PROMPT", "AGENT_INSTRUCTION") if n not in found]
    if missing:
        raise CheckoutSourceError(f"{path}: no string {', '.join(missing)} to build the prompt")
    problem = unfilled(found["SYSTEM_PROMPT"], AGENT_FIELDS)
    if problem is not None:
        raise CheckoutSourceError(f"{path}: SYSTEM_PROMPT: {problem}")
    return found["SYSTEM_PROMPT"], found["AGENT_INSTRUCTION"]


def system_prompt(template: str, instruction: str, policy: str) -> str:
    """τ²'s agent's system prompt from its two constants and the domain's policy."""
    return template.format(agent_instruction=instruction, domain_policy=policy)


def agent_system_prompt(checkout: Path, policy: str) -> str:
    """The system prompt τ²'s `LLMAgent` sends: its `SYSTEM_PROMPT` with its
    `AGENT_INSTRUCTION` and the domain's policy, from `src/tau2/agent/llm_agent.py`."""
    return system_prompt(*_prompt_parts(checkout), policy)


def agent_view(checkout: Path, domain: str) -> dict[str, Any]:
    """All the agent is shown but the policy, as the importer keeps it beside the cases: the
    tool schemas, the system prompt's template and instruction, and the greeting."""
    template, instruction = _prompt_parts(checkout)
    return {
        "tools": tool_schemas(checkout, domain),
        "system_prompt": template,
        "agent_instruction": instruction,
        "greeting": first_agent_message(checkout),
    }


def first_agent_message(checkout: Path) -> str:
    """The greeting τ²'s orchestrator opens a conversation with (`DEFAULT_FIRST_AGENT_MESSAGE`
    in `src/tau2/orchestrator/orchestrator.py`): the agent's history starts with it."""
    path = Path(checkout) / "src" / "tau2" / "orchestrator" / "orchestrator.py"
    for node in _source(path).body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and node.targets[0].id == "DEFAULT_FIRST_AGENT_MESSAGE"
            and isinstance(node.value, ast.Call)
        ):
            for keyword in node.value.keywords:
                text = _string(keyword.value) if keyword.arg == "content" else None
                if text is not None:
                    return text
    raise CheckoutSourceError(f"{path}: no DEFAULT_FIRST_AGENT_MESSAGE with a content string")


def tool_schemas(checkout: Path, domain: str) -> list[dict[str, Any]]:
    """The `tools=` entries τ²'s agent sends for `domain`, from the checkout's
    `src/tau2/domains/<domain>/tools.py` (its `@is_tool` methods; discoverable tools are not
    shown to the agent, as in τ²)."""
    path = Path(checkout) / "src" / "tau2" / "domains" / domain / "tools.py"
    schemas = []
    for node in ast.walk(_source(path)):
        if not isinstance(node, ast.ClassDef):
            continue
        for item in node.body:
            if isinstance(item, ast.FunctionDef) and _is_tool(item):
                schemas.append(_schema(item, path))
    if not schemas:
        raise CheckoutSourceError(f"{path}: no @is_tool methods")
    return schemas


def _is_tool(fn: ast.FunctionDef) -> bool:
    for decorator in fn.decorator_list:
        call = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(call, ast.Name) and call.id == "is_tool":
            return True
    return False


def _annotation(node: ast.expr | None, where: str) -> Any:
    """A parameter's annotation as a type, from the names τ²'s tools use; others refused."""
    if node is None:
        return Any
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a quoted annotation
        try:
            quoted = ast.parse(node.value, mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
            raise CheckoutSourceError(
                f"{where}: an annotation this does not read: {node.value[:100]!r} ({exc})"
            ) from None
        return _annotation(quoted, where)
    if isinstance(node, ast.Constant) and node.value is None:
        return None
    if isinstance(node, ast.Name) and node.id in _TYPES:
        return _TYPES[node.id]
    if isinstance(node, ast.Attribute) and node.attr in _TYPES:  # typing.List
        return _TYPES[node.attr]
    if isinstance(node, ast.Subscript):
        base = _annotation(node.value, where)
        inner = node.slice
        if base is Literal:
            values = inner.elts if isinstance(inner, ast.Tuple) else [inner]
            if not values:  # pydantic asserts a literal has a value
                raise CheckoutSourceError(f"{where}: a Literal without a value")
            return Literal[tuple(ast.literal_eval(v) for v in values)]
        args = tuple(
            _annotation(e, where) for e in (inner.elts if isinstance(inner, ast.Tuple) else [inner])
        )
        return base[args if len(args) > 1 else args[0]]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):  # str | None
        return Union[_annotation(node.left, where), _annotation(node.right, where)]  # noqa: UP007
    raise CheckoutSourceError(f"{where}: an annotation this does not read: {ast.unparse(node)}")


def _schema(fn: ast.FunctionDef, path: Path) -> dict[str, Any]:
    where = f"{path}: {fn.name}"
    short, long, described = parse_docstring(ast.get_docstring(fn, clean=False) or "")
    positional = fn.args.posonlyargs + fn.args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(fn.args.defaults))
    defaults += list(fn.args.defaults)
    pairs = list(zip(positional, defaults, strict=True))
    pairs += list(zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True))
    fields: dict[str, Any] = {}
    try:
        for arg, default_node in pairs:
            if arg.arg == "self":
                continue
            default: Any = ... if default_node is None else ast.literal_eval(default_node)
            if arg.arg in described:
                default = Field(default, description=described[arg.arg])
            fields[arg.arg] = (_annotation(arg.annotation, where), default)
        schema = create_model("parameters", **fields).model_json_schema()
    except CheckoutSourceError:
        raise
    except (
        TypeError,
        ValueError,
        IndexError,
        NameError,
        AttributeError,
        RecursionError,
        PydanticUserError,
    ) as exc:
        # a default that is not a literal, type arguments the type does not take, a type or a
        # name pydantic refuses
        raise CheckoutSourceError(
            f"{where}: its parameters make no schema ({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    if not short:
        description = fn.name
    elif long:
        description = f"{short}\n\n{long}"
    else:
        description = short
    return {
        "type": "function",
        "function": {
            "name": fn.name,
            "description": description,
            "parameters": schema,
        },
    }


def parse_docstring(text: str) -> tuple[str, str, dict[str, str]]:
    """A Google-style docstring as τ²'s tool builder reads it (with `docstring_parser`): its first
    line, the rest of its text before the first section (stripped), and each `Args:` entry's
    description. A section's text ends at a line that is not indented; its entries start at
    lines indented as its first one; a description's later lines are dedented."""
    text = inspect.cleandoc(text)
    match = _SECTION.search(text)
    head, meta = (text[: match.start()], text[match.start() :]) if match else (text, "")
    first, _, rest = head.partition("\n")
    params: dict[str, str] = {}
    sections = list(_SECTION.finditer(meta))
    for n, section in enumerate(sections):
        end = sections[n + 1].start() if n + 1 < len(sections) else len(meta)
        if section.group(1) not in ("Args", "Arguments", "Parameters", "Params"):
            continue
        chunk = meta[section.end() : end]
        unknown = re.search(r"\n\S", chunk)  # text after the section, not part of it
        if unknown is not None:
            chunk = chunk[: unknown.start()]
        chunk = chunk.strip("\n")
        indent = re.match(r"^\s*", chunk).group()  # type: ignore[union-attr]
        starts = list(re.finditer("^" + indent + r"(?=\S)", chunk, flags=re.M))
        for i, start in enumerate(starts):
            stop = starts[i + 1].start() if i + 1 < len(starts) else len(chunk)
            before, colon, desc = chunk[start.end() : stop].strip("\n").partition(":")
            if not colon:
                continue
            typed = _TYPED_ARG.match(before)
            name = typed.group(1) if typed else before
            if desc:
                desc = desc[1:] if desc[0] == " " else desc
                if "\n" in desc:
                    line, more = desc.split("\n", 1)
                    desc = line + "\n" + inspect.cleandoc(more)
                desc = desc.strip("\n")
            params[name] = desc
    return first, rest.strip(), params
