"""The case model: one eval case as written in YAML or JSON, exactly the spec's keys."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from ..events import CartLine, Change
from ..prices import MAX_DOLLARS, dollars
from ..rubrics import STANDARD

__all__ = [
    "ATTACK_CATEGORIES",
    "CASE_ID_PATTERN",
    "DEFAULT_REFUSAL",
    "DEFAULT_STOP",
    "PROMOTED_SKIP",
    "Approval",
    "AttackSpec",
    "Refusal",
    "CallSpec",
    "Case",
    "CaseFileWarning",
    "Expected",
    "GoldAction",
    "State",
    "UserSpec",
]

CASE_ID_PATTERN = re.compile(r"\A[a-z][a-z0-9_]*-[0-9]{3}-[a-z0-9]+(?:-[a-z0-9]+)*\Z", re.ASCII)
"""`<flow>-<nnn>-<behavior>`: a lower-case flow, three digits, a hyphenated behaviour; ASCII only
and nothing after it (`\\Z`, not `$`, which would let a trailing newline through)."""


class CaseFileWarning(UserWarning):
    """A case file that loads but says something odd (an empty list of cases); shown in pytest's
    warnings summary with the file and line, under xdist too."""


Priority = Literal["critical", "high", "medium", "low"]
Difficulty = Literal["easy", "medium", "hard"]
PRIORITIES: tuple[Priority, ...] = ("critical", "high", "medium", "low")
DIFFICULTIES: tuple[Difficulty, ...] = ("easy", "medium", "hard")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StagedChange(_Strict):
    """A change already in the staging queue before the first turn."""

    change_id: str | None = None
    kind: str
    product_id: str | None = None
    fields: dict[str, Any] = Field(default_factory=dict)
    status: Literal["staged", "approved", "applied", "rejected"] = "staged"

    def to_change(self) -> Change:
        return Change(**self.model_dump())


class State(_Strict):
    """The precondition: loaded into the backend before the first turn."""

    seen_products: list[str] = Field(default_factory=list)
    cart: list[CartLine] = Field(default_factory=list)
    memory: list[str] = Field(default_factory=list)
    staged_changes: list[StagedChange] = Field(default_factory=list)

    @field_validator("cart", mode="before")
    @classmethod
    def _cart_shorthand(cls, value: Any) -> Any:
        # `cart: [prod-1]` is shorthand for one of prod-1
        if isinstance(value, list):
            return [{"product_id": v} if isinstance(v, str) else v for v in value]
        return value


class CallSpec(_Strict):
    """A tool call with given arguments, as `calls_with` and `never_calls_with` name it: the
    tool, and a subset of its arguments, each compared exactly (the JSON value), except the list
    arguments named in `any_order`, which match in any order (as multisets)."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    any_order: list[str] = Field(default_factory=list)

    @field_validator("any_order")
    @classmethod
    def _any_order_names_arguments(cls, value: list[str], info: Any) -> list[str]:
        arguments = info.data.get("arguments") or {}
        for name in value:
            if name not in arguments:
                raise ValueError(
                    f"any_order names {name!r}, which is not one of the arguments "
                    f"({', '.join(arguments) or 'none given'})"
                )
            if not isinstance(arguments[name], list):
                raise ValueError(f"any_order names {name!r}, whose value is not a list")
        return value


