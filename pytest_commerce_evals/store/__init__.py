"""Run history: the run store (`run_store`: SQLite under `.commerce/`, or PostgreSQL), the run
record's JSON file (`record_file`; the record models are the contract's `runs`), per-case rates
and flaky strips (`history`), failing-set diffs (`diff`) with their cost regressions
(`cost_regressions`), model comparisons (`compare`), the seams the store asks of the features
above it (`seams`), and the hooks that record a run and print its diff (`_plugin`, `recorder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..exports import lazy

if TYPE_CHECKING:
    from ..errors import StoreError, StoreUnavailable
    from ..runs import SCHEMA_VERSION, CaseResult, RunKind, RunRecord, Selection, SetResult
    from .aggregate import case_results, judge_identity, set_results
    from .compare import ModelComparison, compare_runs
    from .diff import FailingSetDiff, diff_failing_sets
    from .history import History
    from .record_file import load_record, record_json, write_record
    from .run_store import DEFAULT_STORE_PATH, RunStore

__getattr__, __dir__ = lazy(
    __name__,
    {
        "StoreError": ".errors",
        "StoreUnavailable": ".errors",
        "SCHEMA_VERSION": ".runs",
        "CaseResult": ".runs",
        "RunKind": ".runs",
        "RunRecord": ".runs",
        "Selection": ".runs",
        "SetResult": ".runs",
        "case_results": "aggregate",
        "judge_identity": "aggregate",
        "set_results": "aggregate",
        "ModelComparison": "compare",
        "compare_runs": "compare",
        "FailingSetDiff": "diff",
        "diff_failing_sets": "diff",
        "History": "history",
        "load_record": "record_file",
        "record_json": "record_file",
        "write_record": "record_file",
        "DEFAULT_STORE_PATH": "run_store",
        "RunStore": "run_store",
    },
)

__all__ = [
    "DEFAULT_STORE_PATH",
    "SCHEMA_VERSION",
    "CaseResult",
    "FailingSetDiff",
    "History",
    "ModelComparison",
    "RunKind",
    "RunRecord",
    "RunStore",
    "Selection",
    "SetResult",
    "StoreError",
    "StoreUnavailable",
    "case_results",
    "compare_runs",
    "diff_failing_sets",
    "judge_identity",
    "load_record",
    "record_json",
    "set_results",
    "write_record",
]
