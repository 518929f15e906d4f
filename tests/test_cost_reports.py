"""What trials cost in the reports: the HTML run report's cost section (per purpose, per set, the
agent's tokens per case as an SVG chart) and `--commerce-compare`'s pass rate and cost side by
side, in the terminal and in the comparison's HTML."""

from __future__ import annotations

import re
from decimal import Decimal
from html import unescape
from pathlib import Path

import pytest
from run_builders import make_suite, run, trial

from pytest_commerce_evals.prices import Price, PriceBook
from pytest_commerce_evals.reports.compare import cost_lines
from pytest_commerce_evals.reports.html import render_run_html
from pytest_commerce_evals.reports.html_compare import render_comparison_html
from pytest_commerce_evals.store.compare import compare_runs
from pytest_commerce_evals.store.record_file import write_record
from pytest_commerce_evals.usage import ModelCall

HERE = Path(__file__).parent
# USD per million tokens: 1,000 in + 500 out of m-priced cost 0.0004 + 0.0008 = $0.0012
BOOK = PriceBook(
    {"m-priced": Price(Decimal("0.40"), Decimal("1.60")), "judge-j": Price(Decimal(2), Decimal(8))},
    library=False,
)


def text_of(page: str) -> str:
    """The page's visible text, roughly: tags dropped, entities read."""
    return unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def cost_part(page: str) -> str:
    """The cost section's HTML: from its heading to the next section's."""
    start = page.index('<h2 id="cost">')
    return page[start : page.index("<h2", start + 1)]


def costly(case_id: str, inp: int, out: int, *, model: str = "m-priced", n: int = 1, **kw):
    """A trial whose agent made one call of `inp` + `out` tokens (0.5 s) in a 1.5 s turn."""
    calls = [ModelCall("agent", model, inp, out, 0, 0.5, 0), *kw.pop("calls", [])]
    return trial(case_id, n=n, **kw).model_copy(update={"calls": calls, "turn_s": [1.5]})


def sample_run():
    return run(
        [
            costly("cart-001-priced", 1000, 500, set_name="cases/priced", n=1, trials=2),
            costly(
                "cart-001-priced",
                1000,
                500,
                set_name="cases/priced",
                n=2,
                trials=2,
                calls=[ModelCall("judge", "judge-j", 100, 10, 0, 0.2)],
            ),
            costly("cart-002-unpriced", 4000, 1000, model="acme-private-9", set_name="cases/other"),
            trial("cart-003-quiet", set_name="cases/quiet"),  # its agent reported nothing
        ]
    )


def test_the_cost_section_shows_tokens_money_unknown_prices_and_what_was_not_reported():
    page = render_run_html(run([trial("a")]).model_copy(), None, "", prices=BOOK)
    assert 'id="cost"' not in page  # no trial reported calls or turn times: no section
    page = render_run_html(sample_run(), None, "", prices=BOOK)
    text = text_of(cost_part(page))
    # the agent over the run: 3 calls of 4 trials, 6,000 in / 2,000 out; money is a lower bound
    assert "agent 3/4 3 6,000 2,000 0 1.50 s 2,667 unknown ≥ $0.0024 (1 call(s) unpriced)" in text
    assert "judge 1/4 1 100 10 0 0.20 s 110 $0.0003 $0.0003" in text
    assert "simulated customer 0/4 no calls" in text  # the plugin's own: none made
    assert "total ≥ $0.0027 (1 call(s) unpriced)" in text
    assert "agent time over its turns: 1.50 s per trial (3 of 4 trials timed)" in text
    assert (
        "acme-private-9 (no price: cost unknown)" in text and "m-priced (commerce_prices)" in text
    )
    # per set: priced, unpriced, not reported
    assert "cases/priced 2 1.0 1,500 0.50 s $0.0012 $0.0003 no calls $0.0027" in text
    assert "cases/other 1 1.0 5,000 0.50 s unknown no calls no calls unknown" in text
    assert "cases/quiet 1 not reported no calls no calls —" in text
    assert "1 case(s) whose agent reported no tokens: not reported" in text
    assert "$0.0000" not in text  # an unknown price, or nothing reported, is never $0


