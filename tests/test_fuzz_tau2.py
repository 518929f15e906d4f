"""The τ² command line never stops on bad data: property tests over `import` (a checkout's tasks)
and `import-results` (a results file), each fed the handmade files with any part replaced by any
JSON value. Whatever the data holds, the command returns 0, 1 (it skipped something, each skip a
line naming the task or simulation) or 2 (it cannot start, one sentence); no traceback. What
`import` writes always loads as valid cases, one per task it did not skip; what `import-results`
writes is a run record `load_record` reads, one trial per simulation it did not skip.

The default run spends a bounded budget (`COMMERCE_FUZZ_EXAMPLES` examples per property, 200
unless set, a quarter of it here: each example runs the command); docs/fuzzing.md says how to run
a long campaign.
"""

from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tau2_checkout import make_checkout

from pytest_commerce_evals.cases.loader import load_case_file
from pytest_commerce_evals.store.record_file import load_record
from pytest_commerce_evals.tau2.__main__ import main as tau2_main

DATA = Path(__file__).parent / "data" / "tau2"
TASKS = json.loads((DATA / "tasks.json").read_text(encoding="utf-8"))
RESULTS = json.loads((DATA / "results.json").read_text(encoding="utf-8"))
EXAMPLES = int(os.environ.get("COMMERCE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=max(EXAMPLES // 4, 10),
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)

TOOLS = ["get_order_details", "cancel_pending_order", "find_user_id_by_name_zip", "x", ""]
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**70), int("9" * 400)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["\ud800", "DB", "COMMUNICATE", "NL_ASSERTION", "assistant", "user", "a b",
                     "A_B", "²", "x" * 300, "Error: no", "###STOP###", *TOOLS]),
)  # fmt: skip
value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["name", "arguments", "requestor", "id", "a"]), inner,
                      max_size=4),
    max_leaves=12,
)  # fmt: skip


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON tree a value can be replaced at (the root excluded)."""
    out = []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else []
    )
    for key, child in items:
        out.append((*prefix, key))
        out.extend(_paths(child, (*prefix, key)))
    return out


@st.composite
def damaged(draw, original: Any, *, at_most: int = 3) -> Any:
    """`original` with up to `at_most` of its parts replaced by any JSON value, or removed."""
    data = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, at_most))):
        paths = _paths(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(value)
    return data


def _no_traceback(capsys) -> tuple[str, str]:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    return out, err


@FUZZ
@given(tasks=damaged(TASKS) | st.lists(value, max_size=3))
def test_any_tasks_file_imports_what_it_can_and_names_what_it_skipped(tmp_path, capsys, tasks):
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        root = make_checkout(Path(tmp) / "tau2-bench", files=("db.json", "policy.md"), tasks=tasks)
        out = Path(tmp) / "cases"
        rc = tau2_main(["import", str(root), "--out", str(out)])
        said, err = _no_traceback(capsys)
        assert rc in (0, 1, 2), rc
        if rc == 2:
            assert err.startswith("error:") and err.count("\n") == 1, err
            return
        skipped = err.count("skipped")
        written = sorted(out.glob("0*.yaml"))
        assert (rc == 1) == (skipped > 0), err
        if isinstance(tasks, list):
            assert len(written) + skipped == len(tasks), (said, err)
        for path in written:
            loaded = load_case_file(path)
            assert not loaded.problems and len(loaded.cases) == 1, (path, loaded.problems)
        assert len({load_case_file(p).cases[0].case.id for p in written}) == len(written)
        assert (out / "conftest.py").is_file() and (out / "_set.yaml").is_file()


@settings(FUZZ, max_examples=max(EXAMPLES // 8, 10))
@given(data=damaged(RESULTS))
def test_any_results_file_imports_the_simulations_it_can_read(tmp_path, capsys, data):
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        path = Path(tmp) / "results.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        out = Path(tmp) / "run.json"
        rc = tau2_main(
            ["import-results", str(path), "--db", str(DATA / "db.json"), "--out", str(out)]
        )
        _, err = _no_traceback(capsys)
        assert rc in (0, 1, 2), rc
        if rc == 2:
            assert err.startswith("error:") and not out.exists(), err
            return
        skipped = err.count("skipped:")
        assert (rc == 1) == (skipped > 0), err
        record = load_record(out)
        simulations = data.get("simulations") if isinstance(data, dict) else None
        if isinstance(simulations, list):
            assert len(record.trials) + skipped == len(simulations), err


@pytest.mark.parametrize("original", [TASKS, RESULTS], ids=["tasks", "results"])
def test_the_damage_reaches_every_part_of_the_files(original):
    # the properties replace any part: the handmade files hold each part the readers read
    keys = {str(p[-1]) for p in _paths(original)}
    assert {"id", "evaluation_criteria", "actions", "arguments", "reward_basis"} <= keys
    if original is RESULTS:
        assert {"simulations", "messages", "reward_info", "tool_calls"} <= keys
