"""The reply type of the plugin's chat client and of `FakeClient`: attribute access over JSON.

    reply = Record({"choices": [{"message": {"content": "hi", "tool_calls": None}}]})
    reply.choices[0].message.content          # "hi"
    reply.choices[0].finish_reason            # None: a field the server left out
    reply.model_dump()                        # the dict, as the server sent it

It reads like the openai SDK's `ChatCompletion` where an agent or a judge reads a reply
(`choices[0].message.content`, `.tool_calls[0].function.arguments`, `finish_reason`, `usage`),
without building pydantic models of every reply, and without importing the SDK.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["Record"]


class Record:
    """Attribute access over decoded JSON: `r.choices[0].message.content`. A field the server
    left out reads as None, as the SDK's optional fields do; `model_dump()` is the dict."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _wrap(self._data.get(name))

    def __getitem__(self, key: str) -> Any:
        return _wrap(self._data[key])

    def get(self, key: str, default: Any = None) -> Any:
        return _wrap(self._data.get(key, default))

    def model_dump(self, **_: Any) -> dict[str, Any]:
        """A deep copy of the JSON object (the SDK's keyword arguments are accepted, unused)."""
        return json.loads(json.dumps(self._data))

    to_dict = model_dump

    def model_dump_json(self, **_: Any) -> str:
        return json.dumps(self._data)

    to_json = model_dump_json

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and other._data == self._data

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Record({self._data!r:.200})"


def _wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return Record(value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value
