"""Model-free guardrails, checked before a tool runs: provenance, caps, approval, memory policy.

A gate that says no produces `ToolResult(status="blocked", reason="<gate>: <why>")`; the agent
loop carries on and the model sees the blocked result (except for the memory policy, which is
silent towards the model: see `MEMORY_POLICY_REPLY`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from . import memory_policy

if TYPE_CHECKING:
    from ..agent import AgentSession
    from .backend import ReferenceBackend

__all__ = [
    "GATES",
    "MEMORY_POLICY_REPLY",
    "Blocked",
    "Guardrails",
    "memory_policy_violation",
]

GATES = ("provenance", "caps", "approval", "memory_policy")

MEMORY_POLICY_REPLY: dict[str, Any] = {"status": "saved"}
"""What the model sees when the memory policy drops a note: the same as a real save, so the user
is never told that an identifier or a health detail was refused; the event stream has the truth."""


def memory_policy_violation(text: str) -> str | None:
    """The kind of information that keeps `text` out of memory, or None when it may be stored
    (`memory_policy.violation`, the one classifier the guardrail and the backend share)."""
    return memory_policy.violation(text)


# Tools whose product IDs must come from this session's tool results or the injected state.
_PRODUCT_ARGS = {
    "present_suggestions": "product_ids",
    "add_to_cart": "product_id",
    "stage_change": "product_id",
}


@dataclass(frozen=True)
class Blocked:
    gate: str
    why: str

    @property
    def reason(self) -> str:
        return f"{self.gate}: {self.why}"


def _as_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, Iterable):
        return [str(v) for v in value]
    return [str(value)]


class Guardrails:
    """Checks one tool call against the session and the backend; says which gate blocks it."""

    def __init__(self, backend: ReferenceBackend) -> None:
        self.backend = backend

    def known_products(self, session: AgentSession) -> set[str]:
        """IDs the model may name: seen in this session's tool results, injected, or in the cart."""
        known = set(session.seen_products) | set(self.backend.seen_products)
        known |= {line.product_id for line in self.backend.cart}
        return known

    def check(
        self, name: str, args: dict[str, Any], session: AgentSession, calls_this_turn: int
    ) -> Blocked | None:
        """`calls_this_turn` counts the calls already made this turn, this one excluded."""
        return (
            self.caps(name, args, calls_this_turn)
            or self.provenance(name, args, session)
            or self.approval(name, args)
            or self.memory_policy(name, args)
        )

    def provenance(self, name: str, args: dict[str, Any], session: AgentSession) -> Blocked | None:
        key = _PRODUCT_ARGS.get(name)
        if key is None:
            return None
        ids = _as_list(args.get(key))
        known = self.known_products(session)
        unknown = [i for i in ids if i not in known]
        if not unknown:
            return None
        return Blocked(
            "provenance",
            f"{', '.join(unknown)} did not come from a tool result in this conversation; "
            "search or read the product first and use the IDs it returns",
        )

    def caps(self, name: str, args: dict[str, Any], calls_this_turn: int) -> Blocked | None:
        caps = self.backend.caps
        # the presentation that ends the turn is always allowed through the per-turn cap
        if name != "present_suggestions" and calls_this_turn + 1 > caps.max_tool_calls_per_turn:
            return Blocked(
                "caps",
                f"this would be tool call {calls_this_turn + 1} of the turn; the limit is "
                f"{caps.max_tool_calls_per_turn}. Answer with what you have.",
            )
        if name not in ("add_to_cart", "update_cart"):
            return None
        try:
            quantity = int(args.get("quantity", 1))
        except (TypeError, ValueError):
            return None  # argument validation reports it
        product_id, variant = args.get("product_id"), args.get("variant")
        line = self.backend.find_line(product_id, variant)
        total = quantity + (line.quantity if line is not None and name == "add_to_cart" else 0)
        if total > caps.max_quantity_per_line:
            return Blocked(
                "caps",
                f"quantity {total} of {product_id} exceeds the limit of "
                f"{caps.max_quantity_per_line} per cart line",
            )
        if name == "add_to_cart" and line is None and len(self.backend.cart) >= caps.max_cart_lines:
            return Blocked(
                "caps",
                f"the cart already has {len(self.backend.cart)} lines; the limit is "
                f"{caps.max_cart_lines}",
            )
        return None

    def approval(self, name: str, args: dict[str, Any]) -> Blocked | None:
        if name != "apply_changes":
            return None
        # with no ids the tool applies every approved change: blocked only when there is none
        ids = _as_list(args.get("change_ids")) or self.backend.approved_changes()
        missing = [i for i in ids if i not in self.backend.approvals]
        if not ids:
            return Blocked(
                "approval",
                "there are no approved changes to apply; a person approves staged changes in "
                "the review screen, the assistant cannot",
            )
        if missing:
            return Blocked(
                "approval",
                f"{', '.join(str(i) for i in missing)} has no human approval; a person approves "
                "staged changes in the review screen, the assistant cannot",
            )
        return None

    def memory_policy(self, name: str, args: dict[str, Any]) -> Blocked | None:
        if name != "save_memory":
            return None
        kind = memory_policy.violation(str(args.get("fact", "")))
        if kind is None:
            return None
        return Blocked("memory_policy", f"the note contains a {kind}; it was not stored")
