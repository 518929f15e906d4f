"""Production mode: captured live traffic, a deterministic sample of it, the trend per dimension.

A production agent appends one JSON line per turn to a capture file (JSONL):

    {"schema_version": 1, "conversation_id": "c-8f3a", "timestamp": "2025-06-01T12:00:03+00:00",
     "role": "customer", "turn": 1, "user": "trail shoes under $120?", "events": [...]}

`events` are exactly the event stream the agent emits (`events.py`), so the judge reads live
traffic the way it reads a regression trial. `CaptureWriter` writes these lines safely from many
threads and processes and redacts customer identifiers before anything reaches the disk.

`pytest --commerce-live=PATH --commerce-sample-rate=R` samples conversations by a hash of the seed
and the conversation id (so more traffic never reshuffles what was already sampled), judges each
sampled conversation on the standard rubric dimensions (`rubrics.py`: the same texts and
fingerprints as the regression cases) and records a run of kind `live` in the run store.
`--commerce-trend` prints the pass rate of each dimension over the live runs with a Wilson 95%
interval and flags the moves larger than the noise; `--commerce-trend-svg` draws it.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from html import escape
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..events import EVENT_TYPES, Event, coerce_event
from ..jsonsafe import clean_json, deep_json_path, first_json_problem, printable, short_repr
from ..results import RubricVerdict
from ..rubrics import STANDARD
from ..stats import two_proportion_p, wilson_interval

__all__ = [
    "CAPTURE_MAX_DEPTH",
    "CAPTURE_SCHEMA_VERSION",
    "CAPTURE_SCHEMA_VERSIONS",
    "DEFAULT_REDACT",
    "LIVE_FORMATS",
    "NOISE_POINTS",
    "REDACTION_KINDS",
    "Capture",
    "CaptureProblem",
    "CapturedTurn",
    "CaptureWriter",
    "Conversation",
    "DimensionTrend",
    "Redactor",
    "Trend",
    "TrendPoint",
    "compute_trend",
    "is_sampled",
    "read_capture",
    "render_trend_svg",
    "sample_score",
    "trend_html_section",
    "two_proportion_p",
    "wilson_interval",
]

CAPTURE_SCHEMA_VERSION = 1
CAPTURE_SCHEMA_VERSIONS = (1,)
"""The capture schema versions this plugin reads; a line of any other is reported and skipped."""
CAPTURE_MAX_DEPTH = 200
"""How deeply a capture line's arrays and objects may nest (the line itself is level 1). A
deeper line is reported and skipped; the writer keeps a deeper value as its JSON text."""
MAX_TURN = 2**31 - 1
NOISE_POINTS = 1.0
"""A move of one percentage point or less between live runs is noise, whatever a test says."""

Role = Literal["customer", "operator"]


# --------------------------------------------------------------------------------------------
# Redaction


def _luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d *= 2
            if d > 9:
                d -= 9
        total += d
    return total % 10 == 0


_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
# an @ followed by what `_EMAIL` takes for a domain, and the last character before `endpos` that
# cannot be in an email's local part
_AT_DOMAIN = re.compile(r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_LAST_NOT_LOCAL = re.compile(r"(?s:.*)[^A-Za-z0-9._%+-]")


class _EmailScan:
    """`_EMAIL`'s matches, found in linear time.

    `_EMAIL.sub` on its own is quadratic: from every position of a long run of letters and digits
    it scans the run to its end looking for an `@` (a 400 kB token took minutes). A match can only
    start at the beginning of the run of local-part characters that ends at an `@` followed by a
    domain (or where the previous match ended), so `_EMAIL` is tried there once per such `@`,
    anchored, which finds exactly the matches `_EMAIL.sub` finds. Each character is scanned a
    bounded number of times.
    """

    pattern = _EMAIL.pattern

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        pos = 0
        while (domain := _AT_DOMAIN.search(text, pos)) is not None:
            at = domain.start()
            before = _LAST_NOT_LOCAL.match(text, pos, at)
            start = before.end() if before else pos
            found = _EMAIL.match(text, start) if start < at else None
            if found is not None:
                yield found
                pos = found.end()
            else:
                pos = at + 1

    def sub(self, replace: Callable[[re.Match[str]], str], text: str) -> str:
        out: list[str] = []
        done = 0
        for match in self.finditer(text):
            out += [text[done : match.start()], replace(match)]
            done = match.end()
        return "".join(out) + text[done:] if out else text


_EMAIL_SCAN = _EmailScan()
# 13 to 19 digits, optionally grouped by single spaces or hyphens
_CARD = re.compile(r"(?<![\w-])\d(?:[ -]?\d){12,18}(?![\w-])")
_PHONE = re.compile(
    r"(?<![\w/+.-])(?:\+\d{1,3}[ .-]?)?(?:\(\d{1,4}\)[ .-]?)?\d{2,5}(?:[ .-]?\d{2,5}){0,4}(?![\w/])"
)
_IBAN = re.compile(r"(?<![A-Za-z0-9])[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]){11,30}(?![A-Za-z0-9])")
# the common forms of API keys and tokens: OpenAI (sk-, sk-proj-), Stripe (sk_/rk_/pk_live_,
# _test_), AWS access key ids (AKIA, ASIA), GitHub (ghp_ and kin, github_pat_), Slack (xox?-),
# Google API keys (AIza), JSON Web Tokens, and whatever follows `Bearer`
_SECRET = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"
    r"|(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}"
    r"|AIza[0-9A-Za-z_-]{35}"
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"
    r")(?![A-Za-z0-9_-])"
    r"|(?<=Bearer )[A-Za-z0-9._~+/-]{16,}=*"
)
_STREET_TYPES = (
    "Street|St|Avenue|Ave|Road|Rd|Boulevard|Blvd|Lane|Ln|Drive|Dr|Court|Ct|Way|Place|Pl|"
    "Terrace|Parkway|Pkwy|Circle|Square|Sq|Highway|Hwy"
)
# a house number and a street: "221B Baker Street", "1600 Pennsylvania Ave NW", "12 rue de la
# Paix", "Hauptstraße 5", "Kurfürstendamm-Allee 12a"; not a city, a postcode or a bare street name
_ADDRESS = re.compile(
    r"(?<![\w-])\d{1,5}[A-Za-z]?,? (?:[A-Z][A-Za-z'.-]{0,30}\.? ){1,4}(?:"
    + _STREET_TYPES
    + r")\b\.?"
    r"(?: (?:N|S|E|W|NE|NW|SE|SW)\b)?(?=\s*$|\s*[,;:)\n]|\.\s|\s+[A-Z0-9#])"
    r"|(?<![\w-])\d{1,4}(?: ?(?:bis|ter))?,? (?:rue|avenue|boulevard|bd|chemin|allée|place|impasse"
    r"|quai) (?:(?:de|du|des|la|le|l'|d')\s?){0,3}"
    r"[A-ZÀ-Ý][\w'-]{0,30}(?: [A-ZÀ-Ý][\w'-]{0,30}){0,3}"
    r"|(?<![\w-])[A-ZÄÖÜ][\wäöüß-]{0,40}?(?:straße|strasse|str\.|weg|allee|platz|gasse|ring|damm)"
    r" \d{1,4}[a-z]?(?![\w-])"
)
_HINTS = {
    # what a string must hold for a kind's pattern to be worth running (most strings hold none)
    "email": r"@",
    "secret": r"sk-|_(?:live|test)_|AKIA|ASIA|gh[pousr]_|github_pat_|xox[abprs]-|AIza|eyJ|Bearer ",
    "iban": r"[A-Z]{2}[0-9]{2}",
    "card": r"\d[\d -]{11,}\d",
    # a house number before a word, or a German street's ending before one
    "address": r"\d[A-Za-z]?,? [A-Za-z]|(?:ße|sse|str\.|weg|llee|latz|asse|ring|damm) \d",
    "phone": r"\d[\d ().+-]{5,}\d",
}
_NEEDS_DIGIT = {"iban", "card", "address", "phone"}
"""Kinds that hold a digit: a string without one skips them at the cost of one search."""
_DIGIT = re.compile(r"\d")
_SECRET_HINT = re.compile(_HINTS["secret"])
_DATE_LIKE = re.compile(r"^\d{4}[-./]\d{1,2}[-./]\d{1,2}$|^\d{1,2}[-./]\d{1,2}[-./]\d{2,4}$")


def _card(match: re.Match[str]) -> str | None:
    digits = re.sub(r"\D", "", match.group())
    return "[card]" if 13 <= len(digits) <= 19 and _luhn_ok(digits) else None


def _phone(match: re.Match[str]) -> str | None:
    text = match.group()
    digits = re.sub(r"\D", "", text)
    if _DATE_LIKE.match(text) or not 7 <= len(digits) <= 15:
        return None
    grouped = text.startswith(("+", "(")) or re.search(r"[ .-]", text) is not None
    # an ungrouped run of digits is a phone number only at a national number's length (a
    # 13-digit EAN barcode is not one)
    if not grouped and not 10 <= len(digits) <= 12:
        return None
    return "[phone]"


def _iban(match: re.Match[str]) -> str | None:
    """An IBAN passes ISO 13616's check: the country and check digits moved to the end, the
    letters as numbers (A = 10), the whole number mod 97 is 1. At most 34 characters."""
    text = match.group().replace(" ", "")
    if not 15 <= len(text) <= 34:
        return None
    number = "".join(str(int(c, 36)) for c in text[4:] + text[:4])
    return "[iban]" if int(number) % 97 == 1 else None


REDACTION_KINDS: dict[str, tuple[Any, Callable[[re.Match[str]], str | None]]] = {
    # (a compiled pattern, or anything with its `sub`; what replaces a match, None to keep it)
    # secrets and IBANs before cards and phones: their digits would otherwise read as a phone
    # number (a spaced IBAN was half-redacted); cards before phones for the same reason
    "email": (_EMAIL_SCAN, lambda m: "[email]"),
    "secret": (_SECRET, lambda m: "[secret]"),
    "iban": (_IBAN, _iban),
    "card": (_CARD, _card),
    "address": (_ADDRESS, lambda m: "[address]"),
    "phone": (_PHONE, _phone),
}
DEFAULT_REDACT = ("email", "phone", "card", "iban", "secret", "address")


@dataclass
class Redactor:
    """Replaces emails, phone numbers, card numbers, IBANs, API keys and tokens, and street
    addresses (and any custom patterns) in every string of a message or an event, keys excepted:
    `[email]`, `[phone]`, `[card]`, `[iban]`, `[secret]`, `[address]`, `[redacted:<name>]`.

    A card number is 13 to 19 digits, grouped or not, that pass the Luhn check (every issued
    card number does; catalog codes and order numbers mostly do not). Integers of that shape are
    replaced too. `patterns` maps a name to a regular expression.
    """

    kinds: Sequence[str] = DEFAULT_REDACT
    patterns: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown = [k for k in self.kinds if k not in REDACTION_KINDS]
        if unknown:
            raise ValueError(
                f"unknown redaction kind(s) {', '.join(unknown)}; known: "
                f"{', '.join(REDACTION_KINDS)} (add your own as a pattern)"
            )
        # (pattern, replacement, a search that must find something first, needs a digit)
        self._rules: list[tuple[Any, Callable[[re.Match[str]], str | None], Any, bool]] = [
            (*REDACTION_KINDS[k], re.compile(_HINTS[k]), k in _NEEDS_DIGIT)
            for k in REDACTION_KINDS
            if k in self.kinds
        ]
        for name, regex in self.patterns.items():
            try:
                compiled = re.compile(regex)
            except (re.error, OverflowError, RecursionError) as exc:
                raise ValueError(
                    f"redaction pattern {name!r}: {regex!r} is not a regex: {exc}"
                ) from None
            self._rules.append((compiled, lambda m, n=name: f"[redacted:{n}]", None, False))

    @property
    def active(self) -> bool:
        return bool(self._rules)

    def text(self, value: str) -> str:
        # cheap searches rule out most kinds for most strings: each needs one of its marks
        digit = _DIGIT.search(value) is not None
        if not digit and not self.patterns and "@" not in value and not _SECRET_HINT.search(value):
            return value  # most strings: no kind can match
        for pattern, replace, hint, needs_digit in self._rules:
            if (needs_digit and not digit) or (hint is not None and not hint.search(value)):
                continue
            value = pattern.sub(lambda m, r=replace: r(m) or m.group(), value)
        return value

    def value(self, value: Any) -> Any:
        """A JSON value with every string (and card-shaped integer) redacted."""
        if isinstance(value, str):
            return self.text(value) if self._rules else value
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if (
            isinstance(value, int)
            and not isinstance(value, bool)
            and "card" in self.kinds
            and 13 <= len(str(abs(value))) <= 19
            and _luhn_ok(str(abs(value)))
        ):
            return "[card]"
        return value


NO_REDACTION = Redactor(kinds=())
DEFAULT_REDACTOR = Redactor()


# --------------------------------------------------------------------------------------------
# The capture format


class CapturedTurn(BaseModel):
    """One line of a capture file: one turn of one conversation, with the events it produced."""

    model_config = ConfigDict(extra="forbid")

    schema_version: int = CAPTURE_SCHEMA_VERSION
    conversation_id: str = Field(min_length=1)
    timestamp: datetime
    role: Role
    turn: int = Field(ge=1, le=MAX_TURN)
    user: str
    events: list[Event] = Field(default_factory=list)

    @field_validator("schema_version", mode="before")
    @classmethod
    def _known_version(cls, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"expected an integer; found {type(value).__name__}")
        if value not in CAPTURE_SCHEMA_VERSIONS:
            raise ValueError(
                f"unknown capture schema_version {short_repr(value)}; this plugin reads "
                f"{', '.join(map(str, CAPTURE_SCHEMA_VERSIONS))} (a newer plugin may read it)"
            )
        return value

    @field_validator("timestamp", mode="before")
    @classmethod
    def _iso_text(cls, value: Any) -> Any:
        # read strictly (no number taken for a time), yet from the text JSON holds
        if isinstance(value, datetime):
            return value
        if not isinstance(value, str):
            raise ValueError(f"expected an ISO 8601 time as text; found {type(value).__name__}")
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            raise ValueError(f"not an ISO 8601 time: {short_repr(value)}") from None

    @field_validator("timestamp")
    @classmethod
    def _aware(cls, value: datetime) -> datetime:
        return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _event_json(event: Any) -> dict[str, Any]:
    """An event as a JSON object, however deeply its values nest (pydantic's JSON mode stops
    at 254 levels)."""
    model = coerce_event(event)
    try:
        data = model.model_dump(mode="json")
    except ValueError:
        data = model.model_dump()
    return clean_json(data, CAPTURE_MAX_DEPTH - 2)  # an event is level 3 of a line


def _turn_line(turn: CapturedTurn) -> str:
    data = turn.model_dump(mode="json", exclude={"events"})
    data["events"] = [_event_json(e) for e in turn.events]
    line = json.dumps(clean_json(data), ensure_ascii=False, separators=(",", ":"), default=str)
    return line


class CaptureWriter:
    """Appends turns to a capture file; safe across threads and processes.

    Each turn is one `write` of one whole line on a descriptor opened with `O_APPEND`, so
    concurrent writers (threads, worker processes, several hosts on one local disk) never
    interleave inside a line. Identifiers are redacted before the line is written (`redactor`,
    default: emails, phone numbers and card numbers); pass `redactor=None` only when the capture
    store itself may hold them.

        with CaptureWriter("/var/log/agent/capture.jsonl") as capture:
            capture.append_turn(conversation_id, "customer", message, events)

    `turn` counts from 1; left out, the writer numbers the turns of each conversation itself,
    which is right only when one process writes the whole conversation.
    """

    def __init__(
        self, path: str | os.PathLike[str], redactor: Redactor | None = DEFAULT_REDACTOR
    ) -> None:
        self.path = Path(path)
        self.redactor = redactor or NO_REDACTION
        self._lock = threading.Lock()
        self._turns: dict[str, int] = {}
        self._fd: int | None = None
        self._pid = -1

    def _descriptor(self) -> int:
        # a forked child opens its own descriptor (the parent's may be closed under it)
        if self._fd is None or self._pid != os.getpid():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            self._pid = os.getpid()
        return self._fd

    def append_turn(
        self,
        conversation_id: str,
        role: Role,
        user_message: str,
        events: Iterable[Any],
        *,
        turn: int | None = None,
        timestamp: datetime | None = None,
    ) -> CapturedTurn:
        """Redact and append one turn; returns the turn as written."""
        redact = self.redactor.value
        payload = [redact(_event_json(e)) for e in events]
        with self._lock:
            if turn is None:
                turn = self._turns.get(conversation_id, 0) + 1
            self._turns[conversation_id] = max(turn, self._turns.get(conversation_id, 0))
            record = CapturedTurn(
                conversation_id=conversation_id,
                timestamp=timestamp or datetime.now(UTC),
                role=role,
                turn=turn,
                user=printable(
                    self.redactor.text(user_message) if self.redactor.active else user_message
                ),
                events=payload,
            )
            data = (_turn_line(record) + "\n").encode("utf-8")
            fd = self._descriptor()
            written = os.write(fd, data)
            while written < len(data):  # only on a full disk or a signal; finish the line
                written += os.write(fd, data[written:])
        return record

    def close(self) -> None:
        with self._lock:
            if self._fd is not None and self._pid == os.getpid():
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> CaptureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# --------------------------------------------------------------------------------------------
# Sampling


def sample_score(conversation_id: str, seed: str | int) -> float:
    """Where a conversation falls in [0, 1) for `seed`: sha256 of the seed and the id."""
    digest = hashlib.sha256(f"{seed}\x00{conversation_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def is_sampled(conversation_id: str, rate: float, seed: str | int) -> bool:
    """Whether the sample at `rate` takes this conversation; depends on nothing else, so a
    sample at a higher rate contains the one at a lower rate, and new traffic changes neither."""
    return sample_score(conversation_id, seed) < rate


# --------------------------------------------------------------------------------------------
# Reading captured traffic


@dataclass
class CaptureProblem:
    """A line that could not be used, or a conversation left out because of one."""

    path: str
    line: int
    message: str
    conversation_id: str | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


@dataclass
class Conversation:
    """The sampled turns of one conversation, in turn order, redacted."""

    conversation_id: str
    role: Role
    turns: list[CapturedTurn]
    path: str
    line: int

    @property
    def user_messages(self) -> list[str]:
        return [t.user for t in self.turns]

    @property
    def events(self) -> list[list[Any]]:
        return [list(t.events) for t in self.turns]

    @property
    def started_at(self) -> datetime:
        return self.turns[0].timestamp


@dataclass
class Capture:
    """What `read_capture` found: the sampled conversations and every line it had to skip."""

    conversations: list[Conversation] = field(default_factory=list)
    problems: list[CaptureProblem] = field(default_factory=list)
    lines: int = 0
    conversations_seen: int = 0


def capture_files(
    paths: Iterable[str | os.PathLike[str]], suffixes: Sequence[str] | None = None
) -> list[Path]:
    """Files named, and the files under folders named whose names end in one of `suffixes`
    (default `.jsonl`), in a stable order."""
    suffixes = tuple(suffixes or (".jsonl",))
    out: list[Path] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out += sorted(q for q in path.rglob("*") if q.suffix in suffixes and q.is_file())
        else:
            out.append(path)
    return out


def _validation_message(exc: ValidationError) -> str:
    """What was wrong, without the offending values (they may hold customer data)."""
    parts = []
    for err in exc.errors(include_url=False, include_input=False):
        loc = ".".join(str(p) for p in err["loc"])
        if err["type"] == "union_tag_invalid":
            tag = err.get("ctx", {}).get("tag", "")
            parts.append(
                f"{loc}: unknown event type {str(tag)[:40]!r}; known: {', '.join(EVENT_TYPES)}"
            )
        elif err["type"] == "union_tag_not_found":
            parts.append(f"{loc}: an event without a 'type' key")
        else:
            parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts[:4]) + (f" (and {len(parts) - 4} more)" if len(parts) > 4 else "")


_PARTIAL_NUMBER = re.compile(r"-?\d*\.?\d*(?:[eE][+-]?\d*)?")
# a \\u escape at the end of the text, or a whole one followed by (part of) its low surrogate
_PARTIAL_ESCAPE = re.compile(r"u[0-9a-fA-F]{0,4}(?:\\(?:u[0-9a-fA-F]{0,4})?)?")
_LITERALS = ("true", "false", "null", "NaN", "Infinity", "-Infinity")
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


def _cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether `text` is the start of a JSON document (a write cut short) rather than no JSON:
    the parser ran out of text, or stopped in the last token, which is itself cut short."""
    if exc.msg.startswith("Extra data"):  # a whole value, then more
        return False
    rest = text[exc.pos :].rstrip()
    return (
        not rest
        or exc.msg.startswith("Unterminated string")
        or (exc.msg.startswith("Invalid \\uXXXX") and _PARTIAL_ESCAPE.fullmatch(rest) is not None)
        or any(literal.startswith(rest) for literal in _LITERALS)
        or _PARTIAL_NUMBER.fullmatch(rest) is not None
    )


