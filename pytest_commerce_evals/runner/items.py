"""The pytest item of one case trial, and the text of a trial that did not pass."""

from __future__ import annotations

from typing import Any

import pytest

from ..cases.case import Case
from ..cases.loader import CaseProblem
from ..cases.markers import TAG_MARKERS, mark, reserved_marks, tag_marker
from ..errors import ConfigurationError
from ..results import TrialRecord, TrialSpec
from ..store.recorder import RECORDER
from ._scheduler import SCHEDULER
from .regrade import regrade_trial, stored_trial
from .running import RUNNING
from .spending import run_spend
from .state import TRIAL_RAN
from .trial import run_trial

_ENDPOINT_DATA = pytest.StashKey[tuple[Any, dict]]()


def agent_endpoint_data(config: pytest.Config) -> dict | None:
    """The agent endpoint the trials asked the plugin for, as a trial's report carries it
    (`model`, `base_url` without credentials, `embedded`); None when none was asked for."""
    from ..models.clients import used_endpoint
    from ..store.identity import public_base_url

    used = used_endpoint(config, "agent")
    if used is None:
        return None
    known = config.stash.get(_ENDPOINT_DATA, None)
    if known is None or known[0] is not used:  # made once: the first client's endpoint stays
        base = used.base_url if not used.is_local else "embedded"
        data = {"model": used.model, "base_url": public_base_url(base), "embedded": used.is_local}
        known = config.stash[_ENDPOINT_DATA] = (used, data)
    return dict(known[1])


