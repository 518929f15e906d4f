"""The run being recorded: its identity (commit, agent, selection), its trials written to the
store as they arrive, its baseline and failing-set diff at the end, and the summary lines."""

from __future__ import annotations

import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..errors import StoreError
from ..models.pricing import price_book
from ..results import TrialRecord
from ..runs import NotStarted, RunRecord, Selection
from ..settings import agent_label, settings
from .aggregate import judge_identity, set_results
from .history import CASE_LINES, History, case_lines, load_history, with_cases
from .identity import GitStateLater, new_run_id, public_base_url, utc_now
from .paths import output_path, store_folder
from .record_file import clean_trial, write_record
from .rows import trial_row
from .run_store import DEFAULT_STORE_PATH, RunStore, damaged_lines

if TYPE_CHECKING:  # imported by `_diff`: a run without a baseline never needs it
    from .diff import FailingSetDiff

FLUSH_EVERY_TRIALS = 100
FLUSH_EVERY_S = 2.0
FLUSH_WHILE_WAITING_S = 0.25  # at most this often (`RunRecorder.flush_while_waiting`)


RECORDER = pytest.StashKey["RunRecorder"]()


BASELINE = pytest.StashKey["RunRecord | None"]()


BASELINE_NOTES = pytest.StashKey[list[str]]()


BASELINE_IS_SOURCE = pytest.StashKey[bool]()


def selection(config: pytest.Config) -> Selection:
    """The selection as stable strings: case paths relative to the rootdir, `-k`, `-m`, trials."""
    from ..settings import run_config

    root = Path(config.rootpath)
    here = Path(config.invocation_params.dir)
    args = []
    for arg in config.args:
        path, sep, rest = str(arg).partition("::")
        resolved = (here / path).resolve()
        shown = resolved.relative_to(root).as_posix() if resolved.is_relative_to(root) else path
        args.append(shown + sep + rest)
    return Selection(
        args=sorted(args),
        keyword=config.getoption("keyword", None) or None,
        markexpr=config.getoption("markexpr", None) or None,
        trials=run_config(config).trials,
    )


def agent_identity(config: pytest.Config, ran: bool) -> tuple[str | None, str | None]:
    """The agent's name and base URL for the run record; never a key.

    In order: the user's label (`--commerce-agent`, ini `commerce_agent`, env, hook); the model
    of the client a trial's agent asked the plugin for (known once a trial ran, `ran`); the agent
    model the user configured (`--commerce-model`, …). Never the embedded default for an agent
    that did not ask for it: with none of these, the agent is not named (None)."""
    from ..models.clients import agent_used
    from ..models.endpoint import EndpointError, resolve_endpoint

    used = agent_used(config) if ran else None
    label = agent_label(config)
    if label:
        return label, used["base_url"] if used else None
    if used:
        return used["model"], used["base_url"]
    try:
        configured = resolve_endpoint(config, "agent")
    except EndpointError:
        return None, None
    if configured.is_local:
        return None, None
    return configured.model, public_base_url(configured.base_url)


def agent_guess(config: pytest.Config) -> str | None:
    """The model an agent that asks the plugin for a client will get (the embedded one
    included); None when no endpoint can be resolved."""
    from ..models.endpoint import EndpointError, resolve_endpoint

    try:
        return resolve_endpoint(config, "agent").model
    except EndpointError:
        return None


def local_folder(config: pytest.Config, target: Path | str | None) -> Path | None:
    """Where a run's files go beside its store: the store's folder, or for a database URL the
    default folder under the rootdir (`unsaved-<run>.json` when the database cannot be written);
    None when the run records nothing."""
    if target is None:
        return None
    if isinstance(target, Path):
        return target
    return Path(config.rootpath) / DEFAULT_STORE_PATH


def problem(error: BaseException) -> str:
    """A store failure as the summary shows it: a `StoreError` names the file already; anything
    else (a bug, or something the store did not foresee) is shown with its type."""
    if isinstance(error, StoreError):
        return str(error)
    return f"{type(error).__name__}: {error}"


