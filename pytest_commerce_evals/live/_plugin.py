"""pytest hooks of production mode: live-traffic settings, sampled conversations as items, the
trend per dimension (terminal and SVG). The options are declared in `settings.TABLE`.

A sampled conversation becomes a `LiveItem`, a `CaseItem` whose case is built from the capture
(standard dimensions as its rubric) and whose trial replays the captured events instead of
running an agent. So the judge hook, the verdict store, the summary, the run store and the
reports treat it exactly like a regression trial; the run is recorded with kind `live`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..cases.case import Case, Expected, State
from ..compat import line_writer, run_session
from ..results import RubricVerdict, TrialRecord
from ..rubrics import STANDARD
from ..runner.items import CaseItem
from ..runner.trial import grade_trial
from ..runs import RunRecord
from ..settings import settings
from ..store.paths import output_path, store_folder

if TYPE_CHECKING:  # the capture's readers, the trend and promotion: imported by a live run
    from .conversations import Capture, Conversation
    from .redaction import Redactor

LIVE_SET = "live"
_PLACEHOLDER_ID = "live-000-conversation"


@dataclass
class LiveConfig:
    """The live-sampling settings, resolved once from options and ini keys."""

    paths: list[Path]
    rate: float
    seed: str
    dimensions: list[str]
    redactor: Redactor
    threshold: float
    format: str = "auto"
    promote: tuple[str, ...] = ()
    """The values of `--commerce-promote`, as given: the conversations they name
    (`promote.selected_ids`) are the only ones collected, whatever the sample."""


LIVE_CONFIG = pytest.StashKey["LiveConfig | None"]()
CAPTURE = pytest.StashKey["Capture"]()
PROMOTED = pytest.StashKey[tuple[list[str], list[str]]]()


# -- settings ---------------------------------------------------------------------------------


def redactor_from_config(config: pytest.Config) -> Redactor:
    """The redaction of ini `commerce_redact` and `commerce_redact_patterns`."""
    from .redaction import Redactor

    found = settings(config)
    kinds = [k for k in found.redact if k.lower() != "none"]
    try:
        return Redactor(kinds=kinds, patterns=dict(found.redact_patterns))
    except ValueError as exc:
        raise pytest.UsageError(f"ini commerce_redact: {exc}") from None


def live_config(config: pytest.Config) -> LiveConfig | None:
    return config.stash.get(LIVE_CONFIG, None)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    found = settings(config)
    paths = found.live
    promote = tuple(p for p in found.promote if p.strip())
    if found.promote and not paths:
        raise pytest.UsageError(
            "--commerce-promote names conversations of captured traffic: give the capture with "
            "--commerce-live=PATH"
        )
    if not paths:
        config.stash[LIVE_CONFIG] = None
        return
    here = Path(config.invocation_params.dir)
    resolved = [(here / p).resolve() for p in paths]
    missing = [str(p) for p in resolved if not p.exists()]
    if missing:
        raise pytest.UsageError(f"--commerce-live: no such file or folder: {', '.join(missing)}")
    config.stash[LIVE_CONFIG] = LiveConfig(
        paths=resolved,
        rate=found.sample_rate,
        seed=found.sample_seed,
        dimensions=list(found.live_dimensions or STANDARD),
        redactor=redactor_from_config(config),
        threshold=found.live_threshold,
        format=found.live_format,
        promote=promote,
    )
    # live mode judges captured traffic only: the capture files are what pytest collects
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        others = [a for a in config.args if (here / a.split("::")[0]).resolve() not in resolved]
        if others:
            raise pytest.UsageError(
                "--commerce-live judges captured traffic only; drop the other paths "
                f"({' '.join(others)}) or run them separately"
            )
    config.args[:] = [str(p) for p in resolved]


# -- collection -------------------------------------------------------------------------------


def capture_for(config: pytest.Config) -> Capture:
    """The sample, read once per process (every capture file, in one pass)."""
    from .reading import read_capture

    capture = config.stash.get(CAPTURE, None)
    if capture is None:
        lc = live_config(config)
        assert lc is not None
        root = Path(config.rootpath)

        def display(path: Path) -> str:
            return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)

        capture = config.stash[CAPTURE] = read_capture(
            lc.paths,
            rate=1.0 if lc.promote else lc.rate,  # the conversations named, sampled or not
            seed=lc.seed,
            redactor=lc.redactor,
            display=display,
            format=lc.format,
        )
    return capture


def promoted_ids(config: pytest.Config) -> tuple[list[str], list[str]]:
    """The conversations `--commerce-promote` names: (ids in the capture, names not in it)."""
    found = config.stash.get(PROMOTED, None)
    if found is None:
        from .promote import selected_ids

        lc = live_config(config)
        assert lc is not None
        ids = [c.conversation_id for c in capture_for(config).conversations]
        found = config.stash[PROMOTED] = selected_ids(lc.promote, ids)
    return found


def _under(path: Path, roots: list[Path]) -> bool:
    return any(path == r or (r.is_dir() and path.is_relative_to(r)) for r in roots)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    lc = live_config(parent.config)
    if lc is None or not _under(file_path.resolve(), lc.paths):
        return None
    suffixes = (".jsonl", ".json") if lc.format == "otel" else (".jsonl",)
    if file_path.suffix not in suffixes and file_path.resolve() not in lc.paths:
        return None
    return LiveCaptureFile.from_parent(parent, path=file_path)


class LiveCaptureFile(pytest.File):
    """A capture file; yields one item per sampled conversation that starts in it."""

    def collect(self):
        from .escaping import terminal_text

        config = self.config
        lc = live_config(config)
        assert lc is not None
        here = Path(self.path).resolve()
        rubric = {name: "standard" for name in lc.dimensions}
        promoted = set(promoted_ids(config)[0]) if lc.promote else None
        for conversation in capture_for(config).conversations:
            if (Path(config.rootpath) / conversation.path).resolve() != here:
                continue
            if promoted is not None and conversation.conversation_id not in promoted:
                continue
            yield LiveItem.from_parent(
                self,
                name=terminal_text(conversation.conversation_id),  # pytest prints it as is
                case=conversation_case(conversation, rubric),
                trial=1,
                trials=1,
                set_name=LIVE_SET,
                threshold=lc.threshold,
                line=conversation.line,
                display=conversation.path,
                conversation=conversation,
            )


def conversation_case(conversation: Conversation, rubric: dict[str, str]) -> Case:
    """A conversation as the case the judge and the reports expect (no code expectations)."""
    base = Case(
        id=_PLACEHOLDER_ID,
        priority="medium",
        difficulty="medium",
        tags=["live", *(["operator"] if conversation.role == "operator" else [])],
        state=State(),
        turns=["-"],
        expected=Expected(rubric=rubric),
    )
    # conversation ids need not follow the case id pattern: they are the agent's, not ours; one
    # holding a control character is the case id with it escaped, as every report shows it
    from .escaping import terminal_text

    return base.model_copy(
        update={
            "id": terminal_text(conversation.conversation_id),
            "turns": conversation.user_messages,
        }
    )


class LiveItem(CaseItem):
    """One sampled live conversation, judged on the live dimensions."""

    def __init__(self, *, conversation: Conversation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.conversation = conversation
        self.user_properties.append(("started_at", conversation.started_at.isoformat()))

    def compute(self) -> TrialRecord:
        """The trial of a captured conversation: its events stand for the agent's turns, and
        they are graded as a regression trial's are (`runner.trial.grade_trial`)."""
        result = TrialRecord.begin(self.spec)
        result.turns = self.conversation.events
        return grade_trial(self.config, self.case, result)

    def reportinfo(self):
        from .escaping import terminal_text

        return self.path, self.line - 1, f"live conversation {terminal_text(self.case.id)}"


