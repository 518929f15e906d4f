"""A production conversation promoted to a regression case: the conversation's last turn becomes
the turn under test, what the earlier turns left behind becomes the case's injected state, and
what the agent did in production becomes proposed expectations, written beside the evidence, for
a person to review.

- `precondition`: the state the earlier turns left (products shown, the cart, memory written,
  the change queue), by the default mapping of the reference tools' events; a team maps its own
  with the hook `pytest_commerce_evals_promote_state`.
- `evidence`: what the graded turn did: its writes, its reads.
- `promoted_yaml`: the case file, with `skip: "promoted: review the expectations"` (the lint
  reports it until a person removes the skip), the failed live verdicts as its rubric, the IDs
  that are not fixture IDs listed for the author, and the conversation id kept only as a note.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from ..cases.case import PROMOTED_SKIP, StagedChange, State
from ..events import CartUpdate, ChangeUpdate, ToolCall, ToolResult, Ui
from ..results import RubricVerdict
from .conversations import Conversation
from .escaping import _Dumper, _quoted, shell_word, terminal_text

__all__ = [
    "PROMOTED_SKIP",
    "Evidence",
    "Promoted",
    "evidence",
    "flagged_html_section",
    "is_read",
    "next_case_id",
    "precondition",
    "promote_command",
    "promoted_yaml",
    "selected_ids",
    "terminal_text",
    "write_promoted",
]


READS = {"search_products", "get_product_details", "get_order", "list_orders",
         "list_staged_changes", "load_skill", "present_suggestions"}  # fmt: skip
_READ_PREFIXES = ("get_", "list_", "search_", "find_", "lookup_", "read_", "check_", "show_")
_ID_KEYS = ("product_id", "order_id")


def is_read(tool: str) -> bool:
    """Whether a tool only reads (the reference tools' reads, or a read by its name's verb)."""
    return tool in READS or tool.startswith(_READ_PREFIXES)


# -- the precondition ----------------------------------------------------------------------------


def _product_ids(node: Any, out: list[str]) -> None:
    """Product IDs in a tool result: values under `product_id`/`product_ids`, and the `id` of a
    record that has a `title` or a `price` (a product as tools show one)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "product_id" and isinstance(value, str):
                out.append(value)
            elif key == "product_ids" and isinstance(value, list):
                out += [v for v in value if isinstance(v, str)]
            elif key == "id" and isinstance(value, str) and ("title" in node or "price" in node):
                out.append(value)
            else:
                _product_ids(value, out)
    elif isinstance(node, list):
        for item in node:
            _product_ids(item, out)


def precondition(conversation: Conversation, upto: int | None = None) -> State:
    """The state the turns before turn `upto` (default: the last) left, read from their events:
    the products tools showed (`seen_products`), the cart of the last cart update, the facts
    saved to memory (and not forgotten since) and the change queue of the last change update."""
    turns = conversation.events[: len(conversation.events) - 1 if upto is None else upto]
    seen: list[str] = []
    cart = None
    memory: list[str] = []
    changes = None
    for events in turns:
        calls = {e.call_id: e for e in events if isinstance(e, ToolCall)}
        for event in events:
            if isinstance(event, ToolResult) and event.status == "ok":
                _product_ids(event.result, seen)
                call = calls.get(event.call_id)
                fact = call.arguments.get("fact") if call is not None else None
                if call is not None and isinstance(fact, str):
                    fact = fact.strip()  # stored and matched as the reference backend does
                    if call.name == "save_memory" and fact not in memory:
                        memory.append(fact)
                    elif call.name == "forget_memory":
                        needle = fact.lower()
                        memory = [
                            m for m in memory if not (needle in m.lower() or m.lower() in needle)
                        ]
            elif isinstance(event, Ui):
                _product_ids(event.payload, seen)
            elif isinstance(event, CartUpdate):
                cart = [line.model_copy() for line in event.items]
            elif isinstance(event, ChangeUpdate):
                changes = [c for c in event.changes if c.status in ("staged", "approved")]
    return State(
        seen_products=list(dict.fromkeys(seen)),
        cart=cart or [],
        memory=memory,
        staged_changes=[StagedChange(**c.model_dump()) for c in changes or []],
    )


