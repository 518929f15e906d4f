"""The plugin's own errors, all of them, under one base class a `conftest.py` or a CI script can
catch. Which outcome a trial meets each with:

- `ConfigurationError`: the conftest did not supply what the plugin needs (the glue): the trial
  ends with the outcome `error`, never counted against the agent; `ConversionError` under it
  (a converter given messages that are not its framework's);
- `InfraError`: the infrastructure failed (an endpoint down, retries exhausted), with
  `EndpointError` (an endpoint that cannot be used as configured: a refused key, model or URL)
  and `LocalModelUnavailable` (the embedded model cannot run here) under it: the trial is an
  `infra_error`;
- `UserError`: the simulated customer failed: `user_error`;
- `StoreError` (with `StoreUnavailable` and `DamagedRun`) and `DriverMissing`: a run store or run
  record cannot be read or written; a trial never meets them;
- input that cannot be read, each naming the file, line or key: `DocumentTooLarge` (a case file
  past a bound), `TaskError` (a τ² task), `CheckoutSourceError` (a τ²-bench checkout's source),
  `CalibrationError` (a calibration set), `FixtureError` (a fixture file), `MinKappaError` and
  `BudgetError` (a setting's value), `UnknownDimension` (a rubric's standard dimension);
  `CalibrationAborted` stops a calibration whose judge endpoint failed;
- `RetailError`: a τ² retail tool refused the call (its message is what the agent reads);
- `FakeClientExhausted`: a scripted `FakeClient` ran out of replies (an `AssertionError`: the
  test planned fewer calls).

`redact` and `shown_url` keep secrets out of what errors and headers show and records store.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = [
    "MASK",
    "BudgetError",
    "CalibrationAborted",
    "CalibrationError",
    "CheckoutSourceError",
    "CommerceEvalsError",
    "ConfigurationError",
    "ConversionError",
    "DamagedRun",
    "DocumentTooLarge",
    "DriverMissing",
    "EndpointError",
    "FakeClientExhausted",
    "FixtureError",
    "InfraError",
    "LocalModelUnavailable",
    "MinKappaError",
    "RetailError",
    "StoreError",
    "StoreUnavailable",
    "TaskError",
    "UngradedTask",
    "UnknownDimension",
    "UserError",
    "redact",
    "shown_url",
]


class CommerceEvalsError(Exception):
    """Base class of every error this plugin raises on purpose."""


# -- the glue: outcome `error` --------------------------------------------------------------------


class ConfigurationError(CommerceEvalsError):
    """The conftest did not supply what the plugin needs; says how to fix it.

    Raised inside a trial it is the glue's fault, not the agent's: the trial ends with the
    outcome `error`, which never counts in a set's rate or a failing-set diff."""


class ConversionError(ConfigurationError, ValueError):
    """A converter could not read the messages it was given: the glue's problem (they are not
    the framework's messages as the framework returns them), never the agent's failure; the
    trial ends as a glue error naming the converter and the item."""


# -- the infrastructure: outcome `infra_error` ----------------------------------------------------


class InfraError(CommerceEvalsError, RuntimeError):
    """Raise from an agent when the failure is the infrastructure's (endpoint down, retries
    exhausted), so the trial is an `infra_error` and never counts against the agent."""


class EndpointError(InfraError):
    """A model endpoint cannot be used as configured: settings that name no usable server (a
    base URL that is not http(s), a model without a base URL, no key for hosted OpenAI), or a
    server that refuses the request as misconfigured (HTTP 401, 403 or 404: the key, the model
    name or the URL). The message says what to set or check.

    Its outcome is decided here: an `InfraError`, so a trial that meets it is an `infra_error`,
    like an endpoint that fails past the retries. The trouble lies with the endpoint and its
    settings, which the team's conftest does not hold (not the glue's `error`) and the agent did
    not cause (not a `fail`). Settings the run can see are checked before the first trial and
    refused there as a usage error; only what the server alone can tell (a revoked key, a model
    it does not serve) reaches a trial."""


class LocalModelUnavailable(InfraError):
    """The embedded model cannot run here; the message says what to install or configure."""


# -- the simulated customer: outcome `user_error` ---------------------------------------------


class UserError(CommerceEvalsError):
    """The simulated customer failed (its endpoint, an unusable reply, or a rule the plugin
    checks): the trial is a `user_error`, never the agent's failure."""


# -- run stores and records -------------------------------------------------------------------


class StoreError(CommerceEvalsError):
    """The run store cannot be opened, read or written; the message names the file."""


class StoreUnavailable(StoreError):
    """The store's server cannot be reached, or the connection to it was lost (PostgreSQL);
    the operation is tried again a few times before this is raised."""


class DamagedRun(StoreError):
    """One run's rows do not decode; the rest of the store may still be read."""


class DriverMissing(CommerceEvalsError):
    """A PostgreSQL URL was given but psycopg is not installed."""


# -- input that cannot be read ----------------------------------------------------------------


