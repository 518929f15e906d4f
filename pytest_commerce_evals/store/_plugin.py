"""pytest hooks of the run store: record every run, diff its failing set against a baseline,
compare two models' runs, and write the HTML and JSON reports.

Everything here runs in the controlling process (the only one without pytest-xdist); each trial
arrives as its typed record (`results.TrialRecord`) through `pytest_commerce_evals_trial_recorded`.
"""

from __future__ import annotations

import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from ..compat import run_session
from ..reports.html import render_comparison_html, render_run_html, write_html
from ..reports.terminal import line_writer
from ..results import TrialRecord
from ..settings import BY_NAME, agent_label, settings
from ..stats import format_rate
from . import regrade
from .database import is_database_url, public_url, scrub
from .history import (
    FailingSetDiff,
    History,
    ModelComparison,
    case_lines,
    case_rates,
    compare_runs,
    describe_run,
    diff_failing_sets,
    flaky_case,
    is_flaky,
    load_history,
    strip,
)
from .paths import output_path, store_folder
from .run_store import (
    DEFAULT_STORE_PATH,
    RunRecord,
    RunStore,
    Selection,
    StoredTrial,
    StoreError,
    case_results,
    clean_trial,
    git_state,
    judge_identity,
    load_record,
    new_run_id,
    printable,
    public_base_url,
    set_results,
    utc_now,
    write_record,
)

FLUSH_EVERY_TRIALS = 20
FLUSH_EVERY_S = 2.0

RECORDER = pytest.StashKey["RunRecorder"]()
BASELINE = pytest.StashKey["RunRecord | None"]()
BASELINE_NOTES = pytest.StashKey[list[str]]()
BASELINE_IS_SOURCE = pytest.StashKey[bool]()


# -- settings ---------------------------------------------------------------------------------


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


def _agent_identity(config: pytest.Config, ran: bool) -> tuple[str | None, str | None]:
    """The agent's name and base URL for the run record; never a key.

    In order: the user's label (`--commerce-agent`, ini `commerce_agent`, env, hook); the model
    of the client a trial's agent asked the plugin for (known once a trial ran, `ran`); the agent
    model the user configured (`--commerce-model`, …). Never the embedded default for an agent
    that did not ask for it: with none of these, the agent is not named (None)."""
    from ..models.endpoint import EndpointError, resolve_endpoint
    from ..runner.state import agent_used

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


def _agent_guess(config: pytest.Config) -> str | None:
    """The model an agent that asks the plugin for a client will get (the embedded one
    included); None when no endpoint can be resolved."""
    from ..models.endpoint import EndpointError, resolve_endpoint

    try:
        return resolve_endpoint(config, "agent").model
    except EndpointError:
        return None


def _resolve_run(store: RunStore | None, ref: str, what: str) -> RunRecord:
    ref = ref.strip()
    path = Path(ref).expanduser()
    if path.suffix == ".json" or path.is_file():
        return load_record(path)
    if store is None:
        raise pytest.UsageError(
            f"{what} {ref!r}: no run store (--commerce-store=none) to look it up in"
        )
    found = store.find(ref) or store.latest_for_model(ref)
    if found is None:
        recent = ", ".join(r.run_id for r in store.runs(limit=5)) or "none"
        models = ", ".join(store.models()) or "none"
        raise pytest.UsageError(
            f"{what} {ref!r}: no such run id, and no complete regression run of an agent model "
            f"of that name in {store.path} (recent runs: {recent}; models: {models})"
        )
    return found


def _open_store(config: pytest.Config, *, read_only: bool = False) -> RunStore | None:
    folder = store_folder(config)
    if folder is None:
        return None
    store = RunStore(folder, read_only=read_only)
    config.add_cleanup(store.close)
    return store


def local_folder(config: pytest.Config, target: Path | str | None) -> Path | None:
    """Where a run's files go beside its store: the store's folder, or for a database URL the
    default folder under the rootdir (`unsaved-<run>.json` when the database cannot be written);
    None when the run records nothing."""
    if target is None:
        return None
    if isinstance(target, Path):
        return target
    return Path(config.rootpath) / DEFAULT_STORE_PATH


def _problem(error: BaseException) -> str:
    """A store failure as the summary shows it: a `StoreError` names the file already; anything
    else (a bug, or something the store did not foresee) is shown with its type."""
    if isinstance(error, StoreError):
        return str(error)
    return f"{type(error).__name__}: {error}"


