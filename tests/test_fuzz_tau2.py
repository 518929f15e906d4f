"""The τ² command line never stops on bad data: property tests over `import` (a checkout's tasks)
and `import-results` (a results file), each fed the handmade files with any part replaced by any
JSON value. Whatever the data holds, the command returns 0, 1 (it skipped something, each skip a
line naming the task or simulation) or 2 (it cannot start, one sentence); no traceback. What
`import` writes always loads as valid cases, one per task it did not skip; what `import-results`
writes is a run record `load_record` reads, one trial per simulation it did not skip.

And what else the bridge reads: the checkout's source (its tool schemas and prompts, parsed), the
`--cases` folder of `import-results` as it finds it, the checkout `$COMMERCE_TAU2_CHECKOUT` names,
and the `_tau2_agent.yaml` and `_tau2_customer.yaml` an import writes beside the cases. Each is
read as it is or refused with an error of the plugin's naming the file; never another exception.

The default run spends a bounded budget (`COMMERCE_FUZZ_EXAMPLES` examples per property, 200
unless set, a quarter or an eighth of it here: each example reads files or runs the command);
docs/fuzzing.md says how to run a long campaign.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import io
import json
import os
import shutil
import stat
import tempfile
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tau2_checkout import domain_folder, make_checkout, within

from pytest_commerce_evals.agent import AgentSession
from pytest_commerce_evals.cases.case import Case
from pytest_commerce_evals.cases.loader import load_case_file
from pytest_commerce_evals.errors import CheckoutSourceError, ConfigurationError, RetailError
from pytest_commerce_evals.store.record_file import load_record
from pytest_commerce_evals.tau2.__main__ import CONFTEST_FIRST, MARK
from pytest_commerce_evals.tau2.__main__ import main as tau2_main
from pytest_commerce_evals.tau2.customer import customer_view
from pytest_commerce_evals.tau2.domains import DOMAINS
from pytest_commerce_evals.tau2.imported import AGENT_VIEW, CHECKOUT_ENV, CUSTOMER_VIEW, Checkout
from pytest_commerce_evals.tau2.prompts import (
    agent_system_prompt,
    first_agent_message,
    tool_schemas,
)
from pytest_commerce_evals.tau2.tasks import case_of
from pytest_commerce_evals.testing import FakeClient

DATA = Path(__file__).parent / "data" / "tau2"
TASKS = json.loads((DATA / "tasks.json").read_text(encoding="utf-8"))
RESULTS = json.loads((DATA / "results.json").read_text(encoding="utf-8"))
EXAMPLES = int(os.environ.get("COMMERCE_FUZZ_EXAMPLES", "200"))
FUZZ = settings(
    max_examples=max(EXAMPLES // 4, 10),
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)

TOOLS = ["get_order_details", "cancel_pending_order", "find_user_id_by_name_zip", "x", ""]
scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([2**63, -(2**70), int("9" * 400)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["\ud800", "DB", "COMMUNICATE", "NL_ASSERTION", "assistant", "user", "a b",
                     "A_B", "²", "x" * 300, "Error: no", "###STOP###", *TOOLS]),
)  # fmt: skip
value = st.recursive(
    scalar,
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["name", "arguments", "requestor", "id", "a"]), inner,
                      max_size=4),
    max_leaves=12,
)  # fmt: skip


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every place in a JSON tree a value can be replaced at (the root excluded)."""
    out = []
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else []
    )
    for key, child in items:
        out.append((*prefix, key))
        out.extend(_paths(child, (*prefix, key)))
    return out


@st.composite
def damaged(draw, original: Any, *, at_most: int = 3) -> Any:
    """`original` with up to `at_most` of its parts replaced by any JSON value, or removed."""
    data = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, at_most))):
        paths = _paths(data)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = data
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(value)
    return data


def _no_traceback(capsys) -> tuple[str, str]:
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, err
    return out, err


