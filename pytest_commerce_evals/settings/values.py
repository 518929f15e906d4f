"""Values the settings parse that a feature also reads: the judge's kappa bar, the run's budget."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from ..errors import BudgetError, MinKappaError, ShardError
from ..prices import MAX_DOLLARS, dollars, money

__all__ = [
    "BudgetError",
    "MinKappaError",
    "RunBudget",
    "Shard",
    "ShardError",
    "parse_min_kappa",
    "parse_run_budget",
    "parse_run_id",
    "ci_shard",
    "parse_shard",
]


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


_RUN_KEYS = ("calls", "tokens", "cost")


@dataclass(frozen=True)
class RunBudget:
    """The most the run may spend: model calls, tokens (input plus output) and US dollars."""

    calls: int | None = None
    tokens: int | None = None
    cost: Decimal | None = None

    def text(self) -> str:
        parts = []
        if self.calls is not None:
            parts.append(f"{self.calls:,} calls")
        if self.tokens is not None:
            parts.append(f"{self.tokens:,} tokens")
        if self.cost is not None:
            parts.append(money(self.cost))
        return ", ".join(parts)

    def split(self, parts: int) -> RunBudget:
        """An even share for one of `parts` processes (pytest-xdist workers)."""
        if parts <= 1:
            return self
        return RunBudget(
            None if self.calls is None else self.calls // parts,
            None if self.tokens is None else self.tokens // parts,
            None if self.cost is None else self.cost / parts,
        )


_WHOLE = re.compile(r"[0-9]+")


def _cut(text: str, most: int = 40) -> str:
    """`text` as an error shows it: at most `most` characters, the rest counted."""
    return text if len(text) <= most else f"{text[:most]}… ({len(text):,} characters)"


def parse_run_budget(text: str) -> RunBudget:
    """`calls:500,tokens:2000000,cost:5.00` (any of them, each once): lower-case keywords, whole
    numbers (1 to 10^15) and amounts in ASCII digits (no other scripts' digits, no `_`
    separators, no exponents); a cost of at most `MAX_DOLLARS`."""
    found: dict[str, Any] = {}
    items = [p.strip() for p in text.split(",") if p.strip()]
    if not items:
        raise BudgetError("empty; write calls:N, tokens:N or cost:USD (comma-separated)")
    for item in items:
        key, sep, value = item.partition(":")
        key, value = key.strip(), value.strip()
        if sep and key not in _RUN_KEYS and key.lower() in _RUN_KEYS:
            raise BudgetError(
                f"{_cut(item)!r}: write the keyword in lower case ({key.lower()}:...)"
            )
        if not sep or key not in _RUN_KEYS:
            raise BudgetError(
                f"{_cut(item)!r} is not a limit; write calls:N, tokens:N or cost:USD "
                "(comma-separated)"
            )
        if key in found:
            raise BudgetError(f"{key} is given twice")
        if key == "cost":
            amount = dollars(value.removeprefix("$").strip())
            if amount is None or amount <= 0:
                raise BudgetError(
                    f"cost:{value} is not an amount of US dollars above 0 and at most "
                    f"{MAX_DOLLARS:,} (ASCII digits, e.g. cost:5.00)"
                )
            found[key] = amount
        else:
            # the digits counted before int() reads them: past 4,300 it raises, past 15 a typo
            if not _WHOLE.fullmatch(value) or len(value.lstrip("0")) > 15 or int(value) < 1:
                raise BudgetError(
                    f"{key}:{_cut(value)} is not a whole number from 1 to 10^15 (ASCII digits, "
                    f"e.g. {key}:500)"
                )
            found[key] = int(value)
    return RunBudget(**found)


MAX_SHARDS = 256
"""The most shards one run may be split into."""


@dataclass(frozen=True)
class Shard:
    """`--commerce-shard=K/N`: this process runs the K-th of N slices of the run's cases."""

    index: int
    total: int

    def __str__(self) -> str:
        return f"{self.index}/{self.total}"


def ci_shard(environ: Mapping[str, str]) -> Shard:
    """The shard a CI system's parallel job is: GitLab CI's `parallel:` (`CI_NODE_INDEX`, from 1,
    of `CI_NODE_TOTAL`) or Buildkite's `parallelism:` (`BUILDKITE_PARALLEL_JOB`, from 0, of
    `BUILDKITE_PARALLEL_JOB_COUNT`)."""
    for index, total, base, name in (
        ("CI_NODE_INDEX", "CI_NODE_TOTAL", 0, "GitLab CI's parallel jobs"),
        ("BUILDKITE_PARALLEL_JOB", "BUILDKITE_PARALLEL_JOB_COUNT", 1, "Buildkite's parallelism"),
    ):
        if index in environ or total in environ:
            k, n = environ.get(index, "").strip(), environ.get(total, "").strip()
            if not _WHOLE.fullmatch(k) or not _WHOLE.fullmatch(n) or len(k) > 4:
                raise ShardError(
                    f"ci: {name} give {index}={_cut(k)!r} and {total}={_cut(n)!r}, not whole "
                    "numbers"
                )
            return parse_shard(f"{int(k) + base}/{n}")
    raise ShardError(
        "ci: no parallel job here (GitLab CI's CI_NODE_INDEX/CI_NODE_TOTAL, Buildkite's "
        "BUILDKITE_PARALLEL_JOB/BUILDKITE_PARALLEL_JOB_COUNT); give K/N"
    )


def parse_shard(text: str, environ: Mapping[str, str] | None = None) -> Shard:
    """`K/N` with 1 <= K <= N <= `MAX_SHARDS`, ASCII digits; `ci` for the CI's parallel job
    (`ci_shard`, read from `environ`)."""
    if text.strip() == "ci" and environ is not None:
        return ci_shard(environ)
    index, sep, total = text.strip().partition("/")
    if not sep or not _WHOLE.fullmatch(index) or not _WHOLE.fullmatch(total):
        raise ShardError(f"{_cut(text)!r} is not K/N (e.g. 2/4: the second of four shards)")
    if len(index) > 4 or len(total) > 4 or not 1 <= int(total) <= MAX_SHARDS:
        raise ShardError(f"{_cut(text)!r}: N must be a whole number from 1 to {MAX_SHARDS}")
    if not 1 <= int(index) <= int(total):
        raise ShardError(f"{_cut(text)!r}: K must be from 1 to N ({int(total)})")
    return Shard(int(index), int(total))


_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")


RESERVED_RUN_IDS = ("ci",)
"""Words an option reads as something else than a run id, in any case: `--commerce-merge=ci`
merges the run the CI's variables name, so a run called `ci` could never be merged."""


def parse_run_id(text: str) -> str:
    """A run id a person or a CI system gives: 1 to 128 ASCII letters, digits, `.`, `_`, `:`
    or `-`, starting with a letter or digit (it names files and is typed in commands), and not
    a reserved word (`RESERVED_RUN_IDS`)."""
    if not _RUN_ID.fullmatch(text):
        raise ShardError(
            f"{_cut(text)!r} is not a run id: 1 to 128 ASCII letters, digits, '.', '_', ':' or "
            "'-', starting with a letter or a digit"
        )
    if text.lower() in RESERVED_RUN_IDS:
        raise ShardError(
            f"{text!r} is not a run id: it is reserved (--commerce-merge=ci merges the run the "
            "CI's variables name, so a run called ci could never be merged); give another id, "
            "e.g. ci-nightly"
        )
    return text
