"""Run-wide state the runner keeps in the config stash, and what other features may read of it."""

from __future__ import annotations

import pytest

from .summary import Summary

SUMMARY = pytest.StashKey[Summary]()
NON_CASE_FAILURES = pytest.StashKey[list[str]]()
NOT_GRADED = pytest.StashKey[list[tuple[str, str]]]()
VACUITY = pytest.StashKey[list]()
TRIAL_RAN = pytest.StashKey[bool]()
AGENT_USED = pytest.StashKey[dict]()


def agent_used(config: pytest.Config) -> dict | None:
    """The agent endpoint a trial of this run asked the plugin for (`model`, `base_url`,
    `embedded`), as the trials reported it (from every xdist worker); None when no trial's agent
    asked for a plugin client, i.e. the agent brings its own."""
    return config.stash.get(AGENT_USED, None)
