"""Grading a stored trial again: today's code graders and judge on the transcript and final state
a run recorded, without calling the agent (`--commerce-regrade`, docs/run-history.md).

    STORED_TRIALS               # config stash: {(case_id, trial): the stored trial} of the source
    stored_trial(config, ...)   # the stored trial a CaseItem grades instead of running, or None
    regrade_trial(config, ...)  # a TrialRecord rebuilt from the stored trial and graded again

What the graders read is what `run_trial` gives them: the turns' events, the backend's final
`Snapshot` (cart, memory, changes: stored whole with every trial) and the case's injected state.
A stored trial the agent did not finish (its snapshot is None: the agent raised, the endpoint
failed, the glue failed) is carried over as it was; one that was graded but holds no final state
(a record from before snapshots were stored) or whose customer messages are no longer the case's
turns is not graded (outcome `error`, saying why) rather than graded on a guess.
"""

from __future__ import annotations

import time

import pytest

from ..cases.case import Case
from ..results import TrialRecord, TrialSpec
from .trial import grade_trial

__all__ = ["NOT_REGRADED", "STORED_TRIALS", "regrade_trial", "stored_trial"]

STORED_TRIALS = pytest.StashKey[dict[tuple[str, int], TrialRecord]]()
"""Set (by the run store's regrade plugin) only in a `--commerce-regrade` session."""

_UNFINISHED = ("infra_error", "user_error", "error", "skipped")

NOT_REGRADED = "not regraded"
"""How the error of a stored trial that could not be graded again begins."""


def stored_trial(config: pytest.Config, case_id: str, trial: int) -> TrialRecord | None:
    """The stored trial to grade instead of running the agent; None outside a regrade."""
    found = config.stash.get(STORED_TRIALS, None)
    return None if found is None else found.get((case_id, trial))


def regrade_trial(
    config: pytest.Config,
    spec: TrialSpec,
    stored: TrialRecord,
    *,
    judge: bool = True,
) -> TrialRecord:
    """The trial `stored` recorded, graded as the trial `spec` names: with its case as it is
    today (its `expected` and rubric) by the code graders and the judge (`judge=False` leaves
    rubrics ungraded), under the set's threshold today."""
    started = time.perf_counter()
    case: Case = spec.case
    result = TrialRecord.begin(spec)
    result.turns = [list(turn) for turn in stored.turns]
    if case.user is not None:
        # the conversation as it happened: the simulated customer is not asked again
        result.messages = list(stored.messages)
        result.ended = stored.ended
    if stored.snapshot is None and (stored.error or stored.outcome in _UNFINISHED):
        # the agent did not finish this trial in the source run: nothing to grade, kept as it was
        result.outcome = stored.outcome
        result.error = stored.error
        result.grader_results = list(stored.grader_results)
        result.verdicts = list(stored.verdicts)
        return result.settle()
    problem = _why_not(case, stored)
    if problem is not None:
        result.outcome = "error"
        result.error = f"{NOT_REGRADED}: {problem}; run the agent again for this case"
        result.duration_s = time.perf_counter() - started
        return result.settle()
    result.snapshot = stored.snapshot
    grade_trial(config, case, result, judge=judge)
    result.duration_s = time.perf_counter() - started
    return result


def _why_not(case: Case, stored: TrialRecord) -> str | None:
    """Why the stored trial cannot be graded faithfully with `case` as it is today, or None."""
    if stored.snapshot is None:
        return (
            "the stored trial holds no final backend state (cart, memory, changes), which the "
            "state graders read (a record written before final states were stored)"
        )
    if case.user is not None:
        return _why_not_conversation(case, stored)
    if len(stored.turns) != len(case.turns):
        return (
            f"the case has {len(case.turns)} turn(s) today; the stored transcript has "
            f"{len(stored.turns)}"
        )
    if stored.messages and list(stored.messages) != list(case.turns):
        return "the case's customer messages changed since; the stored replies answer the old ones"
    return None


def _why_not_conversation(case: Case, stored: TrialRecord) -> str | None:
    """Why a stored conversation with a simulated customer cannot be graded with `case` today:
    it was not one (no ending recorded), or its scripted opening is not the case's today."""
    assert case.user is not None
    if stored.ended is None:
        return (
            "the case has a simulated customer (user:) today; the stored trial is not a "
            "conversation with one"
        )
    scripted = list(case.turns) + ([case.user.opening] if case.user.opening else [])
    if list(stored.messages[: len(scripted)]) != scripted:
        return (
            "the case's scripted customer messages (turns, user.opening) changed since; the "
            "stored conversation answers the old ones"
        )
    return None