class RunRecorder:
    """The run being recorded: written to the store as trials arrive, finished at session end."""

    def __init__(self, config: pytest.Config) -> None:
        self.stopped: str | None = None  # why trials were left unstarted (the run's budget)
        self.not_started: list[tuple[str, int, str, float]] = []  # case, trial, set, threshold
        from ..settings import run_config

        self.config = config
        self.target = store_folder(config)
        self.folder = local_folder(config, self.target)
        self._git: GitStateLater | None = GitStateLater(Path(config.rootpath))
        model, base = agent_identity(config, ran=False)
        rc = run_config(config)
        self._record = RunRecord(
            run_id=new_run_id(),
            started_at=utc_now(),
            agent_model=model,
            agent_base_url=base,
            selection=selection(config),
            options={
                "trials": rc.trials,
                "threshold": rc.threshold,
                "no_judge": settings(config).no_judge,
                "xdist_workers": config.getoption("numprocesses", None),
            },
        )
        found = config.hook.pytest_commerce_evals_run_identity(config=config)
        if found:  # a regrade: the source run's agent and commit made the transcripts
            update = dict(found)
            update["options"] = {**self.record.options, **found.get("options", {})}
            self.record = self.record.model_copy(update=update)
        self.store: RunStore | None = None
        self.store_error: str | None = None
        self.begun = False
        self.trials: list[TrialRecord] = []
        self.pending: list[TrialRecord] = []
        self.pending_rows: list[tuple[Any, ...]] | None = []
        """`pending` as store rows, each made as its trial arrives, so the flush at the end of a
        run only writes them; None when one could not be made (the flush makes them all)."""
        self.last_flush = time.monotonic()
        self.finished: RunRecord | None = None
        self.diff: FailingSetDiff | None = None
        self.history: History | None = None
        self.how_chosen = ""
        self.fallback: Path | None = None
        self.written: list[tuple[str, Path]] = []
        self.write_errors: list[str] = []
        self.store_warnings: list[str] = []
        self.incomplete: list[str] = []  # why the run is incomplete though its session ended well
        self.lost_connection = 0
        """Operations tried again after the database connection was lost (PostgreSQL)."""

    @property
    def record(self) -> RunRecord:
        """The run's header, with the commit and whether the checkout was dirty once git has
        answered (asked on a thread when the run starts; the first reader waits for it)."""
        self._take_git_answer()
        return self._record

    @record.setter
    def record(self, value: RunRecord) -> None:
        self._take_git_answer()  # into the record being replaced, which the new one came from
        self._record = value

    def _take_git_answer(self) -> None:
        if self._git is not None:
            commit, dirty = self._git.result()
            self._git = None
            update = {"git_commit": commit, "git_dirty": dirty}
            self._record = self._record.model_copy(update=update)

    def _terminate_as_interrupt(self) -> None:
        """A SIGTERM (a CI job's timeout, `kill`) ends the run as Ctrl-C does: the trials that
        finished are flushed and the run is marked incomplete. Only where nothing else handles
        SIGTERM already, and only for the length of the run."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def interrupt(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt("SIGTERM")

        previous = signal.signal(signal.SIGTERM, interrupt)

        def restore() -> None:
            signal.signal(signal.SIGTERM, previous)

        self.config.add_cleanup(restore)

    def _fail(self, error: BaseException) -> None:
        if self.store is not None:
            self.lost_connection += self.store.retries
            self.store.close()
        self.store, self.store_error = None, problem(error)

    def begin(self) -> None:
        if self.begun:
            return
        self.begun = True
        self._terminate_as_interrupt()
        for extra in self.config.hook.pytest_commerce_evals_run_metadata(config=self.config):
            update: dict[str, Any] = {}
            if extra.get("kind"):
                update["kind"] = extra["kind"]
            if extra.get("options"):
                update["options"] = {**self.record.options, **extra["options"]}
            self.record = self.record.model_copy(update=update)
        if self.folder is None or self.target is None:
            return
        # nothing a store does may cost the run: any failure sends it to the unsaved record
        try:
            self.store = RunStore(self.target)
            self.config.add_cleanup(self.store.close)
            self._begin_run(self.store)
        except Exception as exc:
            self._fail(exc)

    def _begin_run(self, store: RunStore) -> None:
        store.begin_run(self.record)

    def add(self, record: TrialRecord) -> None:
        self.begin()
        # whatever the trial holds, the store, the JSON record and the reports take it
        trial = clean_trial(record)
        self.trials.append(trial)
        self.pending.append(trial)
        if self.store is not None and self.pending_rows is not None:
            try:
                self.pending_rows.append(trial_row(self.record.run_id, trial))
            except Exception:  # what add_trials makes writable: its rows are made there
                self.pending_rows = None
        if (
            len(self.pending) >= FLUSH_EVERY_TRIALS
            or time.monotonic() - self.last_flush > FLUSH_EVERY_S
        ):
            self.flush()

    def flush_while_waiting(self) -> None:
        """The main thread is about to wait for a trial still running: what was reported is
        written now, while the trials wait for the model, not among a wave's reports or at the
        run's end. At most every `FLUSH_WHILE_WAITING_S`: fast trials pay no more commits."""
        if self.pending and time.monotonic() - self.last_flush >= FLUSH_WHILE_WAITING_S:
            self.flush()

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        rows, self.pending_rows = self.pending_rows, []
        self.last_flush = time.monotonic()
        if self.store is None or not batch:
            return
        try:
            self.store.add_trials(self.record.run_id, batch, rows)
        except Exception as exc:
            self._fail(exc)

    def _in_memory(self, complete: bool, exit_status: int) -> RunRecord:
        judge_model, prints = judge_identity(self.trials)
        return self.record.model_copy(
            update={
                "ended_at": utc_now(),
                "complete": complete,
                "exit_status": exit_status,
                "judge_model": judge_model,
                "judge_fingerprints": prints,
                "sets": set_results(self.trials, [(s, t) for _, _, s, t in self.not_started]),
                "trials": list(self.trials),
                "not_started": self._unstarted(),
            }
        )

    def _unstarted(self) -> list[NotStarted]:
        return [NotStarted(case_id=c, trial=n, set_name=s) for c, n, s, _ in self.not_started]

    def _try_again(self) -> bool:
        """Once more, at the session's end, before the record goes aside: a store that failed
        during the run (a PostgreSQL server restarting for longer than the retries wait) takes
        the whole record if it answers now. True when it did."""
        assert self.finished is not None and self.target is not None
        try:
            store = RunStore(self.target)
            try:
                store.import_record(self.finished)
            finally:
                store.close()
        except Exception as exc:
            self.store_warnings.append(f"tried again at the end of the run: {problem(exc)}")
            return False
        self.store_warnings.append(
            f"the store failed during the run ({self.store_error}); tried again at the end of "
            f"the run, it took the whole record"
        )
        self.store_error = None
        return True

    def finish(self, session: pytest.Session) -> None:
        """At the session's end: the run is stored finished (or written aside when the store
        failed), diffed against its baseline, and its reports are written."""
        if self.finished is not None or not self.begun:
            return
        status = int(session.exitstatus)
        complete = (
            status in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
            and not session.shouldfail
            and not session.shouldstop
            and bool(self.trials)  # a run that finished no trial is no baseline
            and self.stopped is None  # the run's budget left trials unstarted
            and not self.incomplete
        )
        self.flush()
        self._name_the_agent()
        case_ids = {t.case_id for t in self.trials}
        found = settings(self.config)
        if self.store is not None and case_ids:
            try:
                self.history = load_history(self.store, self.record, case_ids, found.history_runs)
            except Exception as exc:  # no history; the run itself can still be stored
                self.store_warnings.append(f"no history could be read: {problem(exc)}")
        baseline, pooled = self._baseline(case_ids)
        self._store_finished(complete, status, baseline.run_id if baseline is not None else None)
        assert self.finished is not None
        # what the cases cost goes in the JSON record (the HTML report prices its own)
        prices = price_book(self.config) if found.json else None
        self.finished = with_cases(self.finished, self.history, prices)
        if baseline is not None:
            self._diff(baseline, pooled, found.diff_level)
        self._write_reports()

    def _name_the_agent(self) -> None:
        """The agent as the trials that ran name it (a regrade keeps the source run's)."""
        model, base = agent_identity(self.config, ran=True)
        if self.record.kind == "regrade":  # no agent ran: it stays the source run's
            model, base = self.record.agent_model, self.record.agent_base_url
        if (model, base) == (self.record.agent_model, self.record.agent_base_url):
            return
        self.record = self.record.model_copy(update={"agent_model": model, "agent_base_url": base})
        if self.store is not None:
            try:
                self.store.set_agent(self.record.run_id, model, base)
            except Exception as exc:
                self._fail(exc)

    def _baseline(self, case_ids: set[str]) -> tuple[RunRecord | None, bool]:
        """The run this one is diffed against, and whether it was found in the history (its
        cases' past runs pool into the diff) rather than named."""
        baseline = self.config.stash.get(BASELINE, None)
        if baseline is not None:
            self.how_chosen = (
                "the run this regrade grades again"
                if self.config.stash.get(BASELINE_IS_SOURCE, False)
                else "named with --commerce-baseline"
            )
            for note in self.config.stash.get(BASELINE_NOTES, []):
                self.store_warnings.append(f"damaged, left out looking for the baseline: {note}")
            return baseline, False
        if self.store is None or self.history is None:
            return None, False
        self.how_chosen = (
            "the latest complete comparable run (same kind and agent model) that ran these cases"
        )
        for candidate in self.history.candidates(case_ids):
            try:
                baseline = self.store.load_run(candidate.run_id)
            except StoreError as exc:  # a damaged run is passed over for the next
                if str(exc) not in self.store.damaged:
                    self.store.damaged.append(str(exc))
                continue
            except Exception as exc:  # no baseline; the run itself can still be stored
                self.store_warnings.append(f"no baseline could be read: {problem(exc)}")
            return baseline, baseline is not None
        return None, False

    def _store_finished(self, complete: bool, status: int, base_id: str | None) -> None:
        """`self.finished`: the run as the store finished it, or, when the store failed, as
        held in memory and written aside."""
        if self.store is not None:
            try:
                self.finished = self.store.finish_run(
                    self.record.run_id,
                    complete=complete,
                    exit_status=status,
                    baseline=base_id,
                    trials=self.trials,
                    not_started=[(s, t) for _, _, s, t in self.not_started],
                ).model_copy(update={"not_started": self._unstarted()})
            except Exception as exc:
                self._fail(exc)
        if self.finished is not None:
            return
        self.finished = self._in_memory(complete, status).model_copy(update={"baseline": base_id})
        if self.target is not None and self.store_error is not None and self._try_again():
            return  # the store came back: the whole record is in it
        if self.folder is not None:
            self.fallback = self._write_aside(self.finished, self.history)

    def _diff(self, baseline: RunRecord, pooled: bool, level: float) -> None:
        from .diff import diff_failing_sets

        assert self.finished is not None
        try:
            self.diff = diff_failing_sets(
                baseline,
                self.finished,
                level=level,
                history=self.history,
                pooled=pooled,
                restrict=_targeted(baseline, self.finished),
                paired=self.config.stash.get(BASELINE_IS_SOURCE, False),
            )
        except Exception as exc:  # the run is kept whatever the diff makes of it
            self.write_errors.append(f"could not diff against the baseline: {problem(exc)}")
        else:
            self.finished = self.finished.model_copy(update={"diff": self.diff.summary()})

    def _write_aside(self, record: RunRecord, history: History | None) -> Path | None:
        """Write the record beside the store (or, failing that, somewhere it can be written)."""
        record = with_cases(record, history, price_book(self.config))
        name = f"unsaved-{record.run_id}.json"
        folders = [self.folder] if self.folder is not None else []
        for folder in (
            *folders,
            Path(self.config.rootpath) / ".commerce",
            Path(tempfile.gettempdir()),
        ):
            try:
                return write_record(record, folder / name)
            except Exception:  # a folder that cannot be written: try the next
                continue
        return None

    def _write_reports(self) -> None:
        """The JSON run record (the store's own format), then every report a feature writes on
        `pytest_commerce_evals_write_reports` (the HTML report)."""
        assert self.finished is not None
        config = self.config
        target = settings(config).json
        if target:
            path = output_path(config, target)
            try:
                self.written.append(("JSON run record", write_record(self.finished, path)))
            except Exception as exc:  # a report is never worth the run: say why and go on
                self.write_errors.append(
                    f"could not write the JSON run record to {path}: {problem(exc)}"
                )
        config.hook.pytest_commerce_evals_write_reports(
            config=config,
            run=self.finished,
            diff=self.diff,
            how_chosen=self.how_chosen,
            history=self.history,
            written=self.written,
            errors=self.write_errors,
        )

    def summary_lines(self) -> list[tuple[str, dict[str, bool]]]:
        """The run history section of the terminal summary: where the run went, the cases, the
        failing-set diff and the reports written."""
        run = self.finished
        if run is None:
            return []
        out = self._store_lines(run)
        if run.trials and run.kind == "regression":
            out.append(("", {}))
            limit = None if self.config.get_verbosity() > 0 else CASE_LINES
            lines = case_lines(run, self.history, limit)
            out += [(line, _case_markup(line)) for line in lines]
        if self.diff is not None:
            out.append(("", {}))
            out.append(("failing-set diff", {"bold": True}))
            verbose = self.config.get_verbosity() > 0
            lines = self.diff.lines(self.how_chosen, verbose=verbose)
            out += [(line, _markup(line)) for line in lines]
        elif self.store is not None:
            out.append(
                (
                    f"no previous comparable run (complete, same kind and agent model "
                    f"{run.agent_model or '(not named)'}, that ran these cases: "
                    f"{run.selection.describe()}) to diff against; this run is the baseline "
                    f"for the next",
                    {},
                )
            )
        for label, path in self.written:
            out.append((f"{label} written to {path}", {}))
        out += [(line, {"red": True}) for line in self.write_errors]
        return out

    def _store_lines(self, run: RunRecord) -> list[tuple[str, dict[str, bool]]]:
        """Where the run was recorded, what the store went through, and where the record went
        when the store failed."""
        out: list[tuple[str, dict[str, bool]]] = []
        state = (
            "complete"
            if run.complete
            else "INCOMPLETE (interrupted or stopped early: only finished trials kept)"
        )
        if self.store is not None:
            out.append(
                (
                    f"run {run.run_id} recorded in {self.store.path}: {len(run.trials)} "
                    f"trials, {state}",
                    {},
                )
            )
        elif self.folder is None:
            out.append(
                (
                    f"run {run.run_id} not stored (--commerce-store=none): {len(run.trials)} "
                    f"trials, {state}",
                    {},
                )
            )
        retried = self.lost_connection + (self.store.retries if self.store is not None else 0)
        if retried and self.store is not None:
            out.append(
                (
                    f"run store: the connection to {self.store.path} was lost and opened again "
                    f"({retried} operation(s) tried again); every finished trial is stored "
                    "once",
                    {"yellow": True},
                )
            )
        elif retried:
            out.append(
                (
                    f"run store: the connection was lost; {retried} operation(s) tried again "
                    "before giving up",
                    {"yellow": True},
                )
            )
        out += [(f"run store: {w}", {"yellow": True}) for w in self.store_warnings]
        if self.store is not None and self.store.damaged:
            out += damaged_lines(self.store)
        if self.store_error is not None:
            out.append((f"run store error: {self.store_error}", {"red": True, "bold": True}))
            if self.fallback is not None:
                out.append(
                    (
                        f"this run's results were NOT stored there; its full record was written to "
                        f"{self.fallback} instead (once the store is repaired: pytest "
                        f"--commerce-store-import={self.fallback})",
                        {"red": True},
                    )
                )
            else:
                out.append(
                    (
                        "this run's record could not be written anywhere; use --commerce-json=PATH",
                        {"red": True},
                    )
                )
        return out


def _markup(line: str) -> dict[str, bool]:
    if line.startswith("newly failing") and not line.endswith("(0):"):
        return {"red": True, "bold": True}
    if line.startswith("fixed") and not line.endswith("(0):"):
        return {"green": True}
    if line.startswith("inconclusive"):
        return {"yellow": True}
    return {}


def _case_markup(line: str) -> dict[str, bool]:
    return {"yellow": True} if line.endswith("flaky") else {}


def _targeted(baseline: RunRecord, run: RunRecord) -> bool:
    """A run that selected some of the baseline's cases (other paths, -k or -m): its diff is
    restricted to the cases it ran."""
    mine = {t.case_id for t in run.trials}
    theirs = {t.case_id for t in baseline.trials}
    a, b = baseline.selection, run.selection
    return mine < theirs and (a.args, a.keyword, a.markexpr) != (b.args, b.keyword, b.markexpr)
