"""A hand-made stand-in for a τ²-bench checkout's orchestrator module: its opening message."""

DEFAULT_FIRST_AGENT_MESSAGE = AssistantMessage(  # noqa: F821 - parsed, never imported
    role="assistant", content="Hello! What can I do for you?", cost=0.0
)