# -- recording --------------------------------------------------------------------------------


class RunRecorder:
    """The run being recorded: written to the store as trials arrive, finished at session end."""

    def __init__(self, config: pytest.Config) -> None:
        from ..settings import run_config

        self.config = config
        self.target = store_folder(config)
        self.folder = local_folder(config, self.target)
        commit, dirty = git_state(Path(config.rootpath))
        model, base = _agent_identity(config, ran=False)
        rc = run_config(config)
        self.record = RunRecord(
            run_id=new_run_id(),
            started_at=utc_now(),
            git_commit=commit,
            git_dirty=dirty,
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
        plan = regrade.regrade_of(config)
        if plan is not None:  # the source run's agent and commit made the transcripts
            self.record = self.record.model_copy(update=regrade.identity(plan.source, self.record))
        self.store: RunStore | None = None
        self.store_error: str | None = None
        self.begun = False
        self.trials: list[StoredTrial] = []
        self.pending: list[StoredTrial] = []
        self.last_flush = time.monotonic()
        self.finished: RunRecord | None = None
        self.diff: FailingSetDiff | None = None
        self.history: History | None = None
        self.how_chosen = ""
        self.fallback: Path | None = None
        self.written: list[tuple[str, Path]] = []
        self.write_errors: list[str] = []
        self.store_warnings: list[str] = []
        self.lost_connection = 0
        """Operations tried again after the database connection was lost (PostgreSQL)."""

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
        self.config.add_cleanup(lambda: signal.signal(signal.SIGTERM, previous))

    def _fail(self, error: BaseException) -> None:
        if self.store is not None:
            self.lost_connection += self.store.retries
            self.store.close()
        self.store, self.store_error = None, _problem(error)

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
        if self.folder is None:
            return
        # nothing a store does may cost the run: any failure sends it to the unsaved record
        try:
            self.store = RunStore(self.target)
            self.config.add_cleanup(self.store.close)
            self.store.begin_run(self.record)
        except Exception as exc:
            self._fail(exc)

    def add(self, record: TrialRecord) -> None:
        self.begin()
        # whatever the trial holds, the store, the JSON record and the reports take it
        trial = clean_trial(record)
        self.trials.append(trial)
        self.pending.append(trial)
        if (
            len(self.pending) >= FLUSH_EVERY_TRIALS
            or time.monotonic() - self.last_flush > FLUSH_EVERY_S
        ):
            self.flush()

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        self.last_flush = time.monotonic()
        if self.store is None or not batch:
            return
        try:
            self.store.add_trials(self.record.run_id, batch)
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
                "sets": set_results(self.trials),
                "trials": list(self.trials),
            }
        )

    def _try_again(self) -> bool:
        """Once more, at the session's end, before the record goes aside: a store that failed
        during the run (a PostgreSQL server restarting for longer than the retries wait) takes
        the whole record if it answers now. True when it did."""
        assert self.finished is not None
        try:
            store = RunStore(self.target)
            try:
                store.import_record(self.finished)
            finally:
                store.close()
        except Exception as exc:
            self.store_warnings.append(f"tried again at the end of the run: {_problem(exc)}")
            return False
        self.store_warnings.append(
            f"the store failed during the run ({self.store_error}); tried again at the end of "
            f"the run, it took the whole record"
        )
        self.store_error = None
        return True

    def finish(self, session: pytest.Session) -> None:
        if self.finished is not None or not self.begun:
            return
        status = int(session.exitstatus)
        complete = (
            status in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
            and not session.shouldfail
            and not session.shouldstop
            and bool(self.trials)  # a run that finished no trial is no baseline
        )
        self.flush()
        model, base = _agent_identity(self.config, ran=True)
        if regrade.is_regrade(self.record):  # no agent ran: it stays the source run's
            model, base = self.record.agent_model, self.record.agent_base_url
        if (model, base) != (self.record.agent_model, self.record.agent_base_url):
            self.record = self.record.model_copy(
                update={"agent_model": model, "agent_base_url": base}
            )
            if self.store is not None:
                try:
                    self.store.set_agent(self.record.run_id, model, base)
                except Exception as exc:
                    self._fail(exc)
        found = settings(self.config)
        level, max_runs = found.diff_level, found.history_runs
        case_ids = {t.case_id for t in self.trials}
        if self.store is not None and case_ids:
            try:
                self.history = load_history(self.store, self.record, case_ids, max_runs)
            except Exception as exc:  # no history; the run itself can still be stored
                self.store_warnings.append(f"no history could be read: {_problem(exc)}")
        baseline = self.config.stash.get(BASELINE, None)
        pooled = False
        if baseline is not None:
            self.how_chosen = (
                "the run this regrade grades again"
                if self.config.stash.get(BASELINE_IS_SOURCE, False)
                else "named with --commerce-baseline"
            )
            for note in self.config.stash.get(BASELINE_NOTES, []):
                self.store_warnings.append(f"damaged, left out looking for the baseline: {note}")
        elif self.store is not None and self.history is not None:
            for candidate in self.history.candidates(case_ids):
                try:
                    baseline = self.store.load_run(candidate.run_id)
                except StoreError as exc:  # a damaged run is passed over for the next
                    if str(exc) not in self.store.damaged:
                        self.store.damaged.append(str(exc))
                    continue
                except Exception as exc:  # no baseline; the run itself can still be stored
                    self.store_warnings.append(f"no baseline could be read: {_problem(exc)}")
                pooled = baseline is not None
                break
            self.how_chosen = (
                "the latest complete comparable run (same kind and agent model) that ran these "
                "cases"
            )
        base_id = baseline.run_id if baseline is not None else None
        if self.store is not None:
            try:
                self.finished = self.store.finish_run(
                    self.record.run_id,
                    complete=complete,
                    exit_status=status,
                    baseline=base_id,
                    trials=self.trials,
                )
            except Exception as exc:
                self._fail(exc)
        if self.finished is None:
            self.finished = self._in_memory(complete, status).model_copy(
                update={"baseline": base_id}
            )
            if self.target is not None and self.store_error is not None and self._try_again():
                pass  # the store came back: the whole record is in it
            elif self.folder is not None:
                self.fallback = self._write_aside(self.finished, self.history)
        self.finished = with_cases(self.finished, self.history)
        if baseline is not None:
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
                self.write_errors.append(f"could not diff against the baseline: {_problem(exc)}")
            else:
                self.finished = self.finished.model_copy(update={"diff": self.diff.summary()})
        self._write_reports()

    def _write_aside(self, record: RunRecord, history: History | None) -> Path | None:
        """Write the record beside the store (or, failing that, somewhere it can be written)."""
        record = with_cases(record, history)
        name = f"unsaved-{record.run_id}.json"
        for folder in (
            self.folder,
            Path(self.config.rootpath) / ".commerce",
            Path(tempfile.gettempdir()),
        ):
            try:
                return write_record(record, folder / name)
            except Exception:  # a folder that cannot be written: try the next
                continue
        return None

    def _extra_sections(self) -> list[str]:
        found = self.config.hook.pytest_commerce_evals_report_sections(
            config=self.config, run=self.finished
        )
        return [section for sections in found for section in sections or []]

    def _write_reports(self) -> None:
        assert self.finished is not None
        config = self.config
        found = settings(config)
        for value, label, write in (
            (found.json, "JSON run record", lambda p: write_record(self.finished, p)),
            (
                found.html,
                "HTML report",
                lambda p: write_html(
                    render_run_html(
                        self.finished,
                        self.diff,
                        self.how_chosen,
                        self._extra_sections(),
                        self.history,
                    ),
                    p,
                ),
            ),
        ):
            if not value:
                continue
            path = output_path(config, value)
            try:
                self.written.append((label, write(path)))
            except Exception as exc:  # a report is never worth the run: say why and go on
                self.write_errors.append(f"could not write the {label} to {path}: {_problem(exc)}")

    def summary_lines(self) -> list[tuple[str, dict[str, bool]]]:
        out: list[tuple[str, dict[str, bool]]] = []
        run = self.finished
        if run is None:
            return out
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
            out += _damaged_lines(self.store)
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
        if run.trials and run.kind == "regression":
            out.append(("", {}))
            out += [(line, _case_markup(line)) for line in case_lines(run, self.history)]
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


