"""This module holds the graders of the skills the agent loaded (`skill_loaded`,
`skill_not_loaded`, `no_skill_load`) and how a skill's name is resolved (`skill_key`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..events import ToolCall
from ..results import GraderResult
from .formatting import _call, _fail, _ok
from .observation import Observation

__all__ = ["no_skill_load", "skill_key", "skill_loaded", "skill_not_loaded"]


def skill_key(name: str) -> str:
    """A skill name as backends resolve it: `Gift_Finding`, `gift finding` and `gift-finding.md`
    are all `gift-finding`."""
    return name.strip().lower().removesuffix(".md").strip().replace(" ", "-").replace("_", "-")


def _skill_arg(call: ToolCall) -> str:
    args = call.arguments
    return str(args.get("name") or args.get("skill") or args.get("skill_name") or "")


@dataclass
class SkillLoad:
    """One skill-loading call (`Observation.skill_tool`, by default `load_skill`) of the graded
    turn: the skill the backend resolved it to (its result's `name`, else the argument as
    backends resolve it) and its result's status."""

    call: ToolCall
    skill: str
    status: str | None  # None: the agent emitted no result for the call

    @property
    def loaded(self) -> bool:
        # only an `ok` result is a load: one that failed or was blocked is not, and neither is a
        # call whose result the agent never reported (nothing shows the skill was loaded)
        return self.status == "ok"

    def describe(self) -> str:
        shown = self.skill
        raw = _skill_arg(self.call)
        if raw and skill_key(raw) != self.skill:
            shown += f" (asked as {raw!r})"
        return shown + (f" [{self.status or 'no result'}]" if self.status != "ok" else "")


def _skill_loads(obs: Observation) -> list[SkillLoad]:
    results = obs.results_by_call()
    loads = []
    for call in obs.tool_calls():
        if call.name != obs.skill_tool:
            continue
        result = results.get(call.call_id)
        resolved = None
        if result is not None and result.status == "ok" and isinstance(result.result, dict):
            named = result.result.get("name") or result.result.get("skill")
            resolved = named if isinstance(named, str) and named.strip() else None
        skill = skill_key(resolved or _skill_arg(call))
        loads.append(SkillLoad(call, skill, result.status if result is not None else None))
    return loads


def skill_loaded(want: str, obs: Observation) -> GraderResult:
    loads = _skill_loads(obs)
    if not any(load.loaded and load.skill == skill_key(want) for load in loads):
        seen = [load.describe() for load in loads]
        return _fail(
            "skill_loaded",
            want,
            seen,
            f"skill_loaded: expected skill {want!r} to be loaded; skills loaded: "
            + (", ".join(seen) if seen else "none"),
        )
    return _ok("skill_loaded", want, want, f"skill_loaded: loaded {want!r}")


def skill_not_loaded(banned: str, obs: Observation) -> GraderResult:
    hits = [load for load in _skill_loads(obs) if load.loaded and load.skill == skill_key(banned)]
    if hits:
        return _fail(
            "skill_not_loaded",
            banned,
            banned,
            f"skill_not_loaded: expected skill {banned!r} not to be loaded; "
            f"it was ({_call(hits[0].call)})",
        )
    return _ok("skill_not_loaded", banned, None, f"skill_not_loaded: {banned!r} not loaded")


def no_skill_load(flag: bool, obs: Observation) -> GraderResult:
    loads = [load for load in _skill_loads(obs) if load.loaded]
    names = [load.describe() for load in loads]
    if flag and loads:
        return _fail(
            "no_skill_load",
            True,
            names,
            f"no_skill_load: expected no skill load; loaded: {', '.join(names)}",
        )
    if not flag and not loads:
        return _fail(
            "no_skill_load", False, [], "no_skill_load: false expects a skill load; none happened"
        )
    return _ok("no_skill_load", flag, names, "no_skill_load: as expected")