def test_the_chart_stacks_input_and_output_tokens_per_trial_costliest_case_first():
    section = cost_part(render_run_html(sample_run(), None, "", prices=BOOK))
    assert section.count('<svg class="chart"') == 1
    bars = re.findall(
        r"<g><title>([^:]+): ([\d,]+) input \+ ([\d,]+) output tokens per trial, ([^<]+)</title>",
        section,
    )
    assert bars == [
        ("cart-002-unpriced", "4,000", "1,000", "cost unknown"),
        ("cart-001-priced", "1,000", "500", "$0.0012 / trial"),
    ]
    widths = [
        float(w)
        for w in re.findall(
            r'<rect class="(?:in|out)" x="[\d.]+" y="\d+" width="([\d.]+)" height="16"', section
        )
    ]
    # the widest bar fills the chart; the others are to scale (input, output of each case)
    assert widths == [336.0, 84.0, 84.0, 42.0]
    assert "5,000 · cost unknown" in text_of(section) and "1,500 · $0.0012 / trial" in text_of(
        section
    )


def test_the_chart_shows_at_most_fifteen_cases_and_escapes_their_ids():
    hostile = '<script>alert("x")</script>'
    trials = [costly(f"case-{n:02d}", 100 * n, 10, set_name="cases/many") for n in range(1, 21)]
    trials.append(costly(hostile, 50, 5))
    section = cost_part(render_run_html(run(trials), None, "", prices=BOOK))
    names = re.findall(r'text-anchor="end">([^<]+)</text>', section)
    assert names == [f"case-{n:02d}" for n in range(20, 5, -1)]  # the 15 costliest, costliest first
    assert "6 more case(s) with fewer tokens not shown" in text_of(section)
    page = render_run_html(run([costly(hostile, 50, 5)]), None, "", prices=BOOK)
    assert hostile not in page and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page


def test_turn_times_alone_show_the_section_with_the_agents_calls_not_reported():
    timed = trial("cart-001-a").model_copy(update={"turn_s": [0.25, 0.75]})
    text = text_of(cost_part(render_run_html(run([timed]), None, "", prices=BOOK)))
    assert "agent 0/1 not reported" in text
    assert "agent time over its turns: 1.00 s per trial (1 of 1 trials timed)" in text
    assert "total unknown" in text and "<svg" not in text


def compared(a_trials, b_trials):
    a = run(a_trials, model="m-a")
    b = run(b_trials, model="m-b", run_id="20250102-000000-bbbbbb")
    return compare_runs(a, b)


def test_compare_lines_put_pass_rates_and_cost_side_by_side_with_the_ratio():
    comparison = compared(
        [
            costly("a-001-x", 1000, 500),
            costly("b-001-x", 1000, 500).model_copy(update={"outcome": "fail"}),
        ],
        [
            costly("a-001-x", 3000, 150, model="acme-private-9"),
            costly("b-001-x", 3000, 150, model="acme-private-9"),
        ],
    )
    lines = cost_lines(comparison, BOOK)
    assert lines[0].startswith("pass rate and cost side by side")
    a = lines[2].split()
    b = lines[3].split()
    assert a[:9] == ["A", "(m-a)", "50.0%", "(1/2)", "1.0", "1,500", "$0.0012", "0.50", "s"]
    assert b[:9] == ["B", "(m-b)", "100.0%", "(2/2)", "1.0", "3,150", "unknown", "0.50", "s"]
    assert a[-3:] == ["no", "calls", "$0.0024"] and b[-3:] == ["no", "calls", "unknown"]
    assert lines[4] == (
        "  B uses 2.10× A's agent tokens per trial; agent cost per trial not compared (a price "
        "is unknown); 1.00× its agent time per trial"
    )


def test_compare_says_not_reported_rather_than_zero_when_the_agents_reported_nothing():
    comparison = compared([trial("a-001-x")], [trial("a-001-x", "fail")])
    lines = cost_lines(comparison, BOOK)
    assert lines[2].split()[2:6] == ["100.0%", "(1/1)", "not", "reported"]
    assert lines[3].split()[2:6] == ["0.0%", "(0/1)", "not", "reported"]
    assert lines[4] == "  tokens per trial not reported under A and B: not compared"


def test_the_comparison_html_shows_the_side_by_side_cost():
    comparison = compared(
        [costly("a-001-x", 1000, 500)], [costly("a-001-x", 2000, 1000, model="m-priced")]
    )
    page = render_comparison_html(comparison, BOOK)
    text = text_of(page[page.index('<h2 id="cost">') :])
    assert "A (m-a) 100.0% (1/1) 1.0 1,500 $0.0012 0.50 s 1.50 s no calls no calls $0.0012" in text
    assert "B (m-b) 100.0% (1/1) 1.0 3,000 $0.0024 0.50 s 1.50 s no calls no calls $0.0024" in text
    assert "B uses 2.00× A's agent tokens per trial; 2.00× its agent cost per trial" in text


