"""Model access: endpoints (agent and judge) resolved from settings, the HTTP client with retries,
the embedded local model server and its chat format, and their hooks (`_plugin`).
"""