def _parse_line(raw: bytes) -> tuple[Any, str | None]:
    """(the line's JSON value, None), or (None, why it cannot be read)."""
    raw = raw.rstrip(b"\r\n")  # so that positions are on line 1, where they are
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data":  # cut inside a character: look at the rest
            text = raw[: exc.start].decode("utf-8-sig", "replace")
            try:
                json.loads(text)
            except json.JSONDecodeError as cut:
                if _cut_short(text, cut):
                    return None, f"truncated JSON: {cut} (and a character cut short)"
            except (ValueError, RecursionError):
                pass
        return None, f"not JSON: not UTF-8 text (byte {exc.start}: {exc.reason})"
    try:
        return json.loads(text), None
    except RecursionError:
        where = deep_json_path(text, CAPTURE_MAX_DEPTH)
        return None, f"{where}: nested deeper than {CAPTURE_MAX_DEPTH} levels; line skipped"
    except json.JSONDecodeError as exc:
        return None, f"{'truncated JSON' if _cut_short(text, exc) else 'not JSON'}: {exc}"
    except ValueError as exc:  # an integer of more than 4,300 digits
        return None, f"not JSON: {exc}"


def _structure_problem(raw: bytes, data: Any) -> str | None:
    """A value nested deeper than `CAPTURE_MAX_DEPTH`, or a lone surrogate, as 'KEY: what'. Only
    a line that could hold one is walked: enough brackets, or a `\\uD8xx`-`\\uDFxx` escape."""
    deep = raw.count(b"[") + raw.count(b"{") > CAPTURE_MAX_DEPTH
    surrogate = _SURROGATE_ESCAPE.search(raw) is not None
    if not deep and not surrogate:
        return None
    return first_json_problem(data, CAPTURE_MAX_DEPTH, surrogates=surrogate)


