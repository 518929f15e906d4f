"""What a database URL is, and what of it may be shown: the settings check a store URL with these
before any store opens it; the stores (`pytest_commerce_evals.store.database`) connect with them."""

from __future__ import annotations

import importlib.util
import os
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

__all__ = [
    "INSTALL_HINT",
    "POSTGRES_SCHEMES",
    "SCHEMA_MAX_BYTES",
    "check_url",
    "driver_available",
    "is_database_url",
    "public_url",
    "scrub",
    "split_url",
]

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
INSTALL_HINT = "pip install 'pytest-commerce-evals[postgres]'"


def is_database_url(value: Any) -> bool:
    """A `postgresql://` (or `postgres://`) URL, not a path."""
    return isinstance(value, str) and value.strip().lower().startswith(POSTGRES_SCHEMES)


def driver_available() -> bool:
    return importlib.util.find_spec("psycopg") is not None


def split_url(url: str) -> tuple[str, str | None]:
    """(the URL the driver takes, the schema named by `?schema=`)."""
    parts = urlsplit(url.strip())
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == "schema"), None)
    rest = urlencode([(k, v) for k, v in query if k != "schema"])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), schema


SCHEMA_MAX_BYTES = 63
"""PostgreSQL's longest identifier (NAMEDATALEN - 1); a longer name is cut, silently, so two
long `?schema=` values could name one schema."""


def check_url(url: str) -> None:
    """Refuse a PostgreSQL URL the plugin would misread: a port that is no port, a `?schema=`
    that is empty, given twice or longer than PostgreSQL keeps, a password with an unencoded `@`.
    Raises ValueError saying what to write instead, never quoting the URL's parts (they may
    hold its password)."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # the reader's own message quotes the host it could not read
        raise ValueError(
            "the host cannot be read: brackets around a host must be balanced and hold an IPv6 "
            "address ([::1]); percent-encode a '[' or ']' in the user name or password"
        ) from None
    if parts.netloc.count("@") > 1:
        raise ValueError(
            "the part before the host holds more than one '@': percent-encode an '@' in the "
            "user name or password as %40"
        )
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        port = parts.netloc.rpartition("@")[2].rpartition(":")[2]
        raise ValueError(f"the port {port!r} is not a number 1..65535") from None
    if parts.port == 0:
        raise ValueError("the port 0 is not a number 1..65535")
    schemas = [v for k, v in parse_qsl(parts.query, keep_blank_values=True) if k == "schema"]
    if len(schemas) > 1:
        raise ValueError(f"?schema= is given {len(schemas)} times; give it once")
    if schemas and not schemas[0].strip():
        raise ValueError("?schema= is empty; name a schema, or leave it out for the default")
    if schemas and len(schemas[0].encode()) > SCHEMA_MAX_BYTES:
        raise ValueError(
            f"?schema= is {len(schemas[0].encode())} bytes; PostgreSQL keeps "
            f"{SCHEMA_MAX_BYTES} (a longer name is cut, and two could share a schema)"
        )


def public_url(url: str) -> str:
    """The URL as it may be shown and stored: user, host, port, database and schema; never a
    password or any other query parameter (`sslmode`, `options`, `passfile`...)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        if ":" in host:
            host = f"[{host}]"
        try:
            port: Any = parts.port
        except ValueError:  # shown as written, for the error that names it
            port = parts.netloc.rpartition("@")[2].rpartition(":")[2] or None
        if port:
            host = f"{host}:{port}"
        if parts.username:
            host = f"{parts.username}@{host}"
        schema = split_url(url)[1]
    except ValueError:  # not a URL the driver could take either: show only its scheme
        return url.split("://", 1)[0] + "://(unreadable URL)"
    query = urlencode({"schema": schema}) if schema else ""
    return urlunsplit((parts.scheme, host, parts.path, query, ""))


def _password(url: str) -> str | None:
    try:
        found = urlsplit(url.strip()).password
    except ValueError:
        return None
    return unquote(found) if found else None


def scrub(text: str, url: str | None = None) -> str:
    """`text` without the URL's password or `PGPASSWORD`'s value, and with any URL in it shown
    by `public_url`."""
    secrets = [s for s in (_password(url) if url else None, os.environ.get("PGPASSWORD")) if s]
    if url:
        text = text.replace(url.strip(), public_url(url))
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
