"""Terminal helpers (to go: `compat.line_writer` is the one writer)."""

from __future__ import annotations

from ..compat import line_writer

__all__ = ["line_writer"]