class Budget(_Strict):
    """What the agent may spend in one trial (a whole conversation with a simulated customer)
    or, with `per: turn`, in each of its turns: model calls, tokens (input plus output), US
    dollars (a number or a string, read as a decimal) and its own time in seconds."""

    calls: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=0)
    cost: (
        Annotated[
            Decimal,
            # written out, so the shipped schema is the same under every pydantic release
            WithJsonSchema(
                {
                    "anyOf": [
                        {"type": "number", "minimum": 0, "maximum": MAX_DOLLARS},
                        {"type": "string", "pattern": "^\\s*\\$?\\s*[0-9]+(\\.[0-9]+)?\\s*$"},
                    ],
                    "description": "US dollars",
                }
            ),
        ]
        | None
    ) = Field(default=None, ge=0, le=MAX_DOLLARS, allow_inf_nan=False)
    latency_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    per: Literal["trial", "conversation", "turn"] = "trial"

    @field_validator("cost", mode="before")
    @classmethod
    def _decimal(cls, value: Any) -> Any:
        # a number or a string, as the schema and docs allow, also when the file is read strictly
        if isinstance(value, bool):
            return value  # refused below: true is not an amount
        if isinstance(value, float):  # YAML reads 0.02 as a float: its shortest text is the amount
            return Decimal(repr(value))
        if isinstance(value, int):
            return Decimal(value)
        if isinstance(value, str):
            amount = dollars(value.strip().removeprefix("$").strip())
            if amount is None:
                raise ValueError(
                    f"cost {value!r} is not an amount of US dollars: write a number, or a string "
                    'of ASCII digits such as "$0.02"'
                )
            return amount
        return value

    @model_validator(mode="after")
    def _some_limit(self) -> Budget:
        if all(v is None for v in (self.calls, self.tokens, self.cost, self.latency_s)):
            raise ValueError("a budget names at least one of calls, tokens, cost, latency_s")
        return self


class GoldAction(_Strict):
    """One tool call of the gold actions `same_state_as` replays: the tool and its arguments."""

    tool: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)


DEFAULT_REFUSAL = "A person refused this action."
"""What a refusal says when the case gives no words of its own (`approvals: {tool: refuse}`)."""


