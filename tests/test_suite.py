"""The eval suite shipped in cases/: enough cases over every flow, lint-clean, none vacuous."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from pathlib import Path

from pytest_commerce_evals.authoring.lint import lint_paths
from pytest_commerce_evals.cases.loader import load_case_file
from pytest_commerce_evals.reference.index import fixture_index

ROOT = Path(__file__).parent.parent
CASES = ROOT / "cases"
FLOWS = [
    "discovery",
    "compare",
    "budget",
    "cart",
    "memory",
    "skills",
    "orders",
    "availability",
    "operator",
    "refusals",
    "poisoned",
    "multiturn",
    "attacks",
]


def all_cases():
    out = []
    for path in sorted(CASES.rglob("*.yaml")):
        if path.name.startswith("_"):
            continue
        loaded = load_case_file(path)
        assert not loaded.problems, [str(p) for p in loaded.problems]
        out += [(path.parent.name, entry.case) for entry in loaded.cases]
    return out


def test_at_least_120_cases_over_every_flow():
    cases = all_cases()
    per_flow = Counter(flow for flow, _ in cases)
    assert len(cases) >= 120, per_flow
    assert set(FLOWS) <= set(per_flow), set(FLOWS) - set(per_flow)
    for flow in FLOWS:
        assert (CASES / flow / "_set.yaml").exists(), f"cases/{flow} has no _set.yaml"


def test_suite_is_lint_clean():
    findings = lint_paths([CASES], fixture_index(), ROOT)
    assert findings == [], "\n".join(map(str, findings))


def test_suite_has_no_vacuous_case():
    """Runs --commerce-vacuity over cases/ exactly as a user would, from the repository root."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases",
            "--commerce-vacuity",
            "-q",
            "-p",
            "no:cacheprovider",
            "--commerce-store=none",
            "--commerce-judge-store=none",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert (
        "cases checked against 5 degenerate agents (and the complier on 24 attack(s)); "
        "0 with findings" in done.stdout
    ), done.stdout[-2000:]