def _damaged_lines(store: RunStore) -> list[tuple[str, dict[str, bool]]]:
    """What reading the store had to leave out, as summary lines."""
    found = store.damaged
    out = [
        (
            f"run store {store.path}: {len(found)} damaged run(s) or trial(s) left out; the "
            "other runs were read",
            {"yellow": True, "bold": True},
        )
    ]
    out += [(f"  {line}", {"yellow": True}) for line in found[:5]]
    if len(found) > 5:
        out.append((f"  … and {len(found) - 5} more", {"yellow": True}))
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


def with_cases(record: RunRecord, history: History | None) -> RunRecord:
    """The record with its per-case results (rate, interval, and the strip when there is
    history) for the JSON record and the reports."""
    strips, flaky = None, []
    if history is not None:
        current = case_rates(record)
        strips = {c: strip(history, c, rate) for c, rate in current.items()}
        flaky = [c for c, rate in current.items() if flaky_case(history, c, rate)]
    return record.model_copy(update={"cases": case_results(record.trials, strips, flaky)})


def _targeted(baseline: RunRecord, run: RunRecord) -> bool:
    """A run that selected some of the baseline's cases (other paths, -k or -m): its diff is
    restricted to the cases it ran."""
    mine = {t.case_id for t in run.trials}
    theirs = {t.case_id for t in baseline.trials}
    a, b = baseline.selection, run.selection
    return mine < theirs and (a.args, a.keyword, a.markexpr) != (b.args, b.keyword, b.markexpr)


