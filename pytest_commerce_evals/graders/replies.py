"""This module holds the graders of what the agent showed and said in the graded turn (or the
conversation): its UI components and its reply text.
"""

from __future__ import annotations

from ..events import Text
from ..results import GraderResult
from .formatting import _fail, _ok, _short, reply_excerpt
from .observation import Observation

__all__ = ["communicates", "no_ui", "reply_includes", "reply_omits", "ui_components"]


def ui_components(want: list[str], obs: Observation) -> GraderResult:
    shown = [u.component for u in obs.ui]
    missing = [c for c in want if c not in shown]
    if missing:
        return _fail(
            "ui_components",
            want,
            shown,
            f"ui_components: expected {', '.join(missing)} to be shown; components shown: "
            + (", ".join(shown) if shown else "none"),
        )
    return _ok("ui_components", want, shown, f"ui_components: showed {', '.join(want)}")


def no_ui(flag: bool, obs: Observation) -> GraderResult:
    shown = [f"{u.component}({_short(u.payload, 50)})" for u in obs.ui]
    if flag and shown:
        return _fail(
            "no_ui", True, shown, f"no_ui: expected no UI component; shown: {', '.join(shown)}"
        )
    if not flag and not shown:
        return _fail("no_ui", False, [], "no_ui: false expects a UI component; none was shown")
    return _ok(
        "no_ui", flag, shown, "no_ui: " + ("no component shown" if flag else "a component shown")
    )


def reply_includes(want: list[str], obs: Observation) -> GraderResult:
    reply = obs.reply
    missing = [w for w in want if w.lower() not in reply.lower()]
    if missing:
        return _fail(
            "reply_includes",
            want,
            reply,
            f"reply_includes: expected the reply to include {', '.join(map(repr, missing))}; "
            f"reply: {reply_excerpt(reply)}",
        )
    return _ok("reply_includes", want, reply, "reply_includes: found " + ", ".join(map(repr, want)))


def communicates(want: list[str], obs: Observation) -> GraderResult:
    """τ²-bench's rule for what the agent must tell the customer: each string, ignoring case,
    appears in one of the agent's messages with its commas removed (`1,234.56` says
    `1234.56`)."""
    said = [e.text for e in obs.graded if isinstance(e, Text) and e.text]
    flat = [t.lower().replace(",", "") for t in said]
    missing = [w for w in want if not any(w.lower() in t for t in flat)]
    if missing:
        return _fail(
            "communicates",
            want,
            said,
            f"communicates: no agent message says {', '.join(map(repr, missing))} (case and "
            f"commas ignored); replies: {reply_excerpt(chr(10).join(said))}",
        )
    return _ok("communicates", want, said, "communicates: said " + ", ".join(map(repr, want)))


def reply_omits(banned: list[str], obs: Observation) -> GraderResult:
    reply = obs.reply
    hits = [b for b in banned if b.lower() in reply.lower()]
    if hits:
        return _fail(
            "reply_omits",
            banned,
            reply,
            f"reply_omits: expected the reply not to include {', '.join(map(repr, hits))}; "
            f"reply: {reply_excerpt(reply)}",
        )
    return _ok("reply_omits", banned, reply, "reply_omits: none found")
