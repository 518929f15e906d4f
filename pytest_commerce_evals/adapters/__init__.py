"""Adapters: the message shapes agents already produce, turned into the plugin's event stream.

`core` holds what every converter shares (the options, the tool-outcome classifier, the UI
convention, the `EventBuilder` they write through, and `framework_agent`, which makes an agent
for the `make_agent` hook from a function returning a framework's new messages). One module per
message shape converts it: OpenAI chat completions, the Responses API, pydantic-ai, the OpenAI
Agents SDK, LangChain/LangGraph. The frameworks themselves are optional (`[frameworks]`).
"""
