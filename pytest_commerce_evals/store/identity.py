"""A run's identity as its record states it: the run id, timestamps, the agent's base URL with
nothing secret in it, and the git commit the run was made at.
"""

from __future__ import annotations

import hashlib
import json
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


_CLEAN: dict[str, tuple[re.Pattern[str], ...]] = {
    "github": (re.compile(r"[A-Za-z0-9-]+/[A-Za-z0-9._-]+"), re.compile(r"[0-9]+")),
    "gitlab": (re.compile(r"[0-9]+"),),
    "buildkite": (re.compile(r"[A-Za-z0-9-]+"),),
}
"""What each CI's variables hold when they are written into the run id as they are: GitHub's
owner (no `.`) / repository and numeric run id, GitLab's numeric pipeline id, Buildkite's UUID.
Read back, such an id gives the values it was made of, one way only."""

_READABLE = 60
"""The most characters of the readable part of an id made of values that are not clean."""


def _ci_id(ci: str, values: tuple[str, ...]) -> str:
    """`<ci>-<values joined by ->` (GitHub's `/` written as `.`) when each value is clean
    (`_CLEAN`); else that text with what a run id may not hold written as `.`, cut at 60
    characters, and `:` with 16 hex digits of the SHA-256 of the raw values: two CI runs whose
    values differ never share a run id (a clean id holds no `:`)."""
    readable = "-".join([ci, *(v.strip().replace("/", ".") for v in values)])
    patterns = _CLEAN[ci] if len(values) == len(_CLEAN[ci]) else _CLEAN[ci][-1:]
    if len(readable) <= 128 and all(p.fullmatch(v) for p, v in zip(patterns, values, strict=True)):
        return readable
    digest = hashlib.sha256(json.dumps([ci, *values]).encode("utf-8", "surrogatepass"))
    kept = re.sub(r"[^A-Za-z0-9._-]", ".", readable)[:_READABLE]
    return f"{kept}:{digest.hexdigest()[:16]}"


def ci_run_id(environ: Mapping[str, str]) -> tuple[str, str] | None:
    """The id every job of one CI run shares, and the variables it was read from; None outside
    a CI system this knows. A job re-run keeps it, so a shard run again replaces its own part:

    - GitHub Actions: `github-<owner>.<repo>-<GITHUB_RUN_ID>` (one id for every attempt);
    - GitLab CI: `gitlab-<CI_PIPELINE_ID>` (unique on its instance);
    - Buildkite: `buildkite-<BUILDKITE_BUILD_ID>` (a UUID).

    A value that is not what its CI writes (other characters, surrounding spaces, too long) is
    kept readable and followed by a hash of the raw values (`_ci_id`), so the id stays one of its
    own.
    """
    run = environ.get("GITHUB_RUN_ID", "")
    if run.strip() and environ.get("GITHUB_ACTIONS") == "true":
        repo = environ.get("GITHUB_REPOSITORY", "")
        found = _ci_id("github", (repo, run) if repo else (run,))
        return found, "GITHUB_REPOSITORY and GITHUB_RUN_ID"
    pipeline = environ.get("CI_PIPELINE_ID", "")
    if pipeline.strip() and environ.get("GITLAB_CI") == "true":
        return _ci_id("gitlab", (pipeline,)), "CI_PIPELINE_ID"
    build = environ.get("BUILDKITE_BUILD_ID", "")
    if build.strip() and environ.get("BUILDKITE") == "true":
        return _ci_id("buildkite", (build,)), "BUILDKITE_BUILD_ID"
    return None