# -- the evidence ----------------------------------------------------------------------------


@dataclass
class Evidence:
    """What the graded turn did: each call with its outcome, split into writes and reads."""

    writes: list[tuple[ToolCall, str]] = field(default_factory=list)
    reads: list[tuple[ToolCall, str]] = field(default_factory=list)
    replied: str = ""


def evidence(conversation: Conversation) -> Evidence:
    """The calls and reply of the conversation's last turn."""
    events = conversation.events[-1] if conversation.events else []
    outcome = {e.call_id: e.status for e in events if isinstance(e, ToolResult)}
    found = Evidence()
    for event in events:
        if isinstance(event, ToolCall):
            pair = (event, outcome.get(event.call_id, "no result"))
            (found.reads if is_read(event.name) else found.writes).append(pair)
    found.replied = " ".join(
        getattr(e, "text", "").strip() for e in events if getattr(e, "type", "") == "text"
    ).strip()
    return found


# -- the case file -------------------------------------------------------------------------------


def _kind(mode: int) -> str:
    """What a file system entry is, in words, from its `st_mode`."""
    kinds = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
             (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISLNK, "a symbolic link"))  # fmt: skip
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _case_text(path: Path) -> str | None:
    """A case file's text, or None when `path` is not a regular file (a named pipe, a device, a
    folder: never opened for reading, which could wait forever) or is larger than any case file
    the loader reads. Opened without waiting, and checked again once open."""
    from ..cases.file_text import MAX_FILE_BYTES

    if not stat.S_ISREG(path.stat().st_mode):
        return None
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        found = os.fstat(fh.fileno())
        if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_FILE_BYTES:
            return None
        return fh.read(MAX_FILE_BYTES + 1).decode("utf-8", errors="replace")


def _flow_of(folder: Path) -> str:
    flow = re.sub(r"[^a-z0-9_]", "_", folder.name.lower()).strip("_")
    return flow if flow and flow[0].isalpha() else "promoted"


def next_case_id(
    folder: Path, behavior: str, passed_over: list[tuple[Path, str]] | None = None
) -> str:
    """`<flow>-<nnn>-<behavior>`: the flow is the folder's name (lower-case, `promoted` when it
    cannot be one), the number the next one free among the folder's case files: the ids they
    hold, and their names. An entry named like a case file that is not a regular file (a named
    pipe, a device, a folder) is never opened; it is added to `passed_over` with what it is."""
    flow = _flow_of(folder)
    taken = {0}
    numbered = re.compile(rf"\b{re.escape(flow)}-(\d{{3}})-")
    if folder.is_dir():
        for path in sorted(folder.glob("*.y*ml")):
            taken |= {int(n) for n in numbered.findall(path.name)}
            try:
                text = _case_text(path)
            except OSError as exc:
                text, why = None, f"cannot be read ({exc.strerror or type(exc).__name__})"
            else:
                why = "" if text is not None else _entry_kind(path)
            if text is None:
                if passed_over is not None:
                    passed_over.append((path, why))
                continue
            taken |= {int(n) for n in re.findall(rf"\bid:\s*{re.escape(flow)}-(\d{{3}})-", text)}
    slug = re.sub(r"[^a-z0-9]+", "-", behavior.lower()).strip("-") or "conversation"
    return f"{flow}-{max(taken) + 1:03d}-{slug}"


def _entry_kind(path: Path) -> str:
    try:
        found = path.stat()
    except OSError as exc:
        return f"cannot be read ({exc.strerror or type(exc).__name__})"
    if stat.S_ISREG(found.st_mode):
        return "larger than a case file may be"
    return _kind(found.st_mode)