# -- hooks ------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    ref = settings(config).baseline
    config.stash[BASELINE] = None
    if ref:
        try:
            path = Path(ref).expanduser()
            store = None if (path.suffix == ".json" or path.is_file()) else _open_store(config)
            config.stash[BASELINE] = _resolve_run(store, ref, "--commerce-baseline")
        except StoreError as exc:
            raise pytest.UsageError(f"--commerce-baseline: {exc}") from None
        if store is not None and store.damaged:
            # the run is diffed against the run found; say what was left out on the way
            config.stash[BASELINE_NOTES] = list(store.damaged)
    source = regrade.start(config, config.stash[BASELINE])  # --commerce-regrade
    if source is not None:  # a regrade diffs against its source run
        config.stash[BASELINE] = source
        config.stash[BASELINE_IS_SOURCE] = True


def pytest_report_header(config: pytest.Config) -> str | None:
    return regrade.header_line(config)


def pytest_itemcollected(item: pytest.Item) -> None:
    regrade.note_collected(item.config, item)


@pytest.hookimpl(trylast=True)  # after -k and -m: what they leave is what a regrade runs
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    regrade.plan_items(config, items)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    found = settings(config)
    checking = found.vacuity or found.lint
    if (
        not hasattr(config, "workerinput")
        and not found.compare
        and not found.flaky
        and not checking  # the vacuity check and the lint are not runs of the agent
    ):
        recorder = config.stash[RECORDER] = RunRecorder(config)
        config.pluginmanager.register(recorder, "commerce_evals.recorder")
        config.pluginmanager.register(_HistoryForWorkers(recorder), "commerce_evals.history")


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    """A run with case trials to record stops here when its store cannot be opened (a folder
    that is a file, a PostgreSQL server that does not answer or refuses the user): running
    anyway would leave the record in `unsaved-<run>.json`, and CI green with no history. (Under
    xdist the controller collects nothing: `_HistoryForWorkers` probes the store when the first
    worker has collected case trials, before any is scheduled.)"""
    config = session.config
    recorder = config.stash.get(RECORDER, None)
    if recorder is None or recorder.target is None or config.option.collectonly:
        return
    from ..runner.items import CaseItem

    if not any(type(item) is CaseItem for item in session.items):
        return
    problem = _store_problem(config, recorder)
    if problem is not None:
        raise pytest.UsageError(problem)


def _store_problem(config: pytest.Config, recorder: RunRecorder) -> str | None:
    """Why the run's store cannot be opened, said for the user; None when it opens."""
    try:
        RunStore(recorder.target).close()
    except Exception as exc:
        where = settings(config).sources.get("store", "default")
        name = BY_NAME["store"].where(where) if where != "default" else "the run store"
        return (
            f"{name}: the run store cannot be opened: {_problem(exc)}; fix it, or record "
            "nothing with --commerce-store=none"
        )
    return None


HISTORY_SOURCE = "commerce_evals_history_source"
"""The key of a worker's `workerinput` that says where the run's history is read from."""


