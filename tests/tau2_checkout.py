"""A τ²-bench checkout built from the handmade stand-ins in `tests/data/tau2`, for the tests of
the τ² bridge: the domain's data files, the source the importer reads the agent's and the user
simulator's prompts from (`src/`), and the simulation guidelines (`user_simulator/`).

    root = make_checkout(tmp_path / "tau2-bench")                     # all of it, retail
    root = make_checkout(tmp_path / "tau2-bench", tasks=[...])        # tasks of the test's own
    root = make_checkout(path, files=("db.json", "tasks.json"), source=False, simulator=False)
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data" / "tau2"
FILES = ("db.json", "tasks.json", "policy.md")


def domain_folder(root: Path, domain: str = "retail") -> Path:
    """Where a checkout keeps a domain's `db.json`, `tasks.json` and `policy.md`."""
    return Path(root) / "data" / "tau2" / "domains" / domain


def make_checkout(
    root: Path,
    *,
    domain: str = "retail",
    files: tuple[str, ...] = FILES,
    tasks: Any = None,
    source: bool = True,
    simulator: bool = True,
    data: Path = DATA,
) -> Path:
    """A checkout at `root` (returned): `files` copied from `data` into the domain's folder
    (made even when `files` is empty), `tasks` (when not None) written there as `tasks.json`
    with `json.dumps`, `src/` when `source`, `data/tau2/user_simulator/` when `simulator`."""
    root = Path(root)
    folder = domain_folder(root, domain)
    folder.mkdir(parents=True)
    for name in files:
        shutil.copy(data / name, folder / name)
    if tasks is not None:
        (folder / "tasks.json").write_text(json.dumps(tasks), encoding="utf-8")
    if source:
        shutil.copytree(DATA / "src", root / "src")
    if simulator:
        shutil.copytree(DATA / "user_simulator", root / "data" / "tau2" / "user_simulator")
    return root


class StillRunning(AssertionError):
    """A block `within` gave a time was still running at its end."""


@contextlib.contextmanager
def within(seconds: float) -> Iterator[None]:
    """Fail the block when it is still running after `seconds`, blocked in a call or not (as on
    opening a pipe nobody writes to): a timer signal, so POSIX and the main thread only."""

    def expire(signum: int, frame: Any) -> None:
        raise StillRunning(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
