"""The JSON-schema fallback: a server of one's own that refuses a `json_schema` response
format is asked again at once in llama.cpp's form (`json_object` with the schema), and so for the
rest of the session. `_create` and `_async_create` make one model call that way (and record it
when the client does not record its own calls)."""

from __future__ import annotations

import time
from typing import Any

from ..usage import record_response
from .endpoint import HOSTED_BASE_URL, Endpoint, _server
from .retry import _status_message, api_errors

_NO_JSON_SCHEMA: set[str] = set()
"""Base URLs of servers that refused a `json_schema` response format this session."""


def _json_object(kwargs: dict[str, Any]) -> dict[str, Any]:
    """A `json_schema` response format in llama.cpp's form, `{"type": "json_object", "schema":
    ...}`, which its servers honour (the schema constrains the reply as before)."""
    fmt = kwargs.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return kwargs
    schema = (fmt.get("json_schema") or {}).get("schema")
    found = {"type": "json_object", **({"schema": schema} if schema is not None else {})}
    return {**kwargs, "response_format": found}


def _refuses_json_schema(exc: BaseException, kwargs: dict[str, Any]) -> bool:
    """The server refused the request's `json_schema` response format (llama-cpp-python's
    answers HTTP 500, `response_format.type: Input should be 'text' or 'json_object'`)."""
    fmt = kwargs.get("response_format")
    if not isinstance(fmt, dict) or fmt.get("type") != "json_schema":
        return False
    status = getattr(exc, "status_code", None)
    if not isinstance(status, int) or status not in (400, 422) and status < 500:
        return False
    text = f"{_status_message(exc) or ''} {exc}"
    return "response_format" in text and "json_schema" in text


def _own_server(endpoint: Endpoint | None) -> str | None:
    """The base URL of a server of the user's own (not hosted OpenAI), else None."""
    if endpoint is None:
        return None
    base = endpoint.base_url or HOSTED_BASE_URL
    return None if base == HOSTED_BASE_URL and not endpoint.is_local else base


def _as_remembered(endpoint: Endpoint | None, kwargs: dict[str, Any]) -> tuple[str | None, dict]:
    """The server of one's own the call goes to (None: hosted OpenAI), and the request in the
    form that server was found to take this session."""
    server = _own_server(endpoint)
    if server is not None and server in _NO_JSON_SCHEMA:
        kwargs = _json_object(kwargs)
    return server, kwargs


def _create(client: Any, endpoint: Endpoint | None, kwargs: dict[str, Any]) -> Any:
    """One call; a server of one's own that refuses a `json_schema` response format is asked
    again at once with it in llama.cpp's form, and so for the rest of the session. A client
    that does not record its own calls (`meters_usage`: the openai SDK's) is recorded here."""
    server, kwargs = _as_remembered(endpoint, kwargs)
    started = time.perf_counter()
    try:
        reply = client.chat.completions.create(**kwargs)
    except api_errors() as exc:
        if server is None or not _refuses_json_schema(exc, kwargs):
            raise
        _NO_JSON_SCHEMA.add(server)
        started = time.perf_counter()
        reply = client.chat.completions.create(**_json_object(kwargs))
    if not getattr(client, "meters_usage", False):
        record_response(reply, started, kwargs.get("model"), _server(endpoint))
    return reply


async def _async_create(client: Any, endpoint: Endpoint | None, kwargs: dict[str, Any]) -> Any:
    """`_create` for the async client."""
    server, kwargs = _as_remembered(endpoint, kwargs)
    started = time.perf_counter()
    try:
        reply = await client.chat.completions.create(**kwargs)
    except api_errors() as exc:
        if server is None or not _refuses_json_schema(exc, kwargs):
            raise
        _NO_JSON_SCHEMA.add(server)
        started = time.perf_counter()
        reply = await client.chat.completions.create(**_json_object(kwargs))
    if not getattr(client, "meters_usage", False):
        record_response(reply, started, kwargs.get("model"), _server(endpoint))
    return reply