def _flow(value: Any) -> str:
    """A value as one line of YAML flow style (a lone string as a JSON string: valid YAML),
    however long, whatever characters its strings hold."""
    if isinstance(value, str):
        return _quoted(value)
    if not isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    text = yaml.dump(
        value,
        Dumper=_Dumper,
        default_flow_style=True,
        width=sys.maxsize,
        allow_unicode=True,
        sort_keys=False,
    )
    return text.strip()


def _block(value: Any, indent: str) -> list[str]:
    text = yaml.dump(
        value,
        Dumper=_Dumper,
        default_flow_style=False,
        width=96,
        allow_unicode=True,
        sort_keys=False,
    )
    return [indent + line for line in text.rstrip("\n").split("\n")]


def _comment(text: str, indent: str, width: int = 96) -> list[str]:
    """`text` as YAML comment lines: split at its white space (line breaks included), each
    character that is not printable written as its escape."""
    words, lines, line = [terminal_text(w) for w in text.split()], [], ""
    for word in words:
        if line and len(indent) + 2 + len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        lines.append(line)
    return [f"{indent}# {item}" for item in lines]


def _ids_in(state: State, proposed: Iterable[ToolCall]) -> list[str]:
    ids = list(state.seen_products) + [line.product_id for line in state.cart]
    ids += [c.product_id for c in state.staged_changes if c.product_id]
    for call in proposed:
        ids += [v for k, v in call.arguments.items() if k in _ID_KEYS and isinstance(v, str)]
    return list(dict.fromkeys(ids))


def promoted_yaml(
    conversation: Conversation,
    case_id: str,
    *,
    state: State,
    failed: Sequence[RubricVerdict] = (),
    dimensions: Sequence[str] = (),
    customer: Literal["turns", "user"] = "turns",
    known_ids: set[str] | None = None,
) -> str:
    """The case file of a promoted conversation (one case, as a YAML list), comments and all."""
    found = evidence(conversation)
    messages = conversation.user_messages
    earlier = len(messages) - 1
    out = _comment(
        f"Promoted from a live conversation ({conversation.path}:{conversation.line}). Review "
        "the expectations — each proposed key sits beside what the agent did in production — "
        "then remove the skip.",
        "",
    )
    unknown = _ids_in(state, (c for c, _ in found.writes))
    if known_ids is None:
        out += _comment(
            "No fixture index (pytest_commerce_evals_fixture_index): check each ID below is a "
            "fixture ID: " + (", ".join(unknown) or "none named"),
            "",
        )
    else:
        missing = [i for i in unknown if i not in known_ids]
        if missing:
            out += _comment(
                "IDs that are not fixture IDs (map each to a fixture, or the case cannot run): "
                + ", ".join(missing),
                "",
            )
    out += [f"- id: {case_id}", "  priority: high", "  difficulty: medium"]
    role = ["operator"] if conversation.role == "operator" else []
    out.append(f"  tags: {_flow(['promoted', *role])}")
    out.append(f"  skip: {_flow(PROMOTED_SKIP)}")
    shown = state.model_dump(mode="json", exclude_defaults=True)
    if shown:
        out.append("  state:")
        out += _comment(f"what the {earlier} earlier turn(s) left behind", "    ")
        out += _block(shown, "    ")
    last = messages[-1] if messages else ""
    if customer == "user":
        said = "; ".join(json.dumps(m, ensure_ascii=False) for m in messages[:-1]) or "nothing"
        brief = (
            "You are a customer of the store, chatting with its assistant. Earlier in this "
            f"conversation you said: {said}. Ask what your opening asks, answer what the "
            "assistant asks from what you know, and end the conversation once it has answered."
        )
        out += ["  user:", f"    instructions: {_flow(brief)}", f"    opening: {_flow(last)}"]
        out.append("    max_turns: 3")
    else:
        out.append(f"  turns: {_flow([last])}")
    expected_at = len(out)
    out.append("  expected:")
    if found.writes:
        for call, status in found.writes:
            out += _comment(
                f"in production the agent called {call.name} {_flow(call.arguments)} "
                f"({status}) in this turn; keep it below if it should not have",
                "    ",
            )
        out.append("    never_calls_with:")
        out += [
            f"      - {_flow({'tool': c.name, 'arguments': c.arguments})}" for c, _ in found.writes
        ]
    reads = list(dict.fromkeys(c.name for c, _ in found.reads if c.name != "present_suggestions"))
    if reads:
        out += _comment(
            "the reads it made in production; keep the one the answer needs (or name the read "
            "it should have made)",
            "    ",
        )
        out.append(f"    calls_one_of: {_flow(reads)}")
    if found.replied:
        out += _comment(f"it replied: {found.replied[:300]}", "    ")
    judged = [v for v in failed if v.outcome == "fail"]
    if judged or dimensions:
        out.append("    rubric:")
    for verdict in judged:
        out += _comment(f"the live judge: FAIL — {verdict.reasoning or 'no reasoning'}", "      ")
        out += _block({verdict.dimension: "standard"}, "      ")
    if not judged and dimensions:
        out += _comment(
            "no live verdict failed (or none was judged): the live dimensions", "      "
        )
        out += _block(dict.fromkeys(dimensions, "standard"), "      ")
    if not any(line.startswith("    ") and not line.lstrip().startswith("#")
               for line in out[expected_at + 1 :]):  # fmt: skip
        del out[expected_at:]  # nothing to expect: the key is left out
    note = (
        f"Promoted from live conversation {conversation.conversation_id}; {earlier} earlier "
        "turn(s) folded into state."
    )
    out.append(f"  notes: {_flow(note)}")
    return "\n".join(out) + "\n"


