"""commerce-evals: regression evals for LLM commerce agents, as a pytest plugin.

The top level exports what a `conftest.py` needs to wire an agent and a backend: the
integrations (one per framework, `adapters`), the backend's `Snapshot`, the events, and the
scripted test doubles.
"""

from .adapters import (
    AgentsSDKAgent,
    LangGraphAgent,
    OpenAIChatAgent,
    PydanticAIAgent,
    requires_approval,
)
from .agent import Agent, AgentSession, InfraError
from .backend import Backend, Snapshot
from .cases.case import Case, CaseFileWarning, Expected, State
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
from .results import GraderResult, RubricVerdict, TrialRecord
from .testing.customer import BriefCustomer, ScriptedCustomer
from .testing.fake import AsyncFakeClient, FakeClient, text_reply, tool_reply

__all__ = [
    "Agent",
    "AgentSession",
    "AgentsSDKAgent",
    "AsyncFakeClient",
    "Backend",
    "BriefCustomer",
    "CartLine",
    "CartUpdate",
    "Case",
    "CaseFileWarning",
    "Change",
    "ChangeUpdate",
    "CommerceEvalsError",
    "ConfigurationError",
    "Expected",
    "FakeClient",
    "GraderResult",
    "InfraError",
    "LangGraphAgent",
    "OpenAIChatAgent",
    "PydanticAIAgent",
    "RubricVerdict",
    "ScriptedCustomer",
    "Snapshot",
    "State",
    "Text",
    "ToolCall",
    "ToolResult",
    "TrialRecord",
    "TurnEnd",
    "Ui",
    "requires_approval",
    "text_reply",
    "tool_reply",
]
