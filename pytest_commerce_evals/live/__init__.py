"""Live traffic: captured conversations, redaction, sampling and the trend (`traffic`), and the
hooks of `--commerce-live` (`_plugin`).
"""


def __getattr__(name: str):
    # `pytest_commerce_evals.live` was one module before the package was laid out by feature:
    # its public names still resolve here, loaded on first use (importing the package costs
    # nothing, and its modules can import each other without cycles through this file)
    if name.startswith("__"):
        raise AttributeError(name)
    from importlib import import_module

    module = import_module(f"{__name__}.traffic")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