# -- recording the run as a live run ----------------------------------------------------------


def pytest_commerce_evals_run_metadata(config: pytest.Config) -> dict | None:
    """Marks a live run: its kind, and what was sampled from which traffic."""
    lc = live_config(config)
    if lc is None:
        return None
    live: dict[str, Any] = {
        "paths": [str(p) for p in lc.paths],
        "sample_rate": lc.rate,
        "sample_seed": lc.seed,
        "dimensions": lc.dimensions,
        "redact": list(lc.redactor.kinds) + sorted(lc.redactor.patterns),
    }
    capture = capture_for(config)
    live.update(
        conversations_seen=capture.conversations_seen,
        conversations_sampled=len(capture.conversations),
        lines_read=capture.lines,
        lines_skipped=len(capture.problems),
    )
    return {"kind": "live", "options": {"live": live}}


# -- reporting --------------------------------------------------------------------------------


def _trend_wanted(config: pytest.Config) -> bool:
    found = settings(config)
    return bool(found.trend or found.trend_svg)


def _trend_lines(config: pytest.Config) -> tuple[list[str], str | None]:
    """The trend's lines and where the SVG was written (None when not asked for)."""
    from .trend import compute_trend, render_trend_svg

    folder = store_folder(config)
    if folder is None:
        return ["no run store (--commerce-store=none): no live runs to trend"], None
    lc = live_config(config)
    limit = settings(config).trend_runs
    runs, damaged, error = _stored_live_runs(folder, limit)
    if error is not None:
        return [f"cannot read the run store: {error}"], None
    dims = lc.dimensions if lc is not None else None
    trend = compute_trend(runs, dims)
    lines = trend.lines()
    if damaged:
        lines.append(f"{len(damaged)} damaged run(s) or trial(s) left out of the trend:")
        lines += [f"  {line}" for line in damaged[:5]]
    svg = settings(config).trend_svg
    written = None
    if svg:
        path = output_path(config, svg)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(render_trend_svg(trend), encoding="utf-8")
        written = str(path)
    return lines, written