@FUZZ
@given(tasks=damaged(TASKS) | st.lists(value, max_size=3))
def test_any_tasks_file_imports_what_it_can_and_names_what_it_skipped(tmp_path, capsys, tasks):
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        root = make_checkout(Path(tmp) / "tau2-bench", files=("db.json", "policy.md"), tasks=tasks)
        out = Path(tmp) / "cases"
        rc = tau2_main(["import", str(root), "--out", str(out)])
        said, err = _no_traceback(capsys)
        assert rc in (0, 1, 2), rc
        if rc == 2:
            assert err.startswith("error:") and err.count("\n") == 1, err
            return
        skipped = err.count("skipped")
        written = sorted(out.glob("0*.yaml"))
        assert (rc == 1) == (skipped > 0), err
        if isinstance(tasks, list):
            assert len(written) + skipped == len(tasks), (said, err)
        for path in written:
            loaded = load_case_file(path)
            assert not loaded.problems and len(loaded.cases) == 1, (path, loaded.problems)
        assert len({load_case_file(p).cases[0].case.id for p in written}) == len(written)
        assert (out / "conftest.py").is_file() and (out / "_set.yaml").is_file()


@settings(FUZZ, max_examples=max(EXAMPLES // 8, 10))
@given(data=damaged(RESULTS))
def test_any_results_file_imports_the_simulations_it_can_read(tmp_path, capsys, data):
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        path = Path(tmp) / "results.json"
        path.write_text(json.dumps(data), encoding="utf-8")
        out = Path(tmp) / "run.json"
        rc = tau2_main(
            ["import-results", str(path), "--db", str(DATA / "db.json"), "--out", str(out)]
        )
        _, err = _no_traceback(capsys)
        assert rc in (0, 1, 2), rc
        if rc == 2:
            assert err.startswith("error:") and not out.exists(), err
            return
        skipped = err.count("skipped:")
        assert (rc == 1) == (skipped > 0), err
        record = load_record(out)
        simulations = data.get("simulations") if isinstance(data, dict) else None
        if isinstance(simulations, list):
            assert len(record.trials) + skipped == len(simulations), err


@pytest.mark.parametrize("original", [TASKS, RESULTS], ids=["tasks", "results"])
def test_the_damage_reaches_every_part_of_the_files(original):
    # the properties replace any part: the handmade files hold each part the readers read
    keys = {str(p[-1]) for p in _paths(original)}
    assert {"id", "evaluation_criteria", "actions", "arguments", "reward_basis"} <= keys
    if original is RESULTS:
        assert {"simulations", "messages", "reward_info", "tool_calls"} <= keys


# -- the checkout's source ---------------------------------------------------------------------

SOURCES = {p.relative_to(DATA): p.read_bytes() for p in sorted((DATA / "src").rglob("*.py"))}
SOURCE_BITS = [
    "", "None", "1", "1j", "b'x'", "{1}", "[1]", "(1, 2)", "-1", "2**999", "...", "foo()",
    "lambda: 0", "x.y", "'{x}'", "'{0}'", "'{'", "'}'", "'\\ud800'", "'\\x00'", "'int['",
    "'str | None'", "'Literal[1, 2]'", "f'{x}'", "Order", "Literal", "Literal[()]", "Literal[[1]]",
    "Dict", "Dict[str]", "str[int]", "Any[int]", "Optional[int, str]", "Union[()]", "List[]",
    "typing.List", "AssistantMessage()", "'a' 'b'", '"""', "(", ":",
]  # fmt: skip
TEMPLATE_BITS = [
    "", "{", "}", "{}", "{0}", "{x}", "{{", "}}", "{agent_instruction}", "{domain_policy}",
    "{instructions}", "{global_user_sim_guidelines_with_persona}", "{domain_policy:.3}",
    "{domain_policy!r}", "{domain_policy[0]}", "{instructions.x}", "{instructions:>3}",
    "{domain_policy:{x}}", "{agent_instruction:d}", "'", "\\", "\n", "Args:\n    a: b",
]  # fmt: skip
BAD_BYTES = [b"\xff", b"\x80\x80", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf"]


def _spans(source: bytes) -> list[tuple[int, int]]:
    """Where the parser reads a file: its constants (the prompts, the docstrings, the markers),
    and each parameter's annotation and default, as byte ranges."""
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    tree = ast.parse(source)
    nodes: list[Any] = [n for n in ast.walk(tree) if isinstance(n, ast.Constant)]
    for fn in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        nodes += [a.annotation for a in fn.args.args if a.annotation is not None]
        nodes += fn.args.defaults
    return [
        (starts[n.lineno - 1] + n.col_offset, starts[n.end_lineno - 1] + n.end_col_offset)
        for n in nodes
    ]


SPANS = {rel: _spans(source) for rel, source in SOURCES.items()}


@st.composite
def damaged_source(draw) -> tuple[Path, bytes]:
    """A file of the stand-in source with up to three edits where the parser reads (`_spans`:
    replaced by other Python or not, or text put inside), maybe a line removed or repeated; or
    cut short, emptied, or with bytes that are not UTF-8 put in."""
    rel = draw(st.sampled_from(sorted(SOURCES)))
    raw = SOURCES[rel]
    kind = draw(st.sampled_from(["edits", "edits", "edits", "edits", "cut", "bytes", "empty"]))
    if kind == "empty":
        return rel, b""
    if kind == "cut":
        return rel, raw[: draw(st.integers(0, len(raw)))]
    if kind == "bytes":
        at = draw(st.integers(0, len(raw)))
        return rel, raw[:at] + draw(st.sampled_from(BAD_BYTES)) + raw[at:]
    spans = draw(st.lists(st.sampled_from(SPANS[rel]), min_size=1, max_size=3, unique=True))
    for start, end in sorted(spans, reverse=True):  # the last first: earlier offsets still hold
        if draw(st.booleans()):
            bit = draw(st.sampled_from(SOURCE_BITS)).encode()
        else:  # inside a string, or an annotation's text
            start = end = draw(st.integers(start + 1, max(start + 1, end - 1)))
            bit = draw(st.sampled_from(TEMPLATE_BITS)).encode()
        raw = raw[:start] + bit + raw[end:]
    if draw(st.integers(0, 3)) == 0:
        lines = raw.split(b"\n")
        at = draw(st.integers(0, len(lines) - 1))
        lines[at : at + 1] = [] if draw(st.booleans()) else [lines[at]] * 2
        raw = b"\n".join(lines)
    return rel, raw


def _valid_prompt(prompt: str) -> None:
    assert POLICY in prompt, prompt


def _valid_schemas(schemas: Any) -> None:
    assert isinstance(schemas, list) and schemas
    for schema in schemas:
        assert schema["type"] == "function", schema
        function = schema["function"]
        assert isinstance(function["name"], str) and function["name"], schema
        assert isinstance(function["description"], str) and function["description"], schema
        assert function["parameters"]["type"] == "object", schema
    json.dumps(schemas)  # what the agent sends


@FUZZ
@given(damage=damaged_source())
def test_damaged_checkout_source_is_read_or_refused_naming_the_file(
    tmp_path, capsys, monkeypatch, damage
):
    """Each reader of the checkout's source returns what the importer can write, or raises
    `CheckoutSourceError` naming the damaged file; an import of the checkout writes each view
    the readers gave and the imported folder reads it back, or says which it did not write."""
    rel, raw = damage
    monkeypatch.delenv(CHECKOUT_ENV, raising=False)
    root = tmp_path / "tau2-bench"
    if not root.exists():
        make_checkout(root)
    path = root / rel
    path.write_bytes(raw)
    readers = [
        lambda: _valid_schemas(tool_schemas(root, "retail")),
        lambda: _valid_schemas(tool_schemas(root, "airline")),
        lambda: _valid_prompt(agent_system_prompt(root, POLICY)),
        lambda: first_agent_message(root),
        lambda: customer_view(root),
    ]
    try:
        with warnings.catch_warnings():  # pydantic's, on a parameter named `json` say
            warnings.simplefilter("ignore")
            for reader in readers:
                try:
                    reader()
                except CheckoutSourceError as exc:
                    assert str(path) in str(exc), exc
            out = tmp_path / "cases"
            assert tau2_main(["import", str(root), "--out", str(out)]) in (0, 1)
            _, err = _no_traceback(capsys)
            for view in (AGENT_VIEW, CUSTOMER_VIEW):
                if not (out / view).exists():
                    assert f"{view} not written: {path}" in err, err
            checkout = Checkout(out / "conftest.py", "../tau2-bench")
            checkout.agent(FakeClient([]), "m")  # reads _tau2_agent.yaml: no error
            checkout.customer(None, CASE, USER)  # reads both
    finally:
        path.write_bytes((DATA / rel).read_bytes())
        shutil.rmtree(tmp_path / "cases", ignore_errors=True)


# -- what an imported folder reads back --------------------------------------------------------


def _written_views() -> dict[str, Any]:
    """The `_tau2_*.yaml` files an import of the stand-in checkout writes, as read."""
    with tempfile.TemporaryDirectory() as tmp, contextlib.redirect_stdout(io.StringIO()):
        root, out = make_checkout(Path(tmp) / "tau2-bench"), Path(tmp) / "cases"
        assert tau2_main(["import", str(root), "--out", str(out)]) == 0
        return {
            n: yaml.safe_load((out / n).read_text("utf-8")) for n in (AGENT_VIEW, CUSTOMER_VIEW)
        }


VIEWS = _written_views()
POLICY = (DATA / "policy.md").read_text(encoding="utf-8")
CASE = Case.model_validate(case_of(TASKS[0], domain="retail"))
USER = SimpleNamespace(endpoint=SimpleNamespace(model="m"))  # the customer's client: not called
YAML_BITS = [
    "", "\n", ": ", "- ", "[", "]", "{", "}", "&a ", "*a", "!!int ", "!!python/name:os.system ",
    "'", '"', "\t", "#", "---\n", "...\n", "\\ud800", "\x00", "\ufeff", "? ", "<<: *a\n",
    "2025-02-30", "!!binary x", "%YAML 1.1\n", "[" * 1000,
]  # fmt: skip


@st.composite
def _edited(draw, text: str, bits: list[str]) -> str:
    for _ in range(draw(st.integers(1, 3))):
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 30)))
        text = text[:start] + draw(st.sampled_from(bits)) + text[end:]
    return text


