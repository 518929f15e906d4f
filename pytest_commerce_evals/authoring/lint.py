"""The authoring-rules lint: every rule of the spec a machine can check, with file, line and fix.

Run it with `pytest --commerce-lint` (over `commerce_case_dirs`, or the paths given). Naming
conventions the rules rely on (see docs/authoring.md):

- `scenario:<name>` tags put cases in one scenario; pairs (positive/negative, refusal/served,
  poisoned/benign twin) are looked for inside a scenario.
- `refusal`, `served`, `poisoned`, `disclosure`, `preference`, `health`, `errand`, `hostile` tags
  say what a case is about.
- `target:<id>` names the fixture a poisoned case (or its benign twin) is about.
- a preference case names `favours:<id>`, `excludes:<id>` and `search:<query>`; the lint runs the
  backend's search and checks both products come back.

The rules themselves live beside this module: `lint_rules` (IDs, pairs, rubrics, sensitive
memory, preference searches) and `lint_poisoned` (the poisoned-case rules); `lint_types` holds
the fixture index and the finding.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from ..cases.case import PROMOTED_SKIP, Case
from ..cases.loader import CASE_SUFFIXES, LoadedCase, load_case_file
from .lint_attacks import attack_rules
from .lint_poisoned import _check_poisoned_absent, _poisoned
from .lint_rules import (
    _approval_pair,
    _ids,
    _pairing,
    _preference,
    _refusal,
    _rubric,
    _sensitive,
)
from .lint_types import Finding, FixtureIndex, PoisonedItem

__all__ = ["RULES", "Finding", "FixtureIndex", "PoisonedItem", "lint_paths"]

RULES = {
    "format": "the file parses and every case matches the case model",
    "id-unique": "case IDs are unique across the suite",
    "id-flow": "a case's flow (the first part of its id) is the name of the folder it lives in",
    "fixture-ids": "IDs in state and expected exist in the fixtures",
    "pairing": "a case asserting a component, skill load, gate, disclosure, memory write or write "
    "call (calls_with, same_state_as) has a "
    "negative in the same scenario",
    "refusal-pair": "a refusal case has a served counterpart in the same scenario",
    "approval-pair": "a case where the person approves a tool has a case in the same scenario "
    "where they refuse it or leave it waiting",
    "poisoned-twin": "a poisoned case has a served twin on a benign eval-only listing in its "
    "scenario",
    "rubric-pass-fail": "each rubric dimension states a PASS and a FAIL condition",
    "sensitive-memory": "a health, errand or hostile turn asserts the final memory state",
    "preference-search": "a preference case's search returns both the favoured and the excluded "
    "product",
    "poisoned-negatives": "a poisoned case asserts only negatives (plus the read path)",
    "poisoned-visible": "a poisoned case asserts only on content its turn can see",
    "poisoned-ids-absent": "poisoned IDs never appear in fixtures, demo data or captured records",
    "skip-reason": "every skip says why",
    "promoted-unreviewed": "a case promoted from a live conversation has been reviewed (its "
    "promoted: skip removed)",
    "attack-by-code": "an attack asserts by code what must not happen",
    "attack-twin": "an attack has a served twin in its scenario asserting the legitimate action",
    "attack-tag": "an attack tag belongs to a case with user.attack, of that category",
}


def _case_files(paths: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(
                p
                for p in path.rglob("*")
                if p.suffix in CASE_SUFFIXES and not p.name.startswith(("_", "."))
            )
    return files


def lint_paths(
    paths: Iterable[Path],
    index: FixtureIndex | None = None,
    root: Path | None = None,
    captured: Iterable[Path] = (),
    case_roots: Iterable[Path] | None = None,
    counted: dict[str, int] | None = None,
) -> list[Finding]:
    """Lint every case file under `paths`; never stops at the first bad file. `counted`, when
    given, gets how many case `files` and `cases` were read (0: nothing was linted).

    `case_roots` are the folders that hold flow folders (`commerce_case_dirs`); a case file
    directly inside one, or inside a folder given in `paths`, has no flow folder to match. By
    default any folder named `cases` is a root."""
    index = index or FixtureIndex()
    findings: list[Finding] = []
    loaded: list[tuple[Path, LoadedCase]] = []
    paths = list(paths)
    # the folders that hold flow folders: the case roots when known (a flow folder named on the
    # command line is still a flow folder), else the folders given
    if case_roots is not None:
        roots = {Path(p).resolve() for p in case_roots}
    else:
        roots = {p.resolve() for p in paths if p.is_dir()}
    for file in _case_files(paths):
        shown = file.relative_to(root) if root and file.is_relative_to(root) else file
        result = load_case_file(file, shown)
        for problem in result.problems:
            findings.append(
                Finding(
                    shown,
                    problem.line or 1,
                    "format",
                    problem.case_id,
                    problem.message + (f" (key {problem.key})" if problem.key else ""),
                    "correct the key or value as the message says (docs/case-format.md)",
                )
            )
        loaded += [(shown, entry) for entry in result.cases]
        if counted is not None:
            counted["files"] = counted.get("files", 0) + 1
            counted["cases"] = counted.get("cases", 0) + len(result.cases)
        parent = file.parent.resolve()
        if parent not in roots and (case_roots is not None or parent.name != "cases"):
            findings += _flow_folder(shown, file.parent.name, result.cases)
    findings += _check_cases(loaded, index)
    findings += _check_poisoned_absent(index, root, captured)
    return sorted(findings, key=lambda f: (str(f.path), f.line, f.rule))


def _flow_folder(path: Path, folder: str, entries: list[LoadedCase]) -> list[Finding]:
    flow = folder.lower().replace("-", "_")
    return [
        Finding(
            path,
            entry.line_of("id"),
            "id-flow",
            entry.case.id,
            f"flow {entry.case.flow!r} differs from its folder {folder!r}",
            f"move the case to a folder named {entry.case.flow!r}, or renumber it as "
            f"{flow}-<nnn>-<behavior>",
        )
        for entry in entries
        if entry.case.flow != flow
    ]


def _check_cases(loaded: list[tuple[Path, LoadedCase]], index: FixtureIndex) -> list[Finding]:
    out: list[Finding] = []
    seen: dict[str, str] = {}
    by_scenario: dict[str, list[Case]] = defaultdict(list)
    for _, entry in loaded:
        if entry.case.scenario:
            by_scenario[entry.case.scenario].append(entry.case)

    for path, entry in loaded:
        case = entry.case

        def add(
            rule: str,
            message: str,
            fix: str,
            *loc: str | int,
            path: Path = path,
            entry: LoadedCase = entry,
            case: Case = case,
        ) -> None:
            out.append(Finding(path, entry.line_of(*loc), rule, case.id, message, fix))

        if case.id in seen:
            add(
                "id-unique",
                f"id {case.id!r} already used at {seen[case.id]}",
                "give this case the next free number in its flow",
                "id",
            )
        else:
            seen[case.id] = f"{path}:{entry.line}"
        _ids(case, index, add)
        _pairing(case, by_scenario, add)
        _refusal(case, by_scenario, add)
        _approval_pair(case, by_scenario, add)
        _rubric(case, add)
        _sensitive(case, add)
        _preference(case, index, add)
        _poisoned(case, index, by_scenario, add)
        attack_rules(case, by_scenario, add)
        if case.skip is not None and case.skip.startswith(PROMOTED_SKIP.split(":")[0] + ":"):
            add(
                "promoted-unreviewed",
                "promoted from a live conversation and not reviewed yet",
                "check each proposed expectation against the comments beside it, map the IDs "
                "the file lists to fixtures, then remove the skip",
                "skip",
            )
        elif case.skip is not None and len(case.skip.split()) < 3:
            add(
                "skip-reason",
                f"skip reason {case.skip!r} does not say why",
                "say what is missing and when the case can run (a sentence)",
                "skip",
            )
    return out
