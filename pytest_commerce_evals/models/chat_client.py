"""Deprecated: the names of the hand-written client this package shipped before
`models.http_client`. Each name resolves to what replaced it, with a `DeprecationWarning`:

    ChatClient           -> models.http_client.HTTPChatClient
    Record               -> models.replies.Record
    ChatAPIError         -> openai.APIError            (what every model call raises now)
    ChatStatusError      -> openai.APIStatusError
    ChatConnectionError  -> openai.APIConnectionError
    ChatTimeoutError     -> openai.APITimeoutError
    MalformedResponse    -> openai.APIResponseValidationError
"""

from __future__ import annotations

import warnings
from importlib import import_module
from typing import Any

_REPLACED = {
    "ChatClient": ("pytest_commerce_evals.models.http_client", "HTTPChatClient"),
    "Record": ("pytest_commerce_evals.models.replies", "Record"),
    "ChatAPIError": ("openai", "APIError"),
    "ChatStatusError": ("openai", "APIStatusError"),
    "ChatConnectionError": ("openai", "APIConnectionError"),
    "ChatTimeoutError": ("openai", "APITimeoutError"),
    "MalformedResponse": ("openai", "APIResponseValidationError"),
}

__all__ = sorted(_REPLACED)


def __getattr__(name: str) -> Any:
    if name not in _REPLACED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, attribute = _REPLACED[name]
    warnings.warn(
        f"pytest_commerce_evals.chat_client.{name} is deprecated: use {module}.{attribute}",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(import_module(module), attribute)
