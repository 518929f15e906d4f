"""The GitHub Actions recipe of docs/shards.md, run as written: its shard jobs as processes at
once (each with its own xdist workers), then its merge job, against the real PostgreSQL server
(`COMMERCE_TEST_POSTGRES`), with the variables GitHub sets; the merged gate decides as one runner
does on the same cases."""

from __future__ import annotations

import json
import os
import re
import secrets
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from test_shards import FAILING, shop  # noqa: F401  (the fixture)
from test_store_postgres import SERVER, admin, needs_server

DOCS = Path(__file__).parent.parent / "docs" / "shards.md"


def recipe() -> dict:
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## GitHub Actions", 1)[1]
    block = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert block, "docs/shards.md has the workflow as a yaml block"
    return yaml.safe_load(block.group(1))


def commands(job: dict) -> list[str]:
    return [step["run"] for step in job["steps"] if str(step.get("run", "")).startswith("pytest")]


def test_the_recipe_is_a_matrix_of_shards_and_a_merge_that_runs_after_them_all():
    flow = recipe()
    shard, merge = flow["jobs"]["shard"], flow["jobs"]["merge"]
    total = len(shard["strategy"]["matrix"]["shard"])
    assert shard["strategy"]["fail-fast"] is False
    (run,) = commands(shard)
    assert f"--commerce-shard=${{{{ matrix.shard }}}}/{total}" in run
    assert merge["needs"] == "shard" and merge["if"] == "${{ !cancelled() }}"
    (gate,) = commands(merge)
    assert "--commerce-merge=ci" in gate
    assert shard["env"]["COMMERCE_STORE"] == merge["env"]["COMMERCE_STORE"]


@pytest.fixture
def pg_store():
    schema = f"ce_shards_{secrets.token_hex(4)}"
    yield f"{SERVER}?schema={schema}"
    with admin() as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def github_env(store: str, run: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("COMMERCE_", "PYTEST_"))}
    for name in ("GITLAB_CI", "BUILDKITE"):
        env.pop(name, None)
    return env | {
        "GITHUB_ACTIONS": "true",
        "GITHUB_REPOSITORY": "acme/shop",
        "GITHUB_RUN_ID": run,
        "GITHUB_RUN_ATTEMPT": "1",
        "COMMERCE_STORE": store,
    }


def as_process(command: str, matrix: dict[str, str]) -> list[str]:
    for key, value in matrix.items():
        command = command.replace(f"${{{{ matrix.{key} }}}}", value)
    args = shlex.split(command)
    assert args[0] == "pytest"
    return [sys.executable, "-m", "pytest", *args[1:], "-p", "no:cacheprovider"]


@needs_server
def test_the_documented_matrix_and_merge_make_one_run_and_one_gate(shop, pg_store):  # noqa: F811
    p, _ = shop
    flow = recipe()
    shard_job, merge_job = flow["jobs"]["shard"], flow["jobs"]["merge"]
    run = str(secrets.randbelow(10**9))
    env = github_env(pg_store, run)
    (shard_command,) = commands(shard_job)
    started = [
        subprocess.Popen(
            as_process(shard_command, {"shard": str(k)}),
            cwd=p.path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for k in shard_job["strategy"]["matrix"]["shard"]
    ]
    outputs = [proc.communicate(timeout=300)[0] for proc in started]
    run_id = f"github-acme.shop-{run}"
    for k, (proc, out) in enumerate(zip(started, outputs, strict=True), start=1):
        assert proc.returncode == 0, out  # the bag set is short: a shard does not gate it
        assert f"shard {k}/4 of run {run_id} (id from GITHUB_REPOSITORY and GITHUB_RUN_ID)" in out
        assert "bringing up nodes" in out or "created:" in out, "each shard ran its xdist workers"
    (merge_command,) = commands(merge_job)
    merged = subprocess.run(
        as_process(merge_command, {}), cwd=p.path, env=env, capture_output=True, text=True
    )
    assert merged.returncode == 1, merged.stdout + merged.stderr
    assert f"merging run {run_id} from " in merged.stdout
    assert "verdict: fail — 1 set(s) short" in merged.stdout
    record = json.loads((p.path / "run.json").read_text())
    assert record["run_id"] == run_id and record["complete"] is True
    assert len(record["trials"]) == 10 and record["exit_status"] == 1
    html = (p.path / "report.html").read_text()
    assert all(t["case_id"] in html for t in record["trials"])
    junit = ET.parse(p.path / "junit.xml").getroot()
    failed = {c.get("name") for c in junit.iter("testcase") if c.find("failure") is not None}
    assert failed == FAILING and len(list(junit.iter("testcase"))) == 10
    # one runner on the same cases: the same sets and exit status
    single = p.runpytest("cases", f"--commerce-store={pg_store}", "--commerce-json=single.json")
    one = json.loads((p.path / "single.json").read_text())
    assert single.ret == merged.returncode and one["sets"] == record["sets"]