def _id_problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return "not a JSON object"
    if "conversation_id" not in data:
        return "no conversation_id"
    cid = data["conversation_id"]
    if not isinstance(cid, str):
        return f"conversation_id is not a string (found {type(cid).__name__})"
    if not cid:
        return "conversation_id is empty"
    if printable(cid) != cid:
        return "conversation_id holds a lone surrogate (half of a UTF-16 pair; not valid Unicode)"
    return None


def _missing_turns(numbers: list[int], most: int = 5) -> tuple[list[int], int]:
    """The first `most` turn numbers missing below the highest of `numbers` (sorted, distinct),
    and how many are missing in all; never builds the range (a turn may be 2**31 - 1)."""
    missing: list[int] = []
    expected = 1
    for n in numbers:
        while expected < n and len(missing) < most:
            missing.append(expected)
            expected += 1
        expected = n + 1
    return missing, numbers[-1] - len(numbers)


LIVE_FORMATS = ("auto", "native", "openai", "otel")
"""The formats `read_capture` reads: the plugin's capture lines, OpenAI chat-completions logs,
OpenTelemetry GenAI spans as OTLP JSON, or `auto` (decided per file, `live._formats`)."""


class _Turns:
    """Collects capture records (the native line's JSON object, however it was read), samples
    them by conversation id, validates the sampled ones and builds the redacted conversations.
    Every format is read through one, so sampling, validation and redaction are the same."""

    def __init__(self, rate: float, seed: str | int, redactor: Redactor) -> None:
        self.rate, self.seed, self.redactor = rate, seed, redactor
        self.capture = Capture()
        self.turns: dict[str, list[tuple[CapturedTurn, str, int]]] = {}
        self.spoiled: dict[str, CaptureProblem] = {}
        self.decided: dict[str, bool] = {}
        self.pending: list[Any] = []
        """What a reader of another format keeps until every file is read (spans)."""

    def problem(self, shown: str, n: int, message: str) -> None:
        self.capture.problems.append(CaptureProblem(shown, n, message))

    def wanted(self, cid: str) -> bool:
        """Whether conversation `cid` is in the sample (and not already left out)."""
        take = self.decided.get(cid)
        if take is None:
            take = self.decided[cid] = is_sampled(cid, self.rate, self.seed)
        return take and cid not in self.spoiled

    def shown_id(self, cid: str) -> str:
        return self.redactor.text(cid) if self.redactor.active else cid

    def offer(self, shown: str, n: int, raw: bytes, data: Any) -> None:
        """One record read at `shown`:`n`; `raw` is the text it came from (a cheap pre-check of
        its nesting and surrogates)."""
        error = _id_problem(data)
        if error is not None:
            self.problem(shown, n, f"{error}; line skipped")
            return
        cid = data["conversation_id"]
        if not self.wanted(cid):
            return
        problem = _structure_problem(raw, data)
        if problem is None:
            try:
                turn = CapturedTurn.model_validate(data, strict=True)
            except ValidationError as exc:
                problem = _validation_message(exc)
        if problem is not None:
            self.spoil(cid, shown, n, f"{problem}; the conversation is left out of the sample")
            return
        self.turns.setdefault(cid, []).append((turn, shown, n))

    def spoil(self, cid: str, shown: str, n: int, message: str) -> None:
        """Leave conversation `cid` out of the sample, for `message` found at `shown`:`n`."""
        if cid not in self.spoiled:
            shown_id = self.shown_id(cid)
            self.spoiled[cid] = CaptureProblem(
                shown, n, f"conversation {shown_id!r}: {message}", shown_id
            )

    def finish(self) -> Capture:
        capture, spoiled, redactor = self.capture, self.spoiled, self.redactor
        capture.conversations_seen = len(self.decided)
        for cid, found in self.turns.items():
            if cid in spoiled:
                continue
            found.sort(key=lambda t: (t[0].turn, t[0].timestamp))
            numbers = [t.turn for t, _, _ in found]
            shown_id = self.shown_id(cid)
            first = found[0]
            repeated = next((i for i in range(1, len(found)) if numbers[i] == numbers[i - 1]), None)
            if repeated is not None:
                t, where, n = found[repeated]
                spoiled[cid] = CaptureProblem(
                    where,
                    n,
                    f"conversation {shown_id!r}: turn {t.turn} appears twice (first at "
                    f"{found[repeated - 1][1]}:{found[repeated - 1][2]}); the conversation is "
                    "left out",
                    shown_id,
                )
                continue
            roles = {t.role for t, _, _ in found}
            if len(roles) > 1:
                t, where, n = next(x for x in found if x[0].role != first[0].role)
                spoiled[cid] = CaptureProblem(
                    where,
                    n,
                    f"conversation {shown_id!r}: turn {t.turn} is {t.role} but turn "
                    f"{first[0].turn} is {first[0].role}; the conversation is left out",
                    shown_id,
                )
                continue
            if numbers[-1] != len(numbers):
                missing, count = _missing_turns(numbers)
                more = f" ({count} in all)" if count > len(missing) else ""
                spoiled[cid] = CaptureProblem(
                    first[1],
                    first[2],
                    f"conversation {shown_id!r}: turn(s) "
                    f"{', '.join(map(str, missing))}{more} missing from the capture; the "
                    "conversation is left out",
                    shown_id,
                )
                continue
            try:
                clean = [_redacted(t, shown_id, redactor) for t, _, _ in found]
            except ValidationError as exc:
                # a redaction made a value its type does not allow (a card-shaped quantity)
                spoiled[cid] = CaptureProblem(
                    first[1],
                    first[2],
                    f"conversation {shown_id!r}: redacting it leaves an invalid event "
                    f"({_validation_message(exc)}); the conversation is left out",
                    shown_id,
                )
                continue
            capture.conversations.append(
                Conversation(shown_id, first[0].role, clean, first[1], first[2])
            )
        capture.problems += spoiled.values()
        capture.problems.sort(key=lambda p: (p.path, p.line))
        capture.conversations.sort(key=lambda c: (c.started_at, c.conversation_id))
        return capture


