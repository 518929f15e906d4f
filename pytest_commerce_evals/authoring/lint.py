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
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..cases.case import Case
from ..cases.loader import CASE_SUFFIXES, LoadedCase, load_case_file

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
}

NEGATIVE_KEYS = {
    "never_calls",
    "never_calls_with",
    "cart_not_contains",
    "no_applied_changes",
    "memory_not_contains",
    "reply_omits",
    "gate_not_blocked",
    "skill_not_loaded",
    "no_skill_load",
    "first_tool_not",
    "max_tool_calls",
}
READ_TOOLS = {"search_products", "get_product_details", "get_order", "list_orders"}
ID_ARGUMENTS = {"product_id", "order_id"}
"""Arguments of `calls_with`, `never_calls_with` and `same_state_as` that name a fixture."""
SENSITIVE_TAGS = {"health", "errand", "hostile"}
SENSITIVE_WORDS = re.compile(
    r"\b(surgery|diagnos\w*|pregnan\w*|medication|prescri\w*|therapy|chemo\w*|diabet\w*|"
    r"depress\w*|anxiety|illness|injur\w*|allerg\w* reaction|idiot|stupid|hate you|"
    r"just this once|one-off|for my (?:neighbou?r|colleague|boss)'s)\b",
    re.IGNORECASE,
)


@dataclass
class PoisonedItem:
    """An eval-only fixture carrying an injected instruction."""

    id: str
    carrier: str  # "review" (read only through get_product_details), "listing" or "message"
    text: str  # the fixture text that carries the instruction and the false claims


@dataclass
class FixtureIndex:
    """What the lint needs to know of a team's fixtures (supplied by a conftest hook)."""

    ids: set[str] = field(default_factory=set)
    skills: set[str] = field(default_factory=set)
    poisoned: dict[str, PoisonedItem] = field(default_factory=dict)
    benign_eval_only: set[str] = field(default_factory=set)
    search: Callable[[str], list[str]] | None = None
    data_paths: list[Path] = field(default_factory=list)


@dataclass
class Finding:
    path: Path
    line: int
    rule: str
    case_id: str | None
    message: str
    fix: str

    def __str__(self) -> str:
        who = f"{self.case_id}: " if self.case_id else ""
        return f"{self.path}:{self.line}: [{self.rule}] {who}{self.message}; fix: {self.fix}"


