"""Live traffic: production conversations captured, sampled, judged and followed over time.

- `capture`: the capture format (`CapturedTurn`, one JSON line per turn) and `CaptureWriter`
- `redaction`: `Redactor`, the identifiers replaced before a line is written and again before
  the judge reads it
- `sampling`: the deterministic sample by a hash of the seed and the conversation id
- `lines`: one captured line read (its JSON, or why it cannot be used)
- `conversations`: what a read yields (`Capture`, `Conversation`, `CaptureProblem`) and
  `CaptureBuilder`, which samples, validates and redacts every format's records alike
- `reading`: `read_capture`, the capture files read in any of `LIVE_FORMATS`
- `_formats`: which foreign format a file is in, and the reader each format's name maps to:
  `_format_openai` (OpenAI chat-completions logs) and `_format_otel` (OpenTelemetry GenAI
  spans), read into capture records with what `_format_shared` holds for both
- `trend`: the pass rate per dimension over the live runs, its flags and its chart
- `_plugin`: the hooks of `--commerce-live`
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exports import lazy

if TYPE_CHECKING:
    from ..stats import two_proportion_p, wilson_interval
    from .capture import (
        CAPTURE_MAX_DEPTH,
        CAPTURE_SCHEMA_VERSION,
        CAPTURE_SCHEMA_VERSIONS,
        MAX_TURN,
        CapturedTurn,
        CaptureWriter,
        Role,
    )
    from .conversations import Capture, CaptureProblem, Conversation
    from .reading import LIVE_FORMATS, capture_files, read_capture
    from .redaction import DEFAULT_REDACT, DEFAULT_REDACTOR, NO_REDACTION, REDACTION_KINDS, Redactor
    from .sampling import is_sampled, sample_score
    from .trend import (
        NOISE_POINTS,
        DimensionTrend,
        Trend,
        TrendPoint,
        compute_trend,
        read_live_runs,
        render_trend_svg,
        trend_html_section,
    )

__getattr__, __dir__ = lazy(
    __name__,
    {
        "two_proportion_p": ".stats",
        "wilson_interval": ".stats",
        "CAPTURE_MAX_DEPTH": "capture",
        "CAPTURE_SCHEMA_VERSION": "capture",
        "CAPTURE_SCHEMA_VERSIONS": "capture",
        "MAX_TURN": "capture",
        "CapturedTurn": "capture",
        "CaptureWriter": "capture",
        "Role": "capture",
        "Capture": "conversations",
        "CaptureProblem": "conversations",
        "Conversation": "conversations",
        "LIVE_FORMATS": "reading",
        "capture_files": "reading",
        "read_capture": "reading",
        "DEFAULT_REDACT": "redaction",
        "DEFAULT_REDACTOR": "redaction",
        "NO_REDACTION": "redaction",
        "REDACTION_KINDS": "redaction",
        "Redactor": "redaction",
        "is_sampled": "sampling",
        "sample_score": "sampling",
        "NOISE_POINTS": "trend",
        "DimensionTrend": "trend",
        "Trend": "trend",
        "TrendPoint": "trend",
        "compute_trend": "trend",
        "read_live_runs": "trend",
        "render_trend_svg": "trend",
        "trend_html_section": "trend",
    },
)

__all__ = [
    "CAPTURE_MAX_DEPTH",
    "CAPTURE_SCHEMA_VERSION",
    "CAPTURE_SCHEMA_VERSIONS",
    "DEFAULT_REDACT",
    "DEFAULT_REDACTOR",
    "LIVE_FORMATS",
    "MAX_TURN",
    "NOISE_POINTS",
    "NO_REDACTION",
    "REDACTION_KINDS",
    "Capture",
    "CaptureProblem",
    "CaptureWriter",
    "CapturedTurn",
    "Conversation",
    "DimensionTrend",
    "Redactor",
    "Role",
    "Trend",
    "TrendPoint",
    "capture_files",
    "compute_trend",
    "is_sampled",
    "read_capture",
    "read_live_runs",
    "render_trend_svg",
    "sample_score",
    "trend_html_section",
    "two_proportion_p",
    "wilson_interval",
]
