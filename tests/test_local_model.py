"""The embedded model for real: llama.cpp's server on loopback, called through the openai SDK.

Runs whenever llama-cpp-python[server] and the model package are installed
(`pip install -e '.[local]'`, as CI does); skipped, saying so, where they are not.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_commerce_evals.models import embedded as _local_model
from pytest_commerce_evals.models.clients import make_client
from pytest_commerce_evals.models.endpoint import resolve_endpoint
from pytest_commerce_evals.settings import SETTINGS, resolve_settings

_MISSING = [
    what
    for module, what in (
        ("llama_cpp", "llama-cpp-python"),
        ("uvicorn", "llama-cpp-python[server]"),
        (_local_model.PACKAGED_MODELS[_local_model.DEFAULT_MODEL].module, "the model package"),
    )
    if importlib.util.find_spec(module) is None
]
if _MISSING:
    pytest.skip(
        f"{', '.join(_MISSING)} not installed: pip install -e '.[local]'", allow_module_level=True
    )

SEARCH = {
    "type": "function",
    "function": {
        "name": "search_products",
        "description": "Search the catalog; returns products with id, title and price.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "max_price": {"type": "number"},
            },
            "required": ["query"],
        },
    },
}
VERDICT = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["PASS", "FAIL"]},
        "reasoning": {"type": "string"},
    },
    "required": ["verdict", "reasoning"],
}
ENV = ("OPENAI_BASE_URL", "OPENAI_MODEL", "COMMERCE_JUDGE_BASE_URL", "COMMERCE_JUDGE_MODEL")


@pytest.fixture(scope="module")
def local(pytestconfig: pytest.Config) -> Iterator[pytest.Config]:
    """The session's config with no endpoint configured, and its embedded server started."""
    with pytest.MonkeyPatch.context() as mp:
        for name in (*ENV, "COMMERCE_LOCAL_MODEL"):
            mp.delenv(name, raising=False)
        mp.setenv("OPENAI_API_KEY", "sk-must-not-reach-the-local-server")
        mp.setenv("COMMERCE_LOCAL_N_CTX", "4096")
        # settings are read once at configure time: read them again under this environment
        before = pytestconfig.stash[SETTINGS]
        pytestconfig.stash[SETTINGS] = resolve_settings(pytestconfig)
        _local_model.ensure_server(pytestconfig)
        try:
            yield pytestconfig
        finally:
            _local_model.shutdown(pytestconfig)
            pytestconfig.stash[SETTINGS] = before


def test_unconfigured_endpoints_resolve_to_the_running_server(local):
    agent, judge = resolve_endpoint(local, "agent"), resolve_endpoint(local, "judge")
    assert agent.is_local and judge.is_local
    with make_client(local, "agent") as a, make_client(local, "judge") as j:
        # a server each, so judge calls never evict the agent's cached prompt
        assert a.endpoint.base_url != j.endpoint.base_url
        assert a.endpoint.base_url.startswith("http://127.0.0.1:")
        assert j.endpoint.base_url.startswith("http://127.0.0.1:")
        assert a.raw.api_key == "no-key-required"  # the user's key stays home
        models = [m.id for m in a.raw.models.list()]
    assert models == [agent.model]


def test_tool_call(local):
    with make_client(local, "agent") as client:
        reply = client.chat.completions.create(
            model=client.model,
            messages=[
                {"role": "system", "content": "You are a shopping assistant. Use the tools."},
                {"role": "user", "content": "Find me trail running shoes under $120."},
            ],
            tools=[SEARCH],
            tool_choice={"type": "function", "function": {"name": "search_products"}},
            temperature=0,
            max_tokens=96,
        )
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "search_products"
    arguments = json.loads(call.function.arguments)
    assert isinstance(arguments["query"], str) and arguments["query"].strip()


def test_a_tool_result_goes_back_to_the_model(local):
    # The SDK hands back `content=None` beside tool calls; llama.cpp's server rejects that with a
    # 500 unless the client adapts the message.
    messages = [
        {"role": "user", "content": "Find me trail running shoes under $120."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "search_products", "arguments": '{"query": "trail"}'},
                }
            ],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": '[{"id": "SHOE-1042", "title": "Ridgeline Trail", "price": "109.00"}]',
        },
    ]
    with make_client(local, "agent") as client:
        reply = client.chat.completions.create(
            model=client.model, messages=messages, tools=[SEARCH], temperature=0, max_tokens=48
        )
    assert reply.choices[0].finish_reason in ("stop", "length", "tool_calls")
    message = reply.choices[0].message
    assert message.content is not None or message.tool_calls


