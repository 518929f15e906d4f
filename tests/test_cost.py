"""What a run costs: each trial's model calls as the clients and agents record them, their
prices, the terminal summary's and the JSON record's cost, case budgets and the run's budget."""

from __future__ import annotations

import json
import textwrap
from decimal import Decimal
from pathlib import Path

import pytest
from helpers import STATELESS_SHOP

from pytest_commerce_evals.costs import CostSummary
from pytest_commerce_evals.errors import ConfigurationError
from pytest_commerce_evals.prices import Price, PriceBook, money, parse_price_table
from pytest_commerce_evals.settings.values import BudgetError, parse_run_budget
from pytest_commerce_evals.testing import FakeClient, FakeReply
from pytest_commerce_evals.usage import Meter, ModelCall, metered, record_call, tokens_of

pytest_plugins = ["pytester"]

CASES = """
- id: chat-001-costly
  priority: high
  difficulty: easy
  turns: ["hi"]
  expected: {reply_includes: [hello], budget: {tokens: 1000}}
- id: chat-002-cheap
  priority: high
  difficulty: easy
  turns: ["hi"]
  expected: {reply_includes: [hello], budget: {tokens: 1000, calls: 1}}
- id: chat-003-silent
  priority: low
  difficulty: easy
  turns: ["hi"]
  expected: {reply_includes: [hello]}
"""

CONFTEST = """
from helpers import ToyAgent, ToyBackend
from pytest_commerce_evals import Text
from pytest_commerce_evals.testing import FakeClient, FakeReply

USAGE = {
    "chat-001-costly": {"input_tokens": 4000, "output_tokens": 200, "cached_tokens": 1000},
    "chat-002-cheap": {"input_tokens": 100, "output_tokens": 20},
}

class Silent:
    # answers without a model: its trial reports no calls
    def run_turn(self, session, message):
        yield Text(text="hello")

def pytest_commerce_evals_make_backend(config, case):
    return ToyBackend()

def pytest_commerce_evals_make_agent(config, case, backend):
    if case.id not in USAGE:
        return Silent()
    reply = FakeReply(content="hello", usage=USAGE[case.id], latency_s=0.5)
    return ToyAgent(FakeClient([reply]), backend)
"""


@pytest.fixture
def suite(pytester: pytest.Pytester) -> pytest.Pytester:
    helpers = Path(__file__).parent / "helpers.py"
    pytester.makepyfile(helpers=helpers.read_text())
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "suite.yaml").write_text(textwrap.dedent(CASES))
    pytester.makeconftest(CONFTEST)
    return pytester


def _run(suite: pytest.Pytester, *args: str, prices: str | None = None) -> pytest.RunResult:
    ini = "[pytest]\n"
    if prices is not None:
        ini += f"commerce_prices =\n    {prices}\n"
    suite.makefile(".ini", pytest=ini)
    return suite.runpytest(
        "cases",
        "--commerce-store=none",
        "--commerce-concurrency=1",
        "-p",
        "no:cacheprovider",
        *args,
    )


def test_the_summary_shows_what_the_run_cost_and_not_reported_is_not_zero(suite):
    result = _run(suite, "--commerce-json=run.json", prices="toy = 1.00 2.00 0.50")
    result.stdout.fnmatch_lines(
        [
            "cost (model calls per trial; USD):",
            "  agent    2 call(s), 4,100 in / 220 out tokens (1,000 cached), 1.0 s in calls, "
            "$0.0040, not reported on 1 of 3 trials",
            "  total    $0.0040",
        ]
    )
    # the costly case's budget fails naming what was spent; the cheap one is within its own
    result.stdout.fnmatch_lines(
        [
            "*budget: the agent spent 4,200 tokens (4,000 in, 200 out over 1 calls; budget "
            "1,000) in the trial*"
        ]
    )
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("failed")) == (2, 1)
    record = json.loads((suite.path / "run.json").read_text())
    # 3,000 uncached at $1 + 1,000 cached at $0.50 + 200 out at $2, per million: $0.0039
    # and 100 at $1 + 20 at $2: $0.00014; money is a decimal string, never a float
    assert record["cost"]["total_usd"] == "0.00404"
    assert record["cost"]["prices"] == {"toy": "commerce_prices"}
    cases = {c["case_id"]: c["cost"] for c in record["cases"]}
    assert cases["chat-001-costly"]["agent"]["per_trial"]["tokens"] == 4200
    assert cases["chat-001-costly"]["agent"]["cached_tokens"] == 1000
    assert cases["chat-003-silent"]["agent"]["calls"] is None  # not reported, not 0
    assert cases["chat-003-silent"]["agent"]["reported_trials"] == 0
    stored = {t["case_id"]: t for t in record["trials"]}
    assert stored["chat-002-cheap"]["calls"] == [
        {
            "purpose": "agent",
            "model": "toy",
            "input_tokens": 100,
            "output_tokens": 20,
            "cached_tokens": None,
            "latency_s": pytest.approx(0.5, abs=0.05),
            "turn": 0,
            "source": "client",
            "server": None,  # a FakeClient goes to no server
        }
    ]
    assert "calls" not in stored["chat-003-silent"]  # written only when some were recorded


