"""How model calls are retried: the `RetryPolicy`, which errors are retried, and the
`InfraError` or `EndpointError` a call raises when retrying cannot help or has run out."""

from __future__ import annotations

import json
import logging
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
import tenacity

from ..agent import InfraError
from ..settings import settings
from .endpoint import Endpoint, EndpointError

__all__ = ["RetryPolicy", "api_errors", "is_retryable"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    """How model calls are retried: `attempts` in all, exponential wait with jitter between
    `wait_initial` and `wait_max` seconds (a server's Retry-After is honoured up to `wait_max`)."""

    attempts: int = 4
    wait_initial: float = 1.0
    wait_max: float = 20.0

    @classmethod
    def from_config(cls, config: pytest.Config | None) -> RetryPolicy:
        if config is None:
            return cls()
        found = settings(config)  # ini commerce_retry_attempts / _wait_max, checked at configure
        return cls(attempts=found.retry_attempts, wait_max=found.retry_wait_max)

    def _wait(self, state: tenacity.RetryCallState) -> float:
        exp = min(self.wait_max, self.wait_initial * 2 ** (state.attempt_number - 1))
        wait = random.uniform(0, exp)
        exc = state.outcome.exception() if state.outcome else None
        retry_after = _retry_after(exc)
        if retry_after is not None:
            wait = max(wait, retry_after)
        return min(wait, self.wait_max)


_RETRY_STATUS = {408, 409, 429}
# Misconfiguration: retrying cannot help, and it is never the agent's fault.
_CONFIG_STATUS = {401, 403, 404}


def api_errors() -> tuple[type[BaseException], ...]:
    """What a model call raises when the endpoint, not the caller, failed: the openai SDK's API
    errors (every client the plugin makes raises those) and a body the SDK could not decode."""
    errors: tuple[type[BaseException], ...] = (json.JSONDecodeError,)
    openai = sys.modules.get("openai")  # not loaded: none of its errors can have been raised
    if openai is not None:
        errors += (openai.APIError,)
    return errors


def is_retryable(exc: BaseException) -> bool:
    """Rate limits, 5xx, timeouts, connection errors and malformed bodies."""
    if isinstance(exc, json.JSONDecodeError):
        return True
    openai = sys.modules.get("openai")
    if openai is None:
        return False
    if isinstance(exc, (openai.APIConnectionError, openai.APIResponseValidationError)):
        return True  # APIConnectionError includes APITimeoutError
    if not isinstance(exc, openai.APIStatusError):
        return False
    status = exc.status_code
    return isinstance(status, int) and (status in _RETRY_STATUS or status >= 500)


def _retry_after(exc: BaseException | None) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        return float(headers.get("retry-after"))
    except (TypeError, ValueError):
        return None


def _what(endpoint: Endpoint | None, kwargs: dict[str, Any]) -> str:
    if endpoint is not None:
        return f"{endpoint.purpose} model {endpoint.describe()}"
    return f"model {kwargs.get('model', '?')!r}"


def _infra(exc: BaseException, what: str, attempts: int) -> InfraError:
    status = getattr(exc, "status_code", None)
    if status in _CONFIG_STATUS:  # an openai.APIStatusError, which has a message
        message = getattr(exc, "message", exc)
        return EndpointError(
            f"{what}: HTTP {status} ({type(exc).__name__}): {message}; "
            "check the model name, base URL and API key"
        )
    tries = "attempt" if attempts == 1 else "attempts"
    return InfraError(f"{what}: gave up after {attempts} {tries}: {_describe(exc)}")


def _describe(exc: BaseException) -> str:
    """`Type: message`, and what lies under it: the SDK's connection errors say only
    "Connection error." or "Request timed out.", their cause says which (refused, reset, ...)."""
    text = f"{type(exc).__name__}: {_status_message(exc) or exc}"
    cause = exc.__cause__
    if cause is not None and str(cause) and str(cause) not in text:
        text += f" ({type(cause).__name__}: {cause})"
    return text


def _status_message(exc: BaseException) -> str | None:
    """An error status as `Error code: <status> - <the server's message>`, whichever openai
    release raised it (openai 1.93 put the whole error object in its message, later releases
    only its message); None for other errors or a body with no message."""
    openai = sys.modules.get("openai")
    if openai is None or not isinstance(exc, openai.APIStatusError):
        return None
    body = exc.body
    error = body.get("error", body) if isinstance(body, dict) else None
    detail = error.get("message") if isinstance(error, dict) else None
    if not isinstance(detail, str) or not detail:
        return None
    return f"Error code: {exc.status_code} - {detail}"


def _retrying(policy: RetryPolicy, cls: type, sleep: Callable | None) -> Any:
    def before_sleep(state: tenacity.RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        log.warning(
            "model call failed (attempt %d of %d): %s: %s; retrying in %.1fs",
            state.attempt_number,
            policy.attempts,
            type(exc).__name__,
            exc,
            state.next_action.sleep if state.next_action else 0.0,
        )

    extra = {"sleep": sleep} if sleep is not None else {}
    return cls(
        stop=tenacity.stop_after_attempt(policy.attempts),
        wait=policy._wait,
        retry=tenacity.retry_if_exception(is_retryable),
        reraise=True,
        before_sleep=before_sleep,
        **extra,
    )
