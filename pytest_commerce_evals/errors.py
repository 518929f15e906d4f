"""The plugin's own errors, under one base class a `conftest.py` or a CI script can catch.

- `ConfigurationError`: the conftest did not supply what the plugin needs (a glue error: the
  trial ends with the outcome `error`, never counted against the agent);
- `InfraError` (in `agent`): the infrastructure failed (endpoint down, retries exhausted), with
  `EndpointError` and `LocalModelUnavailable` under it: the trial is an `infra_error`;
- `StoreError` (in `store`): a run store or run record cannot be read or written.
"""

from __future__ import annotations

__all__ = ["CommerceEvalsError", "ConfigurationError"]


class CommerceEvalsError(Exception):
    """Base class of every error this plugin raises on purpose."""


class ConfigurationError(CommerceEvalsError):
    """The conftest did not supply what the plugin needs; says how to fix it.

    Raised inside a trial it is the glue's fault, not the agent's: the trial ends with the
    outcome `error`, which never counts in a set's rate or a failing-set diff."""