def test_a_model_without_a_price_costs_unknown_never_zero(suite):
    result = _run(suite)
    result.stdout.fnmatch_lines(
        [
            "  agent    2 call(s), 4,100 in / 220 out tokens (1,000 cached), 1.0 s in calls, "
            "cost unknown, not reported on 1 of 3 trials",
            "  no price for toy: cost unknown (add it to commerce_prices*",
        ]
    )
    assert "$0.0000" not in result.stdout.str()


@pytest.mark.parametrize("store", ["none", "runs"])  # the record says the same either way
def test_the_runs_budget_stops_new_trials_and_leaves_their_sets_undecided(suite, store):
    result = _run(
        suite,
        "--commerce-budget=tokens:1000",
        "-rs",
        "--commerce-json=run.json",
        f"--commerce-store={store}",
    )
    # chat-001-costly ran first and spent 4,200 tokens: the other two were never started
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed") == 1 and "passed" not in outcomes
    assert outcomes.get("unstarted") == 2
    result.stdout.fnmatch_lines(
        [
            "*UNDECIDED cases: 0/1*",
            "run stopped early: the run's budget ran out (spent 1 calls, 4,200 tokens, "
            "cost unknown* of the budget 1,000 tokens); trials not started: 2 (their sets are "
            "UNDECIDED)",
        ]
    )
    assert result.ret == 1
    # what ran is recorded; the run is not complete (it is no baseline for the next)
    record = json.loads((suite.path / "run.json").read_text())
    assert [t["case_id"] for t in record["trials"]] == ["chat-001-costly"]
    assert record["complete"] is False
    # the record agrees with the terminal: the set is not met (UNDECIDED), the unstarted listed
    [cases] = record["sets"]
    assert cases["met"] is False and cases["other"] == {"not_started": 2}
    assert sorted(n["case_id"] for n in record["not_started"]) == [
        "chat-002-cheap",
        "chat-003-silent",
    ]


