"""commerce-evals: regression evals for LLM commerce agents, as a pytest plugin.

The top level exports what a `conftest.py` needs to wire an agent and a backend.
"""

from .agent import Agent, AgentSession, InfraError
from .backend import Backend, Snapshot
from .case import Case, Expected, State
from .errors import CommerceEvalsError, ConfigurationError
from .events import (
    CartLine,
    CartUpdate,
    Change,
    ChangeUpdate,
    Text,
    ToolCall,
    ToolResult,
    TurnEnd,
    Ui,
)
from .results import GraderResult, RubricVerdict, TrialResult

__all__ = [
    "Agent",
    "AgentSession",
    "AsyncFakeClient",
    "Backend",
    "CartLine",
    "CartUpdate",
    "Case",
    "Change",
    "ChangeUpdate",
    "CommerceEvalsError",
    "ConfigurationError",
    "Expected",
    "FakeClient",
    "GraderResult",
    "InfraError",
    "RubricVerdict",
    "Snapshot",
    "State",
    "Text",
    "ToolCall",
    "ToolResult",
    "TrialResult",
    "TurnEnd",
    "Ui",
    "text_reply",
    "tool_reply",
]


_LAZY = {"AsyncFakeClient", "FakeClient", "text_reply", "tool_reply"}


def __getattr__(name: str):
    # the scripted clients build openai's response types: imported only when asked for, so
    # loading the plugin does not pay for the openai SDK
    if name in _LAZY:
        from . import testing

        return getattr(testing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
