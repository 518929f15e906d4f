"""τ²-bench's simulated customer on the plugin's customer endpoint: the prompt τ²'s user simulator
is given (its simulation guidelines and the task's scenario, as τ² writes a `UserScenario` out),
the conversation as it sees it (roles flipped: the agent speaks as `user`, starting with the
agent's greeting), and τ²'s three endings (stop, transfer, out of scope), each ending the
conversation here.

What it needs is read from the checkout by the importer (`customer_view`) and kept beside the
cases (`_tau2_customer.yaml`): the prompt's template, the guidelines, the endings, and each case's
scenario text.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from ..errors import CheckoutSourceError
from .prompts import _constants, _source, unfilled

__all__ = ["Tau2Customer", "customer_view", "scenario_text"]

_PERSONA = "<PERSONA_GUIDELINES>"
PROMPT_FIELDS = ("global_user_sim_guidelines_with_persona", "instructions")
"""What the user simulator's `SYSTEM_PROMPT` is filled with: the guidelines, the scenario."""


def scenario_text(scenario: Any) -> str:
    """A task's `user_scenario` as τ²'s user simulator reads it (`str(UserScenario)`): the
    persona when there is one, then the instructions, each block indented by a tab; structured
    instructions as domain, reason for call, known and unknown info when given, and the task
    instructions. A `ValueError` for a scenario that is not one."""
    if not isinstance(scenario, dict) or "instructions" not in scenario:
        raise ValueError("user_scenario has no instructions")
    lines = []
    persona = scenario.get("persona")
    if persona is not None:
        lines += ["Persona:", textwrap.indent(_text(persona, "persona"), "\t")]
    instructions = scenario["instructions"]
    if isinstance(instructions, dict):
        parts = [f"Domain: {_text(instructions.get('domain'), 'domain')}"]
        labelled = (
            ("Reason for call", "reason_for_call", True),
            ("Known info", "known_info", False),
            ("Unknown info", "unknown_info", False),
            ("Task instructions", "task_instructions", True),
        )
        for label, key, required in labelled:
            value = instructions.get(key)
            if value is None and not required:
                continue
            parts.append(f"{label}:\n{textwrap.indent(_text(value, key), chr(9))}")
        instructions = "\n".join(parts)
    lines += ["Instructions:", textwrap.indent(_text(instructions, "instructions"), "\t")]
    return "\n".join(lines)


def _text(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"user_scenario {key} is {type(value).__name__}, not text")
    return value


def customer_view(checkout: Path) -> dict[str, Any]:
    """What τ²'s user simulator is given but the scenario: its prompt's template
    (`src/tau2/user/user_simulator.py`), the guidelines
    (`data/tau2/user_simulator/simulation_guidelines.md`, with no persona guidelines, as τ²
    runs by default) and its endings (`src/tau2/user/user_simulator_base.py`)."""
    checkout = Path(checkout)
    simulator = checkout / "src" / "tau2" / "user" / "user_simulator.py"
    template = _constants(_source(simulator)).get("SYSTEM_PROMPT")
    if template is None:
        raise CheckoutSourceError(f"{simulator}: no string SYSTEM_PROMPT")
    problem = unfilled(template, PROMPT_FIELDS)
    if problem is not None:
        raise CheckoutSourceError(f"{simulator}: SYSTEM_PROMPT: {problem}")
    base = checkout / "src" / "tau2" / "user" / "user_simulator_base.py"
    found = _constants(_source(base))
    endings = [found[n] for n in ("STOP", "TRANSFER", "OUT_OF_SCOPE") if n in found]
    if "STOP" not in found:
        raise CheckoutSourceError(f"{base}: no string STOP")
    guide = checkout / "data" / "tau2" / "user_simulator" / "simulation_guidelines.md"
    try:
        guidelines = guide.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise CheckoutSourceError(f"{guide}: cannot be read ({exc})") from None
    return {"system_prompt": template, "guidelines": guidelines, "endings": endings}


class Tau2Customer:
    """`Tau2Customer(client, model, system_prompt=..., greeting=..., endings=[...])`: a customer
    for `pytest_commerce_evals_make_user`, playing one case on `client` at temperature 0 (τ²'s
    default for its user simulator)."""

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        system_prompt: str,
        greeting: str | None,
        endings: list[str],
        temperature: float | None = 0.0,
    ) -> None:
        self.client = client
        self.model = model
        self.system_prompt = system_prompt
        self.greeting = greeting
        self.endings = list(endings)
        self.temperature = temperature

    @classmethod
    def of(cls, client: Any, model: str, view: dict[str, Any], scenario: str, greeting: str | None):
        """The customer of one case from the importer's view and the case's scenario."""
        prompt = view["system_prompt"].format(
            global_user_sim_guidelines_with_persona=view["guidelines"].replace(_PERSONA, ""),
            instructions=scenario,
        )
        return cls(client, model, system_prompt=prompt, greeting=greeting, endings=view["endings"])

    def messages(self, conversation: list[Any]) -> list[dict[str, Any]]:
        """The request's messages: the prompt, then the conversation with the roles flipped."""
        out: list[dict[str, Any]] = [{"role": "system", "content": self.system_prompt}]
        if self.greeting is not None:
            out.append({"role": "user", "content": self.greeting})
        for message in conversation:
            role = "assistant" if message.role == "customer" else "user"
            out.append({"role": role, "content": message.text})
        return out

    def reply(self, case: Any, conversation: list[Any]) -> str:
        request: dict[str, Any] = {"model": self.model, "messages": self.messages(conversation)}
        if self.temperature is not None:
            request["temperature"] = self.temperature
        reply = self.client.chat.completions.create(**request).choices[0].message
        text = str(reply.content or "")
        stop = case.user.stop if case.user is not None else None
        if stop and stop not in text and any(e in text for e in self.endings):
            text = f"{text} {stop}"  # τ²'s transfer and out-of-scope end the conversation too
        return text