def read_capture(
    paths: Iterable[str | os.PathLike[str]],
    *,
    rate: float = 1.0,
    seed: str | int = 0,
    redactor: Redactor | None = None,
    display: Callable[[Path], str] = str,
    format: str = "native",
) -> Capture:
    """Read capture files, keep the sampled conversations, and report every unusable line.

    A line that is not JSON (or is JSON cut short: "truncated JSON"), is nested too deeply to
    read, or has no usable conversation id is skipped on its own. A line of a sampled
    conversation that does not validate (an unknown event type or schema_version, a missing key,
    a turn out of range, a lone surrogate, nesting deeper than `CAPTURE_MAX_DEPTH`, a repeated
    turn) takes its whole conversation out of the sample, reported, since judging a transcript
    with a turn missing would grade something that never happened. Conversations outside the
    sample are not validated at all. Every problem names the file and the line; none quotes the
    line's content.

    `format` (one of `LIVE_FORMATS`) reads OpenAI chat-completions logs or OpenTelemetry GenAI
    spans instead (`live._formats`); their conversations are sampled, validated and redacted
    the same way.
    """
    if format not in LIVE_FORMATS:
        raise ValueError(
            f"unknown live traffic format {format!r}; known: {', '.join(LIVE_FORMATS)}"
        )
    found = _Turns(rate, seed, redactor or NO_REDACTION)
    capture = found.capture
    foreign = None
    for path in capture_files(paths, suffixes=(".jsonl", ".json") if format == "otel" else None):
        shown = printable(display(path))
        if path.exists() and not path.is_file():  # a folder, or a pipe that would block
            capture.problems.append(CaptureProblem(shown, 0, "cannot read: not a regular file"))
            continue
        try:
            fh = path.open("rb")
        except OSError as exc:
            capture.problems.append(CaptureProblem(shown, 0, f"cannot read: {exc.strerror or exc}"))
            continue
        with fh:
            if format != "native":
                if foreign is None:
                    from . import _formats as foreign
                if foreign.read_file(fh, shown, found, format):
                    continue  # read as a foreign format
            for n, raw in enumerate(fh, 1):
                capture.lines += 1
                if not raw.strip():
                    continue
                data, error = _parse_line(raw)
                if error is not None:
                    capture.problems.append(CaptureProblem(shown, n, error))
                    continue
                found.offer(shown, n, raw, data)
    if foreign is not None:
        foreign.finish(found)
    return found.finish()


