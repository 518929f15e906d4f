"""Test doubles for teams and for this package's own tests: the scripted `FakeClient` (`fake`), a
scripted simulated customers (`ScriptedCustomer`, `BriefCustomer`, `customer`) and
a loopback OpenAI-compatible mock server (`mock_server`, imported from there: it also runs as
`python -m pytest_commerce_evals.testing.mock_server`).
"""

from .customer import BriefCustomer, ScriptedCustomer
from .fake import (
    AsyncFakeClient,
    FakeClient,
    FakeClientExhausted,
    FakeReply,
    text_reply,
    tool_reply,
)

__all__ = [
    "AsyncFakeClient",
    "BriefCustomer",
    "FakeClient",
    "FakeClientExhausted",
    "FakeReply",
    "ScriptedCustomer",
    "text_reply",
    "tool_reply",
]