# -- the command -------------------------------------------------------------------------------


def promote_command(live_paths: Sequence[str], conversation_id: str, to: str) -> str:
    """The command that promotes one conversation of this capture into folder `to`: each word
    quoted for a POSIX shell (`shell_word`), so an id with spaces, quotes, a comma or control
    characters is passed as it is, and the line shows no control character."""
    lives = " ".join(shell_word(f"--commerce-live={p}") for p in live_paths)
    promote = shell_word(f"--commerce-promote={conversation_id}")
    return f"pytest {lives} {promote} {shell_word(f'--commerce-promote-to={to}')}"


def selected_ids(values: Sequence[str], ids: Iterable[str]) -> tuple[list[str], list[str]]:
    """The conversations `--commerce-promote` names: (ids found, names not found). A value that
    is a conversation id of the capture as a whole names that conversation (so an id holding a
    comma is named by itself); any other value is a comma-separated list of ids, each stripped
    of surrounding white space."""
    known = set(ids)
    found: list[str] = []
    missing: list[str] = []
    for value in values:
        names = [value] if value in known else [i.strip() for i in value.split(",") if i.strip()]
        for name in names:
            (found if name in known else missing).append(name)
    return list(dict.fromkeys(found)), list(dict.fromkeys(missing))


@dataclass
class Promoted:
    """One conversation's promotion: the case file written, or why none was."""

    conversation_id: str
    path: Path | None = None
    problem: str | None = None


class _NotWritten(Exception):
    """Why a case file was not written; the folder is as it was."""


_NO_HARD_LINKS = {errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK,
                  errno.EXDEV}  # fmt: skip
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)