def _redacted(turn: CapturedTurn, shown_id: str, redactor: Redactor) -> CapturedTurn:
    if not redactor.active:
        return turn
    return turn.model_copy(
        update={
            "conversation_id": shown_id,
            "user": redactor.text(turn.user),
            "events": [
                coerce_event(redactor.value(e.model_dump(mode="json"))) for e in turn.events
            ],
        }
    )


# --------------------------------------------------------------------------------------------
# Trend statistics (the interval and the test are `stats`', the one place statistics live)


@dataclass
class TrendPoint:
    """One dimension in one live run: passes over graded verdicts, with its 95% interval."""

    run_id: str
    started_at: str
    passed: int
    graded: int
    errors: int = 0
    rubric_fingerprints: tuple[str, ...] = ()
    judge_fingerprints: tuple[str, ...] = ()
    flag: str = ""
    """'' (noise, or the first point), 'up' or 'down' (a move beyond the noise), 'changed' (the
    judge or the rubric changed since the previous point, so the two are not comparable)."""
    p_value: float | None = None

    @property
    def rate(self) -> float | None:
        return self.passed / self.graded if self.graded else None

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed, self.graded)


@dataclass
class DimensionTrend:
    dimension: str
    points: list[TrendPoint]


@dataclass
class Trend:
    """Pass rate per dimension across live runs, oldest first."""

    runs: list[tuple[str, str]]  # (run_id, started_at)
    dimensions: list[DimensionTrend]
    overall: list[TrendPoint]
    alpha: float = 0.05

    def lines(self) -> list[str]:
        if not self.runs:
            return ["no complete live runs in the run store yet: run pytest --commerce-live=PATH"]
        out = [
            f"pass rate per rubric dimension over {len(self.runs)} live run(s), oldest first; "
            f"[95% Wilson interval] n = graded verdicts",
            f"a move is flagged when a two-proportion test gives p < {self.alpha:g} and it is "
            f"larger than {NOISE_POINTS:g} point; smaller moves are noise",
        ]
        for dim in [*self.dimensions, DimensionTrend("overall", self.overall)]:
            out.append("")
            out.append(dim.dimension)
            for pt in dim.points:
                out.append("  " + _point_line(pt))
        return out


