"""Recording a run in shards (docs/shards.md): the id the shards share, a shard's part of the
run (`ShardRecorder`) and the whole run as the merge step finishes it (`MergedRecorder`)."""

from __future__ import annotations

import os
import shlex

import pytest

from ..runs import RunRecord
from ..settings import settings
from .identity import ci_run_id
from .recorder import RunRecorder
from .run_store import RunStore
from .shards import begin_shard, finish_shard, read_plan

__all__ = ["MergedRecorder", "ShardRecorder", "check_shard_options", "merge_command", "shard_run"]


def shard_run(config: pytest.Config) -> tuple[str, str]:
    """The id of the run the shards share and where it came from: `--commerce-run-id`
    (`COMMERCE_RUN_ID`), else the CI run's own (`identity.ci_run_id`). UsageError when neither
    is there."""
    found = settings(config)
    if found.run_id:
        origin = found.sources.get("run_id", "option")
        return found.run_id, ("--commerce-run-id" if origin == "option" else "COMMERCE_RUN_ID")
    derived = ci_run_id(os.environ)
    if derived is None:
        raise pytest.UsageError(
            "--commerce-shard: every shard of one run writes into one run, so it needs the run's "
            "id: give --commerce-run-id=ID (env COMMERCE_RUN_ID), the same in every shard, or "
            "run in GitHub Actions, GitLab CI or Buildkite, whose run ids are read (docs/shards.md)"
        )
    return derived


def check_shard_options(config: pytest.Config) -> None:
    """Shard options that cannot work together stop the run before it starts."""
    found = settings(config)
    if found.run_id and found.shard is None:
        raise pytest.UsageError(
            "--commerce-run-id names the run every shard writes into: give it with "
            "--commerce-shard=K/N (a run of one process gets an id of its own)"
        )
    if found.shard is None:
        return
    if found.store is None:
        raise pytest.UsageError(
            "--commerce-shard writes each shard's trials into one run of the run store, which is "
            "off (--commerce-store=none): give every shard the same store (a postgresql:// URL "
            "for shards on several machines)"
        )
    others = [
        (found.merge, "--commerce-merge"),
        (found.regrade, "--commerce-regrade"),
        (found.live, "--commerce-live"),
        (found.compare, "--commerce-compare"),
        (found.vacuity, "--commerce-vacuity"),
        (found.lint, "--commerce-lint"),
    ]
    for value, name in others:
        if value:
            raise pytest.UsageError(
                f"--commerce-shard splits a run of the cases; {name} is not one (run it once, "
                "without --commerce-shard)"
            )
    shard_run(config)


def merge_command(config: pytest.Config, run_id: str) -> str:
    """The command that gates the run, as a shard says it."""
    return f"pytest --commerce-merge={shlex.quote(run_id)}"


class ShardRecorder(RunRecorder):
    """One shard's part of a run: its trials go into the shared run as they arrive; at its end
    its row says how it ended. It neither diffs nor gates: the merge step does, over every
    shard's trials."""

    def __init__(self, config: pytest.Config) -> None:
        super().__init__(config)
        shard = settings(config).shard
        assert shard is not None
        self.shard = shard
        run_id, self.run_origin = shard_run(config)
        self.record = self.record.model_copy(
            update={"run_id": run_id, "options": {**self.record.options, "shards": shard.total}}
        )
        self.own_errors: list[str] = []
        """The shard's own errors (invalid case entries, other tests that failed): the runner's."""

    def _begin_run(self, store: RunStore) -> None:
        begin_shard(store, self.record, self.shard.index, self.shard.total)

    def empty_slice(self) -> bool:
        """The run's plan gives this shard no case (more shards than cases)."""
        if self.target is None:
            return False
        store = RunStore(self.target, read_only=True) if RunStore.exists(self.target) else None
        if store is None:
            return False
        try:
            found = read_plan(store, self.record.run_id)
        except Exception:
            return False
        finally:
            store.close()
        return found is not None and self.shard.index not in found[1].values()

    def finish(self, session: pytest.Session) -> None:
        if self.finished is not None or self.config.option.collectonly:
            return  # a look at the slice (--collect-only) writes nothing
        status = int(session.exitstatus)
        if not self.begun and status == pytest.ExitCode.USAGE_ERROR:
            return  # refused (another N, other cases, a damaged plan): the store is left as it was
        self.begin()  # a shard that ran no trial still says it ended
        complete = (
            status in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED)
            and not session.shouldfail
            and not session.shouldstop
            and self.stopped is None
        )
        self.flush()
        self._name_the_agent()
        if self.store is not None:
            try:
                finish_shard(
                    self.store,
                    self.record.run_id,
                    self.shard.index,
                    complete=complete,
                    exit_status=status,
                    trials=len({(t.case_id, t.trial) for t in self.trials}),
                    not_started=[
                        {"case_id": c, "trial": n, "set_name": s, "threshold": t}
                        for c, n, s, t in self.not_started
                    ],
                    errors=self.own_errors,
                )
            except Exception as exc:
                self._fail(exc)
        self.finished = self._in_memory(complete, status)
        if self.store_error is not None and self.folder is not None:
            self.fallback = self._write_aside(self.finished, None)
        self._write_reports()

    def summary_lines(self) -> list[tuple[str, dict[str, bool]]]:
        run = self.finished
        if run is None:
            return []
        out = [
            line
            for line in self._store_lines(run)
            if not line[0].startswith(f"run {run.run_id} recorded")
        ]
        if self.store is not None:
            state = "finished" if run.complete else "INCOMPLETE (interrupted or stopped early)"
            out.insert(
                0,
                (
                    f"shard {self.shard} of run {run.run_id} (id from {self.run_origin}) "
                    f"recorded in {self.store.path}: {len(run.trials)} trials, {state}",
                    {},
                ),
            )
            out.append(
                (
                    "the run's sets, failing-set diff and exit status are decided over every "
                    f"shard's trials by the merge step: {merge_command(self.config, run.run_id)}",
                    {"bold": True},
                )
            )
        for label, path in self.written:
            out.append((f"{label} (this shard's part) written to {path}", {}))
        out += [(line, {"red": True}) for line in self.write_errors]
        return out


class MergedRecorder(RunRecorder):
    """A run recorded in shards, finished by the merge step: its stored header and trials, its
    baseline, diff and reports as one runner's would be; incomplete when a shard is missing or
    did not finish (`incomplete` says which)."""

    def __init__(self, config: pytest.Config, store: RunStore, run: RunRecord) -> None:
        super().__init__(config)
        self.record = run.model_copy(
            update={"trials": [], "sets": [], "cases": [], "complete": False, "ended_at": None}
        )
        self.store = store
        self.begun = True
        self.trials = list(run.trials)

    def add(self, record: object) -> None:  # the trials are in the store already
        return

    def _name_the_agent(self) -> None:
        """The agent stays as the shards named it."""