def test_a_bad_budget_or_price_table_is_a_usage_error_naming_it(suite):
    result = _run(suite, "--commerce-budget=tokens:lots")
    result.stderr.fnmatch_lines(["*--commerce-budget*tokens:lots is not a whole number*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result = _run(suite, prices="toy = cheap 2.00")
    result.stderr.fnmatch_lines(["*commerce_prices line 1*'cheap' is not a price*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


# -- units ---------------------------------------------------------------------------------


def test_tokens_are_read_from_each_frameworks_usage_shape():
    assert tokens_of({"prompt_tokens": 10, "completion_tokens": 3}) == (10, 3, None)
    assert tokens_of(
        {"input_tokens": 10, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 4}}
    ) == (10, 3, 4)
    assert tokens_of({"input_tokens": 9, "output_tokens": 2, "cache_read_tokens": 5}) == (9, 2, 5)
    assert tokens_of(
        {"input_tokens": 8, "output_tokens": 1, "input_token_details": {"cache_read": 2}}
    ) == (8, 1, 2)
    assert tokens_of(None) == (None, None, None)
    assert tokens_of({"prompt_tokens": -1, "completion_tokens": True}) == (None, None, None)


def test_what_the_agent_reports_replaces_what_the_clients_measured_for_it():
    meter = Meter()
    client = FakeClient([FakeReply(content="x", usage={"input_tokens": 5, "output_tokens": 1})])
    with metered(meter, "agent"):
        client.chat.completions.create(model="m", messages=[])
    assert [(c.source, c.input_tokens) for c in meter.calls()] == [("client", 5)]
    with metered(meter, "agent"):
        assert record_call(model="m", usage={"input_tokens": 50, "output_tokens": 7})
    calls = meter.calls()
    assert [(c.source, c.input_tokens, c.output_tokens) for c in calls] == [("agent", 50, 7)]
    assert calls[0].latency_s is not None  # the measured latency is kept where counts agree
    assert not record_call(model="m", input_tokens=1)  # outside a trial: nothing recorded


def test_a_fake_reply_without_usage_is_not_reported():
    meter = Meter()
    with metered(meter, "judge"):
        reply = FakeClient(["plain"]).chat.completions.create(model="m", messages=[])
    assert reply.usage is None
    (call,) = meter.calls()
    assert (call.purpose, call.input_tokens, call.tokens, call.turn) == ("judge", None, None, None)


def test_prices_come_from_the_table_then_the_library_and_unknown_is_none():
    book = PriceBook({"mine": Price(Decimal("2"), Decimal("4"))}, free={"local-model"})
    assert book.cost(ModelCall("agent", "mine", 1_000_000, 500_000)) == Decimal("4")
    assert book.cost(ModelCall("agent", "local-model", 10, 10)) == Decimal(0)
    assert book.cost(ModelCall("agent", "no-such-model-xyz", 10, 10)) is None
    assert book.cost(ModelCall("agent", "mine", None, 10)) is None  # tokens not reported
    openai = "https://api.openai.com"
    library = book.cost(ModelCall("agent", "gpt-4o-mini", 1_000_000, 0, server=openai))
    assert isinstance(library, Decimal) and library > 0
    assert book.source("gpt-4o-mini", openai) == "genai-prices"
    # a call whose server is not known is not priced from the public list
    assert book.cost(ModelCall("agent", "gpt-4o-mini", 1_000_000, 0)) is None
    assert book.source("gpt-4o-mini") is None
    assert PriceBook(library=False).cost(ModelCall("agent", "gpt-4o-mini", 10, 10)) is None


def test_the_price_table_refuses_a_line_it_cannot_read():
    table = parse_price_table(["a = 1 2", "# a comment", "b = 0.5 1.5 0.1  # cached too"])
    assert table["b"].cached == Decimal("0.1") and table["a"].cached is None
    for bad in ("a = 1", "a 1 2", "a = 1 -2", "a = 1 2 3 4", "a = nan 1"):
        with pytest.raises(ConfigurationError, match="line 1"):
            parse_price_table([bad])


@pytest.mark.parametrize(
    "bad", ["m = ١ ٢", "m = 1e30 1e30", "m = 1_000 1", "m = 1 2000000001", "m = inf 1"]
)
def test_a_price_is_ascii_digits_up_to_a_billion(bad):
    with pytest.raises(ConfigurationError, match=r"line 1 .* is not a price.*ASCII digits"):
        parse_price_table([bad])


def test_a_model_priced_twice_is_refused_naming_both_lines():
    with pytest.raises(ConfigurationError, match=r"line 3 .*'m' is priced twice \(line 1 too\)"):
        parse_price_table(["m = 1 2", "n = 1 1", "m = 3 4"])


def test_money_is_written_as_dollars_and_unknown_as_unknown():
    assert money(Decimal("0.00404")) == "$0.0040"
    assert money(Decimal("12.345")) == "$12.35"
    assert money(None) == "unknown"
    assert money(Decimal("0.5"), unpriced=2) == "≥ $0.5000 (2 call(s) unpriced)"
    assert money(Decimal("1e40")) == "$1.0000e+40"  # past the context's digits: never an error


def test_a_run_budget_is_read_or_refused():
    budget = parse_run_budget("calls:500, tokens:2000000, cost:$5.00")
    assert (budget.calls, budget.tokens, budget.cost) == (500, 2_000_000, Decimal("5.00"))
    assert budget.split(2).tokens == 1_000_000
    for bad in ("", "calls:0", "cost:-1", "time:5", "calls:1,calls:2", "tokens:1.5"):
        with pytest.raises(BudgetError):
            parse_run_budget(bad)


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        ("calls:²", "calls:² is not a whole number from 1 to 10^15 (ASCII digits"),
        (
            "calls:" + "9" * 5000,
            "calls:9999999999999999999999999999999999999999… (5,000 characters) is",
        ),
        (
            "tokens:1000000000000001",
            "tokens:1000000000000001 is not a whole number from 1 to 10^15",
        ),
        ("calls:١", "calls:١ is not a whole number"),
        ("tokens:𝟓", "tokens:𝟓 is not a whole number"),
        ("cost:1_000", "cost:1_000 is not an amount of US dollars"),
        ("cost:1e3", "cost:1e3 is not an amount of US dollars"),
        ("cost:2000000000", "at most 1,000,000,000"),
        ("CALLS:5", "write the keyword in lower case (calls:...)"),
        ("Cost:5", "write the keyword in lower case (cost:...)"),
    ],
)
def test_a_run_budget_takes_ascii_digits_and_lower_case_keywords(bad, says):
    with pytest.raises(BudgetError) as caught:
        parse_run_budget(bad)
    assert says in str(caught.value)


def test_costs_add_up_per_case_and_leave_unreported_trials_out_of_the_means():
    from types import SimpleNamespace

    def trial(case, *calls, turn_s=(1.0,)):
        return SimpleNamespace(case_id=case, set_name="s", calls=list(calls), turn_s=list(turn_s))

    book = PriceBook({"m": Price(Decimal("1"), Decimal("1"))})
    summary = CostSummary.of(
        [
            trial("a", ModelCall("agent", "m", 100, 10), ModelCall("judge", "m", 50, 5)),
            trial("a", ModelCall("agent", "m", 300, 30)),
            trial("b"),
        ],
        book,
    )
    agent = summary.cases["a"]["agent"]
    assert agent.per_trial()["tokens"] == 220 and agent.calls == 2
    assert summary.run["agent"].reported == 2 and summary.run["agent"].trials == 3
    assert summary.cases["b"]["agent"].text() == "not reported"
    assert summary.run["judge"].cost == Decimal("0.000055")
    total, unpriced = summary.total()
    assert total == Decimal("0.000495") and unpriced == 0


def test_a_per_turn_budget_holds_each_turn_to_it():
    from pytest_commerce_evals.cases.case import Budget
    from pytest_commerce_evals.graders.budget import budget
    from pytest_commerce_evals.graders.observation import Observation

    calls = [
        ModelCall("agent", "m", 100, 10, 0, 0.1, turn=0),
        ModelCall("agent", "m", 900, 90, 0, 0.1, turn=1),
        ModelCall("agent", "m", 50, 5, 0, 0.1, turn=1),
    ]
    obs = Observation([[], []], calls=calls, turn_s=[0.5, 3.0])
    result = budget(Budget(tokens=1000, latency_s=2, per="turn"), obs)
    assert not result.passed
    assert result.message == (
        "budget: the agent spent turn 2: 1,045 tokens (950 in, 95 out over 2 calls; budget "
        "1,000); turn 2: 3.00 s of agent time (budget 2 s) per turn"
    )
    # the whole trial against the same budget is one sum: over it too, said so
    assert not budget(Budget(tokens=1000), obs).passed
    assert budget(Budget(tokens=1200, per="turn"), obs).passed
    # only the time is measured without reported calls
    assert budget(Budget(latency_s=5), Observation([[]], turn_s=[1.0])).passed
    unreported = budget(Budget(calls=3), Observation([[]], turn_s=[1.0]))
    assert not unreported.passed and "reported no model calls" in unreported.message


def test_the_runs_spend_runs_out_on_calls_or_money():
    from pytest_commerce_evals.runner.spending import RunSpend
    from pytest_commerce_evals.settings.values import RunBudget

    book = PriceBook({"m": Price(Decimal("10"), Decimal("10"))})
    spend = RunSpend(RunBudget(calls=3), book)
    spend.add([ModelCall("agent", "m", 10, 10)] * 2)
    assert spend.exhausted() is None
    spend.add([ModelCall("judge", "m", 10, 10)])  # the judge's calls are the run's bill too
    assert spend.exhausted() == "calls: 3 of 3 spent"
    spend = RunSpend(RunBudget(cost=Decimal("0.01")), book)
    spend.add([ModelCall("agent", "m", 500, 499)])  # $0.00999
    assert spend.exhausted() is None
    spend.add([ModelCall("agent", "m", 1, 0)])
    assert spend.exhausted() == "cost: $0.0100 of $0.0100 spent"
    unpriced = RunSpend(RunBudget(cost=Decimal("1")), PriceBook(library=False))
    unpriced.add([ModelCall("agent", "x", 10, 10)])
    assert unpriced.exhausted() is None and "cost unknown" in unpriced.text()


def test_a_plugin_http_client_records_each_answered_call(monkeypatch):
    from pytest_commerce_evals.models.http_client import HTTPChatClient
    from pytest_commerce_evals.testing.mock_server import MockServer

    meter = Meter()
    with MockServer([{"text": "hi"}]) as server, HTTPChatClient(server.base_url) as client:
        with metered(meter, "user"):
            client.chat.completions.create(model="served-model", messages=[])
    (call,) = meter.calls()
    assert call.purpose == "user" and call.source == "client"
    assert call.server == "http://127.0.0.1"
    assert (call.input_tokens, call.output_tokens) == (0, 0)  # the server reported zeros
    assert call.latency_s is not None and call.latency_s >= 0


ASYNC_AND_JUDGED = """
import asyncio
from pytest_commerce_evals import Text, RubricVerdict
from pytest_commerce_evals.testing import AsyncFakeClient, FakeClient, FakeReply

def usage(n):
    return {"input_tokens": n, "output_tokens": 1}

class AsyncAgent:
    def __init__(self):
        self.client = AsyncFakeClient([FakeReply(content="hello", usage=usage(300))])

    async def run_turn(self, session, message):
        reply = await self.client.chat.completions.create(model="agent-m", messages=[])
        await asyncio.sleep(0)
        return [Text(text=reply.choices[0].message.content)]

class Backend:
    def load_state(self, state):
        pass

    def snapshot(self):
        from pytest_commerce_evals import Snapshot
        return Snapshot([], [], [])

def pytest_commerce_evals_make_backend(config, case):
    return Backend()

def pytest_commerce_evals_make_agent(config, case, backend):
    return AsyncAgent()

def pytest_commerce_evals_grade_rubric(config, case, result):
    FakeClient([FakeReply(content="PASS", usage=usage(40))]).chat.completions.create(
        model="judge-m", messages=[]
    )
    return [RubricVerdict(dimension="d", rubric="r", outcome="pass", verdict="PASS")]
"""


def test_async_agents_and_the_judge_are_counted_apart(pytester):
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        "- {id: chat-001-hello, priority: low, difficulty: easy, turns: [hi], "
        "expected: {reply_includes: [hello], rubric: 'PASS if it greets'}}\n"
    )
    pytester.makeconftest(ASYNC_AND_JUDGED)
    result = pytester.runpytest(
        "cases", "--commerce-store=none", "--commerce-json=run.json", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1)
    (trial,) = json.loads((pytester.path / "run.json").read_text())["trials"]
    assert [(c["purpose"], c["model"], c["input_tokens"]) for c in trial["calls"]] == [
        ("agent", "agent-m", 300),
        ("judge", "judge-m", 40),
    ]
    result.stdout.fnmatch_lines(
        ["  agent    1 call(s), 300 in / 1 out tokens*", "  judge    1 call(s), 40 in*"]
    )