def test_json_schema_constrained_reply(local):
    with make_client(local, "judge") as client:
        reply = client.chat.completions.create(
            model=client.model,
            messages=[
                {"role": "system", "content": "Grade the transcript. Reply in JSON."},
                {
                    "role": "user",
                    "content": "Rubric: PASS if every product shown costs under $120. "
                    "FAIL otherwise.\nTranscript: <<<SHOE-1042 $109.00, SHOE-2210 $94.50>>>",
                },
            ],
            response_format={"type": "json_object", "schema": VERDICT},
            temperature=0,
            max_tokens=160,
        )
    verdict = json.loads(reply.choices[0].message.content)
    assert verdict["verdict"] in ("PASS", "FAIL")
    assert isinstance(verdict["reasoning"], str)


def test_async_client(local):
    async def main() -> str:
        async with make_client(local, "agent", async_=True) as client:
            reply = await client.chat.completions.create(
                model=client.model,
                messages=[{"role": "user", "content": "Say hello."}],
                temperature=0,
                max_tokens=8,
            )
        return reply.choices[0].message.content

    assert isinstance(asyncio.run(main()), str)


def test_a_server_that_cannot_load_its_model_fails_with_its_log(tmp_path):
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"not a gguf file")
    server = _local_model.LocalServer(bad, model_alias="broken", n_ctx=512)
    with pytest.raises(_local_model.LocalModelUnavailable) as info:
        server.start(timeout=60)
    message = str(info.value)
    assert message.startswith("the local model server exited with status ")
    assert "broken.gguf" in message  # the log tail names what it failed to load
    assert "--commerce-base-url=<url>" in message
    assert server.proc is None and server.log_path is None


def test_the_server_dies_with_the_process_that_started_it(tmp_path):
    # A pytest process that is killed never reaches its shutdown hooks.
    script = textwrap.dedent(
        """
        import os, sys
        from pytest_commerce_evals.models import embedded as _local_model
        server = _local_model.ensure_server(None)
        print(server.proc.pid, flush=True)
        os._exit(0)
        """
    )
    env = {**os.environ, "COMMERCE_LOCAL_N_CTX": "512"}
    for name in (*ENV, "COMMERCE_LOCAL_MODEL"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.2)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (exited, not yet reaped by init) counts as gone.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_real_cases_run_end_to_end_on_the_embedded_model(tmp_path):
    """Two real cases of cases/, through the plugin, the reference agent, the real openai client
    and the embedded server (agent and judge). Whatever the tiny model decides, every trial must
    be graded: pass or fail, never an infrastructure error, and the judge must return verdicts."""
    record = tmp_path / "run.json"
    # as a user runs it: none of the endpoint settings, nor the small window the `local`
    # fixture above sets for its own server
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in (*ENV, "OPENAI_API_KEY") and not k.startswith("COMMERCE_LOCAL_")
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/orders",
            "-k",
            "orders-001 or orders-002",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--commerce-json={record}",
            "--commerce-store=none",
            "--commerce-judge-store=none",
            # the embedded judge is asked only where its verdicts decide; with no bar, always
            "--commerce-judge-min-kappa=none",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-2000:]
    run = json.loads(record.read_text())
    outcomes = {t["case_id"]: t["outcome"] for t in run["trials"]}
    assert sorted(outcomes) == [
        "orders-001-updated-delivery-date",
        "orders-002-carrier-question-no-component",
    ]
    assert set(outcomes.values()) <= {"pass", "fail", "judge_error"}, outcomes
    for trial in run["trials"]:
        events = [e for turn in trial["turns"] for e in turn]
        assert any(e["type"] in ("tool_call", "text") for e in events)  # the model did act
    judged = next(t for t in run["trials"] if t["case_id"].startswith("orders-001"))
    assert [v["dimension"] for v in judged["verdicts"]] == ["delivery_date_accurate"]
    assert run["agent_model"].startswith("SmolLM2")


DYING_SERVER = textwrap.dedent("""
    import json, os, signal, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"data": [{"id": "m"}]}).encode()
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            # as a build for instructions the CPU refuses (SIGILL), or one that crashes (SIGSEGV)
            os.kill(os.getpid(), getattr(signal, sys.argv[2]))

    HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
""")


@pytest.mark.parametrize(
    ("signal_name", "said"),
    [
        ("SIGILL", "the embedded model's llama.cpp was built for CPU instructions this machine"),
        ("SIGSEGV", "the embedded model's llama.cpp crashed at its first completion (SIGSEGV"),
    ],
)
def test_a_build_the_cpu_refuses_is_said_at_start_with_the_fix(tmp_path, signal_name, said):
    script = tmp_path / "server.py"
    script.write_text(DYING_SERVER)

    class Refused(_local_model.LocalServer):
        def command(self, port: int) -> list[str]:
            return [sys.executable, str(script), str(port), signal_name]

    server = Refused(tmp_path / "model.gguf", model_alias="m")
    with pytest.raises(_local_model.LocalModelUnavailable) as info:
        server.start(timeout=30)
    message = str(info.value)
    assert message.startswith(said)
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF' in message and "--no-cache-dir" in message
    assert not server.is_running()


# -- llama-cpp-python's own server at --commerce-base-url (docs/local-model.md) --------------------