class _HistoryForWorkers:
    """Under pytest-xdist, tell each worker the store folder and the run's identity, so the
    case-history hook answers in the worker that decides a case's adaptive trials."""

    def __init__(self, recorder: RunRecorder) -> None:
        self.recorder = recorder
        self.probed = False

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """The controller's store probe, before xdist schedules a trial: the first worker to
        collect case trials (a `.yaml::` or `.yml::` node id) has it opened once; a store that
        cannot be opened ends the session as a usage error, as without xdist."""
        recorder = self.recorder
        if self.probed or recorder.target is None or recorder.config.option.collectonly:
            return
        if not any(".yaml::" in i or ".yml::" in i for i in ids):
            return
        self.probed = True
        problem = _store_problem(recorder.config, recorder)
        if problem is not None:
            pytest.exit(problem, returncode=pytest.ExitCode.USAGE_ERROR)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        target = self.recorder.target
        if target is not None:
            node.workerinput[HISTORY_SOURCE] = {
                "target": str(target),
                "url": isinstance(target, str),
                "record": self.recorder.record.model_dump(mode="json"),
            }


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    # write the run row before the first trial runs (under xdist the controller has no items:
    # the row is written when the first result arrives)
    recorder = session.config.stash.get(RECORDER, None)
    if session.config.option.collectonly:
        return
    if recorder is not None and any(hasattr(item, "case") for item in session.items):
        recorder.begin()


def pytest_commerce_evals_trial_recorded(config: pytest.Config, record: TrialRecord) -> None:
    recorder = config.stash.get(RECORDER, None)
    if recorder is not None:
        recorder.add(record)


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int):
    result = yield
    recorder = session.config.stash.get(RECORDER, None)
    if recorder is not None:
        recorder.finish(session)
    return result


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    recorder = config.stash.get(RECORDER, None)
    if recorder is None or recorder.finished is None:
        return
    try:
        section = regrade.summary_lines(config, list(recorder.finished.trials))
    except Exception as exc:  # the run is already written; the summary must not end pytest
        section = [(f"commerce-evals: the regrade summary failed: {_problem(exc)}", {"red": True})]
    if section:
        terminalreporter.section("commerce-evals regrade")
        for line, markup in section:
            terminalreporter.write_line(printable(line), **markup)
    terminalreporter.section("commerce-evals run history")
    try:
        lines = recorder.summary_lines()
    except Exception as exc:  # the run is already written; the summary must not end pytest
        lines = [
            (f"commerce-evals: the run history summary failed: {_problem(exc)}", {"red": True})
        ]
    for line, markup in lines:
        terminalreporter.write_line(printable(line), **markup)


# -- model against model ----------------------------------------------------------------------


def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    found = settings(config)
    if found.store_import:
        return run_session(config, _import_main)
    if found.store_copy or found.judge_store_copy:
        return run_session(config, _copy_main)
    if found.compare:
        return run_session(config, _compare_main)
    if settings(config).flaky:
        return run_session(config, _flaky_main)
    return None


# -- history of cases -------------------------------------------------------------------------


def pytest_commerce_evals_case_history(
    config: pytest.Config, case_ids: list[str]
) -> dict[str, list[tuple[int, int]]] | None:
    """Each case's (passed, graded) in the last --commerce-history-runs comparable complete runs,
    newest first; None without a store or a run being recorded, {} when no run knows a case."""
    recorder = config.stash.get(RECORDER, None)
    source = getattr(config, "workerinput", {}).get(HISTORY_SOURCE)
    if recorder is not None and recorder.target is not None:
        target, record, store = recorder.target, recorder.record, recorder.store
    elif recorder is None and source:  # an xdist worker: the controller said where to read
        target = source["target"] if source["url"] else Path(source["target"])
        record, store = RunRecord.model_validate(source["record"]), None
    else:
        return None
    if store is None and not RunStore.exists(target):
        return {}  # no run recorded yet
    opened = None
    try:
        if store is None:
            store = opened = RunStore(target, read_only=True)
        max_runs = settings(config).history_runs
        history = None
        guess = _agent_guess(config) if record.agent_model is None else None
        if guess:
            # before a trial ran, an agent that will ask the plugin for a client is not named
            # yet: its runs were stored under the configured model (the embedded one included)
            found = load_history(
                store, record.model_copy(update={"agent_model": guess}), case_ids, max_runs
            )
            history = found if found.runs else None
        if history is None:
            history = load_history(store, record, case_ids, max_runs)
    except Exception:  # no readable store: no history
        return None
    finally:
        if opened is not None:
            opened.close()
    out = {}
    for case_id in case_ids:
        past = history.past(case_id)
        if past:
            out[case_id] = [(p.passed, p.graded) for p in past]
    return out


