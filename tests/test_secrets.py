"""Secrets are never shown or stored: credentials in a base URL, and a key an endpoint's error body
echoes, are masked in the header, the terminal, the JSON record, the HTML report and the run
store (`errors.redact`, `errors.shown_url`)."""

from __future__ import annotations

import json
import sqlite3
import textwrap
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from helpers import STATELESS_SHOP

from pytest_commerce_evals.errors import MASK, redact, shown_url

KEY = "sk-test-PLANTEDkey1234567890abcd"
PASSWORD = "PLANTEDpassword77"
QUERY_KEY = "PLANTEDquery88"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"Incorrect API key provided: {KEY}.", KEY),
        ("Authorization: Bearer abcDEF1234567890xyz", "abcDEF1234567890xyz"),
        ("Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
        ('{"api_key": "hunter2hunter2"}', "hunter2hunter2"),
        ("password=correcthorse", "correcthorse"),
        ("x-api-key: abcd1234", "abcd1234"),
        (f"http://user:{PASSWORD}@host/v1 failed", PASSWORD),
        ("a token AbCdEfGh0123456789AbCdEfGh0123456789", "AbCdEfGh0123456789AbCdEfGh0123456789"),
    ],
)
def test_redact_masks_what_looks_like_a_secret(text, secret):
    out = redact(text)
    assert secret not in out and MASK in out


@pytest.mark.parametrize(
    "text",
    [
        "cart_contains: expected shoe-001 in the cart; final cart: empty",
        "KeyError: 'shoe-999'",
        "budget: tokens 1,200 (budget 1,000)",
        "git 0c5f3212f8ab3e9d0c5f3212f8ab3e9d0c5f3212",  # lower-case hex: not key-shaped
        "the agent raised ValueError: quantity must be at least 1",
    ],
)
def test_redact_leaves_ordinary_messages_alone(text):
    assert redact(text) == text


def test_a_shown_url_masks_its_password_and_query_values():
    shown = shown_url(f"http://user:{PASSWORD}@host:8000/v1?api-key={QUERY_KEY}&v=2")
    assert shown == "http://user:***@host:8000/v1?api-key=***&v=***"
    assert shown_url("http://host/v1") == "http://host/v1" and shown_url(None) is None


@pytest.mark.parametrize(
    "url",
    [
        f"http//user:{PASSWORD}@host/v1",  # the colon of the scheme missing
        f"user:{PASSWORD}@host:8000/v1",  # no scheme
        f"{PASSWORD}@host",
        f"http:/user:{PASSWORD}@host",
        f"http://host/v1@{PASSWORD}",
        f"http://[user:{PASSWORD}@host",  # unbalanced bracket: urlsplit refuses it
    ],
)
def test_a_malformed_url_never_shows_what_might_be_its_key(url):
    shown = shown_url(url)
    assert PASSWORD not in shown and shown.endswith("(unreadable URL)")
    assert shown_url("localhost:8000") == "localhost:8000"  # nothing secret: shown, to be fixed
    assert shown_url("sk-proj-abcdefghijklmnop1234") == "(no scheme)://(unreadable URL)"


class _Refusing(BaseHTTPRequestHandler):
    """An endpoint that refuses the key and echoes it back, as some servers do."""

    def do_POST(self) -> None:  # noqa: N802 - the handler's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        echoed = self.headers.get("Authorization", "")
        body = json.dumps(
            {"error": {"message": f"Incorrect API key provided: {KEY}. You sent {echoed}"}}
        ).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Refusing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


CONFTEST = (
    STATELESS_SHOP
    + """
from pytest_commerce_evals import Text


def pytest_commerce_evals_make_agent(config, case, backend):
    from pytest_commerce_evals.models.clients import session_client

    client = session_client(config, "agent")

    def run_turn(session, message):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": message}])
        return [Text(text="never")]

    return run_turn
"""
)


def test_a_planted_key_is_found_nowhere(pytester, refusing, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    pytester.makeconftest(CONFTEST)
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        textwrap.dedent(
            """
            - id: chat-001-hello
              priority: low
              difficulty: easy
              turns: ["hello"]
              expected:
                max_tool_calls: 0
            """
        )
    )
    base = f"http://user:{PASSWORD}@{refusing}/v1?api-key={QUERY_KEY}"
    result = pytester.runpytest(
        "cases",
        "-p",
        "no:cacheprovider",
        f"--commerce-base-url={base}",
        "--commerce-model=m",
        "--commerce-no-judge",
        "--commerce-json=run.json",
        "--commerce-html=run.html",
        "--commerce-store=store",
    )
    shown = result.stdout.str() + result.stderr.str()
    assert "Incorrect API key provided" in shown  # the error is shown, its secrets are not
    record = (pytester.path / "run.json").read_text()
    assert "Incorrect API key provided" in record
    stored = ""
    for db in (pytester.path / "store").rglob("*.sqlite"):
        with sqlite3.connect(db) as conn:
            for (table,) in conn.execute("select name from sqlite_master where type='table'"):
                stored += json.dumps(conn.execute(f"select * from {table}").fetchall())
    assert "Incorrect API key provided" in stored
    for where, text in {
        "terminal": shown,
        "JSON record": record,
        "HTML report": (pytester.path / "run.html").read_text(),
        "run store": stored,
    }.items():
        for secret in (KEY, PASSWORD, QUERY_KEY):
            assert secret not in text, f"{secret} in the {where}"


def test_a_trials_error_and_failures_are_masked_when_it_settles():
    from pytest_commerce_evals.cases.case import Case
    from pytest_commerce_evals.results import TrialRecord, TrialSpec

    case = Case.model_validate(
        {"id": "chat-001-x", "priority": "low", "difficulty": "easy", "turns": ["x"]}
    )
    record = TrialRecord.begin(TrialSpec(case, trial=1, trials=1, set_name="s", threshold=0.8))
    record.outcome = "fail"
    record.error = f"the agent raised RuntimeError: bad key {KEY}"
    record.settle()
    assert KEY not in record.error and KEY not in " ".join(record.failures)


def test_an_endpoints_error_body_is_masked_in_the_sdk_error():
    import httpx

    from pytest_commerce_evals.models.http_client import status_error

    response = httpx.Response(
        401,
        json={"error": {"message": f"Incorrect API key provided: {KEY}"}},
        request=httpx.Request("POST", "http://127.0.0.1/v1/chat/completions"),
    )
    error = status_error(response)
    assert KEY not in str(error) and "Incorrect API key provided: sk-***" in str(error)