@st.composite
def damaged_view(draw, original: dict[str, Any]) -> bytes:
    """A view as the importer writes it, damaged: parts replaced or removed (`damaged`), its
    prompt template edited with placeholders good and bad, its YAML text edited, bytes that are
    not UTF-8 put in."""
    data = copy.deepcopy(draw(damaged(original, at_most=2) | st.just(original)))
    if isinstance(data.get("system_prompt"), str) and draw(st.booleans()):
        data["system_prompt"] = draw(_edited(data["system_prompt"], TEMPLATE_BITS))
    text = f"{MARK}\n" + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    if draw(st.booleans()):
        text = draw(_edited(text, YAML_BITS))
    raw = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 7)) == 0:
        at = draw(st.integers(0, len(raw)))
        raw = raw[:at] + draw(st.sampled_from(BAD_BYTES)) + raw[at:]
    return raw


@pytest.fixture
def imported(tmp_path, monkeypatch) -> Checkout:
    """An imported folder beside its checkout."""
    monkeypatch.delenv(CHECKOUT_ENV, raising=False)
    root = make_checkout(tmp_path / "tau2-bench")
    with contextlib.redirect_stdout(io.StringIO()):
        assert tau2_main(["import", str(root), "--out", str(tmp_path / "cases")]) == 0
    return Checkout(tmp_path / "cases" / "conftest.py", "../tau2-bench")


