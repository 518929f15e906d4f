"""commerce-evals: regression evals for LLM commerce agents, as a pytest plugin.

The top level exports what a `conftest.py` needs to wire an agent and a backend.
"""

from .agent import Agent, AgentSession, InfraError
from .backend import Backend, Snapshot
from .cases.case import Case, CaseFileWarning, Expected, State
from .errors import CommerceEvalsError, ConfigurationError
from .events import (
    CartLine,
    CartUpdate,
    Change,
    ChangeUpdate,
    Text,
    ToolCall,
    ToolResult,
    TurnEnd,
    Ui,
)
from .results import GraderResult, RubricVerdict, TrialResult

__all__ = [
    "Agent",
    "AgentSession",
    "AsyncFakeClient",
    "Backend",
    "CartLine",
    "CartUpdate",
    "Case",
    "CaseFileWarning",
    "Change",
    "ChangeUpdate",
    "CommerceEvalsError",
    "ConfigurationError",
    "Expected",
    "FakeClient",
    "GraderResult",
    "InfraError",
    "RubricVerdict",
    "Snapshot",
    "State",
    "Text",
    "ToolCall",
    "ToolResult",
    "TrialResult",
    "TurnEnd",
    "Ui",
    "text_reply",
    "tool_reply",
]


_LAZY = {"AsyncFakeClient", "FakeClient", "text_reply", "tool_reply"}


def __getattr__(name: str):
    # the scripted clients live in the testing feature: imported only when asked for, so
    # loading the plugin pays nothing for them
    if name in _LAZY:
        from .testing import fake as testing

        return getattr(testing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Modules that moved when the package was laid out by feature: the old import paths (documented
# in earlier releases) still load the same module object.
_MOVED = {
    "calibration": "judge.calibration",
    "case": "cases.case",
    "chat_client": "models.chat_client",
    "endpoint": "models.endpoint",
    "history": "store.history",
    "lint": "authoring.lint",
    "mock_server": "testing.mock_server",
    "report": "reports.html",
    "schema": "cases.schema",
    "vacuity": "authoring.vacuity",
    "verdict_store": "judge.verdict_store",
}


class _MovedModuleFinder:
    """Resolves `pytest_commerce_evals.<old name>` to the module's new home (see `_MOVED`)."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        package, _, leaf = fullname.rpartition(".")
        if package != __name__ or leaf not in _MOVED:
            return None
        from importlib.util import spec_from_loader

        return spec_from_loader(fullname, _MovedModuleFinder)

    @staticmethod
    def create_module(spec):
        return None

    @staticmethod
    def get_code(fullname: str):
        # `python -m pytest_commerce_evals.<old name>` runs the module at its new home
        leaf = fullname.rpartition(".")[2]
        target = f"{__name__}.{_MOVED[leaf]}"
        source = (
            f"import runpy\nrunpy.run_module({target!r}, run_name='__main__', alter_sys=True)\n"
        )
        return compile(source, f"<{fullname}: moved to {target}>", "exec")

    @staticmethod
    def exec_module(module) -> None:
        import sys
        from importlib import import_module

        leaf = module.__name__.rpartition(".")[2]
        # the import system returns what sys.modules holds under the old name once this returns
        sys.modules[module.__name__] = import_module(f"{__name__}.{_MOVED[leaf]}")


def _install_finder() -> None:
    import sys

    if not any(isinstance(f, type) and f.__name__ == "_MovedModuleFinder" for f in sys.meta_path):
        sys.meta_path.append(_MovedModuleFinder)


_install_finder()