def _pct(x: float | None) -> str:
    return "  n/a " if x is None else f"{100 * x:5.1f}%"


def _point_line(pt: TrendPoint) -> str:
    low, high = pt.interval
    p = f"{pt.p_value:.3g}" if pt.p_value is not None else "n/a"
    mark = {
        "up": f"  ▲ up, beyond noise (p={p})",
        "down": f"  ▼ DOWN, beyond noise (p={p})",
        "changed": "  ≠ judge or rubric changed: not comparable with the previous run",
    }.get(pt.flag, "")
    errors = f", {pt.errors} not graded" if pt.errors else ""
    return (
        f"{pt.started_at[:16].replace('T', ' ')}  {pt.run_id}  {_pct(pt.rate)} "
        f"[{100 * low:5.1f}–{100 * high:5.1f}]  n={pt.graded}{errors}{mark}"
    )


def _flag(points: list[TrendPoint], alpha: float) -> None:
    previous: TrendPoint | None = None
    for pt in points:
        if pt.graded == 0:
            continue
        if previous is not None:
            if (
                pt.rubric_fingerprints != previous.rubric_fingerprints
                or pt.judge_fingerprints != previous.judge_fingerprints
            ):
                pt.flag = "changed"
            else:
                pt.p_value = two_proportion_p(
                    previous.passed, previous.graded, pt.passed, pt.graded
                )
                move = 100 * ((pt.rate or 0) - (previous.rate or 0))
                if pt.p_value < alpha and abs(move) > NOISE_POINTS:
                    pt.flag = "up" if move > 0 else "down"
        previous = pt


