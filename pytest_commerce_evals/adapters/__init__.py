"""Adapters: the message shapes agents already produce, turned into the plugin's event stream,
and one integration per framework built on them.

The integrations are what a `conftest.py` returns from `pytest_commerce_evals_make_agent`: one
object made from the team's own agent (`PydanticAIAgent`, `AgentsSDKAgent`, `LangGraphAgent`,
`OpenAIChatAgent`), which keeps the conversation, applies the case's `approvals`, reads the
framework's usage, and runs on a scripted model for the vacuity check and gold replays
(`integration`).

Below them, `core` holds what every converter shares (the options, the tool-outcome classifier,
the UI convention, the `EventBuilder` they write through, and `framework_agent`, which makes an
agent from a function returning a framework's new messages). One module per message shape
converts it: OpenAI chat completions, the Responses API, pydantic-ai, the OpenAI Agents SDK,
LangChain/LangGraph. The frameworks themselves are optional (`[frameworks]`) and imported only
when an integration runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exports import lazy

if TYPE_CHECKING:
    from .integration import Integration
    from .langgraph_agent import LangGraphAgent, requires_approval
    from .openai_agents_agent import AgentsSDKAgent
    from .openai_chat_agent import OpenAIChatAgent
    from .pydantic_ai_agent import PydanticAIAgent

__getattr__, __dir__ = lazy(
    __name__,
    {
        "Integration": "integration",
        "LangGraphAgent": "langgraph_agent",
        "requires_approval": "langgraph_agent",
        "AgentsSDKAgent": "openai_agents_agent",
        "OpenAIChatAgent": "openai_chat_agent",
        "PydanticAIAgent": "pydantic_ai_agent",
    },
)

__all__ = [
    "AgentsSDKAgent",
    "Integration",
    "LangGraphAgent",
    "OpenAIChatAgent",
    "PydanticAIAgent",
    "requires_approval",
]
