"""A package's exported names, imported when first used.

A package's `__init__` that re-exports its modules' names imports every one of those modules
whenever any module of the package is imported, though a run may use none of them (the
integrations, the judge, the live-traffic reader: with the feature plugins' own imports made
where they are used, 0.03 s of a run's start-up). With

    __getattr__, __dir__ = lazy(__name__, {"Judge": "judge", ...})

`package.Judge` imports `package.judge` on first use (PEP 562) and keeps the name; the
`__init__` still imports the names under `TYPE_CHECKING`, for the type checker and readers.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any

__all__ = ["lazy"]


def lazy(
    package: str, exports: dict[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level `__getattr__` and `__dir__` of `package`, whose names are the keys of
    `exports`, each found in the module named by its value (relative to the package)."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f".{module}", package), name)
        setattr(sys.modules[package], name, value)  # found directly from now on
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