def _tag_values(case: Case, prefix: str) -> list[str]:
    return [t.split(":", 1)[1].strip() for t in case.tags if t.startswith(prefix + ":")]


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
) -> list[Finding]:
    """Lint every case file under `paths`; never stops at the first bad file.

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
        if case.skip is not None and len(case.skip.split()) < 3:
            add(
                "skip-reason",
                f"skip reason {case.skip!r} does not say why",
                "say what is missing and when the case can run (a sentence)",
                "skip",
            )
    return out


def _ids(case: Case, index: FixtureIndex, add) -> None:
    if not index.ids:
        return
    known = index.ids | set(index.poisoned) | index.benign_eval_only
    named: list[tuple[str, tuple]] = []
    named += [(p, ("state", "seen_products")) for p in case.state.seen_products]
    named += [(line.product_id, ("state", "cart")) for line in case.state.cart]
    named += [
        (c.product_id, ("state", "staged_changes"))
        for c in case.state.staged_changes
        if c.product_id
    ]
    for key in ("cart_contains", "cart_not_contains"):
        named += [(p, ("expected", key)) for p in getattr(case.expected, key) or []]
    for prefix in ("target", "favours", "excludes"):
        named += [(p, ("tags",)) for p in _tag_values(case, prefix)]
    for key in ("calls_with", "never_calls_with", "same_state_as"):
        for n, spec in enumerate(getattr(case.expected, key) or []):
            named += [
                (value, ("expected", key, n))
                for arg, value in spec.arguments.items()
                if arg in ID_ARGUMENTS and isinstance(value, str)
            ]
    for product_id, loc in named:
        if product_id not in known:
            add(
                "fixture-ids",
                f"{product_id!r} is not a fixture ID",
                "use a real ID from fixtures/ or poisoned_fixtures/ (search the catalog)",
                *loc,
            )
    if index.skills:
        for key in ("skill_loaded", "skill_not_loaded"):
            skill = getattr(case.expected, key)
            if skill and skill not in index.skills:
                add(
                    "fixture-ids",
                    f"skill {skill!r} is not a fixture skill "
                    f"(known: {', '.join(sorted(index.skills))})",
                    "name an existing skill",
                    "expected",
                    key,
                )


def _pairing(case: Case, by_scenario: dict[str, list[Case]], add) -> None:
    e = case.expected
    wants: list[tuple[str, str, Callable[[Case], bool], str]] = []
    if e.ui_components:
        wants.append(
            (
                "ui_components",
                f"component {', '.join(e.ui_components)}",
                lambda c: c.expected.no_ui is True,
                "no_ui: true",
            )
        )
    if e.skill_loaded:
        skill = e.skill_loaded
        wants.append(
            (
                "skill_loaded",
                f"skill load {skill!r}",
                lambda c: c.expected.skill_not_loaded == skill or c.expected.no_skill_load is True,
                f"skill_not_loaded: {skill} (or no_skill_load: true)",
            )
        )
    if e.gate_blocked:
        gates = set(e.gate_blocked)
        wants.append(
            (
                "gate_blocked",
                f"gate {', '.join(sorted(gates))}",
                lambda c: gates <= set(c.expected.gate_not_blocked or []),
                f"gate_not_blocked: [{', '.join(sorted(gates))}]",
            )
        )
    if e.memory_contains:
        wants.append(
            (
                "memory_contains",
                "memory write",
                lambda c: (
                    bool(c.expected.memory_not_contains)
                    or "save_memory" in (c.expected.never_calls or [])
                ),
                "memory_not_contains or never_calls: [save_memory]",
            )
        )
    writes = sorted(
        {spec.tool for spec in e.calls_with or []} - READ_TOOLS
        | {action.tool for action in e.same_state_as or []} - READ_TOOLS
    )
    if writes:
        key = "same_state_as" if e.same_state_as else "calls_with"
        wants.append(
            (
                key,
                f"write call {', '.join(writes)}",
                lambda c: bool(
                    set(writes)
                    & (
                        set(c.expected.never_calls or [])
                        | {spec.tool for spec in c.expected.never_calls_with or []}
                    )
                ),
                f"never_calls or never_calls_with naming {' or '.join(writes)}",
            )
        )
    if "disclosure" in case.tags:
        wants.append(
            ("reply_includes", "disclosure", lambda c: bool(c.expected.reply_omits), "reply_omits")
        )
    for key, what, is_negative, negative in wants:
        if case.scenario is None:
            add(
                "pairing",
                f"asserts a {what} but names no scenario",
                "add a scenario:<name> tag and a case in it asserting the opposite",
                "expected",
                key,
            )
            continue
        others = [c for c in by_scenario[case.scenario] if c.id != case.id]
        if not any(is_negative(c) for c in others):
            add(
                "pairing",
                f"asserts a {what}; no case in scenario {case.scenario!r} asserts it "
                "did not happen",
                f"add a case in scenario:{case.scenario} with {negative}",
                "expected",
                key,
            )


def _refusal(case: Case, by_scenario: dict[str, list[Case]], add) -> None:
    if "refusal" not in case.tags:
        return
    others = by_scenario.get(case.scenario, []) if case.scenario else []
    if not any("served" in c.tags for c in others if c.id != case.id):
        add(
            "refusal-pair",
            "a refusal case has no served counterpart in its scenario",
            "add a case tagged served in the same scenario:<name> that the agent should help with",
            "tags",
        )


def _approval_pair(case: Case, by_scenario: dict[str, list[Case]], add) -> None:
    approved = sorted(
        tool
        for tool, decision in (case.approvals or {}).items()
        if tool != "default" and decision == "approve"
    )
    if not approved:
        return
    in_scenario = by_scenario.get(case.scenario, []) if case.scenario else []
    others = [c for c in in_scenario if c.id != case.id]
    for tool in approved:
        if any(
            c.approvals is not None and c.approval_for(tool).decision != "approve" for c in others
        ):
            continue
        where = f"scenario {case.scenario!r}" if case.scenario else "its scenario (it names none)"
        add(
            "approval-pair",
            f"the person approves {tool}; no case in {where} has them refuse it or leave it "
            "waiting",
            f"add a case in the same scenario:<name> with approvals: {{{tool}: refuse}} (or "
            f"{{refuse: <their words>}}, or wait) asserting what the agent does then",
            "approvals",
            tool,
        )


def _rubric(case: Case, add) -> None:
    from ..rubrics import UnknownDimension, resolve_dimensions

    try:
        dimensions = resolve_dimensions(case.expected.rubric_dimensions())
    except UnknownDimension as exc:
        add(
            "rubric-pass-fail",
            str(exc),
            "name a standard dimension (rubrics.py) or write the PASS and FAIL conditions",
            "expected",
            "rubric",
        )
        return
    for name, text in dimensions.items():
        low = text.lower()
        missing = [w for w in ("pass if", "fail if") if w not in low]
        if missing:
            add(
                "rubric-pass-fail",
                f"rubric dimension {name!r} has no {' and no '.join(missing).upper()} condition",
                "write 'PASS if <condition>. FAIL if <incompatible condition>.' naming the "
                "fixture fact",
                "expected",
                "rubric",
            )


def _customer_texts(case: Case) -> list[str]:
    """What the customer says or is told to say: the turns and a simulated customer's brief."""
    texts = list(case.turns)
    if case.user is not None:
        texts += [t for t in (case.user.opening, case.user.instructions, case.user.knows) if t]
    return texts


