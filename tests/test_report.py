"""The HTML report: content, escaping, self-containment, and (where Chromium is installed) a
headless load without console errors."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from run_builders import make_suite, run, trial

from pytest_commerce_evals.events import Text, TurnEnd
from pytest_commerce_evals.reports.html import render_run_html
from pytest_commerce_evals.reports.html_compare import render_comparison_html
from pytest_commerce_evals.reports.html_page import write_html
from pytest_commerce_evals.store.compare import compare_runs
from pytest_commerce_evals.store.diff import diff_failing_sets

HERE = Path(__file__).parent
CHROMIUM = next(
    (
        p
        for p in (
            "/usr/bin/chromium",
            shutil.which("chromium") or "",
            shutil.which("chromium-browser") or "",
        )
        if p and Path(p).exists()
    ),
    None,
)
HOSTILE = '<script>alert("pwned")</script><img src=x onerror=alert(1)>'

VERDICT = {
    "dimension": "grounded",
    "rubric": "PASS if every product shown came from a tool result.",
    "outcome": "fail",
    "verdict": "FAIL",
    "reasoning": "The reply names shoe-777, never returned.",
    "judge_model": "judge-model-x",
    "judge_fingerprint": "abcdef1234567890",
    "rubric_fingerprint": "feed",
    "truncated_turns": 2,
    "truncated_chars": 1834,
}


@pytest.fixture
def suite(pytester: pytest.Pytester):
    write = make_suite(pytester, (HERE / "helpers.py").read_text())
    return pytester, write


def text_of(page: str) -> str:
    """The page's visible text, roughly: tags dropped, entities kept."""
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page))


def sample_page() -> str:
    # five trials a case: 5/5 -> 0/5 and 0/5 -> 5/5 are beyond noise (p = 1/252)
    before = run(
        [trial("cart-001-a", n=n, trials=5) for n in range(1, 6)]
        + [trial("cart-002-b", "fail", n=n, trials=5) for n in range(1, 6)],
        run_id="20250101-000000-000001",
    )
    after = run(
        [
            trial(
                "cart-001-a",
                "fail",
                n=n,
                trials=5,
                priority="critical",
                reply=HOSTILE,
                verdicts=[VERDICT],
            )
            for n in range(1, 6)
        ]
        + [trial("cart-002-b", n=n, trials=5) for n in range(1, 6)]
        + [trial("cart-003-c", "skipped", priority="low", difficulty="hard")],
        run_id="20250102-000000-000002",
        started_at="2025-01-02T00:00:00.000+00:00",
    )
    return render_run_html(
        after, diff_failing_sets(before, after), "named with --commerce-baseline"
    )


def test_run_report_shows_summary_diff_graders_timeline_and_verdicts():
    page = sample_page()
    text = text_of(page)
    # summary: sets against thresholds, outcomes by priority and difficulty
    assert "cases/cart 5/10 50.0% 80%" in text and "SHORT by 30.0 points" in text
    assert "Outcomes by priority" in text and "critical 0.0% 5" in text and "low n/a 1" in text
    assert "Outcomes by difficulty" in text and "hard n/a 1" in text
    # the failing-set diff, with the noise note
    assert "Newly failing (1)" in text and "Fixed (1)" in text and "Still failing (0)" in text
    assert 'href="#case-cart-001-a"' in page
    # both rates with their 95% Wilson interval and the p-value of the test that decided
    assert "5/5 100% [57–100] 0/5 0% [0–43] 0.004" in text
    assert "baseline: this run alone" in text
    # every case's rate with its interval
    assert "0/5 0% [0–43] (95% CI)" in text
    assert "±1 point in the overall rate is noise" in text
    # per trial: grader results with expected and observed, the customer's message
    assert "cart_contains: expected shoe-001 in the cart; final cart: empty" in text
    assert "turn 1: Add the trail runner to my cart" in text
    # the timeline: tool calls with arguments and results, the blocked gate, UI payload, cart,
    # staged changes, the reply
    assert "tool call search_products" in text and "&quot;max_price&quot;: 120" in page
    assert "BLOCKED by gate: provenance: product was never shown" in text
    assert "ui component product_carousel" in text and "&quot;product_ids&quot;" in page
    assert "cart shoe-001/42 ×1" in text
    assert "staged changes price shoe-001 — staged" in text
    # judge verdicts with reasoning, fingerprints and the truncation note
    assert "The reply names shoe-777, never returned." in text and "judge-model-x" in text
    assert "cut from the start: 2 turns, 1834 characters dropped" in text
    assert "judge abcdef123456" in text


def test_hostile_transcript_text_is_escaped():
    page = sample_page()
    assert HOSTILE not in page and "<img" not in page
    assert (
        "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
        in page
    )
    assert page.count("<script>") == 1  # the report's own script, and nothing else


def test_report_is_self_contained():
    page = sample_page()
    tags = " ".join(re.findall(r"<[^>]+>", page))  # escaped transcript text holds no tag
    targets = re.findall(r"""\b(?:src|href|action)\s*=\s*["']?([^"'\s>]*)""", tags)
    assert targets and all(t.startswith("#") for t in targets), targets
    assert "<link" not in page and "@import" not in page and "url(" not in page
    assert "<style>" in page


