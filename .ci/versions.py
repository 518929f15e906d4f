"""The direct dependencies installed in this environment, against the ranges pyproject.toml allows.

`python .ci/versions.py EXTRA...` prints each direct dependency of the project and of the extras
named (self-references such as `pytest-commerce-evals[frameworks]` followed), with the version
installed and its range. With `--at-lower-bounds` it exits 1 unless every dependency with a lower
bound is installed at exactly that bound: the lowest environment of .ci/run proves the bounds.
"""

from __future__ import annotations

import importlib.metadata
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def direct(extras: list[str]) -> list[Requirement]:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    name, optional = project["name"], project.get("optional-dependencies", {})
    found: dict[str, Requirement] = {}
    todo, seen = [*project["dependencies"]], set()
    for extra in extras:
        if extra not in optional:
            sys.exit(f"versions: no extra {extra!r} in pyproject.toml (it has {sorted(optional)})")
        todo += optional[extra]
    while todo:
        req = Requirement(todo.pop(0))
        if req.name == name:  # an extra of the project itself
            for extra in sorted(req.extras - seen):
                seen.add(extra)
                todo += optional[extra]
            continue
        found.setdefault(req.name, req)
    return sorted(found.values(), key=lambda r: r.name)


def lower_bound(req: Requirement) -> Version | None:
    bounds = [Version(s.version) for s in req.specifier if s.operator in (">=", "==")]
    return max(bounds) if bounds else None


def main(argv: list[str]) -> int:
    strict = "--at-lower-bounds" in argv
    extras = [a for a in argv if not a.startswith("--")]
    wrong = []
    for req in direct(extras):
        try:
            installed = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            installed = None
        low = lower_bound(req)
        mark = ""
        if installed is None or installed not in req.specifier:
            mark = "  <- outside the range"
            wrong.append(req.name)
        elif strict and low is not None and Version(installed) != low:
            mark = f"  <- not the lower bound {low}"
            wrong.append(req.name)
        print(f"  {req.name}=={installed}  ({req.specifier or 'any'}){mark}")
    if wrong:
        print(f"versions: {', '.join(wrong)} not as pyproject.toml says", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
