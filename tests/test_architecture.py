"""The package's layout rules (docs/architecture.md): one folder per feature, a thin entry plugin,
no feature reaching into another's private modules or names, the contract at the bottom, the
features in one declared order, no circles, and the unreleased layout's paths gone."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

import pytest_commerce_evals
from pytest_commerce_evals import plugin

PACKAGE = Path(pytest_commerce_evals.__file__).parent
NAME = "pytest_commerce_evals"
CONTRACT = {
    "stats",
    "attacks",
    "compat",
    "costs",
    "__init__",
    "agent",
    "backend",
    "errors",
    "events",
    "exports",
    "hookspecs",
    "interpreter",
    "jsonsafe",
    "plugin",
    "prices",
    "rates",
    "results",
    "rubrics",
    "runs",
    "seams",
    "usage",
}
CONTRACT_PACKAGES = {"settings"}  # the settings table, its resolution and its docs
FEATURES = {
    "adapters",
    "authoring",
    "cases",
    "customer",
    "graders",
    "judge",
    "live",
    "models",
    "reference",
    "reports",
    "runner",
    "store",
    "tau2",
    "testing",
}


def _module_name(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        return ".".join(parts[:-1]), True
    return ".".join(parts), False


def _modules() -> dict[str, Path]:
    return {_module_name(p)[0]: p for p in PACKAGE.rglob("*.py")}


def import_edges() -> list[tuple[str, str, list[str]]]:
    """(importer, imported module, names imported from it) for every import inside the package,
    function-level imports included."""
    modules = _modules()
    edges = []
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target != NAME and not target.startswith(NAME + "."):
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    if sub in modules:
                        edges.append((name, sub, []))
                    else:
                        edges.append((name, target, [alias.name]))
            elif isinstance(node, ast.Import):
                edges += [(name, a.name, []) for a in node.names if a.name.startswith(NAME + ".")]
    return edges


def feature(module: str) -> str:
    """The folder a module lives in; the contract modules and packages count as one, "core"."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in CONTRACT_PACKAGES:
        return "core"
    return parts[1] if len(parts) > 2 or parts[1] in FEATURES else "core"


def _private(module: str, names: list[str]) -> bool:
    return any(p.startswith("_") for p in module.split(".")[1:]) or any(
        n.startswith("_") for n in names
    )


def private_cross_feature_imports() -> set[tuple[str, str]]:
    return {
        (src, dst)
        for src, dst, names in import_edges()
        if feature(src) != feature(dst) and _private(dst, names)
    }


def test_the_top_level_is_the_contract_plus_one_folder_per_feature():
    modules = {p.stem for p in PACKAGE.glob("*.py")}
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert modules == CONTRACT
    assert folders == FEATURES | CONTRACT_PACKAGES
    for folder in folders:
        init = PACKAGE / folder / "__init__.py"
        assert init.is_file(), folder
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{folder}/__init__.py says what the feature holds"


def test_the_entry_plugin_registers_every_features_hooks():
    hooks = {f"{NAME}.{p.parent.name}._plugin" for p in PACKAGE.glob("*/_plugin.py")}
    assert set(plugin.SUBPLUGINS) == hooks


def test_no_feature_imports_another_features_private_names():
    found = private_cross_feature_imports()
    assert found == set(), "import the other feature's public module instead"


def test_the_import_check_sees_private_imports():
    # the rule's own check: a private name, a private module, a function-level import
    assert _private(f"{NAME}.store._plugin", [])
    assert _private(f"{NAME}.runner.trial", ["_fold"])
    assert not _private(f"{NAME}.runner.trial", ["run_trial"])
    assert feature(f"{NAME}.judge.judge") == "judge"
    assert feature(f"{NAME}.judge") == "judge"
    assert feature(f"{NAME}.results") == "core"
    assert feature(f"{NAME}.settings._resolve") == "core"
    edges = import_edges()
    assert (f"{NAME}.runner.items", f"{NAME}.graders.observation", ["Observation"]) in edges  # lazy