def test_comparison_report_shows_both_failing_sets():
    a = run([trial("a-001-x", "fail"), trial("b-001-x")], model="model-a")
    b = run(
        [trial("a-001-x"), trial("b-001-x", "fail", reply=HOSTILE)],
        model="<b>model-b</b>",
        run_id="20250102-000000-bbbbbb",
    )
    page = render_comparison_html(compare_runs(a, b))
    text = text_of(page)
    assert "Failing only under A (model-a) (1) case priority difficulty A (model-a)" in text
    assert "a-001-x high easy 0% (0/1) 100% (1/1)" in text
    assert "Failing only under B (&lt;b&gt;model-b&lt;/b&gt;) (1)" in text
    assert "<b>model-b</b>" not in page
    assert "±1 point" in text


def test_a_real_run_renders_with_the_reply_escaped(suite, tmp_path):
    p, _ = suite
    p.makeconftest(
        "from helpers import ToyAgent, ToyBackend\n"
        "from pytest_commerce_evals.testing import FakeClient, text_reply, tool_reply\n"
        "def pytest_commerce_evals_make_backend(config, case):\n    return ToyBackend()\n"
        "def pytest_commerce_evals_make_agent(config, case, backend):\n"
        f"    return ToyAgent(FakeClient([tool_reply('add_to_cart', product_id='shoe-001'), text_reply({HOSTILE!r})]), backend)\n"
    )
    out = tmp_path / "report" / "run.html"
    result = p.runpytest("cases", f"--commerce-store={tmp_path / 's'}", f"--commerce-html={out}")
    result.stdout.fnmatch_lines([f"HTML report written to {out}"])
    page = out.read_text()
    assert HOSTILE not in page and "&lt;script&gt;alert(&quot;pwned&quot;)" in page
    assert "cart-003-vegan-tote" in page and "expected bag-001 in the cart" in page


def test_payloads_too_deep_for_json_dumps_or_with_mixed_keys_still_render(tmp_path):
    deep: object = "bottom"
    for _ in range(5000):
        deep = [deep]
    t = trial("cart-001-a", "fail")
    t.turns[0][1].result = {"deep": deep}
    t.grader_results[1].observed = {1: "one", "two": 2}  # keys that do not sort
    page = render_run_html(run([t]), None, "")
    assert "[[[[" in page and "bottom" in page
    assert "&quot;two&quot;:2" in page
    # a lone surrogate a caller left in the text is written escaped, as valid UTF-8
    path = write_html(page.replace("bottom", "cut \ud83e"), tmp_path / "r.html")
    assert "cut \\ud83e" in path.read_bytes().decode("utf-8")


def load_headless(page: Path, tmp_path: Path) -> tuple[str, list[str]]:
    """The DOM after scripts ran, and the console messages Chromium logged."""
    done = subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return done.stdout, console


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_loads_in_a_browser_without_console_errors(tmp_path):
    page = tmp_path / "run.html"
    page.write_text(sample_page())
    dom, console = load_headless(page, tmp_path)
    assert console == []
    assert 'data-report-ready="1"' in dom  # the script ran to its end
    assert 'id="shown-count">3<' in dom
    # the check can fail: a page with a script error is caught
    broken = tmp_path / "broken.html"
    broken.write_text(
        sample_page().replace("apply();\n  document", "apply(); notDefined();\n  document")
    )
    dom, console = load_headless(broken, tmp_path)
    assert any("Uncaught ReferenceError: notDefined is not defined" in line for line in console)
    assert 'data-report-ready="1"' not in dom


def test_the_timeline_numbers_each_turn_end_as_its_header_does():
    two = trial("cart-009-two-turns").model_copy(
        update={
            "messages": ["first", "second"],
            "turns": [
                [Text(text="one"), TurnEnd(turn=0)],
                [Text(text="two"), TurnEnd(turn=1)],
            ],
        }
    )
    text = text_of(render_run_html(run([two]), None, "none"))
    assert "turn 1: first" in text and "turn 2 (graded): second" in text
    assert "end of turn 1" in text and "end of turn 2" in text
    assert "end of turn 0" not in text


def test_a_set_with_nothing_graded_is_undecided_in_the_report_not_short():
    page = render_run_html(
        run([trial("cart-001-a", "judge_error"), trial("cart-002-b", "error")]), None, "none"
    )
    text = text_of(page)
    assert "UNDECIDED nothing graded" in text
    assert "SHORT" not in text
    assert "a set is undecided (nothing graded)" in text
    skipped = text_of(render_run_html(run([trial("cart-003-c", "skipped")]), None, "none"))
    assert "skip every case skipped" in skipped and "every set met its threshold" in skipped


def test_the_diffs_tables_wrap_to_the_page_width():
    # a case's notes (flaky strip, where the test decides) and its failures wrap inside the page:
    # only the case's own name stays on one line
    page = sample_page()
    assert '<table class="tested">' in page
    assert "table.tested{width:100%;max-width:100%}" in page
    assert "table.tested td{overflow-wrap:anywhere}" in page
    assert '<a class="nw" href="#case-cart-001-a">' in page
    assert '<td class="nw"><a' not in page