class DocumentTooLarge(CommerceEvalsError):
    """The document went past a bound (nesting, aliases): the read stopped at `line`."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(f"line {line}: {message}")
        self.line = line
        self.message = message


class TaskError(CommerceEvalsError, ValueError):
    """A τ² task this converter cannot read; the message names the task and the key."""


class UngradedTask(TaskError):
    """A τ² task whose reward basis lists a check the τ² bridge does not grade (`ACTION`,
    `ENV_ASSERTION`): its case would have nothing of τ²'s reward to grade, and always pass."""


class CheckoutSourceError(CommerceEvalsError, ValueError):
    """A τ²-bench checkout's source does not hold what is read from it (the tool schemas, the
    agent's prompt, its greeting); the message names the file and what."""


class CalibrationError(CommerceEvalsError, ValueError):
    """A calibration file that cannot be used; the message names the file, item and key."""


class FixtureError(CommerceEvalsError, ValueError):
    """A fixture file is malformed: the message names the file, the key path and what was found."""

    def __init__(self, path: Path | str, problems: list[str]) -> None:
        self.path = str(path)
        self.problems = problems
        super().__init__("\n".join(f"{self.path}: {p}" for p in problems))


class MinKappaError(CommerceEvalsError, ValueError):
    """A `--commerce-judge-min-kappa` value that is not auto, none or a number in [-1, 1]."""


class BudgetError(CommerceEvalsError, ValueError):
    """A budget that cannot be read."""


class ShardError(CommerceEvalsError, ValueError):
    """A `--commerce-shard` or `--commerce-run-id` value that cannot be read."""


class UnknownDimension(CommerceEvalsError, ValueError):
    """A rubric named a standard dimension that does not exist."""


class CalibrationAborted(CommerceEvalsError, RuntimeError):
    """The judge endpoint failed; calibrating further would only wait on retries."""


# -- what a tool or a test double raises ------------------------------------------------------


class RetailError(CommerceEvalsError, ValueError):
    """A tool refused the call; the message is what the agent reads (τ²'s error result)."""


class FakeClientExhausted(CommerceEvalsError, AssertionError):
    """The script ran out: the code under test made more model calls than the test planned."""


# -- secrets never shown or stored --------------------------------------------------------------

MASK = "***"
_SECRET_NAMES = (
    r"api[-_ ]?key|x-api-key|api[-_]?token|access[-_]?token|auth[-_]?token|refresh[-_]?token|"
    r"secret|client[-_]?secret|password|passwd|signature|credentials?"
)
_SECRET_PATTERNS = [
    # `Authorization: Bearer <token>`, `Bearer <token>`, `Basic <base64>`
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]{6,}"), rf"\1\2{MASK}"),
    # `api_key=...`, `"api-key": "..."`, `password: ...`, `?key=...`
    (
        re.compile(rf"""(?ix)\b({_SECRET_NAMES})(["']?\s*[:=]\s*["']?)([^\s"'&,;}}<>]{{4,}})"""),
        rf"\1\2{MASK}",
    ),
    # user-info in any URL: scheme://user:password@host
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s/:@]*):[^\s/@]+@"), rf"\1:{MASK}@"),
    # key-shaped strings: sk-..., and long tokens mixing upper case, lower case and digits
    (re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{12,}"), rf"\1-{MASK}"),
    (
        re.compile(
            r"\b(?=[A-Za-z0-9_-]*[A-Z])(?=[A-Za-z0-9_-]*[a-z])(?=[A-Za-z0-9_-]*[0-9])"
            r"[A-Za-z0-9_-]{32,}\b"
        ),
        MASK,
    ),
]


def redact(text: str) -> str:
    """`text` with what looks like a secret masked (`***`): bearer and basic credentials, the
    values of key-, token-, secret- and password-named fields, passwords in URLs, `sk-` keys and
    long tokens mixing upper case, lower case and digits. For error bodies and messages before
    they are shown or stored; a key echoed by a server never reaches a report."""
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def shown_url(url: str | None) -> str | None:
    """A URL as it may be shown: the password of its user-info and the values of its query
    parameters masked (`http://u:***@host/v1?api-key=***`); None for None."""
    if not url:
        return url
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    try:
        parts = urlsplit(url)
        if not parts.netloc or "@" in parts.path or "@" in parts.query:
            # malformed (`http//u:key@host`, `u:key@host/v1`): where a secret ends is unknown,
            # so it is shown only when it holds none (`localhost:8000`: no user-info, no token)
            if "@" in url or "?" in url or re.search(r"[A-Za-z0-9_\-]{16,}", url):
                raise ValueError(url)
            return url
        netloc = parts.netloc
        if "@" in netloc:
            user, _, host = netloc.rpartition("@")
            netloc = f"{user.split(':', 1)[0]}:{MASK}@{host}" if ":" in user else netloc
        query = parts.query
        if query:
            query = urlencode([(k, MASK) for k, _ in parse_qsl(query, keep_blank_values=True)])
            query = query.replace("%2A%2A%2A", MASK)
        return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
    except ValueError:  # not a URL: only a scheme that is one is shown
        scheme = url.split("://", 1)[0] if "://" in url else ""
        shown = scheme if scheme.isalpha() and len(scheme) <= 10 else "(no scheme)"
        return shown + "://(unreadable URL)"