@pytest.mark.parametrize("init", sorted(PACKAGE.rglob("__init__.py")), ids=lambda p: p.parent.name)
def test_a_package_says_what_it_exports_and_exports_it_eagerly(init):
    # a lazy module `__getattr__` makes every name a type checker's Any and hides a bad import
    # until first use; a package that re-exports names lists them in `__all__`
    tree = ast.parse(init.read_text(encoding="utf-8"))
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert "__getattr__" not in functions
    module = importlib.import_module(_module_name(init)[0])
    imported = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    if imported:
        assert isinstance(getattr(module, "__all__", None), list), init
    for name in getattr(module, "__all__", []):
        assert hasattr(module, name), f"{init}: {name} is in __all__ but not bound"


@pytest.mark.parametrize(
    ("package", "name", "home"),
    [
        ("graders", "grade", "graders.code"),
        ("judge", "Judge", "judge.judge"),
        ("live", "read_capture", "live.reading"),
        ("testing", "FakeClient", "testing.fake"),
        ("", "FakeClient", "testing.fake"),
    ],
)
def test_a_package_answers_the_names_its_docs_import(package, name, home):
    face = importlib.import_module(f"{NAME}.{package}" if package else NAME)
    assert getattr(face, name) is getattr(importlib.import_module(f"{NAME}.{home}"), name)


def test_the_module_paths_of_the_unreleased_layout_are_gone():
    # 0.1.0 was never released: the paths of its first layout are not kept
    for old in (
        "endpoint",
        "case",
        "chat_client",
        "models.chat_client",
        "live.traffic",
        "judge.rubrics",
        "store.records",
        "settings.fields",
    ):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"{NAME}.{old}")


# raised and caught inside the plugin to end an item, or the reference system's own tool errors
_NOT_THE_PLUGINS_ERRORS = {"TrialFailed", "VacuityFinding", "ToolError"}


def test_every_error_the_plugin_raises_on_purpose_has_one_base_class():
    import inspect
    import pkgutil

    from pytest_commerce_evals.errors import CommerceEvalsError

    checked = []
    for info in pkgutil.walk_packages(pytest_commerce_evals.__path__, f"{NAME}."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, Exception)
                and not issubclass(value, Warning)
                and value.__module__ == module.__name__
                and not name.startswith("_")
                and name not in _NOT_THE_PLUGINS_ERRORS
            ):
                checked.append(name)
                assert issubclass(value, CommerceEvalsError), f"{info.name}.{name}"
    assert {"ConfigurationError", "InfraError", "StoreError", "UnknownDimension"} <= set(checked)


def test_every_error_of_the_plugin_is_declared_in_errors_py():
    # a feature raises the plugin's errors, it declares none (docs/architecture.md, "Errors")
    import inspect
    import pkgutil

    from pytest_commerce_evals import errors

    declared_elsewhere = []
    for info in pkgutil.walk_packages(pytest_commerce_evals.__path__, f"{NAME}."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, errors.CommerceEvalsError)
                and value.__module__ == module.__name__
                and module is not errors
            ):
                declared_elsewhere.append(f"{info.name}.{name}")
    assert not declared_elsewhere
    assert len([n for n in errors.__all__ if n.endswith(("Error", "Unavailable"))]) >= 15


# -- the contract at the bottom ----------------------------------------------------------------

CONTRACT_AT_THE_BOTTOM = (
    {
        f"{NAME}.{m}"
        for m in (
            "agent",
            "backend",
            "compat",
            "errors",
            "events",
            "exports",
            "hookspecs",
            "interpreter",
            "jsonsafe",
            "rates",
            "results",
            "rubrics",
            "runs",
            "seams",
            "stats",
        )
    }
    | {f"{NAME}.cases.case", f"{NAME}.settings"}
    | {f"{NAME}.settings.{p.stem}" for p in (PACKAGE / "settings").glob("*.py")}
)
"""The contract modules a feature builds on: events, agent, backend, results, rates, errors, stats,
JSON cleaning, the interpreter settings raised for a stretch of a run, the packages' lazy exports, the standard rubric
dimensions, the hooks, the pytest bridge, the settings (with
the values they check) and the case model (which lives beside the case loader)."""


def contract_to_feature_imports(edges: list[tuple[str, str, list[str]]]) -> set[tuple[str, str]]:
    """(contract module, feature) for each import of a feature by a contract module."""
    return {
        (src, feature(dst))
        for src, dst, _ in edges
        if src in CONTRACT_AT_THE_BOTTOM
        and feature(dst) != "core"
        and dst != "cases.case"
        and dst != f"{NAME}.cases.case"
    }