@FUZZ
@given(raw=damaged_view(VIEWS[AGENT_VIEW]))
def test_a_damaged_agent_view_is_refused_naming_it_or_sent_as_it_reads(imported, raw):
    path = imported.folder / AGENT_VIEW
    path.write_bytes(raw)
    client = FakeClient(["Done."])
    try:
        agent = imported.agent(client, "m")
    except ConfigurationError as exc:
        assert str(path) in str(exc), exc
        return
    held = yaml.safe_load(path.read_text(encoding="utf-8"))
    agent.run_turn(AgentSession(case=CASE, backend=imported.backend()), "Hi")
    request = client.requests[0]
    system, greeting = request["messages"][:2]
    assert POLICY in system["content"] and held["agent_instruction"] in system["content"]
    assert system["content"] == held["system_prompt"].format(
        agent_instruction=held["agent_instruction"], domain_policy=POLICY
    )
    assert greeting == {"role": "assistant", "content": held["greeting"]}
    assert repr(request["tools"]) == repr(held["tools"])  # NaN and all


@FUZZ
@given(raw=damaged_view(VIEWS[CUSTOMER_VIEW]))
def test_a_damaged_customer_view_is_refused_naming_it_or_played_as_it_reads(imported, raw):
    path = imported.folder / CUSTOMER_VIEW
    path.write_bytes(raw)
    try:
        customer = imported.customer(None, CASE, USER)
    except ConfigurationError as exc:
        assert str(path) in str(exc), exc
        return
    held = yaml.safe_load(path.read_text(encoding="utf-8"))
    scenario = held["scenarios"].get(CASE.id)
    if customer is None:  # no scenario for the case: the plugin's own customer plays its brief
        assert not isinstance(scenario, str), scenario
        return
    system, *rest = customer.messages([])
    assert scenario in system["content"]
    assert held["guidelines"].replace("<PERSONA_GUIDELINES>", "") in system["content"]
    assert rest == [{"role": "user", "content": VIEWS[AGENT_VIEW]["greeting"]}]
    assert customer.endings == held["endings"]