def _there(path: Path) -> str:
    """What is already at `path`, in words (a link with its target)."""
    try:
        found = path.lstat()
    except OSError:
        return "something"
    if stat.S_ISLNK(found.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            return "a symbolic link"
        return f"a symbolic link to {target}"
    return "a file" if stat.S_ISREG(found.st_mode) else _kind(found.st_mode)


def _exists(path: Path) -> _NotWritten:
    return _NotWritten(
        f"{path} already exists ({_there(path)}); nothing was written through it or over it: "
        "move it away, or promote into another folder with --commerce-promote-to"
    )


def _write_new(path: Path, data: bytes) -> None:
    fd = os.open(path, _NEW_FILE, 0o644)
    with os.fdopen(fd, "wb") as out:
        out.write(data)


def _create_case_file(path: Path, text: str, case_id: str) -> None:
    """Write `text` as the new case file `path`, or raise `_NotWritten`.

    The text is written under a temporary name in the same folder (created with `O_EXCL` and
    `O_NOFOLLOW`: never through a link, never over a file), read back with the case loader
    (it must load as the one case `case_id`), and only then linked to `path`. A link fails
    when anything is at `path` already (a file, a folder, a symbolic link, dangling or not), so
    nothing is ever written through a link or over another file. On a file system without hard
    links the file is created at `path` itself, with `O_EXCL` and `O_NOFOLLOW`."""
    from ..cases.loader import load_case_file

    data = text.encode("utf-8")
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            _write_new(tmp, data)
        except FileExistsError:
            continue
        break
    else:  # pragma: no cover - a hundred random names all taken
        raise _NotWritten(f"no free temporary name for {path} in its folder")
    try:
        loaded = load_case_file(tmp, display=path)
        if loaded.problems or [c.case.id for c in loaded.cases] != [case_id]:
            found = "; ".join(terminal_text(str(p)) for p in loaded.problems[:3])
            raise _NotWritten(
                f"the case written for it does not load as case {case_id} "
                f"({found or f'{len(loaded.cases)} case(s) read'}); nothing was written"
            )
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise _exists(path) from None
        except OSError as exc:
            if exc.errno not in _NO_HARD_LINKS:
                raise
            try:
                _write_new(path, data)
            except FileExistsError:
                raise _exists(path) from None
    finally:
        tmp.unlink(missing_ok=True)


def write_promoted(
    conversations: Sequence[Conversation],
    verdicts: dict[str, list[RubricVerdict]],
    folder: Path,
    *,
    dimensions: Sequence[str],
    customer: Literal["turns", "user"],
    known_ids: set[str] | None,
    state_of: Any,
    passed_over: list[tuple[Path, str]] | None = None,
) -> list[Promoted]:
    """Write one case file per conversation into `folder` (made if missing); `state_of(c)` is
    the precondition of conversation `c`. Returns, for each conversation, its file or why none
    was written (a file already at its name, a case that would not load). Entries named like
    case files that are not regular files are added to `passed_over` (`next_case_id`). An
    `OSError` of the folder itself (it cannot be made or written) is raised."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for conversation in conversations:
        failed = [v for v in verdicts.get(conversation.conversation_id, []) if v.outcome == "fail"]
        behavior = failed[0].dimension if failed else "conversation"
        over: list[tuple[Path, str]] = []
        case_id = next_case_id(folder, behavior, over)
        if passed_over is not None:
            passed_over += [o for o in over if o not in passed_over]
        text = promoted_yaml(
            conversation,
            case_id,
            state=state_of(conversation),
            failed=failed,
            dimensions=dimensions,
            customer=customer,
            known_ids=known_ids,
        )
        path = folder / f"{case_id}.yaml"
        try:
            _create_case_file(path, text, case_id)
        except _NotWritten as exc:
            written.append(Promoted(conversation.conversation_id, problem=str(exc)))
        else:
            written.append(Promoted(conversation.conversation_id, path))
    return written


def flagged_html_section(
    flagged: Sequence[tuple[str, str]], live_paths: Sequence[str], to: str
) -> str:
    """The live HTML report's list of flagged conversations (case id, conversation id), each
    linked to its trial, with the command that promotes it."""
    from ..reports.html_page import case_anchor, e

    rows = "".join(
        f'<tr><td><a href="#{case_anchor(case)}">{e(case)}</a></td>'
        f"<td><code>{e(promote_command(live_paths, cid, to))}</code></td></tr>"
        for case, cid in flagged
    )
    return (
        f"<h2>Flagged conversations ({len(flagged)})</h2>"
        '<p class="note">a verdict failed: promote one to a case for review '
        "(docs/live.md, section 6)</p>"
        f"<table><tr><th>conversation</th><th>promote it</th></tr>{rows}</table>"
    )
