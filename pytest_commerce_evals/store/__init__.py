"""Run history: the run store (`run_store`, SQLite under `.commerce/`), failing-set diffs and model
comparisons (`history`), and the hooks that record a run and print its diff (`_plugin`).
"""


def __getattr__(name: str):
    # `pytest_commerce_evals.store` was one module before the package was laid out by feature:
    # its public names still resolve here, loaded on first use (importing the package costs
    # nothing, and its modules can import each other without cycles through this file)
    if name.startswith("__"):
        raise AttributeError(name)
    from importlib import import_module

    module = import_module(f"{__name__}.run_store")
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