def test_the_view_damage_reaches_every_part_the_readers_read():
    agent, customer = ({str(p[-1]) for p in _paths(VIEWS[n])} for n in (AGENT_VIEW, CUSTOMER_VIEW))
    assert {"tools", "system_prompt", "agent_instruction", "greeting", "parameters"} <= agent
    assert {"system_prompt", "guidelines", "endings", "scenarios", CASE.id} <= customer


# -- the checkout $COMMERCE_TAU2_CHECKOUT names ------------------------------------------------

PLACES = [
    "checkout", "checkout", "checkout", "relative", "file", "empty", "blank", "missing",
    "dangling", "loop", "no-home", "too-long", "under-a-file", "control",
]  # fmt: skip
FILE_DAMAGE = ["good", "good", "empty", "not-utf8", "not-json", "other-json", "folder", "link"]


def _place(tmp: Path, place: str, files: dict[str, str], domain: str) -> str:
    """What $COMMERCE_TAU2_CHECKOUT is set to for `place`; a checkout's domain files made."""
    root = tmp / "tau2-bench"
    if place in ("checkout", "relative"):
        make_checkout(root, domain=domain, files=(), source=False, simulator=False)
        for name, damage in files.items():
            data = DATA / "airline" if domain == "airline" and name != "policy.md" else DATA
            good, target = (data / name).read_bytes(), domain_folder(root, domain) / name
            (tmp / name).write_bytes(good)  # where a link points
            if damage == "folder":
                target.mkdir()
            elif damage == "link":
                target.symlink_to(tmp / name)
            else:
                target.write_bytes({"good": good, "empty": b"", "not-utf8": good + b"\xff",
                                    "not-json": b"{", "other-json": b'{"users": 5}'}[damage])  # fmt: skip
        return str(root) if place == "checkout" else os.path.relpath(root)
    if place in ("file", "under-a-file"):
        (tmp / "file").write_text("x")
        return str(tmp / "file") if place == "file" else str(tmp / "file" / "tau2-bench")
    if place == "empty":
        root.mkdir()
    elif place == "dangling":
        root.symlink_to(tmp / "nowhere")
    elif place == "loop":
        root.symlink_to(root)
    special = {"blank": " \t", "no-home": "~no-such-user-here/tau2-bench",
               "too-long": "/" + "a" * 5000, "control": "\x01\x7f"}  # fmt: skip
    return special.get(place, str(root))


@FUZZ
@given(
    place=st.sampled_from(PLACES),
    files=st.dictionaries(st.sampled_from(["db.json", "tasks.json", "policy.md"]),
                          st.sampled_from(FILE_DAMAGE)),
    domain=st.sampled_from(DOMAINS),
)  # fmt: skip
def test_any_checkout_the_variable_names_is_read_or_refused_naming_it(
    tmp_path, monkeypatch, place, files, domain
):
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        given_ = _place(Path(tmp), place, files, domain)
        monkeypatch.setenv(CHECKOUT_ENV, given_)
        checkout = Checkout(Path(tmp) / "cases" / "conftest.py", "../nowhere", domain=domain)
        usable = {n for n, d in files.items() if d in ("good", "link")}
        reads = [("db.json", lambda: checkout.db), ("policy.md", checkout.policy)]
        reads += [("db.json", checkout.backend)]
        for name, read in reads:
            try:
                got = read()
            except (ConfigurationError, RetailError) as exc:
                # where it looked and what to set, or the file it could not read
                assert CHECKOUT_ENV in str(exc) or name in str(exc), exc
                assert place != "checkout" or name not in usable, exc
                continue
            assert place in ("checkout", "relative") and name in files, (place, files)
            if read is checkout.policy:
                assert got == (domain_folder(given_, domain) / name).read_text(encoding="utf-8")
            elif read is checkout.backend:
                assert name in usable and got.db, files


