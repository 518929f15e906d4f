"""Run-wide state the runner keeps in the config stash, and what other features may read of it."""

from __future__ import annotations

import pytest

from .summary import Summary

SUMMARY = pytest.StashKey[Summary]()
NON_CASE_FAILURES = pytest.StashKey[list[str]]()
NOT_GRADED = pytest.StashKey[list[tuple[str, str]]]()
TRIAL_RAN = pytest.StashKey[bool]()
RUN_PROBLEMS = pytest.StashKey[list[str]]()
"""Why a merged run cannot pass beyond its sets: a shard missing, unfinished or failed."""
