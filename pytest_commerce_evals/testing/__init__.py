"""Test doubles for teams and for this package's own tests: the scripted `FakeClient` (`fake`) and
a loopback OpenAI-compatible mock server (`mock_server`).
"""


def __getattr__(name: str):
    # `pytest_commerce_evals.testing` was one module before the package was laid out by feature:
    # its public names still resolve here, loaded on first use (importing the package costs
    # nothing, and its modules can import each other without cycles through this file)
    if name.startswith("__"):
        raise AttributeError(name)
    from importlib import import_module

    module = import_module(f"{__name__}.fake")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
