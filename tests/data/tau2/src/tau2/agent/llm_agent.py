"""A hand-made stand-in for a τ²-bench checkout's agent module: its prompt constants, as the
importer reads them."""

AGENT_INSTRUCTION = """
Help the customer by the <policy> below, one message or one tool call at a time.
""".strip()

SYSTEM_PROMPT = """
<instructions>
{agent_instruction}
</instructions>
<policy>
{domain_policy}
</policy>
""".strip()