def compute_trend(
    runs: Sequence[tuple[str, str, Iterable[RubricVerdict]]],
    dimensions: Sequence[str] | None = None,
    *,
    alpha: float = 0.05,
) -> Trend:
    """The trend over `runs`: (run_id, started_at, the verdicts of every trial), any order.

    A verdict counts toward its dimension when its outcome is pass or fail; judge and
    infrastructure errors are counted apart and never as a fail.
    """
    ordered = sorted(runs, key=lambda r: (r[1], r[0]))
    per: dict[str, list[TrendPoint]] = {}
    overall: list[TrendPoint] = []
    for run_id, started_at, verdicts in ordered:
        counts: dict[str, dict[str, Any]] = {}
        for v in verdicts:
            dim = v.dimension
            if not dim or (dimensions is not None and dim not in dimensions):
                continue
            c = counts.setdefault(dim, {"p": 0, "n": 0, "e": 0, "r": set(), "j": set()})
            if v.outcome in ("pass", "fail"):
                c["n"] += 1
                c["p"] += v.outcome == "pass"
            else:
                c["e"] += 1
            if v.rubric_fingerprint:
                c["r"].add(v.rubric_fingerprint)
            if v.judge_fingerprint:
                c["j"].add(v.judge_fingerprint)
        for dim, c in counts.items():
            per.setdefault(dim, []).append(
                TrendPoint(
                    run_id,
                    started_at,
                    c["p"],
                    c["n"],
                    c["e"],
                    tuple(sorted(c["r"])),
                    tuple(sorted(c["j"])),
                )
            )
        overall.append(
            TrendPoint(
                run_id,
                started_at,
                sum(c["p"] for c in counts.values()),
                sum(c["n"] for c in counts.values()),
                sum(c["e"] for c in counts.values()),
                tuple(sorted({r for c in counts.values() for r in c["r"]})),
                tuple(sorted({j for c in counts.values() for j in c["j"]})),
            )
        )
    order = [d for d in STANDARD if d in per] + sorted(d for d in per if d not in STANDARD)
    dims = [DimensionTrend(d, per[d]) for d in order]
    for d in dims:
        _flag(d.points, alpha)
    _flag(overall, alpha)
    return Trend([(r[0], r[1]) for r in ordered], dims, overall, alpha)


def read_live_runs(store: Any, limit: int = 12) -> list[tuple[str, str, list[RubricVerdict]]]:
    """The verdicts of the newest `limit` complete live runs of a `store.RunStore`."""
    runs = store.runs(kind="live", complete=True, limit=limit)
    return [(run.run_id, run.started_at, store.verdicts(run.run_id)) for run in runs]


# --------------------------------------------------------------------------------------------
# The chart


_W, _H, _PAD_L, _PAD_R, _PAD_T, _PAD_B = 360, 170, 44, 12, 26, 34
_COLS = 2