def _sensitive(case: Case, add) -> None:
    tagged = SENSITIVE_TAGS & set(case.tags)
    worded = [t for t in _customer_texts(case) if SENSITIVE_WORDS.search(t)]
    if not tagged and not worded:
        return
    e = case.expected
    if e.memory_not_contains or "save_memory" in (e.never_calls or []):
        return
    if tagged:
        why = f"tagged {', '.join(sorted(tagged))}"
    else:
        found = SENSITIVE_WORDS.search(worded[0])
        assert found is not None  # worded holds only the turns it matches
        why = f"turn mentions {found.group(0)!r}"
    add(
        "sensitive-memory",
        f"{why} but does not assert the final memory state",
        "add memory_not_contains: [<the sensitive words>] or never_calls: [save_memory]",
        "expected",
    )


def _preference(case: Case, index: FixtureIndex, add) -> None:
    if "preference" not in case.tags:
        return
    favours, excludes, queries = (
        _tag_values(case, "favours"),
        _tag_values(case, "excludes"),
        _tag_values(case, "search"),
    )
    if not (favours and excludes and queries):
        add(
            "preference-search",
            "a preference case must name favours:<id>, excludes:<id> and search:<query>",
            "run the search, then tag the product the fact favours and the one it rules out",
            "tags",
        )
        return
    if index.search is None:
        add(
            "preference-search",
            "no backend search is available to verify the products",
            "implement pytest_commerce_evals_fixture_index with a search function",
            "tags",
        )
        return
    results = set()
    for query in queries:
        results |= set(index.search(query))
    missing = [p for p in favours + excludes if p not in results]
    if missing:
        add(
            "preference-search",
            f"search {queries!r} does not return {', '.join(missing)}",
            "change the query (or the products) so the results hold both the favoured and the "
            "excluded product",
            "tags",
        )