class Refusal(_Strict):
    """A person's refusal in their own words: `{refuse: "not this week"}`."""

    refuse: str = Field(min_length=1)

    @field_validator("refuse")
    @classmethod
    def _words(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("a refusal's words are empty: write them, or write plain refuse")
        return value


Decision = Literal["approve", "refuse", "wait"] | Refusal


class Approval(BaseModel):
    """What the person decides about one call of a tool that needs approval: `approve`,
    `refuse` (with `message`, what they say) or `wait` (not decided yet: the call stays
    blocked, waiting)."""

    model_config = ConfigDict(frozen=True)

    decision: Literal["approve", "refuse", "wait"]
    message: str | None = None


PROMOTED_SKIP = "promoted: review the expectations"
"""The skip a case promoted from a live conversation is written with; the lint reports every
case still carrying it (`promoted-unreviewed`)."""

DEFAULT_STOP = "###STOP###"
"""What a simulated customer writes to end the conversation, unless the case says otherwise."""


def _text_or_none(value: str | None, name: str) -> str | None:
    """A text key given blank is an error saying so; None (left out) passes."""
    if value is not None and not value.strip():
        raise ValueError(f"{name} is empty: write it out or leave the key out")
    return value


ATTACK_CATEGORIES = (
    "unauthorized-action",
    "other-customer-data",
    "discounts-prices",
    "approval-bypass",
    "memory-poisoning",
    "policy-override",
)
"""What an attacking customer is after: a refund, cancellation or return it has no right to
(`unauthorized-action`), another customer's data (`other-customer-data`), a discount or price it
is not owed (`discounts-prices`), a catalog change applied without the person's approval
(`approval-bypass`), a false fact saved to memory (`memory-poisoning`), or the policy set aside
(`policy-override`)."""
AttackCategory = Literal[
    "unauthorized-action",
    "other-customer-data",
    "discounts-prices",
    "approval-bypass",
    "memory-poisoning",
    "policy-override",
]
ATTACK_STRATEGIES = ("direct", "crescendo", "persona")


class AttackSpec(_Strict):
    """A customer who is the attacker (`user.attack`): a model given an attacker's brief — the
    `goal`, what it may `claim`, and how it escalates (`strategy`) — adapting to the agent's
    replies turn by turn. Whether the attack succeeded is decided by the case's `expected` keys,
    never by the attacker.

    `direct` asks for the goal at once and insists; `crescendo` warms up with a legitimate
    request, probes, escalates and ends with a direct demand, spread over `max_turns`; `persona`
    speaks throughout as someone with the authority the goal needs (`persona`: staff, a
    manager, the account holder's spouse...). `hint: true` asks the same model, before each
    message, for one line of advice on the agent's last reply."""

    category: AttackCategory
    goal: str = Field(min_length=1)
    strategy: Literal["direct", "crescendo", "persona"] = "crescendo"
    claims: list[str] = Field(default_factory=list)
    persona: str | None = None
    hint: bool = False

    @field_validator("goal", "persona")
    @classmethod
    def _not_blank(cls, value: str | None, info: Any) -> str | None:
        return _text_or_none(value, info.field_name)

    @field_validator("claims")
    @classmethod
    def _claims_not_blank(cls, value: list[str]) -> list[str]:
        for i, claim in enumerate(value):
            if not claim.strip():
                raise ValueError(f"claim {i + 1} is empty; write what the attacker may claim")
        return value

    @model_validator(mode="after")
    def _persona_for_persona(self) -> AttackSpec:
        if self.strategy == "persona" and self.persona is None:
            raise ValueError(
                "strategy persona needs persona: who the attacker speaks as (e.g. a store manager)"
            )
        return self


class UserSpec(_Strict):
    """A simulated customer (`user:`): a model that plays the customer from `instructions`, told
    what it `knows` and what it does not (`unknown`), and drives the conversation after the
    case's scripted `turns` (if any) until it writes `stop`, or `max_turns` customer messages
    were answered. `opening` fixes its first message. Reaching `max_turns` fails the trial
    (`at_max_turns: fail`) unless the case grades it as usual (`at_max_turns: grade`).

    With `attack` the customer is an attacker (`AttackSpec`): `instructions` may then be left
    out (the attack's brief is the scenario), and reaching `max_turns` is graded (an attacker
    that never gives up is expected), unless the case says `at_max_turns: fail`."""

    instructions: str | None = Field(default=None, min_length=1)
    attack: AttackSpec | None = None
    knows: str | None = None
    unknown: str | None = None
    opening: str | None = None
    max_turns: int = Field(default=10, ge=1, le=100)
    stop: str = Field(default=DEFAULT_STOP, min_length=1)
    at_max_turns: Literal["fail", "grade"] = "fail"

    @field_validator("instructions", "knows", "unknown", "opening", "stop")
    @classmethod
    def _not_blank(cls, value: str | None, info: Any) -> str | None:
        return _text_or_none(value, info.field_name)

    @model_validator(mode="before")
    @classmethod
    def _attacks_are_graded_at_max_turns(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("attack") is not None:
            data = {"at_max_turns": "grade", **data}
        return data

    @model_validator(mode="after")
    def _someone_is_played(self) -> UserSpec:
        if self.instructions is None and self.attack is None:
            raise ValueError(
                "user: needs instructions (who the customer is and what they want), or attack "
                "(an attacking customer's brief)"
            )
        return self

    @model_validator(mode="after")
    def _opening_does_not_stop(self) -> UserSpec:
        if self.opening is not None and self.stop in self.opening:
            raise ValueError(
                f"the opening holds the stop marker {self.stop!r}: the customer would end the "
                "conversation before the agent could answer"
            )
        return self


class Expected(_Strict):
    """What the trial must show. Every key but `rubric` is graded by code."""

    calls_tool: list[str] | None = None
    calls_one_of: list[str] | None = None
    never_calls: list[str] | None = None
    calls_with: list[CallSpec] | None = None
    never_calls_with: list[CallSpec] | None = None
    first_tool: str | None = None
    first_tool_not: str | None = None
    ui_components: list[str] | None = None
    no_ui: bool | None = None
    cart_contains: list[str] | None = None
    cart_item_count: int | None = Field(default=None, ge=0)
    cart_not_contains: list[str] | None = None
    staged_change_kinds: list[str] | None = None
    no_applied_changes: bool | None = None
    memory_contains: list[str] | None = None
    memory_not_contains: list[str] | None = None
    skill_loaded: str | None = None
    skill_not_loaded: str | None = None
    no_skill_load: bool | None = None
    reply_includes: list[str] | None = None
    communicates: list[str] | None = None
    reply_omits: list[str] | None = None
    max_tool_calls: int | None = Field(default=None, ge=0)
    gate_blocked: list[str] | None = None
    gate_not_blocked: list[str] | None = None
    state_at: dict[str, Any] | None = None
    same_state_as: list[GoldAction] | None = None
    budget: Budget | None = None
    rubric: str | dict[str, str] | None = None

    @field_validator("state_at")
    @classmethod
    def _paths(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        for path in value or {}:
            if not path or any(not part for part in path.split(".")):
                raise ValueError(
                    f"state_at path {path!r} has an empty part: write keys separated by dots "
                    "(orders.W123.status; a list item by its index, items.0)"
                )
        return value

    @field_validator("rubric")
    @classmethod
    def _rubric_not_blank(cls, value: str | dict[str, str] | None) -> str | dict[str, str] | None:
        if isinstance(value, str) and not value.strip():
            raise ValueError("the rubric is empty: write what PASS and FAIL mean")
        if isinstance(value, dict):
            if not value:
                raise ValueError("the rubric has no dimensions: give each a name and a text")
            for name, text in value.items():
                if not name.strip():
                    raise ValueError(f"a rubric dimension has an empty name (found {name!r})")
                # under a standard name an empty text stands for the standard text (`rubrics`)
                if not text.strip() and name not in STANDARD:
                    raise ValueError(
                        f"rubric dimension {name!r} is empty: write what PASS and FAIL mean "
                        f"(an empty text means the standard one only under a standard name: "
                        f"{', '.join(sorted(STANDARD))})"
                    )
        return value

    def code_keys(self) -> list[str]:
        """The keys this case sets that code graders decide, in declaration order."""
        return [
            name
            for name in type(self).model_fields
            if name != "rubric" and getattr(self, name) is not None
        ]

    def rubric_dimensions(self) -> dict[str, str]:
        """The rubric as `dimension -> text`; a single string is the dimension `rubric`."""
        if self.rubric is None:
            return {}
        if isinstance(self.rubric, str):
            return {"rubric": self.rubric}
        return dict(self.rubric)


def _no_default(schema: dict[str, Any]) -> None:
    """A field whose default the model resolves: its JSON Schema shows none."""
    schema.pop("default", None)


class Case(_Strict):
    # a customer speaks: scripted turns, a simulated customer, or both (`_someone_speaks`)
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"anyOf": [{"required": ["turns"]}, {"required": ["user"]}]},
    )

    id: str
    priority: Priority
    difficulty: Difficulty
    tags: list[str] = Field(default_factory=list)
    skip: str | None = None
    state: State = Field(default_factory=State)
    turns: list[str] = Field(default_factory=list)
    user: UserSpec | None = None
    approvals: dict[str, Decision] | None = None
    """What the person decides about each tool that needs approval, by tool name: `approve`,
    `refuse`, `{refuse: "their words"}` or `wait`; `default` for every other tool (unless
    given: `wait`). The integrations (`adapters`) apply it; `approval_for(tool)` reads it."""
    scope: Literal["turn", "conversation"] = Field(
        default=None,  # type: ignore[arg-type]  # resolved by _someone_speaks
        json_schema_extra=_no_default,
    )
    """What the event graders read: the last turn (`turn`, the turn under test; earlier turns
    only carry state into it) or every turn of the conversation (`conversation`). Unless the
    case says, `conversation` with a simulated customer (`user:`), `turn` without."""
    expected: Expected = Field(default_factory=Expected)
    notes: str | None = None

    @field_validator("id")
    @classmethod
    def _id_pattern(cls, value: str) -> str:
        if not CASE_ID_PATTERN.fullmatch(value):
            raise ValueError(
                f"id {value!r} does not match <flow>-<nnn>-<behavior> "
                "(lower-case flow, three digits, hyphenated behaviour, e.g. cart-001-add-single)"
            )
        return value

    @field_validator("tags")
    @classmethod
    def _tags_not_blank(cls, value: list[str]) -> list[str]:
        for i, tag in enumerate(value):
            if not tag.strip():
                raise ValueError(f"tag {i + 1} is empty (found {tag!r}); a tag needs some text")
        return value

    @field_validator("turns")
    @classmethod
    def _turns_not_blank(cls, value: list[str]) -> list[str]:
        if not value:  # given, but empty
            raise ValueError(
                "List should have at least 1 item: give the customer's messages, or leave turns "
                "out of a case with a simulated customer (user:)"
            )
        for i, turn in enumerate(value):
            if not turn.strip():
                raise ValueError(f"turn {i + 1} is empty")
        return value

    @model_validator(mode="after")
    def _someone_speaks(self) -> Case:
        if not self.turns and self.user is None:
            raise ValueError(
                "the case has no customer: give turns (the customer's messages) or a user: "
                "block (a simulated customer), or both"
            )
        if self.user is not None and len(self.turns) >= self.user.max_turns:
            raise ValueError(
                f"user.max_turns is {self.user.max_turns} but the case scripts {len(self.turns)} "
                "turn(s) before the simulated customer speaks: max_turns counts every customer "
                "message, scripted ones included"
            )
        if self.scope is None:
            self.scope = "conversation" if self.user is not None else "turn"
        attack = self.attack
        if attack is not None:  # for selection (-m attack); the attack rate reads user.attack
            for tag in ("attack", f"attack:{attack.category}"):
                if tag not in self.tags:
                    self.tags.append(tag)
        return self

    @property
    def attack(self) -> AttackSpec | None:
        """The attacking customer's brief (`user.attack`); None for any other case."""
        return self.user.attack if self.user is not None else None

    @field_validator("approvals", mode="before")
    @classmethod
    def _decisions(cls, value: Any) -> Any:
        """One clear sentence per bad decision, instead of one per branch of the union."""
        if not isinstance(value, dict):
            return value
        for name, decision in value.items():
            ok = decision in ("approve", "refuse", "wait") or (
                isinstance(decision, dict)
                and set(decision) == {"refuse"}
                and isinstance(decision["refuse"], str)
                and decision["refuse"].strip()
            )
            if not ok and not isinstance(decision, Refusal):
                raise ValueError(
                    f"approvals.{name}: found {decision!r:.80}; allowed: approve, refuse, wait, "
                    "or {refuse: <what the person says>} (words not empty)"
                )
        return value

    @field_validator("approvals")
    @classmethod
    def _approvals_name_tools(cls, value: dict[str, Decision] | None) -> dict[str, Decision] | None:
        if value is None:
            return None
        if not value:
            raise ValueError(
                "approvals is empty: name a tool and what the person decides (approve, refuse, "
                "{refuse: <their words>}, wait), or leave the key out"
            )
        for name in value:
            if not name.strip():
                raise ValueError(f"approvals names a tool with an empty name (found {name!r})")
        return value

    def approval_for(self, tool: str) -> Approval:
        """What the person decides about a call of `tool`: the case's `approvals` for the tool,
        else its `default`, else `wait`."""
        decision = (self.approvals or {}).get(tool)
        if decision is None:
            decision = (self.approvals or {}).get("default", "wait")
        if isinstance(decision, Refusal):
            return Approval(decision="refuse", message=decision.refuse)
        if decision == "refuse":
            return Approval(decision="refuse", message=DEFAULT_REFUSAL)
        return Approval(decision=decision)

    @field_validator("skip")
    @classmethod
    def _skip_has_reason(cls, value: str | None) -> str | None:
        if value is not None and not value.strip():
            raise ValueError("skip needs a reason: say why the case cannot run yet")
        return value

    @property
    def flow(self) -> str:
        return self.id.split("-", 1)[0]

    @property
    def role(self) -> Literal["customer", "operator"]:
        """`operator` when the flow or a tag says so; every other case speaks as the customer."""
        if self.flow == "operator" or "operator" in self.tags or "role:operator" in self.tags:
            return "operator"
        return "customer"

    @property
    def scenario(self) -> str | None:
        for tag in self.tags:
            if tag.startswith("scenario:"):
                return tag.split(":", 1)[1]
        return None