# -- the cases folder of import-results --------------------------------------------------------

WRITTEN = ["000-task-0.yaml", "001-task-1.yaml", "002-task-2.yaml", "_set.yaml", AGENT_VIEW,
           CUSTOMER_VIEW, "conftest.py"]  # fmt: skip
OWN = ("own", "own-damaged")
ENTRY_KINDS = [*OWN, "foreign", "empty", "not-utf8", "folder", "link-out", "dangling", "loop",
               "pipe"]  # fmt: skip
CASES_PLACES = ["folder", "folder", "folder", "new", "file", "link", "dangling", "under-a-file"]
CONTENTS = {
    "own": f"{MARK}\nx: 1\n".encode(),  # the importer's (its first line): written over
    "own-damaged": f"{MARK}\n".encode() + b"\xff[[[",
    "foreign": b"# mine\n",
    "empty": b"",
    "not-utf8": b"\xff\xfe\x00",
}


def _entry(path: Path, kind: str, outside: Path) -> None:
    if kind == "folder":
        path.mkdir()
    elif kind == "pipe":
        os.mkfifo(path)  # opened to read, it waits for a writer
    elif kind in ("link-out", "dangling", "loop"):
        path.symlink_to({"link-out": outside, "dangling": path.parent / "gone", "loop": path}[kind])
    else:
        path.write_bytes(CONTENTS[kind])


def _unchanged(path: Path, kind: str) -> bool:
    if kind == "folder":
        return path.is_dir() and not path.is_symlink()
    if kind == "pipe":
        return stat.S_ISFIFO(path.lstat().st_mode)
    if kind in ("link-out", "dangling", "loop"):
        return path.is_symlink()
    return path.is_file() and path.read_bytes() == CONTENTS[kind]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes and links")
@settings(FUZZ, max_examples=max(EXAMPLES // 8, 10))
@given(
    place=st.sampled_from(CASES_PLACES),
    entries=st.dictionaries(st.sampled_from([*WRITTEN, "mine.yaml"]), st.sampled_from(ENTRY_KINDS),
                            max_size=5),
)  # fmt: skip
def test_any_cases_folder_gets_what_it_can_take_and_names_the_rest(
    tmp_path, capsys, place, entries
):
    root = tmp_path / "tau2-bench"
    if not root.exists():
        make_checkout(root)
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp_name:
        tmp = Path(tmp_name)
        outside = tmp / "outside.txt"
        outside.write_text("kept\n")
        cases = tmp / "cases"
        if place == "folder":
            cases.mkdir()
            for name, kind in entries.items():
                _entry(cases / name, kind, outside)
        elif place == "file":
            cases.write_text("x")
        elif place in ("link", "dangling"):
            (tmp / "real").mkdir()
            cases.symlink_to(tmp / ("real" if place == "link" else "gone"))
        elif place == "under-a-file":
            cases.write_text("x")
            cases = cases / "cases"
        run = tmp / "run.json"
        db = domain_folder(root) / "db.json"
        args = ["import-results", str(DATA / "results.json"), "--db", str(db), "--out", str(run)]
        with within(20):  # a pipe opened to read would wait for ever
            rc = tau2_main([*args, "--cases", str(cases)])
        _, err = _no_traceback(capsys)
        assert outside.read_text() == "kept\n"
        if rc == 2:
            assert place not in ("folder", "new"), err
            assert err.startswith(f"error: --cases {cases}: ") and err.count("\n") == 1, err
            assert not run.exists()
            return
        assert place in ("folder", "new"), (place, rc)
        assert len(load_record(run).trials) == len(RESULTS["simulations"])
        made = entries if place == "folder" else {}
        blocked = {n: k for n, k in made.items() if n in WRITTEN and k not in OWN}
        assert rc == (1 if blocked else 0), err
        for name in WRITTEN:
            path = cases / name
            if name in blocked:
                assert f"{path}: " in err and _unchanged(path, blocked[name]), name
                continue
            assert path.is_file() and not path.is_symlink(), name
            first = path.read_text(encoding="utf-8").split("\n", 1)[0]
            assert first == MARK or first.startswith(CONFTEST_FIRST), first
            if name.startswith("0"):
                assert not load_case_file(path).problems, path
        if "mine.yaml" in made:  # no name the importer writes: left as it is
            assert _unchanged(cases / "mine.yaml", made["mine.yaml"])
