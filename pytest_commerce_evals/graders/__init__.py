"""Code graders: pure functions of a trial's events and final state (`code`). Every `expected` key
of a case is one grader.
"""

from .code import (
    GRADERS,
    Observation,
    calls_made,
    grade,
    reply_excerpt,
    skill_key,
)

__all__ = [
    "GRADERS",
    "Observation",
    "calls_made",
    "grade",
    "reply_excerpt",
    "skill_key",
]
