"""The adopter projects in examples/: a shop agent on each framework, wired by a conftest.py of at
most 15 non-blank lines, run on the same cases (search, cart, memory, compare, an approval-gated
cancellation approved, refused and left waiting, conversations with a simulated customer graded
by calls_with, same_state_as and communicates, a budget) with their scripted models."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
PROJECTS = {
    "pydantic_ai_shop": "pydantic_ai",
    "agents_sdk_shop": "agents",
    "langgraph_shop": "langgraph",
    "openai_chat_shop": "openai",
}
GLUE_LIMIT = 15


def glue_lines(conftest: Path) -> int:
    """What a team writes to wire its agent: the conftest's non-blank lines."""
    return sum(1 for line in conftest.read_text().splitlines() if line.strip())


def test_the_glue_count_counts_non_blank_lines(tmp_path):
    conftest = tmp_path / "conftest.py"
    conftest.write_text("import a\n\n\ndef f():\n    return 1\n   \n")
    assert glue_lines(conftest) == 3


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_each_examples_glue_is_at_most_fifteen_lines(project):
    count = glue_lines(EXAMPLES / project / "conftest.py")
    assert count <= GLUE_LIMIT, f"{project}/conftest.py has {count} lines of glue"


def _needs(project: str) -> None:
    module = PROJECTS[project]
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is in the [frameworks] extra")
    if module == "agents":
        import agents

        if not hasattr(agents.items, "ToolApprovalItem"):
            pytest.skip("this openai-agents release has no tool approvals (needs_approval)")


def _copy(tmp_path: Path, project: str) -> Path:
    """The examples folder, cases and all (the symlinks copied as files), away from the repo."""
    root = tmp_path / "examples"
    shutil.copytree(EXAMPLES, root, symlinks=False, ignore=shutil.ignore_patterns(".commerce"))
    return root / project


def _pytest(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COMMERCE_"))}
    env["COMMERCE_CACHE_DIR"] = "off"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=where,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_each_example_passes_every_case_and_reports_what_it_spent(project, tmp_path):
    _needs(project)
    where = _copy(tmp_path, project)
    done = _pytest(where, "--commerce-json=run.json")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    record = json.loads((where / "run.json").read_text())
    outcomes = {t["case_id"]: t["outcome"] for t in record["trials"]}
    assert len(outcomes) == 11 and set(outcomes.values()) == {"pass"}, outcomes
    # the framework's usage reached the trials: every trial's agent calls are counted, priced
    budgeted = next(t for t in record["trials"] if t["case_id"] == "cart-001-add-tote")
    assert budgeted["calls"] and all(c["input_tokens"] == 120 for c in budgeted["calls"])
    assert all(c["model"] == "shop-model" for c in budgeted["calls"])
    assert "not reported" not in done.stdout.split("cost (model calls")[1].split("\n")[1]


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_each_example_runs_the_vacuity_check_without_a_second_hook(project, tmp_path):
    _needs(project)
    where = _copy(tmp_path, project)
    done = _pytest(where, "--commerce-vacuity")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "glue" not in done.stdout and "vacuous" not in done.stdout
    assert "fails   10 of 11 cases" in done.stdout or "fails   11 of 11 cases" in done.stdout


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_a_wrong_gold_action_fails_the_replay_through_the_agents_own_tools(project, tmp_path):
    _needs(project)
    where = _copy(tmp_path, project)
    cases = where / "cases" / "shop.yaml"
    text = cases.read_text()
    # gold that cancels an order the store does not have: the tool's own check refuses it
    text = text.replace(
        "{tool: cancel_order, arguments: {order_id: W1, reason: no longer needed}}",
        "{tool: cancel_order, arguments: {order_id: W7, reason: no longer needed}}",
    )
    cases.write_text(text)
    done = _pytest(where, "--commerce-json=run.json", "-k", "conversations-001")
    assert done.returncode == 1, done.stdout[-3000:]
    [trial] = json.loads((where / "run.json").read_text())["trials"]
    assert trial["outcome"] == "fail"
    [failure] = [f for f in trial["failures"] if f.startswith("same_state_as")]
    assert "action 1 (cancel_order): error" in failure, failure
