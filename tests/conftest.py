import os
import shutil
import tempfile

pytest_plugins = ["pytester"]


def pytest_configure(config):
    """Parsed-YAML cache entries go to a folder of this test run's own, removed at the end."""
    if "COMMERCE_CACHE_DIR" in os.environ:
        return
    folder = tempfile.mkdtemp(prefix="commerce-evals-cache-")
    os.environ["COMMERCE_CACHE_DIR"] = folder

    def cleanup() -> None:
        os.environ.pop("COMMERCE_CACHE_DIR", None)
        shutil.rmtree(folder, ignore_errors=True)

    config.add_cleanup(cleanup)