def test_the_contract_imports_no_feature():
    found = contract_to_feature_imports(import_edges())
    assert not found, f"a contract module imports a feature: {sorted(found)}"


def test_the_contract_check_sees_a_back_edge():
    edges = [
        (f"{NAME}.results", f"{NAME}.store.run_store", ["clean_json"]),
        (f"{NAME}.results", f"{NAME}.jsonsafe", ["clean_json"]),
        (f"{NAME}.agent", f"{NAME}.cases.case", ["Case"]),
        (f"{NAME}.store.run_store", f"{NAME}.results", ["TrialRecord"]),
    ]
    assert contract_to_feature_imports(edges) == {(f"{NAME}.results", "store")}


# -- the order of the features -------------------------------------------------------------------

FEATURE_ORDER = [
    "models",
    "testing",
    "adapters",
    "graders",
    "store",
    "reports",
    "judge",
    "customer",
    "cases",
    "runner",
    "authoring",
    "live",
    "reference",
    "tau2",
]
"""The features, lowest first: a feature imports the contract and the features below it, never one
above it (docs/architecture.md draws the same order)."""


def _feature_of(module: str) -> str:
    return "core" if module in CONTRACT_AT_THE_BOTTOM else feature(module)


def back_edges(edges: list[tuple[str, str, list[str]]]) -> dict[tuple[str, str], str]:
    """(importer's feature, imported feature): the first import against `FEATURE_ORDER`."""
    rank = {name: n for n, name in enumerate(FEATURE_ORDER)}
    found: dict[tuple[str, str], str] = {}
    for src, dst, _ in edges:
        a, b = _feature_of(src), _feature_of(dst)
        if a == b or "core" in (a, b):
            continue
        if rank[b] > rank[a]:
            found.setdefault((a, b), f"{src} imports {dst}")
    return found


def test_the_features_import_each_other_in_one_declared_direction():
    assert set(FEATURE_ORDER) == FEATURES
    found = back_edges(import_edges())
    assert not found, f"imports against the declared order: {sorted(found.values())}"


def test_the_order_check_names_a_back_edge():
    edges = [
        (f"{NAME}.graders.code", f"{NAME}.judge.judge", ["Judge"]),
        (f"{NAME}.judge.judge", f"{NAME}.graders.code", ["grade"]),
        (f"{NAME}.graders.code", f"{NAME}.cases.case", ["Case"]),
    ]
    assert back_edges(edges) == {
        ("graders", "judge"): f"{NAME}.graders.code imports {NAME}.judge.judge"
    }


# -- no import circles ---------------------------------------------------------------------------


