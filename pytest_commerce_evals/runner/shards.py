"""A shard's slice of the run (`--commerce-shard=K/N`, docs/shards.md): the plan that splits the
cases, what this process keeps of its collection, and a shard's exit status (its own errors only:
the run's verdict is the merge step's, `runner/merge.py`).

The plan balances the shards by each case's expected time: its trials this run times its mean
seconds a trial in the store's recent complete runs (a case with no history counts the median of
those that have one, or one second when none has: the split falls back to counts). Cases go,
longest first, to the shard with the least time so far (ties: the lower shard; equal cases in id
order), so the same cases and history give the same plan in every process. The first shard to
reach the store writes the plan into the run; every later shard and xdist worker reads that one.
A test that is not a case trial (an invalid entry, a plain test) runs on the shard its node id
hashes to.
"""

from __future__ import annotations

import statistics
import zlib
from collections import Counter

import pytest

from ..errors import StoreError
from ..settings import settings
from ..settings.values import Shard
from ..store.recorder import RECORDER
from ..store.run_store import RunStore
from ..store.shard_recorder import ShardRecorder, shard_run
from ..store.shards import case_seconds, write_plan
from .items import CaseItem
from .state import NON_CASE_FAILURES, SUMMARY

__all__ = ["plan_shards", "select_shard", "shard_gate", "shard_verdict_line"]

UNKNOWN_SECONDS = 1.0
"""A trial's expected seconds when no case has a recorded time."""


def plan_shards(weights: dict[str, float], total: int) -> dict[str, int]:
    """{case id: shard 1..total}: longest first onto the least-loaded shard."""
    loads = [0.0] * total
    plan: dict[str, int] = {}
    for case_id, weight in sorted(weights.items(), key=lambda kv: (-kv[1], kv[0])):
        shard = min(range(total), key=lambda k: (loads[k], k))
        loads[shard] += weight
        plan[case_id] = shard + 1
    return plan


def case_weights(trials: Counter[str], seconds: dict[str, float]) -> dict[str, float]:
    """Each case's expected time this run: its trials times its mean seconds a trial."""
    known = [seconds[c] for c in trials if c in seconds]
    fallback = statistics.median(known) if known else UNKNOWN_SECONDS
    return {c: n * seconds.get(c, fallback) for c, n in trials.items()}


def _stored_plan(config: pytest.Config, shard: Shard, trials: Counter[str]) -> dict[str, int]:
    """The run's plan: the one in the store, or this one written there first."""
    target = settings(config).store
    run_id, _ = shard_run(config)
    try:
        store = RunStore(target) if target is not None else None
    except Exception:  # the store's own probe stops the run, saying why
        store = None
    if store is None:
        return plan_shards(case_weights(trials, {}), shard.total)
    try:
        seconds = case_seconds(store, settings(config).history_runs)
        proposed = plan_shards(case_weights(trials, seconds), shard.total)
        if config.option.collectonly:
            return proposed
        total, plan = write_plan(store, run_id, shard.total, proposed)
    except StoreError as exc:
        raise pytest.UsageError(f"--commerce-shard={shard}: {exc}") from None
    finally:
        store.close()
    if total != shard.total:
        raise pytest.UsageError(
            f"--commerce-shard={shard}: run {run_id} is split into {total} shards, not "
            f"{shard.total}; every shard of one run gives the same N"
        )
    if set(plan) != set(trials):
        extra = sorted(set(trials) - set(plan))
        missing = sorted(set(plan) - set(trials))
        said = []
        if extra:
            said.append(f"{len(extra)} case(s) not in the run's plan: {', '.join(extra[:5])}")
        if missing:
            shown = ", ".join(missing[:5])
            said.append(f"{len(missing)} case(s) of the plan not collected: {shown}")
        raise pytest.UsageError(
            f"--commerce-shard={shard}: this shard collected other cases than the shard that "
            f"planned run {run_id} ({'; '.join(said)}); every shard of one run collects the same "
            "cases (same commit, paths, -k and -m), or the run needs an id of its own "
            "(--commerce-run-id)"
        )
    return plan


def select_shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep this shard's items (after -k and -m); deselect the others."""
    shard = settings(config).shard
    if shard is None:
        return
    trials = Counter(i.case.id for i in items if type(i) is CaseItem)
    plan = _stored_plan(config, shard, trials) if trials else {}
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        if type(item) is CaseItem:
            owner = plan[item.case.id]
        else:
            owner = zlib.crc32(item.nodeid.encode("utf-8", "surrogatepass")) % shard.total + 1
        (keep if owner == shard.index else drop).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def shard_gate(session: pytest.Session) -> None:
    """A shard's exit status: its own errors (invalid case entries, other tests that failed)
    and pytest's; never its slice's sets, which the merge step gates over the whole run. A shard
    the plan gave no case exits 0 (not pytest's 5: its part of the run is done)."""
    config = session.config
    summary = config.stash.get(SUMMARY, None)
    errors = [f"invalid case entry: {m}" for m in (summary.invalid if summary else [])]
    errors += [f"failed: {nodeid}" for nodeid in config.stash.get(NON_CASE_FAILURES, [])]
    recorder = config.stash.get(RECORDER, None)
    if isinstance(recorder, ShardRecorder):
        if recorder.store_error is not None:  # its part is not in the run: the merge lacks it
            errors.append(f"run store: {recorder.store_error}")
        recorder.own_errors = errors
        if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and recorder.empty_slice():
            session.exitstatus = pytest.ExitCode.OK
    if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED if errors else pytest.ExitCode.OK


def shard_verdict_line(config: pytest.Config, reasons: list[str]) -> str:
    """The verdict line of a shard: its own errors, and who decides the run."""
    shard = settings(config).shard
    run_id, _ = shard_run(config)
    recorder = config.stash.get(RECORDER, None)
    if isinstance(recorder, ShardRecorder) and recorder.store_error is not None:
        reasons = [*reasons, "its part is not in the run store (see the run store error)"]
    own = f"; this shard failed on its own: {', '.join(reasons)}" if reasons else ""
    return (
        f"verdict: shard {shard} of run {run_id} — the run's sets are decided over every "
        f"shard's trials by the merge step (pytest --commerce-merge={run_id}){own}"
    )
