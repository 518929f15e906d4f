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

from ..reports.html import render_comparison_html, render_run_html, write_html
from ..reports.terminal import line_writer
from ..results import TrialRecord
from ..settings import agent_label, settings
from .database import is_database_url, public_url, scrub
from .history import FailingSetDiff, ModelComparison, compare_runs, describe_run, diff_failing_sets
from .paths import output_path, store_folder
from .run_store import (
    DEFAULT_STORE_PATH,
    RunRecord,
    RunStore,
    Selection,
    StoredTrial,
    StoreError,
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
        self.store: RunStore | None = None
        self.store_error: str | None = None
        self.begun = False
        self.trials: list[StoredTrial] = []
        self.pending: list[StoredTrial] = []
        self.last_flush = time.monotonic()
        self.finished: RunRecord | None = None
        self.diff: FailingSetDiff | None = None
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
        if (model, base) != (self.record.agent_model, self.record.agent_base_url):
            self.record = self.record.model_copy(
                update={"agent_model": model, "agent_base_url": base}
            )
            if self.store is not None:
                try:
                    self.store.set_agent(self.record.run_id, model, base)
                except Exception as exc:
                    self._fail(exc)
        baseline = self.config.stash.get(BASELINE, None)
        if baseline is not None:
            self.how_chosen = "named with --commerce-baseline"
            for note in self.config.stash.get(BASELINE_NOTES, []):
                self.store_warnings.append(f"damaged, left out looking for the baseline: {note}")
        elif self.store is not None:
            try:
                baseline = self.store.previous_comparable(self.record)
            except Exception as exc:  # no baseline; the run itself can still be stored
                self.store_warnings.append(f"no baseline could be read: {_problem(exc)}")
            self.how_chosen = (
                "the previous complete run with the same kind, case paths, -k, -m and trials"
                if baseline is not None
                else "no previous complete run with the same kind, case paths, -k, -m and trials: "
                "this run is the baseline for the next"
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
            if self.folder is not None:
                self.fallback = self._write_aside(self.finished)
        if baseline is not None:
            try:
                self.diff = diff_failing_sets(baseline, self.finished)
            except Exception as exc:  # the run is kept whatever the diff makes of it
                self.write_errors.append(f"could not diff against the baseline: {_problem(exc)}")
        self._write_reports()

    def _write_aside(self, record: RunRecord) -> Path | None:
        """Write the record beside the store (or, failing that, somewhere it can be written)."""
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
                        self.finished, self.diff, self.how_chosen, self._extra_sections()
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
                        f"{self.fallback} instead (import it once the store is repaired; see "
                        "docs/run-history.md)",
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
        if self.diff is not None:
            out.append(("", {}))
            out.append(("failing-set diff", {"bold": True}))
            out += [(line, _markup(line)) for line in self.diff.lines(self.how_chosen)]
        elif self.store is not None:
            out.append(
                (
                    f"no previous comparable run (same kind, case paths, -k, -m and trials: "
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
    return {}


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


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    config = session.config
    found = settings(config)
    checking = found.vacuity or found.lint
    if (
        not hasattr(config, "workerinput")
        and not found.compare
        and not checking  # the vacuity check and the lint are not runs of the agent
    ):
        recorder = config.stash[RECORDER] = RunRecorder(config)
        config.pluginmanager.register(recorder, "commerce_evals.recorder")


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
    if found.store_copy or found.judge_store_copy:
        from _pytest.main import wrap_session

        return wrap_session(config, _copy_main)
    if found.compare:
        from _pytest.main import wrap_session

        return wrap_session(config, _compare_main)
    return None


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
