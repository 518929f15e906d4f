"""The plugin's own errors, under one base class a `conftest.py` or a CI script can catch.

- `ConfigurationError`: the conftest did not supply what the plugin needs (a glue error: the
  trial ends with the outcome `error`, never counted against the agent);
- `InfraError` (in `agent`): the infrastructure failed (endpoint down, retries exhausted), with
  `EndpointError` and `LocalModelUnavailable` under it: the trial is an `infra_error`;
- `StoreError` (in `store`): a run store or run record cannot be read or written.

`redact` and `shown_url` keep secrets out of what errors and headers show and records store.
"""

from __future__ import annotations

import re

__all__ = ["MASK", "CommerceEvalsError", "ConfigurationError", "redact", "shown_url"]


class CommerceEvalsError(Exception):
    """Base class of every error this plugin raises on purpose."""


class ConfigurationError(CommerceEvalsError):
    """The conftest did not supply what the plugin needs; says how to fix it.

    Raised inside a trial it is the glue's fault, not the agent's: the trial ends with the
    outcome `error`, which never counts in a set's rate or a failing-set diff."""


# -- secrets never shown or stored --------------------------------------------------------------

MASK = "***"
_SECRET_NAMES = (
    r"api[-_ ]?key|x-api-key|api[-_]?token|access[-_]?token|auth[-_]?token|refresh[-_]?token|"
    r"secret|client[-_]?secret|password|passwd|signature|credentials?"
)
_SECRET_PATTERNS = [
    # `Authorization: Bearer <token>`, `Bearer <token>`, `Basic <base64>`
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{6,}"), rf"\1\2{MASK}"),
    # `api_key=...`, `"api-key": "..."`, `password: ...`, `?key=...`
    (
        re.compile(rf"""(?ix)\b({_SECRET_NAMES})(["']?\s*[:=]\s*["']?)([^\s"'&,;}}<>]{{4,}})"""),
        rf"\1\2{MASK}",
    ),
    # user-info in any URL: scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@]*):[^\s/@]+@"), rf"\1:{MASK}@"),
    # key-shaped strings: sk-..., and long tokens mixing upper case, lower case and digits
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{12,}"), rf"\1-{MASK}"),
    (
        re.compile(
            r"\b(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[0-9])"
            r"[A-Za-z0-9_-]{32,}\b"
        ),
        MASK,
    ),
]


def redact(text: str) -> str:
    """`text` with what looks like a secret masked (`***`): bearer and basic credentials, the
    values of key-, token-, secret- and password-named fields, passwords in URLs, `sk-` keys and
    long tokens mixing upper case, lower case and digits. For error bodies and messages before
    they are shown or stored; a key echoed by a server never reaches a report."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def shown_url(url: str | None) -> str | None:
    """A URL as it may be shown: the password of its user-info and the values of its query
    parameters masked (`http://u:***@host/v1?api-key=***`); None for None."""
    if not url:
        return url
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.split(':', 1)[0]}:{MASK}@{host}" if ":" in user else netloc
        query = parts.query
        if query:
            query = urlencode([(k, MASK) for k, _ in parse_qsl(query, keep_blank_values=True)])
            query = query.replace("%2A%2A%2A", MASK)
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:  # not a URL: only its scheme is shown
        return url.split("://", 1)[0] + "://(unreadable URL)"
