"""The memory policy's classifier: what may go into a shopper's long-term memory.

One function, `memory_policy.violation`, decides for both places that enforce the policy: the
guardrail that blocks a `save_memory` call before it runs (`guardrails.Guardrails.memory_policy`)
and the backend that drops a note it is asked to store (`backend.ReferenceBackend.save_memory`).
Both call it through this module, so a change here changes both.
"""

from __future__ import annotations

import re

__all__ = ["violation"]

_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(
    r"(?<![\w])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)|\d{2,4})[\s.-]?\d{3}[\s.-]?\d{3,4}(?![\w])"
)
_CARD_DIGITS = re.compile(r"(?<!\d)(?:\d[ -]?){12,18}\d(?!\d)")
_CARD_HINT = re.compile(
    r"\b(?:card|visa|mastercard|amex|credit|debit|cvv|cvc)\b\D{0,25}\d{3,4}\b", re.I
)
_STREET = re.compile(
    r"\b\d{1,5}\s+(?:[A-Za-z][\w.'-]*\s+){1,4}(?:street|st|avenue|ave|road|rd|boulevard|blvd|"
    r"lane|ln|drive|dr|court|ct|way|place|pl|terrace|parkway|pkwy|highway|hwy|square|sq)\b\.?",
    re.I,
)
_POSTAL_LINE = re.compile(r"\b(?:apt|apartment|suite|unit|po box|p\.o\. box)\s*#?\s*\w+", re.I)
_HEALTH = re.compile(
    r"\b(?:surg\w*|diagnos\w*|diabet\w*|asthma\w*|arthrit\w*|pregnan\w*|cancer\w*|chemo\w*|"
    r"tumou?r\w*|depress\w*|anxiety|adhd|autis\w*|allerg\w*|eczema|psoriasis|migraine\w*|"
    r"injur\w*|fractur\w*|sprain\w*|acl|meniscus|plantar|fasciitis|bunions?|tendinitis|"
    r"sciatica|hernia\w*|medication\w*|prescri\w*|therap\w*|disorder\w*|disease\w*|"
    r"illness\w*|celiac|coeliac|intoleran\w*|ibs|blood pressure|hypertension|cholesterol|"
    r"thyroid|insulin|epilep\w*|seizure\w*|dementia|alzheimer\w*|hiv|heart condition|"
    r"medical condition|skin condition|chronic pain|back pain|knee pain|joint pain)\b",
    re.I,
)


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def violation(text: str) -> str | None:
    """The kind of information that keeps `text` out of memory, or None when it may be stored.

    Identifiers (email addresses, phone numbers, street addresses, card numbers) and excluded
    categories (health conditions) are never stored, whatever else the note says.
    """
    if _EMAIL.search(text):
        return "email address"
    for match in _CARD_DIGITS.finditer(text):
        if _luhn(re.sub(r"\D", "", match.group())):
            return "card number"
    if _CARD_HINT.search(text):
        return "card number"
    if _PHONE.search(text):
        return "phone number"
    if _STREET.search(text) or _POSTAL_LINE.search(text):
        return "street address"
    if _HEALTH.search(text):
        return "health condition"
    return None
