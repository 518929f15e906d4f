"""τ²'s `calculate` tool without evaluating code: the expression is parsed by Python's own parser
(so a malformed one fails with the very `SyntaxError` τ²'s `eval` reports) and its tree walked
here, allowing exactly what can be written with τ²'s characters (digits, `+ - * / ( ) .` and
spaces): numbers and `...`, unary `+ -`, `+ - * / // **`, the empty tuple `()`, and calls (`2(3)`
is a call to the number 2, which fails as it does in τ²). Each operation is Python's own on the
same values, in the same order, so results and error messages are the ones `eval` gives; the
answer is `str(round(float(value), 2))`, as τ² formats it.

Bounded where `eval` is not: an integer power or product past `MAX_BITS` bits, or integer
arithmetic past `MAX_WORK` in one expression, stops with the error `float()` gives a number too
large to show ("int too large to convert to float") instead of computing it (τ² computes it, for
as long as that takes, and then, almost always, fails with that error).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Generator
from typing import Any

__all__ = ["ALLOWED", "MAX_BITS", "MAX_WORK", "calculate"]

ALLOWED = "0123456789+-*/(). "
MAX_BITS = 1_000_000
"""The largest integer (in bits) a power or product may make (about 40 ms of work): far past a
float's range (1,024 bits), so only an expression that makes such a number and cancels it again
answers otherwise than τ²."""
MAX_WORK = 1 << 25
"""The integer work one expression may do, counted in bits made (powers, products) and in bits
divided (the dividend's times the divisor's, over 2**16, for `//`): about a second at most."""

_UNARY: dict[type, Callable[[Any], Any]] = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Pow: operator.pow,
}
_TOO_LARGE = "int too large to convert to float"

_Walk = Generator[ast.AST, Any, Any]


def calculate(expression: Any) -> str:
    """The value of `expression`, rounded to two decimals, as τ²'s `calculate` gives it; raises
    what τ²'s raises (its message is the tool's error text)."""
    if not all(char in ALLOWED for char in expression):
        raise ValueError("Invalid characters in expression")
    return str(round(float(_evaluate(expression)), 2))


def _evaluate(expression: Any) -> Any:
    if not isinstance(expression, str):  # a list of allowed characters passes the check above
        raise TypeError("eval() arg 1 must be a string, bytes or code object")
    source = expression.lstrip(" \t")  # as `eval` does
    try:
        tree = ast.parse(source, "<string>", "eval")
    except RecursionError:  # the limit `eval` meets compiling the same expression
        raise RecursionError("maximum recursion depth exceeded during compilation") from None
    return _run(tree.body)


def _run(root: ast.AST) -> Any:
    """Walk the tree without recursion (an expression may nest thousands deep): each node is a
    generator that yields the children it needs, in Python's order, and returns its value."""
    work = [MAX_WORK]
    stack = [_visit(root, work)]
    value: Any = None
    while stack:
        try:
            child = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            value = done.value
            continue
        stack.append(_visit(child, work))
        value = None
    return value


def _visit(node: ast.AST, work: list[int]) -> _Walk:
    if isinstance(node, ast.Constant) and (type(node.value) in (int, float) or node.value is ...):
        return node.value
    if isinstance(node, ast.Tuple) and not node.elts:
        return ()
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = yield node.operand
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left = yield node.left
        right = yield node.right
        _bounded(node.op, left, right, work)
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.Call):
        return (yield from _call(node))
    # nothing else can be written with the allowed characters
    raise ValueError(f"not arithmetic: {type(node).__name__}")


def _bounded(op: ast.operator, left: Any, right: Any, work: list[int]) -> None:
    """Refuse integer arithmetic past `MAX_BITS` or the expression's remaining `work`."""
    if type(left) is not int or type(right) is not int:
        return  # floats, complex numbers and the empty tuple: cheap whatever their value
    cost = 0
    if isinstance(op, ast.Pow) and right > 0 and abs(left) > 1:
        cost = (left.bit_length() - 1) * right  # the power's size, to within a factor of 2
    elif isinstance(op, ast.Mult) and left and right:
        cost = left.bit_length() + right.bit_length()
    elif isinstance(op, ast.FloorDiv):
        cost = (left.bit_length() * right.bit_length()) >> 16
    if cost > MAX_BITS and not isinstance(op, ast.FloorDiv) or cost > work[0]:
        raise OverflowError(_TOO_LARGE)
    work[0] -= cost


def _call(node: ast.Call) -> _Walk:
    """A call, as Python makes it: the callee, then each argument in order (a `*` argument
    among others checked at once, a lone one at the call), then each `**` argument; no value
    this language makes is callable or a mapping, so every call fails, with Python's message."""
    callee = yield node.func
    lone = len(node.args) == 1 and isinstance(node.args[0], ast.Starred)
    spread: Any = ()
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            spread = yield arg.value
            if not lone and not isinstance(spread, tuple):
                raise TypeError(f"Value after * must be an iterable, not {type(spread).__name__}")
        else:
            yield arg
    for keyword in node.keywords:  # only `**value`: `=` is not an allowed character
        if keyword.arg is not None:
            raise ValueError("not arithmetic: keyword")
        found = yield keyword.value
        raise TypeError(f"{callee} argument after ** must be a mapping, not {type(found).__name__}")
    if lone and not isinstance(spread, tuple):
        raise TypeError(
            f"{callee} argument after * must be an iterable, not {type(spread).__name__}"
        )
    raise TypeError(f"'{type(callee).__name__}' object is not callable")