def _stored_live_runs(
    folder: Path | str, limit: int
) -> tuple[list[tuple[str, str, list[RubricVerdict]]], list[str], str | None]:
    """(live runs, what was damaged and left out, why the store could not be read at all). The
    trend only reads: the store is opened read-only, and no store yet means no runs."""
    from ..errors import StoreError
    from ..store.run_store import RunStore
    from .trend import read_live_runs

    if not RunStore.exists(folder):
        return [], [], None
    try:
        store = RunStore(folder, read_only=True)
        try:
            return read_live_runs(store, limit=limit), store.damaged, None
        finally:
            store.close()
    except (StoreError, OSError) as exc:
        return [], [], str(exc)


def _write_trend(write: Any, config: pytest.Config) -> None:
    lines, svg = _trend_lines(config)
    for line in lines:
        markup = (
            {"red": True, "bold": True}
            if "DOWN" in line
            else ({"green": True} if "▲" in line else {})
        )
        write(line, **markup)
    if svg:
        write(f"trend chart written to {svg}")


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    lc = live_config(config)
    if lc is not None:
        from .escaping import terminal_text

        capture = capture_for(config)
        terminalreporter.section("commerce-evals live traffic")

        def write_line(line: str, **markup: bool) -> None:
            # ids, paths and messages come from traffic: no control character reaches the terminal
            terminalreporter.write_line(terminal_text(line), **markup)

        write_line(
            f"{len(capture.conversations)} of {capture.conversations_seen} conversations sampled "
            f"(rate {lc.rate:g}, seed {lc.seed!r}) from {capture.lines} lines; judged on "
            f"{len(lc.dimensions)} dimension(s): {', '.join(lc.dimensions)}"
        )
        if capture.problems:
            write_line(f"{len(capture.problems)} unusable line(s) skipped:", yellow=True, bold=True)
            for problem in capture.problems[:50]:
                write_line(f"  {problem}", yellow=True)
            if len(capture.problems) > 50:
                write_line(f"  … and {len(capture.problems) - 50} more")
        for line, markup in promotion_lines(config, lc):
            write_line(line, **markup)
    if _trend_wanted(config) and (lc is not None):
        terminalreporter.section("commerce-evals live trend")
        _write_trend(terminalreporter.write_line, config)


# -- promoting flagged conversations to cases --------------------------------------------------

LIVE_VERDICTS = pytest.StashKey[dict[str, TrialRecord]]()


def pytest_commerce_evals_trial_recorded(config: pytest.Config, record: TrialRecord) -> None:
    if live_config(config) is not None:
        config.stash.setdefault(LIVE_VERDICTS, {})[record.case_id] = record


def _shown(config: pytest.Config, path: Path) -> str:
    root = Path(config.invocation_params.dir)
    return path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)


def conversation_case_id(conversation: Conversation) -> str:
    """The case id a conversation is recorded under (`conversation_case`)."""
    from .escaping import terminal_text

    return terminal_text(conversation.conversation_id)


def conversation_ids(config: pytest.Config, case_ids: Iterable[str]) -> list[tuple[str, str]]:
    """(case id, conversation id) of each case id of the capture's conversations, sorted."""
    by_case = {
        conversation_case_id(c): c.conversation_id for c in capture_for(config).conversations
    }
    return sorted((c, by_case[c]) for c in set(case_ids) if c in by_case)


