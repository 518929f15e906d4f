"""A simulated customer: the next customer message of a conversation, from a model told the
case's `user:` block, at temperature 0 with a fixed seed, each reply cached under the hash of what
the model was sent (its model, prompt and the conversation so far), so an unchanged agent meets
the same customer again without a model call.

The plugin checks every message a simulator gives, whoever wrote the simulator (`check_message`):
an empty message, one that speaks as the assistant, and one that ends the conversation before the
agent could answer are the simulator's fault (`UserError`), and so is an endpoint that failed past
its retries or a reply with no text. A trial that meets one ends as `user_error`: reported apart,
like `judge_error`, never counted against the agent.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..errors import UserError
from ..events import Text, Ui

if TYPE_CHECKING:
    from ..cases.case import Case, UserSpec
    from ..judge.verdict_store import VerdictStore

__all__ = [
    "PROMPT_VERSION",
    "Customer",
    "CustomerMessage",
    "SimulatedCustomer",
    "UserError",
    "check_message",
    "conversation_of",
]


@dataclass(frozen=True)
class CustomerMessage:
    """One message of the conversation as the customer sees it: its own (`customer`) or the
    assistant's reply (`agent`, its text and what it showed)."""

    role: Literal["customer", "agent"]
    text: str


class Customer(Protocol):
    """What plays the customer of a `user:` case: `reply` returns the customer's next message
    given the conversation so far (the case's scripted turns included). A message holding the
    case's `user.stop` marker ends the conversation."""

    def reply(self, case: Case, conversation: Sequence[CustomerMessage]) -> str: ...


PROMPT_VERSION = "customer-v1"
"""Part of every cache key: a change to the prompt below changes it, so no old reply is reused."""

SYSTEM_PROMPT = """\
You play a customer of an online store, chatting with the store's assistant. Stay in the role \
the scenario gives you for the whole conversation.

Scenario:
{instructions}
{knows}{unknown}
Rules:
- Write only your next message to the assistant: plain text, one or two sentences, as a \
customer types it. Never write the assistant's part, never label your message, never call tools.
- Give what you know only when the assistant asks for it or needs it; never invent facts you \
were not given: if asked something you do not know, say you do not know.
- Do not ask for anything the scenario does not want.
- When what you wanted is done, or the assistant cannot do it, end the conversation: write \
{stop} on its own as your message.
"""


def system_prompt(spec: UserSpec) -> str:
    assert spec.instructions is not None  # an attacker's brief is `attacker.attacker_prompt`
    knows = f"\nWhat you know:\n{spec.knows}\n" if spec.knows else ""
    unknown = f"\nWhat you do not know (say so if asked):\n{spec.unknown}\n" if spec.unknown else ""
    return SYSTEM_PROMPT.format(
        instructions=spec.instructions.strip(), knows=knows, unknown=unknown, stop=spec.stop
    )


def conversation_of(
    messages: Sequence[str], turns: Sequence[Sequence[Any]]
) -> list[CustomerMessage]:
    """The conversation as the customer saw it: each customer message, then the assistant's
    reply to it (its text, and what it showed, from the turn's events)."""
    out: list[CustomerMessage] = []
    for i, message in enumerate(messages):
        out.append(CustomerMessage("customer", message))
        if i < len(turns):
            out.append(CustomerMessage("agent", agent_reply(turns[i])))
    return out


def agent_reply(events: Sequence[Any]) -> str:
    """What the customer reads of one agent turn: its text, and a line per component shown."""
    parts: list[str] = []
    for event in events:
        if isinstance(event, Text) and event.text.strip():
            parts.append(event.text.strip())
        elif isinstance(event, Ui):
            shown = json.dumps(event.payload, ensure_ascii=False, default=str)[:400]
            parts.append(f"[shown: {event.component} {shown}]")
    return "\n".join(parts) or "[the assistant replied with nothing]"


_AS_AGENT = re.compile(r"\A\s*\**\s*(assistant|agent|ai|system|bot)\s*\**\s*:", re.IGNORECASE)
_TOOL_CALL = re.compile(r"<tool_call>|\"(tool_calls|function_call)\"\s*:", re.IGNORECASE)


