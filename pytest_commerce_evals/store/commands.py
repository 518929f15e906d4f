"""The store's sub-commands, each run in place of the tests (`compat.run_session`):
`--commerce-store-import`, `--commerce-store-copy`, `--commerce-flaky`; and the lookups they and
the comparison share (a run named by id, model or JSON file)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ..compat import line_writer
from ..errors import StoreError
from ..runs import RunRecord
from ..settings import agent_label, settings
from ..stats import format_rate
from .database import is_database_url, public_url, scrub
from .history import (
    is_flaky,
    load_history,
)
from .paths import store_folder
from .record_file import load_record
from .run_store import RunStore, damaged_lines


def resolve_run(store: RunStore | None, ref: str, what: str) -> RunRecord:
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


def open_store(config: pytest.Config, *, read_only: bool = False) -> RunStore | None:
    folder = store_folder(config)
    if folder is None:
        return None
    store = RunStore(folder, read_only=read_only)
    config.add_cleanup(store.close)
    return store


def flaky_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    write = line_writer(config)
    max_runs = settings(config).history_runs
    try:
        store = open_store(config, read_only=True)
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
        for line, markup in damaged_lines(store):
            write(line, **markup)
    return pytest.ExitCode.OK


def _copy_target(config: pytest.Config, text: str) -> Path | str:
    """One side of a copy: a database URL as given, a path relative to the rootdir."""
    if is_database_url(text):
        return text.strip()
    path = Path(text.strip()).expanduser()
    return path if path.is_absolute() else Path(config.rootpath) / path


def copy_sides(config: pytest.Config, option: str, value: str) -> tuple[Path | str, Path | str]:
    src, sep, dst = value.partition(",")
    if not sep or not src.strip() or not dst.strip():
        raise pytest.UsageError(
            f"{option} takes two stores, SRC,DST (each a path or a postgresql:// URL), "
            "separated by a comma"
        )
    return _copy_target(config, src), _copy_target(config, dst)


def shown(target: Path | str) -> str:
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


def copy_run_store(config: pytest.Config, write: Callable[..., None]) -> None:
    """`--commerce-store-copy=SRC,DEST`: every run of SRC not in DEST already."""
    value = settings(config).store_copy
    assert value is not None  # called for a --commerce-store-copy (store/_plugin)
    src, dst = copy_sides(config, "--commerce-store-copy", value)
    if not RunStore.exists(src):
        raise StoreError(f"{shown(src)}: no run store here (no run has been recorded)")
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
    for line, markup in damaged_lines(source) if source.damaged else []:
        write(line, **markup)


def copy_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    """The store copies: each feature copies its own store (`pytest_commerce_evals_copy_stores`:
    the runs here, the judge's verdicts in judge/_plugin)."""
    write = line_writer(config)
    try:
        config.hook.pytest_commerce_evals_copy_stores(config=config, write=write)
    except (StoreError, ValueError, pytest.UsageError) as exc:
        write(f"commerce-evals: {scrub(str(exc))}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    return pytest.ExitCode.OK


def import_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
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
                    f"{shown(store.path)}"
                )
        finally:
            store.close()
    except (StoreError, ValueError) as exc:
        write(f"commerce-evals: {scrub(str(exc))}", red=True)
        return pytest.ExitCode.USAGE_ERROR
    return pytest.ExitCode.OK
