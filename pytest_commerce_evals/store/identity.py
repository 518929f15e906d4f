"""A run's identity as its record states it: the run id, timestamps, the agent's base URL with
nothing secret in it, and the git commit the run was made at.
"""

from __future__ import annotations

import os
import re
import secrets
import subprocess
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

__all__ = ["GitStateLater", "ci_run_id", "git_state", "new_run_id", "public_base_url", "utc_now"]


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


class GitStateLater:
    """`git_state(path)` asked on a thread from now, so a run's start does not wait for two git
    processes (a few milliseconds; tens in a large repository); `result()` waits for the
    answer."""

    def __init__(self, path: Path) -> None:
        self._found: tuple[str | None, bool | None] = (None, None)
        self._thread = threading.Thread(
            target=self._ask, args=(path,), name="commerce-git-state", daemon=True
        )
        self._thread.start()

    def _ask(self, path: Path) -> None:
        self._found = git_state(path)

    def result(self) -> tuple[str | None, bool | None]:
        self._thread.join()
        return self._found


def _part(text: str) -> str:
    """A CI variable's value as part of a run id: what a run id may not hold becomes `.`."""
    return re.sub(r"[^A-Za-z0-9._-]", ".", text.strip())[:60]


def ci_run_id(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The id every job of one CI run shares, and the variables it was read from; None outside
    a CI system this knows. A job re-run keeps it, so a shard run again replaces its own part:

    - GitHub Actions: `github-<owner>.<repo>-<GITHUB_RUN_ID>` (one id for every attempt);
    - GitLab CI: `gitlab-<CI_PIPELINE_ID>` (unique on its instance);
    - Buildkite: `buildkite-<BUILDKITE_BUILD_ID>` (a UUID).
    """
    run = environ.get("GITHUB_RUN_ID", "").strip()
    if run and environ.get("GITHUB_ACTIONS") == "true":
        repo = _part(environ.get("GITHUB_REPOSITORY", "").replace("/", "."))
        name = f"github-{repo}-{_part(run)}" if repo else f"github-{_part(run)}"
        return name, "GITHUB_REPOSITORY and GITHUB_RUN_ID"
    pipeline = environ.get("CI_PIPELINE_ID", "").strip()
    if pipeline and environ.get("GITLAB_CI") == "true":
        return f"gitlab-{_part(pipeline)}", "CI_PIPELINE_ID"
    build = environ.get("BUILDKITE_BUILD_ID", "").strip()
    if build and environ.get("BUILDKITE") == "true":
        return f"buildkite-{_part(build)}", "BUILDKITE_BUILD_ID"
    return None
