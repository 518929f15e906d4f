"""commerce-evals: regression evals for LLM commerce agents, as a pytest plugin.

The top level exports what a `conftest.py` needs to wire an agent and a backend: the
integrations (one per framework, `adapters`), the backend's `Snapshot`, the events, and the
scripted test doubles.

The names are imported when first used (`__getattr__`): loading the plugin, or any module of the
package, does not import every integration and test double with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .exports import lazy

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy(
    __name__,
    {
        "AgentsSDKAgent": "adapters",
        "LangGraphAgent": "adapters",
        "OpenAIChatAgent": "adapters",
        "PydanticAIAgent": "adapters",
        "requires_approval": "adapters",
        "Agent": "agent",
        "AgentSession": "agent",
        "InfraError": "agent",
        "Backend": "backend",
        "Snapshot": "backend",
        "Case": "cases.case",
        "CaseFileWarning": "cases.case",
        "Expected": "cases.case",
        "State": "cases.case",
        "CommerceEvalsError": "errors",
        "ConfigurationError": "errors",
        "CartLine": "events",
        "CartUpdate": "events",
        "Change": "events",
        "ChangeUpdate": "events",
        "Text": "events",
        "ToolCall": "events",
        "ToolResult": "events",
        "TurnEnd": "events",
        "Ui": "events",
        "GraderResult": "results",
        "RubricVerdict": "results",
        "TrialRecord": "results",
        "BriefCustomer": "testing.customer",
        "ScriptedCustomer": "testing.customer",
        "AsyncFakeClient": "testing.fake",
        "FakeClient": "testing.fake",
        "text_reply": "testing.fake",
        "tool_reply": "testing.fake",
    },
)


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