def _serve(log: Path, chat_format: str) -> tuple[subprocess.Popen[bytes], str]:
    """`python -m llama_cpp.server` as a user starts it, on loopback, serving the packaged model
    in `chat_format`, answering `/v1/models`; the process and its base URL."""
    import urllib.request

    gguf = _local_model.locate_gguf()
    port = _local_model._free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", "any",
        "--chat_format", chat_format, "--n_ctx", "8192", "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5) as answer:
                if answer.status == 200:
                    return proc, url
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.5)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture(scope="module")
def llama_cpp_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's server in its tool-calling chat format."""
    proc, url = _serve(
        tmp_path_factory.mktemp("llama-tools") / "server.log", "chatml-function-calling"
    )
    try:
        yield url
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def llama_cpp_chat_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same server in plain chatml, which leaves the tools out of the prompt: a 135M model on
    two cores runs the whole reference agent in minutes that way; the tool-calling prompt of the
    reference agent's tools takes many times longer per call."""
    proc, url = _serve(tmp_path_factory.mktemp("llama-chat") / "server.log", "chatml")
    try:
        yield url
    finally:
        _stop(proc)


def test_a_tool_turn_goes_to_llama_cpp_pythons_server_as_it_accepts_it(
    llama_cpp_server, pytester: pytest.Pytester
):
    """After a tool call the agent sends an assistant message whose content is null: that server
    refuses it (HTTP 500, `content: Input should be a valid string`), so every trial was an
    infrastructure error until the client sent it as ""."""
    config = pytester.parseconfigure(
        f"--commerce-base-url={llama_cpp_server}", "--commerce-model=any"
    )
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "search_products", "arguments": '{"query": "trail shoes"}'},
    }
    with make_client(config, "agent") as client:
        reply = client.chat.completions.create(
            model=client.model,
            messages=[
                {"role": "system", "content": "You are a shopping assistant."},
                {"role": "user", "content": "Trail shoes under $120?"},
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "call_1", "content": '{"products": []}'},
            ],
            tools=[SEARCH],
            temperature=0,
            max_tokens=32,
        )
    assert reply.choices[0].message.role == "assistant"


def test_the_reference_agent_and_the_judge_run_at_a_llama_cpp_python_server(
    llama_cpp_chat_server, tmp_path
):
    """One flag: the reference agent and the judge at the user's own server; every trial graded
    (pass or fail, or the judge's reply unusable), never an infrastructure error."""
    record = tmp_path / "run.json"
    env = {k: v for k, v in os.environ.items() if k not in (*ENV, "OPENAI_API_KEY")}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/orders",
            "-k",
            "orders-001",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--commerce-base-url={llama_cpp_chat_server}",
            "--commerce-model=any",
            # a 135M model on a CI runner's two cores: the embedded model's own timeout
            "-o",
            "commerce_request_timeout=900",
            f"--commerce-json={record}",
            "--commerce-store=none",
            "--commerce-judge-store=none",
        ],  # fmt: skip
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-2000:]
    run = json.loads(record.read_text())
    outcomes = {t["case_id"]: t["outcome"] for t in run["trials"]}
    assert list(outcomes) == ["orders-001-updated-delivery-date"]
    assert set(outcomes.values()) <= {"pass", "fail", "judge_error"}, outcomes
    assert run["agent_base_url"] == llama_cpp_chat_server
    [trial] = run["trials"]
    assert "infra_error" not in {v["outcome"] for v in trial["verdicts"]}, trial["verdicts"]
    events = [e for turn in trial["turns"] for e in turn]
    assert any(e["type"] in ("tool_call", "text") for e in events), trial["error"]  # it acted


def test_the_judge_runs_at_a_llama_cpp_python_server_with_the_same_one_flag(
    llama_cpp_server, pytester: pytest.Pytester
):
    """With only --commerce-base-url the judge follows the agent to that server: a verdict (or
    a reply it could not read), never an infrastructure error."""
    from pytest_commerce_evals.events import Text, ToolCall, ToolResult
    from pytest_commerce_evals.judge._plugin import build_judge
    from pytest_commerce_evals.rubrics import STANDARD

    config = pytester.parseconfigure(
        f"--commerce-base-url={llama_cpp_server}",
        "--commerce-model=any",
        "-o",
        "commerce_request_timeout=900",
    )
    judge = build_judge(config, with_store=False)
    turn = [
        ToolCall(call_id="c1", name="get_order", arguments={"order_id": "o-1"}),
        ToolResult(call_id="c1", name="get_order", result={"delivery_date": "2026-12-09"}),
        Text(text="Your order o-1 now arrives on 9 December 2026."),
    ]
    dimension = "delivery_date_accurate"
    [verdict] = judge.grade_transcript(
        ["When does order o-1 arrive?"], [turn], {dimension: STANDARD[dimension].text}
    )
    assert verdict.outcome in ("pass", "fail", "judge_error"), verdict
    assert verdict.dimension == dimension
