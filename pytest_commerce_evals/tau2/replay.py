"""τ²'s recorded tool calls replayed on `RetailBackend`, each result's text beside the one τ²
recorded: the measure of how exactly the backend answers as τ²'s own tools do.

Each simulation's tool calls run in order on a fresh backend (so each sees the state the ones
before it left), every call, reads and refused ones included; a call's text is what τ²'s
environment records for it: a string result as it is, any other `json.dumps` of it, a refused
call `Error: ` and the message.

    checks = replay_calls(load_results(path), lambda: RetailBackend.load(db))
    differing = [c for c in checks if not c.same]
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .retail import RetailBackend, RetailError
from .simulations import Results

__all__ = ["CallCheck", "replay_calls", "shown"]


@dataclass(frozen=True)
class CallCheck:
    """One tool call of a simulation: what τ² recorded and what the backend answers."""

    simulation: str
    call_id: str
    name: str
    arguments: Any
    recorded: str
    ours: str

    @property
    def same(self) -> bool:
        return self.recorded == self.ours


def shown(backend: RetailBackend, name: str, arguments: Any) -> str:
    """The text τ²'s environment records for the call: the agent reads exactly this."""
    try:
        found = backend.call_tool(name, arguments)
    except RetailError as exc:
        return f"Error: {exc}"
    return found if isinstance(found, str) else json.dumps(found)


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):  # some exports keep a call's arguments as JSON text
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def replay_calls(results: Results, backend: Callable[[], RetailBackend]) -> list[CallCheck]:
    """Every tool call of every simulation of `results` that has a recorded result, in order,
    each simulation on a fresh `backend()`."""
    checks = []
    for simulation in results.simulations:
        if not isinstance(simulation, dict):
            continue
        replay = backend()
        calls: dict[str, dict[str, Any]] = {}
        for message in simulation.get("messages") or []:
            if not isinstance(message, dict):
                continue
            for call in message.get("tool_calls") or []:
                if isinstance(call, dict):
                    calls[str(call.get("id"))] = call
            call = calls.get(str(message.get("id"))) if message.get("role") == "tool" else None
            if call is None:
                continue
            name = str(call.get("name"))
            arguments = _arguments(call.get("arguments"))
            checks.append(
                CallCheck(
                    simulation=str(simulation.get("id")),
                    call_id=str(message.get("id")),
                    name=name,
                    arguments=arguments,
                    recorded=str(message.get("content")),
                    ours=shown(replay, name, arguments),
                )
            )
    return checks