def _panel(
    dim: DimensionTrend, x0: int, y0: int, run_ids: list[str], labels: list[str]
) -> list[str]:
    inner_w, inner_h = _W - _PAD_L - _PAD_R, _H - _PAD_T - _PAD_B
    count = max(len(labels), 1)

    def px(i: int) -> float:
        return x0 + _PAD_L + (inner_w * (i + 0.5) / count)

    def py(rate: float) -> float:
        return y0 + _PAD_T + inner_h * (1 - rate)

    index = {run_id: i for i, run_id in enumerate(run_ids)}
    out = [
        f'<g class="panel"><text x="{x0 + _PAD_L}" y="{y0 + 16}" font-weight="600">'
        f"{escape(dim.dimension)}</text>",
        f'<rect x="{x0 + _PAD_L}" y="{y0 + _PAD_T}" width="{inner_w}" height="{inner_h}" '
        'fill="#fff" stroke="#d0d7de"/>',
    ]
    for tick in (0.0, 0.5, 1.0):
        y = py(tick)
        out.append(
            f'<line x1="{x0 + _PAD_L}" x2="{x0 + _PAD_L + inner_w}" y1="{y:.1f}" '
            f'y2="{y:.1f}" stroke="#eaeef2"/>'
        )
        out.append(
            f'<text x="{x0 + _PAD_L - 4}" y="{y + 4:.1f}" text-anchor="end" '
            f'font-size="10" fill="#57606a">{int(tick * 100)}%</text>'
        )
    pts = [(index[p.run_id], p) for p in dim.points if p.graded and p.run_id in index]
    if len(pts) > 1:
        upper = [f"{px(i):.1f},{py(p.interval[1]):.1f}" for i, p in pts]
        lower = [f"{px(i):.1f},{py(p.interval[0]):.1f}" for i, p in reversed(pts)]
        out.append(
            f'<polygon points="{" ".join(upper + lower)}" fill="#0969da" '
            'fill-opacity="0.15" stroke="none"/>'
        )
        line = " ".join(f"{px(i):.1f},{py(p.rate or 0):.1f}" for i, p in pts)
        out.append(f'<polyline points="{line}" fill="none" stroke="#0969da" stroke-width="1.5"/>')
    for i, p in pts:
        low, high = p.interval
        colour = {"down": "#cf222e", "up": "#1a7f37", "changed": "#9a6700"}.get(p.flag, "#0969da")
        radius = 4.5 if p.flag else 3
        out.append(
            f'<line x1="{px(i):.1f}" x2="{px(i):.1f}" y1="{py(low):.1f}" '
            f'y2="{py(high):.1f}" stroke="{colour}" stroke-opacity="0.6"/>'
        )
        title = escape(
            f"{p.run_id}: {100 * (p.rate or 0):.1f}% "
            f"[{100 * low:.1f}–{100 * high:.1f}] n={p.graded}" + (f" {p.flag}" if p.flag else "")
        )
        out.append(
            f'<circle cx="{px(i):.1f}" cy="{py(p.rate or 0):.1f}" r="{radius}" '
            f'fill="{colour}"><title>{title}</title></circle>'
        )
    step = max(1, math.ceil(count / 6))
    for i, label in enumerate(labels):
        if i % step == 0 or i == count - 1:
            out.append(
                f'<text x="{px(i):.1f}" y="{y0 + _H - _PAD_B + 14}" text-anchor="middle" '
                f'font-size="10" fill="#57606a">{escape(label)}</text>'
            )
    out.append("</g>")
    return out


def render_trend_svg(trend: Trend) -> str:
    """The trend as one self-contained SVG: a panel per dimension and one overall, pass rate with
    its 95% band per live run; flagged moves in red (down) or green (up)."""
    labels = [started[:10] for _, started in trend.runs]
    run_ids = [run_id for run_id, _ in trend.runs]
    panels = [*trend.dimensions, DimensionTrend("overall (all dimensions)", trend.overall)]
    rows = math.ceil(len(panels) / _COLS)
    width, height = _COLS * _W, rows * _H + 40
    body = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="system-ui,sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#f6f8fa"/>',
        f'<text x="12" y="20" font-size="14" font-weight="600">Live pass rate per rubric '
        f"dimension ({len(trend.runs)} runs, 95% Wilson band; ±{NOISE_POINTS:g} point is noise)"
        "</text>",
    ]
    for n, dim in enumerate(panels):
        body += _panel(dim, (n % _COLS) * _W, 30 + (n // _COLS) * _H, run_ids, labels)
    body.append("</svg>")
    return "\n".join(body)


def trend_html_section(trend: Trend) -> str:
    """An HTML section (heading, inline SVG, table) the HTML report can embed as it is."""
    rows = []
    for dim in [*trend.dimensions, DimensionTrend("overall", trend.overall)]:
        for pt in dim.points:
            low, high = pt.interval
            rows.append(
                f"<tr><td>{escape(dim.dimension)}</td><td>{escape(pt.run_id)}</td>"
                f'<td class="num">{_pct(pt.rate)}</td>'
                f'<td class="num">{100 * low:.1f}–{100 * high:.1f}</td>'
                f'<td class="num">{pt.graded}</td><td>{escape(pt.flag)}</td></tr>'
            )
    return (
        '<section id="live-trend"><h2>Live trend per rubric dimension</h2>'
        f'<p class="noise">A move of ±{NOISE_POINTS:g} point is noise; flagged moves pass a '
        f"two-proportion test at p &lt; {trend.alpha:g}.</p>"
        + render_trend_svg(trend)
        + "<table><tr><th>dimension</th><th>run</th><th>pass rate</th><th>95% interval</th>"
        "<th>n</th><th>flag</th></tr>" + "".join(rows) + "</table></section>"
    )
