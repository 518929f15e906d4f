"""The `Settings` object's fields, one per stored setting of `table.TABLE`, typed as `_resolve`
parses them (`tests/test_settings.py` checks the two lists are the same, in the same order)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..prices import Price
from .table import AutoTrials
from .values import RunBudget

__all__ = ["Settings"]


@dataclass(frozen=True)
class Settings:
    """The run's settings, one attribute per setting of TABLE (e.g. `trials`, `store`,
    `judge_format`), parsed and checked; frozen. `sources` (and `origin(name)`) says where each
    value came from: `option`, `ini`, `env` or `default`."""

    trials: int | AutoTrials
    threshold: float
    concurrency: int | None
    budget: RunBudget | None
    prices: Mapping[str, Price]
    case_dirs: tuple[Path, ...]
    agent: str | None
    model: str | None
    base_url: str | None
    judge_model: str | None
    judge_base_url: str | None
    user_model: str | None
    user_base_url: str | None
    request_timeout: float | None
    retry_attempts: int
    retry_wait_max: float
    local_model: str
    local_n_ctx: int
    local_startup_timeout: float
    local_threads: int | None
    judge_store: Path | str | None
    judge_budget: int | None
    judge_budget_unit: Literal["chars", "tokens"]
    judge_format: Literal["auto", "json_schema", "json_object", "none"]
    judge_seed: int | None
    judge_max_tokens: int | None
    user_seed: int | None
    user_max_tokens: int | None
    no_judge: bool
    judge_min_kappa: float | str | None
    judge_calibrate: bool
    judge_calibration_set: str | None
    store: Path | str | None
    store_copy: str | None
    store_import: tuple[str, ...]
    judge_store_copy: str | None
    baseline: str | None
    diff_level: float
    history_runs: int
    flaky: bool | None
    compare: str | None
    regrade: str | None
    html: str | None
    json: str | None
    live: tuple[str, ...]
    live_format: Literal["auto", "native", "openai", "otel"]
    sample_rate: float
    sample_seed: str
    live_dimensions: tuple[str, ...]
    live_threshold: float
    redact: tuple[str, ...]
    redact_patterns: tuple[tuple[str, str], ...]
    trend: bool
    trend_svg: str | None
    trend_runs: int
    lint: bool
    vacuity: bool
    captured: tuple[str, ...]
    sources: Mapping[str, str] = field(default_factory=dict)

    def origin(self, name: str) -> str:
        """Where setting `name` came from: `option`, `ini`, `env` or `default`."""
        return self.sources.get(name, "default")