def test_a_server_of_ones_own_has_no_public_price():
    from pytest_commerce_evals.prices import own_server

    for own in (
        "http://127.0.0.1",
        "http://localhost",
        "http://10.1.2.3",
        "http://gpu.local",
        "http://127.1",  # the C library's shorthand for 127.0.0.1
        "http://2130706433",  # the same, as one number
        "http://vllm",  # a name with no dot: a local network's
        "http://ollama:11434",
        "http://gpu.lan",
        "http://nas.home.arpa",
        "http://100.64.1.2",  # carrier-grade NAT, tailnets
        "http://[::1]:8000",
    ):
        assert own_server(own), own
    for hosted in (
        "https://api.openai.com",
        "https://llm-gateway.example.com",
        "http://100.128.0.1",  # past 100.64.0.0/10
        None,
    ):
        assert not own_server(hosted), hosted
    book = PriceBook({"served-here": Price(Decimal("1"), Decimal("1"))})
    hosted = ModelCall("agent", "gpt-4o-mini", 1000, 100, server="https://api.openai.com")
    assert isinstance(book.cost(hosted), Decimal) and book.cost(hosted) > 0
    # the same model name on one's own server: no price list has it
    assert (
        book.cost(ModelCall("agent", "gpt-4o-mini", 1000, 100, server="http://127.0.0.1")) is None
    )
    # the table still prices it
    own = ModelCall("agent", "served-here", 1000, 0, server="http://127.0.0.1")
    assert book.cost(own) == Decimal("0.001")


