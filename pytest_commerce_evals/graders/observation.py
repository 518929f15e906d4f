"""This module holds what a code grader reads of a trial: the `Observation` (each turn's events,
the backend's final state and what the runner adds to them) and the `GoldState` the case's gold
actions produce.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ..backend import Snapshot
from ..cases.case import State
from ..events import CartUpdate, Change, ChangeUpdate, Text, ToolCall, ToolResult, Ui

__all__ = ["SKILL_TOOL", "UI_TOOLS", "GoldState", "Observation"]

UI_TOOLS = ("present_suggestions",)
"""The presentation tools by default, as for the adapters (`adapters.core.default_ui_tools`)."""
SKILL_TOOL = "load_skill"
"""The tool whose calls load a skill by default (the reference agent's)."""


@dataclass
class GoldState:
    """The final state the case's gold actions (`same_state_as`) produce on a fresh backend
    loaded with the case's `state`, and the actions that failed on replay (`action n (tool):
    error`, in order): a failed action changed nothing and is reported, never dropped."""

    snapshot: Snapshot | None
    failed: list[str] = field(default_factory=list)
    error: str | None = None
    """Why no replay could be made (the backend has no `call_tool`, say); None when it ran."""


@dataclass
class Observation:
    """What a trial produced: the events of each turn and the backend's final state."""

    turns: list[list[Any]]
    snapshot: Snapshot | None = None
    initial: State = field(default_factory=State)
    scope: str = "turn"
    """What the event graders read: the last turn (`turn`) or every turn (`conversation`)."""
    gold: GoldState | None = None
    """The gold actions' final state, for `same_state_as` (the runner replays them)."""
    calls: list[Any] = field(default_factory=list)
    """The trial's model calls (`usage.ModelCall`), for `budget`."""
    turn_s: list[float] = field(default_factory=list)
    """The agent's time in each turn, for `budget`."""
    prices: Any = None
    """The run's `prices.PriceBook`, for a budget's cost (None: every cost unknown)."""
    ui_tools: Collection[str] = UI_TOOLS
    """The agent's presentation tools (the names of the adapters' `ConvertOptions.ui_tools`):
    the last call of one in a turn closes it and is free under `max_tool_calls`."""
    skill_tool: str = SKILL_TOOL
    """The agent's tool whose calls load a skill, for `skill_*` and `no_skill_load`."""

    @property
    def events(self) -> list[Any]:
        """Every event of every turn (the state fallbacks and the transcript read these)."""
        return [e for turn in self.turns for e in turn]

    @property
    def graded(self) -> list[Any]:
        """The events the event graders read: the last turn's (earlier turns only carry state
        into it), or every turn's in a conversation-scoped case."""
        if self.scope == "conversation":
            return self.events
        return self.turns[-1] if self.turns else []

    @property
    def graded_turn(self) -> int | None:
        """The graded turn's index, or None when the trial has no turn."""
        return len(self.turns) - 1 if self.turns else None

    def tool_calls(self, turn: int | None = None) -> list[ToolCall]:
        """The calls of one turn; by default of the graded turn."""
        events = self.graded if turn is None else self.turns[turn]
        return [e for e in events if isinstance(e, ToolCall)]

    def results_by_call(self, turn: int | None = None) -> dict[str, ToolResult]:
        """One turn's tool results by call id; by default the graded turn's."""
        events = self.graded if turn is None else self.turns[turn]
        return {e.call_id: e for e in events if isinstance(e, ToolResult)}

    @property
    def ui(self) -> list[Ui]:
        return [e for e in self.graded if isinstance(e, Ui)]

    @property
    def reply(self) -> str:
        """The graded turn's reply text."""
        return "\n".join(e.text for e in self.graded if isinstance(e, Text))

    def cart(self) -> list:
        """The backend's final cart; without a snapshot, the last `cart_update` event."""
        if self.snapshot is not None:
            return list(self.snapshot.cart)
        updates = [e for e in self.events if isinstance(e, CartUpdate)]
        return list(updates[-1].items) if updates else list(self.initial.cart)

    def changes(self) -> list[Change]:
        if self.snapshot is not None:
            return list(self.snapshot.changes)
        updates = [e for e in self.events if isinstance(e, ChangeUpdate)]
        if updates:
            return list(updates[-1].changes)
        return [c.to_change() for c in self.initial.staged_changes]

    def data(self) -> dict[str, Any]:
        """The domain's other state the backend reported (`Snapshot.data`); {} without one."""
        return dict(self.snapshot.data) if self.snapshot is not None else {}

    def memory(self) -> list[str]:
        if self.snapshot is not None:
            return list(self.snapshot.memory)
        return list(self.initial.memory)
