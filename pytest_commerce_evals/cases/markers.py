"""Case tags as pytest markers: which name a tag's marker takes (`-m` selects cases by tag)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from .case import DIFFICULTIES, PRIORITIES

TAG_MARKERS = pytest.StashKey[set[str]]()
RESERVED_MARKS = pytest.StashKey[frozenset[str]]()
INI_MARKERS = pytest.StashKey[list[str]]()
"""The `markers` lines of the project's own ini, read before any plugin adds its own."""
_DECORATORS = pytest.StashKey[dict[str, Any]]()


def mark(config: pytest.Config, name: str) -> Any:
    """`pytest.mark.<name>`, made once per name and session: thousands of case trials carry the
    same few (their priority, difficulty, tags), and each made anew costs pytest's lookup."""
    made = config.stash.setdefault(_DECORATORS, {})
    decorator = made.get(name)
    if decorator is None:
        decorator = made[name] = getattr(pytest.mark, name)
    return decorator


# marks that change how pytest runs an item: a tag must never become one of these
PYTEST_MARKS = frozenset(
    {
        "skip",
        "skipif",
        "xfail",
        "usefixtures",
        "parametrize",
        "filterwarnings",
        "tryfirst",
        "trylast",
        # the words of a -m expression: a marker by these names could never be selected
        "and",
        "or",
        "not",
    }
)
TAG_PREFIX = "tag_"


def _marker_name(tag: str) -> str | None:
    """The marker a tag becomes: word characters kept, the rest `_`, leading `_` dropped (pytest
    refuses marker names that start with one). None when nothing is left (`"🎁"`, `"--"`)."""
    name = re.sub(r"\W", "_", tag).lstrip("_")
    return name or None


def reserved_marks(config: pytest.Config) -> frozenset[str]:
    """Marker names a tag may not take: pytest's own marks, the plugin's priority and
    difficulty marks, and every mark another plugin registered. Markers the project's own ini
    declares are left to its tags (a tag `slow` is `-m slow`), unless one of the first two."""
    known = config.stash.get(RESERVED_MARKS, None)
    if known is None:

        def names(lines: Any) -> set[str]:
            if isinstance(lines, str):
                lines = lines.splitlines()
            return {ln.split(":", 1)[0].split("(", 1)[0].strip() for ln in lines or [] if ln}

        registered = names(config.getini("markers"))
        # markers the project's own ini declares are its tags' vocabulary: `slow` stays `-m slow`
        # (none known when the plugin came in through a conftest, after the ini was read)
        own = names(config.stash.get(INI_MARKERS, []))
        tags = config.stash[TAG_MARKERS]
        plugin_marks = {
            *PRIORITIES,
            "easy",
            "hard",
            "commerce_case",
            *(f"difficulty_{d}" for d in DIFFICULTIES),
        }
        known = frozenset(PYTEST_MARKS | plugin_marks | (registered - tags - own))
        config.stash[RESERVED_MARKS] = known
    return known


def tag_marker(config: pytest.Config, tag: str) -> str | None:
    """The marker for `tag`, namespaced as `tag_<name>` when the plain name is a mark pytest, the
    plugin or another plugin already gives a meaning to (so a tag `skip` or `critical` never
    changes how a case runs or which `-m` selects it)."""
    name = _marker_name(tag)
    if name is None:
        return None
    if name in reserved_marks(config):
        return TAG_PREFIX + name
    return name
