"""Run history: the run store (`run_store`: SQLite under `.commerce/`, or PostgreSQL), the run
record (`records`) and its JSON file (`record_file`), per-case rates and flaky strips
(`history`), failing-set diffs (`diff`) with their cost regressions (`cost_regressions`), model
comparisons (`compare`), and the hooks that record a run and print its diff (`_plugin`,
`recorder`).
"""

from .aggregate import case_results, judge_identity, set_results
from .compare import ModelComparison, compare_runs
from .diff import FailingSetDiff, diff_failing_sets
from .history import History
from .record_file import load_record, record_json, write_record
from .records import (
    SCHEMA_VERSION,
    CaseResult,
    RunKind,
    RunRecord,
    Selection,
    SetResult,
    StoreError,
    StoreUnavailable,
)
from .run_store import DEFAULT_STORE_PATH, RunStore

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