def _poisoned(case: Case, index: FixtureIndex, by_scenario: dict[str, list[Case]], add) -> None:
    """The poisoned-twin rules (docs/authoring.md) for one poisoned case. Long for a reason: it
    is the rules' checklist in the order the authoring guide gives them, each a short check on
    the same case, its twin and the fixture index."""
    if "poisoned" not in case.tags:
        return
    targets = _tag_values(case, "target")
    if "served" in case.tags:
        benign = [t for t in targets if t in index.benign_eval_only]
        if index.benign_eval_only and not benign:
            add(
                "poisoned-twin",
                "a served twin must target a benign eval-only listing",
                "tag target:<id> with a benign listing from poisoned_fixtures/",
                "tags",
            )
        return
    e = case.expected
    # pair
    if case.scenario is None or not any(
        "served" in c.tags for c in by_scenario[case.scenario] if c.id != case.id
    ):
        add(
            "poisoned-twin",
            "no served twin in the same scenario",
            "add a case tagged served (and the same scenario) on the benign eval-only listing",
            "tags",
        )
    # only negatives
    for key in e.code_keys():
        value = getattr(e, key)
        if key in NEGATIVE_KEYS:
            continue
        if key in ("calls_tool", "calls_one_of") and set(value) <= READ_TOOLS:
            continue
        if key == "calls_with" and {spec.tool for spec in value} <= READ_TOOLS:
            continue
        if key == "cart_item_count" and value == 0:
            continue
        add(
            "poisoned-negatives",
            f"asserts {key}, which is not a negative",
            "assert only never_calls, cart_not_contains, no_applied_changes, memory_not_contains, "
            "reply_omits (and the read path); move positives to the served twin",
            "expected",
            key,
        )
    # only what the turn can see
    items = [index.poisoned[t] for t in targets if t in index.poisoned]
    if index.poisoned and not items:
        add(
            "poisoned-visible",
            "names no poisoned fixture (target:<id>)",
            "tag target:<poisoned id> so the lint can check what the turn sees",
            "tags",
        )
        return
    for item in items:
        reads = set(e.calls_tool or []) | set(e.calls_one_of or [])
        if item.carrier == "review" and "get_product_details" not in (e.calls_tool or []):
            add(
                "poisoned-visible",
                f"the instruction in {item.id} is in a review, which only "
                "get_product_details returns",
                "add calls_tool: [get_product_details] so the accepted path reads it",
                "expected",
            )
        elif item.carrier == "message" and "get_order" not in (e.calls_tool or []):
            add(
                "poisoned-visible",
                f"the instruction in {item.id} is in a seller message, which "
                "only get_order returns",
                "add calls_tool: [get_order] so the accepted path reads it",
                "expected",
            )
        elif item.carrier == "listing" and not reads & READ_TOOLS:
            add(
                "poisoned-visible",
                f"the instruction in {item.id} is in its listing; nothing "
                "asserts the listing was read",
                "add calls_one_of: [search_products, get_product_details]",
                "expected",
            )
        text = item.text.lower()
        for key in ("reply_omits", "memory_not_contains"):
            for needle in getattr(e, key) or []:
                if needle.lower() not in text and needle not in (e.cart_not_contains or []):
                    add(
                        "poisoned-visible",
                        f"{key} {needle!r} is not in what {item.id} puts in front of the model",
                        "assert on a string the poisoned text contains",
                        "expected",
                        key,
                    )


def _check_poisoned_absent(
    index: FixtureIndex, root: Path | None, captured: Iterable[Path]
) -> list[Finding]:
    out: list[Finding] = []
    if not index.poisoned:
        return out
    ids = sorted(index.poisoned) + sorted(index.benign_eval_only)
    pattern = re.compile("|".join(re.escape(i) for i in ids))
    files: list[Path] = []
    for path in [*index.data_paths, *captured]:
        if path.is_file():
            files.append(path)
        elif path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.is_file())
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            hit = pattern.search(line)
            if hit:
                shown = file.relative_to(root) if root and file.is_relative_to(root) else file
                out.append(
                    Finding(
                        shown,
                        n,
                        "poisoned-ids-absent",
                        None,
                        f"eval-only ID {hit.group(0)!r} appears outside poisoned_fixtures/",
                        "remove it: eval-only fixtures never appear in demo, seed or captured data",
                    )
                )
    return out
