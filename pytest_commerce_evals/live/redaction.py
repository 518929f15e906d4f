"""Redaction: customer identifiers replaced in every string of a message or an event.

`Redactor` finds emails, phone numbers, card numbers (Luhn-checked), IBANs (ISO 13616-checked),
API keys and tokens, and street addresses, plus any custom patterns; `CaptureWriter` redacts a
turn before it reaches the disk and `read_capture` redacts again before the judge sees it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_REDACT", "DEFAULT_REDACTOR", "NO_REDACTION", "REDACTION_KINDS", "Redactor"]


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


def _named(name: str) -> Callable[[re.Match[str]], str | None]:
    """What replaces a match of the pattern `name` (a pattern of the user's)."""
    return lambda m: f"[redacted:{name}]"


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
            self._rules.append((compiled, _named(name), None, False))

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
