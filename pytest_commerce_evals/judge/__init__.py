"""The LLM judge for rubric dimensions: the judge itself (`judge`), the verdict store
(`verdict_store`), calibration against human labels (`calibration`) and the judge's hooks
(`_plugin`); the rubrics and their fingerprints are the contract's `rubrics`.
"""

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
