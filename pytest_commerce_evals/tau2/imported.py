"""What an imported folder's `conftest.py` stands on: where the τ²-bench checkout is, its
database and policy, and the folder's cases collected wherever the folder lies.

The checkout is `$COMMERCE_TAU2_CHECKOUT` when set, else the path the importer wrote, relative to
the folder (so a repository holding both runs from any clone location). Nothing is read until a
trial asks for it; a checkout, database or policy that is not there is a `ConfigurationError`
naming the path and both ways to point at the checkout.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

__all__ = ["AGENT_VIEW", "CHECKOUT_ENV", "CUSTOMER_VIEW", "Checkout"]

CHECKOUT_ENV = "COMMERCE_TAU2_CHECKOUT"
AGENT_VIEW = "_tau2_agent.yaml"
"""What τ²'s agent is shown, read from the checkout's source by the importer (`tau2.prompts`)."""
CUSTOMER_VIEW = "_tau2_customer.yaml"
"""What τ²'s user simulator is given, and each case's scenario (`tau2.customer`)."""
_VIEW_KEYS = ("tools", "system_prompt", "agent_instruction", "greeting")
_CUSTOMER_KEYS = ("system_prompt", "guidelines", "endings", "scenarios")


def _view(path: Path, keys: tuple[str, ...]) -> dict[str, Any] | None:
    """One of the importer's `_tau2_*.yaml` files; None when there is none. A file that is not
    one is a `ConfigurationError` naming what is wrong (import the tasks again to rewrite it)."""
    if not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, TypeError, KeyError, RecursionError, yaml.YAMLError) as exc:
        # ValueError (a text not UTF-8, `!!int abc`, a 30th of February), KeyError and TypeError:
        # what PyYAML's constructors raise past parsing; RecursionError: nested too deep
        raise ConfigurationError(
            f"{path}: cannot be read ({str(exc)[:200]}); import the tasks again"
        ) from None
    if not isinstance(data, dict) or any(k not in data for k in keys):
        raise ConfigurationError(
            f"{path}: expected the keys {', '.join(keys)}; import the tasks again"
        )
    return data


def _agent_view(path: Path) -> dict[str, Any] | None:
    data = _view(path, _VIEW_KEYS)
    if data is not None and (
        not isinstance(data["tools"], list)
        or not all(isinstance(data[k], str) for k in _VIEW_KEYS[1:])
    ):
        raise ConfigurationError(
            f"{path}: tools is a list and the prompts are text; import the tasks again"
        )
    if data is not None:
        from .prompts import AGENT_FIELDS

        _template(path, data["system_prompt"], AGENT_FIELDS)
    return data


def _template(path: Path, template: str, fields: tuple[str, ...]) -> None:
    """A view's `system_prompt` must take each of `fields` whole: a `ConfigurationError` else
    (never a prompt with the policy or the scenario cut or left out)."""
    from .prompts import unfilled

    problem = unfilled(template, fields)
    if problem is not None:
        raise ConfigurationError(f"{path}: system_prompt: {problem}; import the tasks again")


def _customer_view(path: Path) -> dict[str, Any] | None:
    data = _view(path, _CUSTOMER_KEYS)
    if data is not None and not (
        isinstance(data["system_prompt"], str)
        and isinstance(data["guidelines"], str)
        and isinstance(data["endings"], list)
        and all(isinstance(e, str) for e in data["endings"])
        and isinstance(data["scenarios"], dict)
    ):
        raise ConfigurationError(
            f"{path}: the prompt and guidelines are text, the endings a list of text and the "
            "scenarios a mapping; import the tasks again"
        )
    if data is not None:
        from .customer import PROMPT_FIELDS

        _template(path, data["system_prompt"], PROMPT_FIELDS)
    return data


class Checkout:
    """`Checkout(conftest_file, relative, domain="retail")`: the τ²-bench checkout an imported
    folder's cases run against."""

    def __init__(self, conftest_file: str | Path, relative: str, *, domain: str = "retail") -> None:
        self.folder = Path(conftest_file).resolve().parent
        self.relative = relative
        self.domain = domain

    @property
    def root(self) -> Path:
        """The checkout's root: `$COMMERCE_TAU2_CHECKOUT`, else the written path from the folder."""
        given = os.environ.get(CHECKOUT_ENV, "").strip()
        try:
            if given:
                return Path(given).expanduser().resolve()
            return (self.folder / self.relative).resolve()
        except (RuntimeError, OSError) as exc:  # `~nobody`, a loop of links
            where = f"${CHECKOUT_ENV}={given}" if given else f"{self.relative!r} from {self.folder}"
            raise ConfigurationError(
                f"τ²-bench checkout {where}: not a path this can follow ({exc}); set "
                f"{CHECKOUT_ENV} to the root of a τ²-bench checkout"
            ) from None

    def _file(self, name: str) -> Path:
        path = self.root / "data" / "tau2" / "domains" / self.domain / name
        try:
            found = path.is_file()
        except OSError:  # a name too long, say
            found = False
        if not found:
            given = os.environ.get(CHECKOUT_ENV, "").strip()
            source = (
                f"${CHECKOUT_ENV}={given}"
                if given
                else f"{self.relative!r} from {self.folder} (no ${CHECKOUT_ENV} set)"
            )
            raise ConfigurationError(
                f"τ²-bench {self.domain} {name}: {path} not found; the checkout is {source}. "
                f"Set {CHECKOUT_ENV} to the root of a τ²-bench checkout, or import the tasks "
                "again from where it is"
            )
        return path

    @property
    def db(self) -> Path:
        return self._file("db.json")

    def policy(self) -> str:
        """The domain's `policy.md`, the agent's instructions; never empty for a missing file."""
        path = self._file("policy.md")
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeError) as exc:
            raise ConfigurationError(
                f"τ²-bench {self.domain} policy.md: {path}: cannot be read ({exc})"
            ) from None

    def agent(self, client: Any, model: str) -> Any:
        """The plugin's τ² agent on `client`, shown what τ²'s own agent is shown: the tool
        schemas, system prompt and greeting the importer read from the checkout
        (`_tau2_agent.yaml` beside the cases), with the checkout's policy. Without that file (an
        import from a checkout whose source it could not read) the plugin's own schemas and the
        policy alone."""
        from .agent import Tau2Agent
        from .prompts import system_prompt

        policy = self.policy()
        view = _agent_view(self.folder / AGENT_VIEW)
        if view is None:
            return Tau2Agent(client, model, policy=policy, domain=self.domain)
        return Tau2Agent(
            client,
            model,
            policy=policy,
            domain=self.domain,
            tools=view["tools"],
            system_prompt=system_prompt(view["system_prompt"], view["agent_instruction"], policy),
            greeting=view["greeting"],
        )

    def customer(self, config: Any, case: Any, client: Any = None) -> Any:
        """τ²'s simulated customer for `case` on the customer endpoint (or `client`): its
        guidelines, the case's scenario and τ²'s endings, from `_tau2_customer.yaml`. None (the
        plugin's built-in customer plays the case's `user:` brief) without that file or without
        a scenario for the case."""
        from .customer import Tau2Customer

        view = _customer_view(self.folder / CUSTOMER_VIEW)
        scenario = view["scenarios"].get(case.id) if view is not None else None
        if view is None or not isinstance(scenario, str):
            return None
        agent = _agent_view(self.folder / AGENT_VIEW)
        greeting = agent["greeting"] if agent is not None else None
        if client is None:
            from ..models.clients import session_client

            client = session_client(config, "user")
        model = client.endpoint.model
        return Tau2Customer.of(client, model, view, scenario, greeting)

    def backend(self) -> Any:
        """A fresh backend over the checkout's database."""
        from .domains import backend_class

        return backend_class(self.domain).load(self.db)

    def collect(self, file_path: Path, parent: Any) -> Any:
        """A case file of this folder as the plugin collects one, also when the folder is not in
        `commerce_case_dirs`; None for any other file, and for one the plugin collects itself."""
        from ..cases.collection import CaseFile, is_case_file
        from ..cases.loader import CASE_SUFFIXES

        path = Path(file_path)
        if path.suffix not in CASE_SUFFIXES or path.name.startswith(("_", ".")):
            return None
        if not path.resolve().is_relative_to(self.folder):
            return None
        if is_case_file(parent.config, path):
            return None  # inside the case folders (or named): the plugin's own hook has it
        return CaseFile.from_parent(parent, path=path)
