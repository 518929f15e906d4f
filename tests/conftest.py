import os
import shutil
import tempfile

pytest_plugins = ["pytester"]


def pytest_configure(config):
    """Parsed-YAML cache entries go to a folder of this test run's own, removed at the end.

    The HTTP library of the model clients and its core are imported here, in the outer process:
    pytester's in-process runs drop the modules first imported inside them, and a core imported
    again later no longer matches the exception map the library keeps from the first import (a
    refused connection would escape as the core's own error instead of a connection error)."""
    from importlib import import_module

    from pytest_commerce_evals.models.http_client import http_library

    library = http_library().__name__  # httpx2, or httpx before openai 3
    import_module(library.replace("httpx", "httpcore"))  # imported on its first request

    if "COMMERCE_CACHE_DIR" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="commerce-evals-cache-")
    os.environ["COMMERCE_CACHE_DIR"] = folder

    def cleanup() -> None:
        os.environ.pop("COMMERCE_CACHE_DIR", None)
        shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(cleanup)