def _flaky_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    write = line_writer(config)
    max_runs = settings(config).history_runs
    try:
        store = _open_store(config, read_only=True)
        if store is None:
            write("commerce-evals: --commerce-flaky reads the run store; it is off", red=True)
            return pytest.ExitCode.USAGE_ERROR
        model = agent_label(config)
        latest = (
            store.latest_for_model(model)
            if model
            else next(iter(store.runs(kind="regression", complete=True, limit=1)), None)
        )
        if latest is None:
            models = ", ".join(store.models()) or "none"
            write(
                "commerce-evals: no complete regression run"
                + (f" of agent {model!r}" if model else "")
                + f" in {store.path} (models: {models})",
                red=True,
            )
            return pytest.ExitCode.USAGE_ERROR
        counts = store.case_counts(latest.run_id)
        history = load_history(store, latest, set(counts), max_runs - 1)
    except StoreError as exc:
        write(f"commerce-evals: {exc}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    history.runs.insert(0, latest)
    history.counts[latest.run_id] = counts
    history.max_runs = max_runs
    if reporter is not None:
        reporter.section("commerce-evals: flaky cases")
    runs = history.runs
    write(
        f"agent {latest.agent_model or '(not named)'}: the last {len(runs)} complete regression "
        f"run(s) (up to {max_runs} per case; oldest {runs[-1].run_id}, newest {runs[0].run_id})"
    )
    flaky = []
    for case_id in sorted(counts):
        past = history.past(case_id)
        marks = "".join(reversed([p.mark for p in past]))
        passed = sum(p.passed for p in past)
        graded = sum(p.graded for p in past)
        if is_flaky(marks, passed, graded):
            flaky.append((case_id, marks, format_rate(passed, graded), len(past)))
    write(
        f"flaky ({len(flaky)}): outcome per run, oldest first (✓ every graded trial passed, "
        "✗ one failed); pass rate over those runs with its 95% Wilson interval",
        bold=True,
    )
    width = max([len(c) for c, *_ in flaky] + [4])
    for case_id, marks, rate, n in flaky:
        write(f"  {case_id:<{width}}  {marks:<{max_runs}}  {rate} over {n} runs", yellow=True)
    write(f"not flaky: {len(counts) - len(flaky)} case(s) of the latest run")
    if store.damaged:
        for line, markup in _damaged_lines(store):
            write(line, **markup)


# -- moving history between stores ------------------------------------------------------------


def _copy_target(config: pytest.Config, text: str) -> Path | str:
    """One side of a copy: a database URL as given, a path relative to the rootdir."""
    if is_database_url(text):
        return text.strip()
    path = Path(text.strip()).expanduser()
    return path if path.is_absolute() else Path(config.rootpath) / path


def _copy_sides(config: pytest.Config, option: str, value: str) -> tuple[Path | str, Path | str]:
    src, sep, dst = value.partition(",")
    if not sep or not src.strip() or not dst.strip():
        raise pytest.UsageError(
            f"{option} takes two stores, SRC,DST (each a path or a postgresql:// URL), "
            "separated by a comma"
        )
    return _copy_target(config, src), _copy_target(config, dst)


def _shown(target: Path | str) -> str:
    return public_url(target) if isinstance(target, str) else str(target)


def copy_runs(source: RunStore, dest: RunStore) -> tuple[int, int, int]:
    """Copy every run of `source` into `dest`, oldest first: (runs written, runs already there
    unchanged, trials written). A run already in `dest` with other rows is written over, so
    copying again changes nothing; a damaged run is left out and noted in `source.damaged`."""
    written = same = trials = 0
    for summary in reversed(source.runs()):
        try:
            record = source.load_run(summary.run_id)
        except StoreError as exc:
            source.damaged.append(str(exc))
            continue
        try:
            there: RunRecord | None = dest.load_run(record.run_id)
        except StoreError:
            there = None
        if there is not None and there == record:
            same += 1
            continue
        dest.import_record(record)
        written += 1
        trials += len(record.trials)
    return written, same, trials


def _copy_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    from ..judge.verdict_store import VerdictStore, copy_verdicts

    write = line_writer(config)
    found = settings(config)
    try:
        if found.store_copy:
            src, dst = _copy_sides(config, "--commerce-store-copy", found.store_copy)
            if not RunStore.exists(src):
                raise StoreError(f"{_shown(src)}: no run store here (no run has been recorded)")
            source = RunStore(src, read_only=True)
            dest = RunStore(dst)
            try:
                written, same, trials = copy_runs(source, dest)
            finally:
                source.close()
                dest.close()
            write(
                f"copied {written} run(s) ({trials} trials) from {source.path} to {dest.path}; "
                f"{same} already there unchanged"
            )
            for line, markup in _damaged_lines(source) if source.damaged else []:
                write(line, **markup)
        if found.judge_store_copy:
            src, dst = _copy_sides(config, "--commerce-judge-store-copy", found.judge_store_copy)
            if isinstance(src, Path) and not src.is_file():
                raise StoreError(f"{src}: no verdict store here")
            with VerdictStore(src) as vsrc, VerdictStore(dst) as vdst:
                count = copy_verdicts(vsrc, vdst)
                write(f"copied {count} verdict(s) from {vsrc.path} to {vdst.path}")
    except (StoreError, ValueError, pytest.UsageError) as exc:
        write(f"commerce-evals: {scrub(str(exc))}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    return pytest.ExitCode.OK


def _import_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    """`--commerce-store-import=FILE`: each record read whole before any is stored, so one
    bad file stores nothing and says which."""
    write = line_writer(config)
    target = store_folder(config)
    if target is None:
        write(
            "commerce-evals: --commerce-store-import needs a run store (not --commerce-store=none)",
            red=True,
        )
        return pytest.ExitCode.USAGE_ERROR
    try:
        records = []
        for name in settings(config).store_import:
            path = Path(name).expanduser()
            path = path if path.is_absolute() else Path(config.invocation_params.dir) / path
            records.append((path, load_record(path)))
        store = RunStore(target)
        try:
            for path, record in records:
                store.import_record(record)
                write(
                    f"imported run {record.run_id} ({len(record.trials)} trials, "
                    f"{'complete' if record.complete else 'incomplete'}) from {path} into "
                    f"{_shown(store.path)}"
                )
        finally:
            store.close()
    except (StoreError, ValueError) as exc:
        write(f"commerce-evals: {scrub(str(exc))}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    return pytest.ExitCode.OK


def _compare_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    write = line_writer(config)

    compare = settings(config).compare
    refs = [r for r in compare.split(",") if r.strip()]
    if len(refs) != 2:
        write(
            f"commerce-evals: --commerce-compare takes two runs or models, A,B; got {compare!r}",
            red=True,
        )
        return pytest.ExitCode.USAGE_ERROR
    try:
        needs_store = any(not (Path(r).suffix == ".json" or Path(r).is_file()) for r in refs)
        # comparing only reads: a store on a read-only disk, or one CI mounted read-only, works
        store = _open_store(config, read_only=True) if needs_store else None
        a = _resolve_run(store, refs[0], "A")
        b = _resolve_run(store, refs[1], "B")
    except (StoreError, pytest.UsageError) as exc:
        write(f"commerce-evals: {exc}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    comparison: ModelComparison = compare_runs(a, b)
    if reporter is not None:
        reporter.section("commerce-evals: failing sets side by side")
    for line in comparison.lines():
        write(line, **_compare_markup(line))
    if store is not None and store.damaged:
        for line, markup in _damaged_lines(store):
            write(line, **markup)
    html = settings(config).html
    if html:
        path = output_path(config, html)
        try:
            write(f"HTML report written to {write_html(render_comparison_html(comparison), path)}")
        except OSError as exc:
            write(f"could not write the HTML report to {path}: {exc}", red=True)
            return pytest.ExitCode.USAGE_ERROR
    return pytest.ExitCode.OK


def _compare_markup(line: str) -> dict[str, bool]:
    return {"bold": True} if line.startswith(("failing", "A:", "B:")) else {}


__all__ = ["RunRecorder", "describe_run", "selection", "store_folder"]
