"""commerce-evals: regression evals for LLM commerce agents, as a pytest plugin."""
