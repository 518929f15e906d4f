"""The reference system under test: fixtures, an in-memory backend, guardrails and an agent on
the openai SDK. It runs the suite end to end and shows how to wire your own agent and backend."""

from .agent import ReferenceAgent
from .backend import ReferenceBackend, ToolError
from .catalog import FixtureError, load_catalog, load_poison_manifest
from .guardrails import GATES, Guardrails, memory_policy_violation
from .tools import CUSTOMER_TOOLS, OPERATOR_TOOLS, TOOLS

__all__ = [
    "CUSTOMER_TOOLS",
    "GATES",
    "OPERATOR_TOOLS",
    "TOOLS",
    "FixtureError",
    "Guardrails",
    "ReferenceAgent",
    "ReferenceBackend",
    "ToolError",
    "load_catalog",
    "load_poison_manifest",
    "memory_policy_violation",
]
