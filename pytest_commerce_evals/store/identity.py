"""A run's identity as its record states it: the run id, timestamps, the agent's base URL with
nothing secret in it, and the git commit the run was made at.
"""

from __future__ import annotations

import os
import secrets
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["git_state", "new_run_id", "public_base_url", "utc_now"]


def new_run_id(now: datetime | None = None) -> str:
    """Sortable by start time, unique across processes: `20250101-120301-3f9a2c`."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def public_base_url(url: str | None) -> str | None:
    """The base URL without credentials, query or fragment: nothing secret is ever stored."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        if parts.port:
            host = f"{host}:{parts.port}"
    except ValueError:  # not a URL (a bad port or IPv6 host): store nothing rather than guess
        return None
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def git_state(path: Path) -> tuple[str | None, bool | None]:
    """(commit, dirty) of the repository holding `path`; (None, None) without git or a repo.

    Dirty means tracked files differ from the commit; untracked files do not count.
    """

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(path), *args],
                capture_output=True,
                text=True,
                timeout=10,
                env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None, None
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit.strip(), (bool(status.strip()) if status is not None else None)
