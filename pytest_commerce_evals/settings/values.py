"""Values the settings parse that a feature also reads: the judge's kappa bar."""

from __future__ import annotations

import re
from typing import Any

from ..errors import CommerceEvalsError

__all__ = ["MinKappaError", "parse_min_kappa"]


class MinKappaError(CommerceEvalsError, ValueError):
    """A `--commerce-judge-min-kappa` value that is not auto, none or a number in [-1, 1]."""


def parse_min_kappa(raw: Any) -> float | str | None:
    """`auto` -> "auto", `none` -> None, a number in [-1, 1] -> that number."""
    text = str(raw).strip()
    if text == "auto":
        return "auto"
    if text in ("none", "off"):
        return None
    if not re.fullmatch(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", text):
        raise MinKappaError(f"expected auto, none or a kappa between -1 and 1; found {raw!r}")
    value = float(text)
    if not -1.0 <= value <= 1.0:  # also refuses nan
        raise MinKappaError(f"expected a kappa between -1 and 1 (or auto, none); found {raw!r}")
    return value
