"""Test doubles for teams and for this package's own tests: the scripted `FakeClient` (`fake`) and
a loopback OpenAI-compatible mock server (`mock_server`).
"""

from .fake import (
    AsyncFakeClient,
    FakeClient,
    FakeClientExhausted,
    FakeReply,
    text_reply,
    tool_reply,
)
from .mock_server import (
    FAULT_KINDS,
    MockServer,
    Step,
)

__all__ = [
    "AsyncFakeClient",
    "FAULT_KINDS",
    "FakeClient",
    "FakeClientExhausted",
    "FakeReply",
    "MockServer",
    "Step",
    "text_reply",
    "tool_reply",
]