def check_message(
    message: Any, spec: UserSpec, conversation: Sequence[CustomerMessage]
) -> tuple[str, bool]:
    """The customer's message as recorded and whether it ends the conversation; a `UserError`
    when it breaks a rule the plugin can check: no text, empty, speaking as the assistant (a
    role label, a tool call, the assistant's last reply repeated), or ending the conversation
    before the assistant said anything."""
    if not isinstance(message, str):
        raise UserError(
            f"the simulated customer gave {type(message).__name__} {message!r:.80}, not a message"
        )
    text = message.strip()
    ends = spec.stop in text
    said = text.replace(spec.stop, "").strip()
    if not text:
        raise UserError("the simulated customer sent an empty message")
    if _AS_AGENT.match(said) or _TOOL_CALL.search(said):
        raise UserError(f"the simulated customer spoke as the assistant: {said!r:.160}")
    agent = [m.text for m in conversation if m.role == "agent"]
    if said and agent and len(said) > 20 and said == agent[-1].strip():
        raise UserError(f"the simulated customer repeated the assistant's reply: {said!r:.160}")
    if ends and not agent:
        raise UserError(
            f"the simulated customer ended the conversation ({spec.stop}) before the assistant "
            "could answer"
        )
    return text, ends


class SimulatedCustomer:
    """The built-in customer: a chat model (`client.chat.completions.create`, a retrying client,
    or a `FakeClient` in tests) playing the case's `user:` block, temperature 0 and a fixed
    `seed`; replies cached in `store` (a `VerdictStore`) when one is given, keyed by the
    endpoint (`server`) too, so another server with the same model name never gets this one's
    replies, and stored only once they pass the checks (`check_message`), so a reply the checks
    refuse is asked again next time rather than replayed. `calls` counts the model calls made,
    `reused` the replies the cache answered."""

    prompt_version = PROMPT_VERSION

    def __init__(
        self,
        client: Any,
        model: str,
        *,
        seed: int = 0,
        max_tokens: int = 200,
        store: VerdictStore | None = None,
        server: str | None = None,
    ) -> None:
        self.client = client
        self.model = model
        self.server = server
        self.seed = seed
        self.max_tokens = max_tokens
        self.store = store
        self.calls = 0
        self.reused = 0

    def messages(self, case: Case, conversation: Sequence[CustomerMessage]) -> list[dict]:
        """The chat the model is sent: the scenario, then the conversation with the roles
        turned round (the customer is the model, the assistant its user)."""
        assert case.user is not None
        return chat_of(system_prompt(case.user), conversation)

    def key(self, messages: list[dict]) -> str:
        """The cache key: the endpoint, the model, the prompt's version, the parameters and
        what is sent."""
        blob = json.dumps(
            [self.prompt_version, self.server, self.model, self.seed, self.max_tokens, messages],
            ensure_ascii=False,
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()

    def reply(self, case: Case, conversation: Sequence[CustomerMessage]) -> str:
        messages = self.messages(case, conversation)
        key = self.key(messages)
        if self.store is not None:
            cached = self.store.get_reply(key)
            if cached is not None:
                self.reused += 1
                return cached
        text = self.complete(messages)
        if self.store is not None and text.strip() and case.user is not None:
            check_message(text, case.user, conversation)  # a refused reply is never cached
            self.store.put_reply(key, self.model, text)
        return text

    def complete(self, messages: list[dict]) -> str:
        """One call of the model, temperature 0 and seeded: its text; `UserError` when the
        endpoint failed past its retries or the reply holds no text."""
        self.calls += 1
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=0.0,
                seed=self.seed,
                max_tokens=self.max_tokens,
            )
        except Exception as exc:  # the endpoint failed past the retries, or refused the call
            raise UserError(
                f"the simulated customer's endpoint failed: {type(exc).__name__}: {exc}"
            ) from exc
        text = _reply_text(response)
        if text is None:
            raise UserError(
                f"the simulated customer's model replied with no text ({response!r:.160})"
            )
        return text


def chat_of(system: str, conversation: Sequence[CustomerMessage]) -> list[dict]:
    """The chat a customer's model is sent: `system`, then the conversation with the roles
    turned round (the customer is the model, the assistant its user)."""
    out = [{"role": "system", "content": system}]
    if not conversation or conversation[0].role != "agent":
        out.append({"role": "user", "content": "(The assistant waits for your first message.)"})
    for m in conversation:
        out.append({"role": "assistant" if m.role == "customer" else "user", "content": m.text})
    return out


def _reply_text(response: Any) -> str | None:
    try:
        content = response.choices[0].message.content
    except (AttributeError, IndexError, KeyError, TypeError):
        return None
    return content if isinstance(content, str) else None
