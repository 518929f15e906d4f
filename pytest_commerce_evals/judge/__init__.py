"""The LLM judge for rubric dimensions: the judge itself (`judge`), the verdict store
(`verdict_store`), calibration against human labels (`calibration`) and the judge's hooks
(`_plugin`); the rubrics and their fingerprints are the contract's `rubrics`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exports import lazy

if TYPE_CHECKING:
    from .judge import (
        FENCE_CLOSE,
        FENCE_OPEN,
        RESPONSE_FORMATS,
        SYSTEM_PROMPT,
        USER_TEMPLATE,
        VERDICT_SCHEMA,
        ContextBudget,
        Judge,
        JudgeParams,
        JudgeReply,
        RenderedTranscript,
        parse_reply,
        render_transcript,
    )

__getattr__, __dir__ = lazy(
    __name__,
    {
        "FENCE_CLOSE": "judge",
        "FENCE_OPEN": "judge",
        "RESPONSE_FORMATS": "judge",
        "SYSTEM_PROMPT": "judge",
        "USER_TEMPLATE": "judge",
        "VERDICT_SCHEMA": "judge",
        "ContextBudget": "judge",
        "Judge": "judge",
        "JudgeParams": "judge",
        "JudgeReply": "judge",
        "RenderedTranscript": "judge",
        "parse_reply": "judge",
        "render_transcript": "judge",
    },
)

__all__ = [
    "ContextBudget",
    "FENCE_CLOSE",
    "FENCE_OPEN",
    "Judge",
    "JudgeParams",
    "JudgeReply",
    "RESPONSE_FORMATS",
    "RenderedTranscript",
    "SYSTEM_PROMPT",
    "USER_TEMPLATE",
    "VERDICT_SCHEMA",
    "parse_reply",
    "render_transcript",
]
