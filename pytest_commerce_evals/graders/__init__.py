"""Code graders: pure functions of a trial's events and final state (`code`). Every `expected` key
of a case is one grader.

`observation` holds what a grader reads; `calls`, `skills`, `replies`, `state` and `budget` hold
the graders, by what they read; `formatting` says what was observed in their messages; `code`
holds the registry (`GRADERS`) and `grade`.
"""

from .code import GRADERS, grade
from .formatting import calls_made, reply_excerpt
from .observation import Observation
from .skills import skill_key

__all__ = [
    "GRADERS",
    "Observation",
    "calls_made",
    "grade",
    "reply_excerpt",
    "skill_key",
]