def test_under_xdist_each_worker_holds_a_share_of_the_runs_budget(pytester):
    pytest.importorskip("xdist")
    helpers = Path(__file__).parent / "helpers.py"
    pytester.makepyfile(helpers=helpers.read_text())
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "suite.yaml").write_text(
        "".join(
            f"- {{id: chat-00{n}-costly, priority: high, difficulty: easy, turns: [hi], "
            "expected: {reply_includes: [hello]}}\n"
            for n in range(1, 7)
        )
    )
    pytester.makeconftest(
        CONFTEST.replace('"c-costly"', '"x"')
        .replace("if case.id not in USAGE:", "if False:")
        .replace("USAGE[case.id]", 'USAGE["chat-001-costly"]')
    )
    result = pytester.runpytest(
        "cases", "-n", "2", "--commerce-store=none", "--commerce-budget=tokens:1000"
    )
    # 500 tokens a worker: each worker's first trial (4,200 tokens) spends its share
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") == 2 and outcomes.get("unstarted") == 4, outcomes
    result.stdout.fnmatch_lines(
        ["*UNDECIDED cases*", "run stopped early: the run's budget ran out*"]
    )
    assert result.ret == 1


def test_latency_a_call_did_not_report_is_not_reported_never_zero():
    from types import SimpleNamespace

    from pytest_commerce_evals.costs import Tally
    from pytest_commerce_evals.usage import ModelCall

    def trial(case, *calls):
        return SimpleNamespace(case_id=case, set_name="s", calls=list(calls), turn_s=[0.5])

    book = PriceBook({})
    measured = ModelCall("agent", "m", 100, 10, latency_s=0.25)
    unmeasured = ModelCall("agent", "m", 100, 10)  # an adapter's report: tokens, no latency
    summary = CostSummary.of([trial("a", measured), trial("b", unmeasured)], book)
    a, b = summary.cases["a"]["agent"], summary.cases["b"]["agent"]
    assert a.per_trial()["latency_s"] == 0.25 and "0.2 s in calls" in a.text()
    assert b.per_trial()["latency_s"] is None and b.to_json()["latency_s"] is None
    assert "latency not reported" in b.text() and "0.0 s" not in b.text()
    assert summary.run["agent"].latency_s is None  # one unreported call: the total is unknown
    assert isinstance(a, Tally)


