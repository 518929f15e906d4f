"""The judge as the run's settings give it, below the judge's hooks: where verdicts are stored,
the judge's model and parameters, the calibration lookup, and whether the built-in judge is
asked at all (the embedded judge below its calibration bar is not: its verdicts would decide
nothing), with why a trial's rubric went unjudged, for the run's summary."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from ..settings import settings

if TYPE_CHECKING:
    from .calibrated import CalibrationLookup
    from .judge import JudgeParams

__all__ = ["embedded_judge_decides", "not_judged_reason"]

DECISIVE = pytest.StashKey["Callable[[str], bool] | None"]()  # the embedded judge's dimensions
LOOKUP = pytest.StashKey["CalibrationLookup"]()


def store_path(config: pytest.Config) -> Path | str | None:
    """Where verdicts are stored (a SQLite file, or a PostgreSQL URL as a str), or None when
    storing is switched off."""
    return settings(config).judge_store


def _endpoint_model(endpoint: Any) -> str:
    for attr in ("model", "model_id"):
        value = getattr(endpoint, attr, None)
        if value:
            return str(value)
    if isinstance(endpoint, dict) and endpoint.get("model"):
        return str(endpoint["model"])
    raise pytest.UsageError(
        "the judge endpoint has no model id: set --commerce-judge-model "
        f"(resolved endpoint: {endpoint!r:.120})"
    )


def _is_embedded(endpoint: Any) -> bool:
    if getattr(endpoint, "embedded", False):
        return True
    kind = str(getattr(endpoint, "kind", "") or getattr(endpoint, "server", "")).lower()
    return "llama" in kind


def judge_params(config: pytest.Config, endpoint: Any = None) -> JudgeParams:
    from .judge import JudgeParams

    found = settings(config)
    chosen = found.judge_format
    if chosen == "auto":
        fmt: Literal["json_schema", "json_object", "none"] = (
            "json_object" if _is_embedded(endpoint) else "json_schema"
        )
    else:
        fmt = chosen
    defaults = JudgeParams()
    seed, max_tokens = found.judge_seed, found.judge_max_tokens
    return JudgeParams(
        temperature=0.0,
        seed=defaults.seed if seed is None else seed,
        max_tokens=defaults.max_tokens if max_tokens is None else max_tokens,
        response_format=fmt,
    )


def _calibration_lookup(config: pytest.Config) -> CalibrationLookup:
    """The session's lookup: the verdict store (when configured and present), then the shipped
    calibrations. A store that does not exist yet holds no calibration and is not created."""
    lookup = config.stash.get(LOOKUP, None)
    if lookup is None:  # once a session: every verdict is annotated through it
        from .calibrated import CalibrationLookup
        from .verdict_store import VerdictStore

        path = store_path(config)
        store = None
        if path is not None and (isinstance(path, str) or path.is_file()):  # a URL, or a file
            try:
                store = VerdictStore(path)
            except ValueError:
                store = None  # named when the judge opens it; here: no calibration from it
            else:
                config.add_cleanup(store.close)
        lookup = CalibrationLookup(store)
        config.stash[LOOKUP] = lookup
    return lookup


def embedded_judge_decides(config: pytest.Config) -> Callable[[str], bool] | None:
    """For the embedded judge: whether its verdict on a dimension would decide (its calibration
    clears the bar); None for any other judge, which is always asked.

    The embedded judge's calls take seconds each on a CPU, and below its bar (auto: κ 0.4; the
    shipped calibration is κ 0.06) its verdicts are advisory: shown, deciding no trial. So the
    built-in judge is not asked for a case none of whose dimensions it could decide; those
    trials are reported as not judged, decided by their code graders, as they would be with
    the advisory verdicts. `--commerce-judge-min-kappa=none` (every verdict decides) or a
    calibration of one's own that clears the bar brings the calls back. A live run
    (`--commerce-live`) and a regrade (`--commerce-regrade`) ask it always: their verdicts are
    what they are run for."""
    if DECISIVE in config.stash:
        return config.stash[DECISIVE]
    from ..models.endpoint import EndpointError, resolve_endpoint
    from .calibrated import advisory_reason, resolve_bar
    from .judge import Judge

    decides: Callable[[str], bool] | None = None
    found = settings(config)
    try:
        resolved = None if found.live or found.regrade else resolve_endpoint(config, "judge")
    except EndpointError:
        resolved = None
    if resolved is not None and _is_embedded(resolved):
        params = judge_params(config, resolved)
        fingerprint = Judge(client=None, model=_endpoint_model(resolved), params=params).fingerprint
        rows = _calibration_lookup(config)(fingerprint)
        bar = resolve_bar(found.judge_min_kappa, embedded=True)

        def clears_bar(dimension: str) -> bool:
            return advisory_reason(rows.get(dimension), bar) is None

        decides = clears_bar
    config.stash[DECISIVE] = decides
    return decides


def not_judged_reason(config: pytest.Config) -> str:
    """Why a trial's rubric was not judged, for the run's summary."""
    if settings(config).no_judge:
        return "no judge: --commerce-no-judge"
    if embedded_judge_decides(config) is not None:
        return (
            "the embedded judge is below its κ bar, so its verdicts would decide nothing and it "
            "was not asked; --commerce-judge-min-kappa=none asks it"
        )
    return "no judge"