def test_commerce_compare_of_two_json_records_prints_pass_rates_and_the_token_ratio(
    pytester: pytest.Pytester, tmp_path
):
    pytester.makeini("[pytest]\ncommerce_prices =\n    m-priced = 0.40 1.60\n")
    a = write_record(
        run(
            [
                costly("a-001-x", 1000, 500),
                costly("b-001-x", 1000, 500).model_copy(update={"outcome": "fail"}),
            ],
            model="m-a",
        ),
        tmp_path / "a.json",
    )
    b = write_record(
        run(
            [costly("a-001-x", 3000, 150), costly("b-001-x", 3000, 150)],
            model="m-b",
            run_id="20250102-000000-bbbbbb",
        ),
        tmp_path / "b.json",
    )
    html = tmp_path / "compare.html"
    result = pytester.runpytest(
        "--commerce-store=none", f"--commerce-compare={a},{b}", f"--commerce-html={html}"
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "failing only under A (m-a) (1):",
            "pass rate and cost side by side*",
            "  A (m-a)  50.0% (1/2) *1.0 *1,500 *$0.0012 *0.50 s*$0.0024",
            "  B (m-b)  100.0% (2/2)*1.0 *3,150 *$0.0014 *0.50 s*$0.0029",
            "  B uses 2.10× A's agent tokens per trial; 1.20× its agent cost per trial; "
            "1.00× its agent time per trial",
            f"HTML report written to {html}",
        ]
    )
    text = text_of(html.read_text())
    assert "B uses 2.10× A's agent tokens per trial" in text
    assert "A (m-a) 50.0% (1/2)" in text and "B (m-b) 100.0% (2/2)" in text


def test_the_run_report_prices_calls_with_the_runs_price_table(pytester: pytest.Pytester, tmp_path):
    make_suite(pytester, (HERE / "helpers.py").read_text())
    pytester.makeini("[pytest]\ncommerce_prices =\n    toy-priced = 0.40 1.60\n")
    pytester.makeconftest(
        "from helpers import ToyAgent, ToyBackend\n"
        "from pytest_commerce_evals.testing import FakeClient, text_reply\n"
        "def pytest_commerce_evals_make_backend(config, case):\n    return ToyBackend()\n"
        "def pytest_commerce_evals_make_agent(config, case, backend):\n"
        "    client = FakeClient([text_reply('ok')], model='toy-priced',\n"
        "                        usage={'input_tokens': 1000, 'output_tokens': 500, 'cached_tokens': 200})\n"
        "    return ToyAgent(client, backend, model='toy-priced')\n"
    )
    out = tmp_path / "run.html"
    result = pytester.runpytest("cases", "--commerce-store=none", f"--commerce-html={out}")
    result.stdout.fnmatch_lines([f"HTML report written to {out}"])
    text = text_of(cost_part(out.read_text()))
    # three cases, one call each: priced from commerce_prices, unknown without it
    # (the agent's time is measured: on a loaded machine it may pass 0.00 s)
    assert re.search(r"agent 3/3 3 3,000 1,500 600 \d+\.\d\d s 1,500 \$0\.0012 \$0\.0036", text)
    assert "toy-priced (commerce_prices)" in text


def test_compare_gives_no_time_ratio_for_agents_that_spent_no_time():
    # scripted agents answer in microseconds: a ratio of such times says nothing
    quick = [costly("a-001-x", 1000, 500).model_copy(update={"turn_s": [0.0004]})]
    quicker = [costly("a-001-x", 2000, 500).model_copy(update={"turn_s": [0.0002]})]
    line = cost_lines(compared(quick, quicker), BOOK)[4]
    assert line.startswith("  B uses 1.67× A's agent tokens per trial")
    assert "agent time" not in line


def test_the_judges_line_counts_the_trials_that_called_it_not_the_others_as_unreported():
    """24 trials, 3 of them judged: the 21 others made no judge call, which is not a call whose
    usage went unreported (the agent's line keeps its "not reported")."""
    from pytest_commerce_evals.costs import CostSummary

    judged = [ModelCall("judge", "judge-j", 100, 10, 0, 0.2)]
    trials = [
        costly(f"cart-{i:03d}-x", 100, 10, calls=judged if i < 3 else []) for i in range(23)
    ] + [trial("cart-099-quiet")]
    lines = CostSummary.of(trials, BOOK).lines()
    [judge] = [line for line in lines if line.lstrip().startswith("judge")]
    assert judge.endswith("in 3 of 24 trials (none in the others)"), judge
    assert "not reported" not in judge
    [agent] = [line for line in lines if line.lstrip().startswith("agent ") and "call(s)" in line]
    assert agent.endswith("not reported on 1 of 24 trials"), agent