def test_an_agents_reported_calls_go_where_the_agent_endpoint_points(pytester, monkeypatch):
    # a self-hosted agent's own calls (record_call, the adapters) are not priced from the public
    # list: they inherit the agent endpoint's server; with no endpoint configured, no server
    pytester.makeconftest(
        STATELESS_SHOP
        + """
from pytest_commerce_evals import Text


def pytest_commerce_evals_make_agent(config, case, backend):
    def run_turn(session, message):
        session.record_call(model="gpt-4.1", input_tokens=1000, output_tokens=100)
        return [Text(text="hi")]

    return run_turn
"""
    )
    (pytester.path / "cases").mkdir()
    (pytester.path / "cases" / "a.yaml").write_text(
        "- {id: chat-001-x, priority: low, difficulty: easy, turns: [hi], "
        "expected: {max_tool_calls: 0}}\n"
    )

    def calls(*args):
        result = pytester.runpytest(
            "cases", "-p", "no:cacheprovider", "--commerce-json=r.json", *args
        )
        assert result.ret == 0, result.stdout.str()
        return json.loads((pytester.path / "r.json").read_text())["trials"][0]["calls"]

    [own] = calls("--commerce-base-url=http://127.0.0.1:9/v1", "--commerce-model=gpt-4.1")
    assert own["server"] == "http://127.0.0.1"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # hosted OpenAI is a usable endpoint
    [hosted] = calls("--commerce-model=gpt-4.1")
    assert hosted["server"] == "https://api.openai.com"
    [unknown] = calls()
    assert unknown.get("server") is None
    book = PriceBook()

    def priced(call):
        return book.cost(ModelCall("agent", "gpt-4.1", 1000, 100, server=call.get("server")))

    assert priced(own) is None and priced(unknown) is None and priced(hosted) > 0


def test_a_set_with_unstarted_trials_is_undecided_and_one_never_started_is_listed():
    from pytest_commerce_evals.rates import set_verdict
    from pytest_commerce_evals.store.aggregate import set_results

    assert set_verdict(5, 5, 0.8, {"not_started": 1}) == "undecided"  # whatever its rate
    assert set_verdict(5, 5, 0.8, {}) == "ok"
    sets = {s.name: s for s in set_results([], [("cases/a", 0.8), ("cases/b", 0.9)])}
    assert set(sets) == {"cases/a", "cases/b"}
    assert all(s.verdict == "undecided" and not s.met for s in sets.values())
