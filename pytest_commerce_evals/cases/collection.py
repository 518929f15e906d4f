"""Which files are cases, and the pytest collector that turns one into items (one per trial, an
error item per bad entry): `is_case_file`, `CaseFile`. The hooks that use them are `_plugin`'s;
a folder outside `commerce_case_dirs` may collect its own files with them (an imported τ²-bench
folder's conftest does).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ..settings import run_config, settings
from .case import CaseFileWarning
from .loader import CASE_SUFFIXES, CaseProblem, load_case_file, load_set_config

__all__ = ["SEEN_IDS", "CaseFile", "is_case_file", "item_class"]

SEEN_IDS = pytest.StashKey[dict[str, str]]()


def is_case_file(config: pytest.Config, path: Path) -> bool:
    if path.suffix not in CASE_SUFFIXES or path.name.startswith(("_", ".")):
        return False
    rc = run_config(config)
    resolved = path.resolve()
    if resolved in rc.explicit:
        return True
    return any(resolved.is_relative_to(d) for d in rc.case_dirs)


def item_class(config: pytest.Config, kind: str) -> type[pytest.Item]:
    """The class of the items collection makes for `kind` ("trial", "invalid", "vacuity"), as
    the feature that runs them answers (`pytest_commerce_evals_item_class`)."""
    found = config.hook.pytest_commerce_evals_item_class(config=config, kind=kind)
    if found is None:
        raise pytest.UsageError(f"commerce-evals: no plugin makes {kind!r} items")
    return found


def _relative(path: Path, root: Path) -> Path:
    return path.relative_to(root) if path.is_relative_to(root) else path


class CaseFile(pytest.File):
    """A YAML or JSON file holding one case or a list of cases."""

    def collect(self):
        config = self.config
        path = Path(self.path)
        display = _relative(path, config.rootpath)
        loaded = load_case_file(path, display)
        set_name = _relative(path.parent, config.rootpath).as_posix()
        set_config, set_problem = load_set_config(path.parent, config.rootpath)
        yield from self._warnings(loaded.warnings, display)
        problems = list(loaded.problems)
        if set_problem is not None:
            problems.append(set_problem)
        yield from self._invalid(problems)
        threshold = set_config.threshold
        fields = {
            "set_name": set_name,
            "threshold": threshold if threshold is not None else run_config(config).threshold,
            "display": str(display),
        }
        for entry in loaded.cases:
            yield from self._entry_items(entry, display, fields)

    def _warnings(self, warnings: list[str], display: Path):
        """pytest's warnings summary shows a file's warnings (xdist forwards them); under `-W
        error` a warning makes this file, alone, an error item."""
        for message in warnings:
            try:
                self.warn(CaseFileWarning(message))
            except CaseFileWarning:
                text = message.split(":1: ", 1)[-1]
                problem = CaseProblem(display, 1, None, f"{text} (a warning made an error)")
                yield item_class(self.config, "invalid").from_parent(
                    self, name=f"{Path(self.path).name}::warning", problems=[problem]
                )

    def _invalid(self, problems: list[CaseProblem]):
        """One error item per bad entry (all its problems), or per file-level problem."""
        groups: dict[Any, list[CaseProblem]] = {}
        for n, problem in enumerate(problems):
            key = problem.entry if problem.entry is not None else f"file-{n}"
            groups.setdefault(key, []).append(problem)
        for key, group in groups.items():
            first = group[0]
            label = first.case_id or (
                f"entry-{key + 1}" if isinstance(key, int) else Path(first.path).name
            )
            yield item_class(self.config, "invalid").from_parent(
                self, name=f"{label}::invalid", problems=group
            )

    def _entry_items(self, entry: Any, display: Path, fields: dict[str, Any]):
        """A case's items: one per trial, or its vacuity check; an error item for an id that
        is already taken."""
        config = self.config
        case = entry.case
        seen = config.stash[SEEN_IDS]
        if case.id in seen:
            problem = CaseProblem(
                display,
                entry.line,
                "id",
                f"duplicate id {case.id!r}, first defined at {seen[case.id]}; "
                "ids must be unique across the suite",
                case.id,
            )
            yield item_class(config, "invalid").from_parent(
                self, name=f"{case.id}::duplicate", problems=[problem]
            )
            return
        seen[case.id] = f"{display}:{entry.line}"
        if settings(config).vacuity:
            yield item_class(config, "vacuity").from_parent(
                self, name=case.id, case=case, trial=1, trials=1, line=entry.line, **fields
            )
            return
        trials = run_config(config).trials
        make = item_class(config, "trial")
        for trial in range(1, trials + 1):
            yield make.from_parent(
                self,
                name=case.id if trials == 1 else f"{case.id}[trial-{trial}]",
                case=case,
                trial=trial,
                trials=trials,
                line=entry.line,
                **fields,
            )
