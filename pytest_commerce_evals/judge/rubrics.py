"""The judge's rubric dimensions: the standard ones and how a case's rubric resolves to texts.

They are part of the contract (`pytest_commerce_evals.rubrics`, which the case model and the
settings read too); the judge's import path names the same objects."""

from __future__ import annotations

from ..rubrics import (
    STANDARD,
    STANDARD_REFERENCE,
    Dimension,
    UnknownDimension,
    resolve_dimensions,
    rubric_fingerprint,
    standard_text,
)

__all__ = [
    "STANDARD",
    "STANDARD_REFERENCE",
    "Dimension",
    "UnknownDimension",
    "resolve_dimensions",
    "rubric_fingerprint",
    "standard_text",
]
