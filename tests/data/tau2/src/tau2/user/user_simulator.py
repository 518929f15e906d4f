"""A hand-made stand-in for a τ²-bench checkout's user simulator module: its prompt constant."""

SYSTEM_PROMPT = """
{global_user_sim_guidelines_with_persona}

<scenario>
{instructions}
</scenario>
""".strip()