def import_cycles(edges: list[tuple[str, str, list[str]]]) -> list[list[str]]:
    """The modules that import each other, directly or round a longer circle (function-level
    imports included): each strongly connected group of two or more, sorted."""
    graph: dict[str, set[str]] = {}
    for src, dst, _ in edges:
        if src != dst:
            graph.setdefault(src, set()).add(dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_no_two_modules_import_each_other():
    modules = set(_modules())
    edges = [(s, d, n) for s, d, n in import_edges() if d in modules]
    assert import_cycles(edges) == [], "break the circle: move what both need to a third module"


def test_the_circle_check_sees_a_circle_of_three():
    edges = [
        (f"{NAME}.a", f"{NAME}.b", []),
        (f"{NAME}.b", f"{NAME}.c", ["f"]),
        (f"{NAME}.c", f"{NAME}.a", []),
        (f"{NAME}.c", f"{NAME}.d", []),
    ]
    assert import_cycles(edges) == [[f"{NAME}.a", f"{NAME}.b", f"{NAME}.c"]]


def test_the_store_configures_before_the_runner_by_a_stated_order():
    # the runner's configure reads the baseline the store's resolved (a regrade diffs against
    # it): the order is stated on the hook, not left to the order the plugins are registered in
    from pytest_commerce_evals.runner import _plugin as runner
    from pytest_commerce_evals.store import _plugin as store

    def options(hook):
        return getattr(hook, "pytest_impl", {})

    assert options(store.pytest_configure).get("tryfirst")
    assert not options(runner.pytest_configure).get("tryfirst")


# -- the hooks: the team's, and the seams between the features ---------------------------------


def _hook_names(module) -> set[str]:
    return {n for n in vars(module) if n.startswith("pytest_commerce_evals_")}


def test_the_teams_hooks_and_the_features_seams_are_declared_apart():
    from pytest_commerce_evals import hookspecs, seams
    from pytest_commerce_evals.store import seams as store_seams

    team, asked, store = _hook_names(hookspecs), _hook_names(seams), _hook_names(store_seams)
    assert team and asked and store
    assert not team & asked and not team & store and not asked & store
    assert {"pytest_commerce_evals_item_class", "pytest_commerce_evals_case_trials"} == asked
    assert {
        "pytest_commerce_evals_run_identity",
        "pytest_commerce_evals_copy_stores",
        "pytest_commerce_evals_write_reports",
    } == store
    # the plugin's own implementation of a seam is the only one: none is a team's hook
    guide = (PACKAGE.parent / "docs" / "plugging-in.md").read_text(encoding="utf-8")
    assert not [name for name in asked | store if name in guide]


def test_every_seam_is_registered_as_a_hook_spec(pytester):
    pytester.makepyfile("def test_x(): pass")
    config = pytester.parseconfigure()
    from pytest_commerce_evals import seams
    from pytest_commerce_evals.store import seams as store_seams

    for name in _hook_names(seams) | _hook_names(store_seams):
        caller = getattr(config.hook, name)
        assert caller.spec is not None, name
        assert caller.spec.namespace.__name__ in (seams.__name__, store_seams.__name__), name


def test_what_the_hooks_carry_is_typed_by_the_contract():
    import typing

    from pytest_commerce_evals import hookspecs
    from pytest_commerce_evals.runs import RunRecord
    from pytest_commerce_evals.store import seams as store_seams
    from pytest_commerce_evals.store.diff import FailingSetDiff
    from pytest_commerce_evals.store.history import History

    sections = typing.get_type_hints(
        hookspecs.pytest_commerce_evals_report_sections,
        {**vars(hookspecs), "RunRecord": RunRecord},
    )
    assert sections["run"] is RunRecord
    reports = typing.get_type_hints(
        store_seams.pytest_commerce_evals_write_reports,
        {**vars(store_seams), "RunRecord": RunRecord, "FailingSetDiff": FailingSetDiff,
         "History": History},
    )  # fmt: skip
    assert reports["run"] is RunRecord
    assert reports["diff"] == FailingSetDiff | None and reports["history"] == History | None
    for hook in (hookspecs, store_seams):
        for name in _hook_names(hook):
            hints = typing.get_type_hints(
                getattr(hook, name),
                {**vars(hook), "RunRecord": RunRecord, "FailingSetDiff": FailingSetDiff,
                 "History": History, "Backend": object, "Case": object, "TrialRecord": object,
                 "State": object, "Event": object},
            )  # fmt: skip
            assert typing.Any not in hints.values() or name in _UNTYPED_BY_DESIGN, name


# the agent, the customer and the fixture index are whatever the team's code returns (a
# protocol, duck-typed): documented on the hook, never narrowed to one class
_UNTYPED_BY_DESIGN = {
    "pytest_commerce_evals_make_agent",
    "pytest_commerce_evals_make_user",
    "pytest_commerce_evals_fixture_index",
    "pytest_commerce_evals_make_scripted_agent",
}


# -- one job per module ----------------------------------------------------------------------------

LONGEST = 600
"""The most lines a module holds (docs/architecture.md, "One job per module"); the settings table,
one declaration per setting, is the one module past it."""


def test_no_module_is_past_the_longest_but_the_settings_table():
    long = {
        name: n
        for name, path in _modules().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > LONGEST
    }
    assert set(long) <= {f"{NAME}.settings.table"}, long


def test_loading_the_plugin_leaves_what_only_some_runs_use_unimported():
    """Start-up: asyncio (async agents), openai (the SDK, for errors and `client.sdk`) and the
    reference agent are imported by the runs that use them, not by loading the plugin."""
    import subprocess
    import sys

    code = (
        "import sys, pytest_commerce_evals.plugin\n"
        "print(sorted(m for m in ('asyncio', 'openai', 'pytest_commerce_evals.reference.agent')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