def promotion_lines(config: pytest.Config, lc: LiveConfig) -> list[tuple[str, dict]]:
    """With `--commerce-promote`: each named conversation written as a case (or why not).
    Otherwise: the flagged conversations (a failed verdict) with the command that promotes
    each."""
    from .promote import precondition, promote_command, write_promoted

    records = config.stash.get(LIVE_VERDICTS, {})
    to = settings(config).promote_to
    capture = capture_for(config)
    if not lc.promote:
        flagged = conversation_ids(config, (c for c, r in records.items() if r.outcome == "fail"))
        if not flagged:
            return []
        paths = [_shown(config, p) for p in lc.paths]
        head = f"{len(flagged)} flagged conversation(s); promote one to a case for review:"
        return [(head, {"bold": True})] + [
            (f"  {case}: {promote_command(paths, cid, to)}", {}) for case, cid in flagged[:20]
        ]
    wanted, missing = promoted_ids(config)
    named = set(wanted)
    found = [c for c in capture.conversations if c.conversation_id in named]
    out: list[tuple[str, dict]] = [
        (f"--commerce-promote: no conversation {i!r} in the capture", {"red": True})
        for i in missing
    ]
    index = config.hook.pytest_commerce_evals_fixture_index(config=config)
    known = None
    if index is not None and getattr(index, "ids", None):
        known = set(index.ids) | set(index.poisoned) | set(index.benign_eval_only)

    def state_of(conversation: Conversation) -> State:
        mapped = config.hook.pytest_commerce_evals_promote_state(
            config=config, messages=conversation.user_messages, turns=conversation.events
        )
        return mapped if isinstance(mapped, State) else precondition(conversation)

    folder = output_path(config, to)
    passed_over: list[tuple[Path, str]] = []
    try:
        verdicts = {
            c.conversation_id: list(records[case_id].verdicts)
            for c in found
            if (case_id := conversation_case_id(c)) in records
        }
        written = write_promoted(
            found,
            verdicts,
            folder,
            dimensions=lc.dimensions,
            customer=settings(config).promote_customer,
            known_ids=known,
            state_of=state_of,
            passed_over=passed_over,
        )
    except OSError as exc:  # a folder that cannot be written: said, the run's outcome kept
        return [*out, (f"--commerce-promote: cannot write to {folder}: {exc}", {"red": True})]
    out += [
        (
            f"--commerce-promote: {_shown(config, path)}: {why}; not read as a case file when "
            "numbering the case",
            {"yellow": True},
        )
        for path, why in passed_over
    ]
    for done in written:
        if done.path is None:
            problem = f"--commerce-promote: {done.conversation_id!r} not promoted: {done.problem}"
            out.append((problem, {"red": True}))
        else:
            shown = _shown(config, done.path)
            line = f"promoted {done.conversation_id} to {shown} (skipped until reviewed)"
            out.append((line, {"green": True}))
    return out


def pytest_cmdline_main(config: pytest.Config) -> int | pytest.ExitCode | None:
    if _trend_wanted(config) and not settings(config).live:
        return run_session(config, _trend_main)
    return None


def _trend_main(config: pytest.Config, session: pytest.Session) -> int | pytest.ExitCode:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    write = line_writer(config)
    if reporter is not None:
        reporter.section("commerce-evals live trend")
    _write_trend(write, config)
    return pytest.ExitCode.OK


def pytest_commerce_evals_report_sections(
    config: pytest.Config, run: RunRecord
) -> list[str] | None:
    """The trend chart in the HTML report of a live run: earlier live runs plus this one."""
    if run.kind != "live":
        return None
    from .promote import flagged_html_section
    from .trend import compute_trend, trend_html_section

    runs: list[tuple[str, str, list[RubricVerdict]]] = []
    folder = store_folder(config)
    if folder is not None:
        limit = settings(config).trend_runs
        runs = _stored_live_runs(folder, limit)[0]
    runs = [r for r in runs if r[0] != run.run_id]
    runs.append((run.run_id, run.started_at, [v for t in run.trials for v in t.verdicts]))
    lc = live_config(config)
    sections = [trend_html_section(compute_trend(runs, lc.dimensions if lc else None))]
    flagged = (
        conversation_ids(config, (t.case_id for t in run.trials if t.outcome == "fail"))
        if lc is not None
        else []
    )
    if flagged and lc is not None:
        paths = [_shown(config, p) for p in lc.paths]
        sections.append(flagged_html_section(flagged, paths, settings(config).promote_to))
    return sections
