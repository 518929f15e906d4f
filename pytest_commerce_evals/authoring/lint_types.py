"""What the lint reads and what it reports: the fixture index a conftest hook supplies (with the
poisoned items in it) and one finding, with its file, line, rule and fix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Finding", "FixtureIndex", "PoisonedItem"]


@dataclass
class PoisonedItem:
    """An eval-only fixture carrying an injected instruction."""

    id: str
    carrier: str  # "review" (read only through get_product_details), "listing" or "message"
    text: str  # the fixture text that carries the instruction and the false claims


@dataclass
class FixtureIndex:
    """What the lint needs to know of a team's fixtures (supplied by a conftest hook)."""

    ids: set[str] = field(default_factory=set)
    skills: set[str] = field(default_factory=set)
    poisoned: dict[str, PoisonedItem] = field(default_factory=dict)
    benign_eval_only: set[str] = field(default_factory=set)
    search: Callable[[str], list[str]] | None = None
    data_paths: list[Path] = field(default_factory=list)


@dataclass
class Finding:
    path: Path
    line: int
    rule: str
    case_id: str | None
    message: str
    fix: str

    def __str__(self) -> str:
        who = f"{self.case_id}: " if self.case_id else ""
        return f"{self.path}:{self.line}: [{self.rule}] {who}{self.message}; fix: {self.fix}"