class InvalidCase(pytest.Item):
    """Stands for a case entry that could not be read; errors at setup, the others still run."""

    def __init__(self, *, problems: list[CaseProblem], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problems = problems

    @property
    def message(self) -> str:
        return "\n".join(f"invalid case: {p}" for p in self.problems)

    def setup(self) -> None:
        pytest.fail(self.message, pytrace=False)

    def runtest(self) -> None:  # never reached: setup always fails
        pytest.fail(self.message, pytrace=False)

    def reportinfo(self):
        return (
            self.path,
            (self.problems[0].line or 1) - 1,
            f"invalid case in {self.problems[0].path}",
        )


class TrialFailed(Exception):
    def __init__(self, result: TrialRecord) -> None:
        super().__init__(result.case_id)
        self.result = result


class CaseItem(pytest.Item):
    """One trial of one case."""

    records_trial = True
    """Whether the item's reports carry a trial record (`results.REPORT_KINDS`); a subclass
    that runs something else (the vacuity check) says no."""
    commerce_decided: str | None = None
    """Set when adaptive trials decided the case before this trial ran: why it is not needed."""
    commerce_not_started: str | None = None
    """Set when the run's budget (`--commerce-budget`) was spent before this trial started."""

    def __init__(
        self,
        *,
        case: Case,
        trial: int,
        trials: int,
        set_name: str,
        threshold: float,
        line: int,
        display: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.spec = TrialSpec(case, trial, trials, set_name, threshold, display, line)
        """Which trial this item runs, passed whole to whatever runs it."""
        self.display = display
        self.result: TrialRecord | None = None
        config = self.config
        self.add_marker(mark(config, case.priority))
        self.add_marker(mark(config, f"difficulty_{case.difficulty}"))
        if case.difficulty != "medium":
            self.add_marker(mark(config, case.difficulty))
        self.add_marker(mark(config, "commerce_case"))
        registered = self.config.stash[TAG_MARKERS]
        for tag in case.tags:
            self.extra_keyword_matches.add(tag)  # -k matches the tag's own text, always
            marker = tag_marker(self.config, tag)
            if marker is None:
                continue  # nothing usable as a marker name: the tag stays a keyword
            if marker not in registered:  # once per tag, not once per trial
                reserved_marks(self.config)  # fixed before the first tag marker is added
                registered.add(marker)
                self.config.addinivalue_line("markers", f"{marker}: case tag {tag!r}")
            self.add_marker(mark(config, marker))
        self.extra_keyword_matches.add(case.flow)
        if case.skip:
            self.add_marker(pytest.mark.skip(reason=case.skip))
        self.user_properties += [
            ("case_id", case.id),
            ("priority", case.priority),
            ("difficulty", case.difficulty),
            ("trial", f"{trial}/{trials}"),
        ]

    # the trial's identity, read from its spec
    @property
    def case(self) -> Case:
        return self.spec.case

    @property
    def trial(self) -> int:
        return self.spec.trial

    @property
    def trials(self) -> int:
        return self.spec.trials

    @property
    def set_name(self) -> str:
        return self.spec.set_name

    @property
    def threshold(self) -> float:
        return self.spec.threshold

    @property
    def line(self) -> int:
        return self.spec.line or 0

    def compute(self) -> TrialRecord:
        """Run the trial (on a scheduler thread when trials run concurrently); in a
        `--commerce-regrade` session, grade the source run's stored trial instead."""
        stored = stored_trial(self.config, self.case.id, self.trial)
        if stored is not None:
            return regrade_trial(self.config, self.spec, stored)
        spend = run_spend(self.config)
        if spend is not None and spend.exhausted() is not None:
            self.commerce_not_started = spend.text()
            return None  # type: ignore[return-value]  # runtest skips it
        with RUNNING.trial(self.nodeid, self.case.id):
            result = run_trial(self.config, self.spec)
        if spend is not None:
            spend.add(result.calls)
        return result

    def runtest(self) -> None:
        scheduler = self.config.stash.get(SCHEDULER, None)
        if scheduler is not None and scheduler.submitted(self):
            recorder = self.config.stash.get(RECORDER, None)
            result = scheduler.wait(self, recorder.flush_while_waiting if recorder else None)
        else:
            result = self.compute()
            self.config.stash[TRIAL_RAN] = True
        if result is None and self.commerce_not_started is not None:
            pytest.skip(f"not started: the run's budget is spent ({self.commerce_not_started})")
        self.result = result
        self.config.hook.pytest_commerce_evals_trial_done(config=self.config, result=result)
        if result.outcome != "pass":
            raise TrialFailed(result)

    def repr_failure(self, excinfo, style=None) -> str:
        if isinstance(excinfo.value, TrialFailed):
            return format_failure(excinfo.value.result)
        if isinstance(excinfo.value, ConfigurationError):
            return f"commerce-evals configuration: {excinfo.value}"
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self):
        return self.path, self.line - 1, f"{self.case.id} (trial {self.trial}/{self.trials})"


def format_failure(result: TrialRecord) -> str:
    """The text a user reads for a trial that did not pass."""
    head = (
        f"{result.case_id} trial {result.trial}/{result.trials}: {result.outcome} "
        f"({result.priority} priority, {result.difficulty}) at {result.file}:{result.line}"
    )
    lines = [head]
    if result.error:
        lines.append(f"  {result.error.rstrip()}")
    failed = result.failed_graders
    if failed:
        lines.append(f"  {len(failed)} of {len(result.grader_results)} expectations failed:")
        lines += [f"  ✗ {g.message}" for g in failed]
    passed = [g for g in result.grader_results if g.passed]
    if passed:
        lines.append("  passed: " + ", ".join(g.key for g in passed))
    for v in result.verdicts:
        mark = {"pass": "✓", "fail": "✗"}.get(v.outcome, "!")
        cut = (
            f" [transcript cut: {v.truncated_turns} turns, {v.truncated_chars} chars dropped]"
            if v.truncated_chars
            else ""
        )
        if v.outcome in ("pass", "fail"):
            lines.append(f"  {mark} rubric {v.dimension}: {v.verdict} — {v.reasoning}{cut}")
        else:
            lines.append(f"  {mark} rubric {v.dimension}: {v.outcome} — {v.error}{cut}")
    if result.turns:
        from ..graders.formatting import calls_made, reply_excerpt
        from ..graders.observation import Observation

        obs = Observation(result.turns)
        lines.append(f"  calls made: {calls_made(obs)}")
        lines.append(f"  reply: {reply_excerpt(obs.reply)}")
    return "\n".join(lines)


# -- running trials concurrently ---------------------------------------------------------------
