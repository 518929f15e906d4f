"""What the τ² domain backends share: a database read once per process and copied per trial, and
the rule that a τ² case starts from the database as shipped.

A domain's backend subclasses `Tau2Backend`, naming its `DOMAIN` and how a `db.json`'s content
becomes the database it works on (`normalize`, raising `RetailError` with what is wrong).
"""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Self

from ..cases.case import State
from ..errors import RetailError

__all__ = ["Tau2Backend", "load_cached"]

_CACHE: dict[tuple[str, str], dict[str, Any]] = {}
_CACHE_LOCK = threading.Lock()


def load_cached(
    path: Path, domain: str, normalize: Callable[[Any], dict[str, Any]]
) -> dict[str, Any]:
    """The `domain` database at `path`, read and normalized once per process (the same object
    on every call: copy it before changing it). A file that cannot be read, is not JSON or does
    not normalize raises `RetailError` naming the file and what is wrong."""
    key = (domain, str(path.resolve()))
    with _CACHE_LOCK:
        if key not in _CACHE:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError, RecursionError) as exc:
                raise RetailError(f"{path}: not a τ² {domain} database ({exc})") from None
            try:
                _CACHE[key] = normalize(data)
            except RetailError as exc:
                raise RetailError(f"{path}: {exc}") from None
        return _CACHE[key]


class Tau2Backend:
    """One trial's copy of a τ² database (`initial` as loaded, `db` as the trial changes it)."""

    DOMAIN: ClassVar[str]

    def __init__(self, db: dict[str, Any]) -> None:
        self.initial = db
        self.db = copy.deepcopy(db)

    @staticmethod
    def normalize(data: Any) -> dict[str, Any]:
        """The database a `db.json`'s content becomes; raises `RetailError` if it is not one."""
        raise NotImplementedError

    @classmethod
    def load(cls, path: Path | str) -> Self:
        """A fresh backend over the database at `path` (read once per process, copied per
        trial)."""
        return cls(load_cached(Path(path), cls.DOMAIN, cls.normalize))

    def load_state(self, state: State) -> None:
        """τ² tasks start from the database as shipped: a case's `state` must be empty."""
        if state.cart or state.memory or state.staged_changes or state.seen_products:
            raise RetailError(f"a τ² {self.DOMAIN} case starts from the database: give it no state")
