"""The contracts file: declarations as data, refused by the same asserts as code.

The laws under test:

1. The issue's shape works, in a file of its own and under ``[tool.context-integrity]`` in a
   ``pyproject.toml``: each tool table is the contract ``declare_tool`` makes from the same values,
   and an empty table declares a tool.
2. A bad value is refused by ``define_contract``'s own assert: the message is that assert's, preceded
   by the file and the key path of the value (``tools.host_paths.arguments_from[0]``).
3. An unknown key is refused at every level with the nearest key the format knows; a producer
   ``arguments_from`` names and the file does not declare is refused, naming the nearest declared one.
4. A file that is missing, not TOML, not UTF-8, too large, or a pyproject.toml without the table is
   refused in one sentence naming it.
5. Which file applies: the one named, else ``$CONTEXT_INTEGRITY_CONTRACTS``, else (for the command line)
   a pyproject.toml in the directory that has the table.
6. ``dump_contracts`` writes what ``load`` reads back equal (a property over generated contracts), with
   an optional ``#:schema`` directive; claims keyed by a model class have no file form.
7. ``settles``: plain rows settle facts as the declaration says; hostile rows settle what they can.
"""

from __future__ import annotations

import dataclasses
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from context_integrity.contracts import DeclarationError, define_contract
from context_integrity.contracts.claims import AnswerScope, Claim, define_answer_claims, define_claims
from context_integrity.contracts.file import (
    CONTRACTS_ENV_VAR,
    TOOL_KEYS,
    Contracts,
    ContractsFileError,
    dump_contracts,
    find_contracts,
    key_path,
    load_contracts,
    parse_contracts,
)
from context_integrity.contracts.results import read_result
from context_integrity.contracts.semantic import SettledFields, declared_fact_rows
from context_integrity.contracts.toolsets import Toolset, define_toolset
from context_integrity.limits import MAX_CONTRACTS_FILE_BYTES

ISSUE_SHAPE = """\
[tools.host_group_mappings]
result_columns = { logical_unit_number = "number", host_group = "string", comment = { type = "string", nullable = true } }

[tools.host_paths]
arguments_from = ["list_hosts"]

[tools.list_hosts]
"""

EXPECTED = (
    define_contract(
        "host_group_mappings",
        result_columns={
            "logical_unit_number": "number",
            "host_group": "string",
            "comment": {"type": "string", "nullable": True},
        },
    ),
    define_contract("host_paths", arguments_from=["list_hosts"]),
    define_contract("list_hosts"),
)


def _pyproject(body: str) -> str:
    tables = body.replace("[tools.", "[tool.context-integrity.tools.")
    return '[project]\nname = "agent"\n\n' + tables


# ── 1. the shape ─────────────────────────────────────────────────────────


def test_the_issue_shape_in_a_file_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "contracts.toml"
    path.write_text(ISSUE_SHAPE)
    loaded = load_contracts(path)
    assert loaded.tools == EXPECTED
    assert loaded.source == str(path)
    assert loaded.claims == () and loaded.toolsets == ()


def test_the_issue_shape_under_tool_context_integrity_in_pyproject(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(_pyproject(ISSUE_SHAPE))
    assert load_contracts(path).tools == EXPECTED


def test_every_declaration_that_is_data() -> None:
    text = """
[tools.port_status]
description = "One port's state."
result_kind = "dataset/rows"
once_per_run = true
result_wrapped = true
input_schema = { type = "object", properties = { port = { type = "string", enum = ["fc1/3", "fc1/4"] } } }
settles = { entity = "port", facts = ["status", "crc_errors"] }

[claims]
"port.status" = { entity = "fc1/3", field = "status" }
crc = ["fc1/3", "crc_errors"]

[agents.triage.claims]
budget = { entity = "project-7", field = "budget" }

[toolsets.ticketing]
tools = ["open_ticket", "close_ticket"]
suspended = true

[toolsets.storage]
tools = ["list_hosts"]
"""
    loaded = parse_contracts(text)
    (tool,) = loaded.tools
    assert tool == define_contract(
        "port_status",
        description="One port's state.",
        result_kind="dataset/rows",
        once_per_run=True,
        result_wrapped=True,
        input_schema={
            "type": "object",
            "properties": {"port": {"type": "string", "enum": ["fc1/3", "fc1/4"]}},
        },
        settles={"entity": "port", "facts": ["status", "crc_errors"]},
    )
    assert tool.enum_values == {"fc1/3", "fc1/4"}
    assert tool.settles == SettledFields("port", ("status", "crc_errors"))
    every, triage = loaded.claims
    assert (every.output_model, every.scope) == (None, AnswerScope(None))
    assert every.claims == (Claim("port.status", "fc1/3", "status"), Claim("crc", "fc1/3", "crc_errors"))
    assert triage.scope == AnswerScope("triage") and triage.claims == (
        Claim("budget", "project-7", "budget"),
    )
    assert loaded.toolsets == (
        Toolset("ticketing", ("open_ticket", "close_ticket"), suspended=True),
        Toolset("storage", ("list_hosts",)),
    )


def test_the_tool_keys_are_define_contracts_keywords() -> None:
    # A new declaration keyword is a new file key, with nothing to keep in step by hand.
    assert set(TOOL_KEYS) == {
        "description",
        "result_columns",
        "arguments_from",
        "input_schema",
        "once_per_run",
        "result_kind",
        "result_wrapped",
        "settles",
    }


# ── 2. the same asserts, located ─────────────────────────────────────────

# (a tool table's body, the key path refused, the keywords that make define_contract refuse it too)
REFUSED_TOOLS = [
    ('arguments_from = ["t"]', "tools.t.arguments_from[0]", {"arguments_from": ["t"]}),
    ('arguments_from = ["p", ""]\n[tools.p]', "tools.t.arguments_from[1]", {"arguments_from": ["p", ""]}),
    ('arguments_from = "p"\n[tools.p]', "tools.t.arguments_from", {"arguments_from": "p"}),
    ("arguments_from = []", "tools.t.arguments_from", {"arguments_from": []}),
    ('result_columns = { lun = "int" }', "tools.t.result_columns.lun", {"result_columns": {"lun": "int"}}),
    (
        'result_columns = { lun = "unknown" }',
        "tools.t.result_columns.lun",
        {"result_columns": {"lun": "unknown"}},
    ),
    (
        'result_columns = { lun = { type = "number", nullable = "yes" } }',
        "tools.t.result_columns.lun.nullable",
        {"result_columns": {"lun": {"type": "number", "nullable": "yes"}}},
    ),
    (
        'result_columns = { lun = { type = "numbr" } }',
        "tools.t.result_columns.lun.type",
        {"result_columns": {"lun": {"type": "numbr"}}},
    ),
    (
        'result_columns = { lun = { typ = "number" } }',
        "tools.t.result_columns.lun.typ",
        {"result_columns": {"lun": {"typ": "number"}}},
    ),
    (
        "result_columns = { lun = { nullable = true } }",
        "tools.t.result_columns.lun",
        {"result_columns": {"lun": {"nullable": True}}},
    ),
    ('result_columns = { "" = "number" }', 'tools.t.result_columns.""', {"result_columns": {"": "number"}}),
    ("result_columns = {}", "tools.t.result_columns", {"result_columns": {}}),
    ('result_columns = "number"', "tools.t.result_columns", {"result_columns": "number"}),
    ("once_per_run = 1", "tools.t.once_per_run", {"once_per_run": 1}),
    ('result_kind = " "', "tools.t.result_kind", {"result_kind": " "}),
    ("result_wrapped = 0", "tools.t.result_wrapped", {"result_wrapped": 0}),
    ("description = 3", "tools.t.description", {"description": 3}),
    ('input_schema = "object"', "tools.t.input_schema", {"input_schema": "object"}),
    (
        "input_schema = { properties = { tier = { enum = [] } } }",
        "tools.t.input_schema",
        {"input_schema": {"properties": {"tier": {"enum": []}}}},
    ),
    ('settles = { entity = "port" }', "tools.t.settles.facts", {"settles": {"entity": "port"}}),
    (
        'settles = { entity = "port", facts = ["port"] }',
        "tools.t.settles.facts[0]",
        {"settles": {"entity": "port", "facts": ["port"]}},
    ),
    (
        'settles = { entity = "port", facts = ["ok", 3] }',
        "tools.t.settles.facts[1]",
        {"settles": {"entity": "port", "facts": ["ok", 3]}},
    ),
    (
        'settles = { entity = "", facts = ["s"] }',
        "tools.t.settles.entity",
        {"settles": {"entity": "", "facts": ["s"]}},
    ),
    (
        'settles = { entity = "p", fact = ["s"] }',
        "tools.t.settles.fact",
        {"settles": {"entity": "p", "fact": ["s"]}},
    ),
    ('settles = "port"', "tools.t.settles", {"settles": "port"}),
]


@pytest.mark.parametrize(("body", "key", "keywords"), REFUSED_TOOLS)
def test_a_bad_tool_value_is_refused_by_define_contracts_own_assert(
    body: str, key: str, keywords: dict[str, object]
) -> None:
    with pytest.raises(ContractsFileError) as caught:
        parse_contracts(f"[tools.t]\n{body}\n", source="agent.toml")
    with pytest.raises(DeclarationError) as in_code:
        define_contract("t", **keywords)  # type: ignore[arg-type]
    assert str(caught.value) == f"agent.toml: {key}: {in_code.value}"
    assert (caught.value.source, caught.value.key) == ("agent.toml", key)
    assert isinstance(caught.value, DeclarationError)


@pytest.mark.parametrize(
    ("text", "key", "words"),
    [
        ('[claims]\n"a..b" = ["x", "y"]', 'claims."a..b"', "empty step"),
        ('[claims]\n"" = ["x", "y"]', 'claims.""', "blank"),
        ("[claims]", "claims", "empty"),
        ('[claims]\nstatus = ["x"]', "claims.status", "not an (entity, field) pair"),
        ('[claims]\nstatus = { entity = "x", feild = "y" }', "claims.status.feild", "Did you mean 'field'?"),
        ('[claims]\nstatus = { entity = "x", field = " " }', "claims.status.field", "blank"),
        ('[claims]\nstatus = ["x", 3]', "claims.status[1]", "blank or non-string field"),
        (
            '[agents.triage.claims]\nstatus = { entity = "", field = "s" }',
            "agents.triage.claims.status.entity",
            "blank",
        ),
        ("[agents.triage]", "agents.triage", "declares nothing"),
        ('[agents.triage]\nclaim = { s = ["x", "y"] }', "agents.triage.claim", "Did you mean 'claims'?"),
        ('[agents." ".claims]\ns = ["x", "y"]', 'agents." ".claims', "blank"),
        ("[toolsets.t]\ntools = []", "toolsets.t.tools", "owns nothing"),
        ('[toolsets.t]\ntools = ["a", ""]', "toolsets.t.tools[1]", "blank or non-string entry"),
        ('[toolsets.t]\ntools = "a"', "toolsets.t.tools", "must be a list of tool names"),
        ("[toolsets.t]\nsuspended = true", "toolsets.t.tools", "must be a list of tool names"),
        ('[toolsets.t]\ntools = ["a"]\nsuspended = "yes"', "toolsets.t.suspended", "not a boolean"),
        ('[toolsets.t]\ntools = ["a"]\nsuspend = true', "toolsets.t.suspend", "Did you mean 'suspended'?"),
        ('[tools.t]\narguments_fro = ["p"]', "tools.t.arguments_fro", "Did you mean 'arguments_from'?"),
        ("[tools.t]\nresult_column = {}", "tools.t.result_column", "Did you mean 'result_columns'?"),
        ("[tool.t]", "tool", "Did you mean 'tools'?"),
        ("[claim]", "claim", "Did you mean 'claims'?"),
        ('tools = "x"', "tools", "not a table"),
        ("[tools]\nt = 3", "tools.t", "not a table"),
        ('"$schema" = 3', '"$schema"', "not text"),
        (
            '[tools.host_paths]\narguments_from = ["list_host"]\n[tools.list_hosts]',
            "tools.host_paths.arguments_from[0]",
            "Did you mean 'list_hosts'?",
        ),
        ('[tools." "]', 'tools." "', "non-blank string"),
    ],
)
def test_each_refusal_names_the_file_the_key_path_and_the_fix(text: str, key: str, words: str) -> None:
    with pytest.raises(ContractsFileError) as caught:
        parse_contracts(text, source="agent.toml")
    assert caught.value.key == key
    assert str(caught.value).startswith(f"agent.toml: {key}: ")
    assert words in str(caught.value)


def test_an_undeclared_producer_is_named_with_how_to_declare_it() -> None:
    with pytest.raises(ContractsFileError) as caught:
        parse_contracts('[tools.host_paths]\narguments_from = ["list_hosts"]\n')
    message = str(caught.value)
    assert "'list_hosts'" in message and "[tools.list_hosts]" in message
    assert "Did you mean" not in message  # nothing declared is near it


def test_the_key_path_quotes_what_toml_must_quote() -> None:
    assert key_path(["tools", "a.b", "arguments_from", 0]) == 'tools."a.b".arguments_from[0]'
    assert key_path(["claims", 'say "hi"']) == 'claims."say \\"hi\\""'


# ── 4. files that are no contracts file ──────────────────────────────────


@pytest.mark.parametrize(
    ("name", "content", "words"),
    [
        ("c.toml", b"[tools.t\n", "is not valid TOML"),
        ("c.toml", b"\xff\xfe[tools.t]", "is not UTF-8"),
        ("pyproject.toml", b'[project]\nname = "x"\n', "has no [tool.context-integrity] table"),
        ("pyproject.toml", b"[tool.ruff]\nline-length = 1\n", "has no [tool.context-integrity] table"),
    ],
)
def test_a_file_that_is_no_contracts_file_is_refused_in_one_sentence(
    tmp_path: Path, name: str, content: bytes, words: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ContractsFileError) as caught:
        load_contracts(path)
    assert str(caught.value).startswith(f"{path}: ") and words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_missing_file_and_a_directory_are_refused(tmp_path: Path) -> None:
    for path in (tmp_path / "absent.toml", tmp_path):
        with pytest.raises(ContractsFileError, match="cannot be read"):
            load_contracts(path)


def test_a_file_past_the_bound_is_refused_without_being_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "huge.toml"
    with path.open("wb") as file:
        file.write(b"# " + b"x" * MAX_CONTRACTS_FILE_BYTES + b"\n")
    with pytest.raises(ContractsFileError, match="larger than"):
        load_contracts(path)


def test_a_fifo_is_read_as_the_bytes_it_gives(tmp_path: Path) -> None:
    import os
    import threading

    fifo = tmp_path / "contracts.toml"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=(ISSUE_SHAPE,))
    writer.start()
    try:
        assert load_contracts(fifo).tools == EXPECTED
    finally:
        writer.join(5)


# ── 5. which file applies ────────────────────────────────────────────────


def test_which_file_applies(tmp_path: Path) -> None:
    env = {CONTRACTS_ENV_VAR: "from-env.toml"}
    found = find_contracts("named.toml", environ=env, directory=tmp_path)
    assert found is not None and (found.path, found.chosen_by) == (Path("named.toml"), "given")
    found = find_contracts(None, environ=env, directory=tmp_path)
    assert found is not None and (found.path, found.chosen_by) == (
        Path("from-env.toml"),
        f"${CONTRACTS_ENV_VAR}",
    )
    assert find_contracts(None, environ={}, directory=tmp_path) is None
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "agent"\n')
    assert find_contracts(None, environ={}, directory=tmp_path) is None  # a pyproject without the table
    (tmp_path / "pyproject.toml").write_text(_pyproject(ISSUE_SHAPE))
    found = find_contracts(None, environ={CONTRACTS_ENV_VAR: " "}, directory=tmp_path)
    assert found is not None and found.path == tmp_path / "pyproject.toml"
    assert "pyproject.toml" in found.chosen_by
    # setup() passes no directory: a pyproject.toml is never read unless named
    assert find_contracts(None, environ={}) is None


# ── 6. the writer ────────────────────────────────────────────────────────


def test_the_writer_writes_the_issue_shape_back() -> None:
    text = dump_contracts(parse_contracts(ISSUE_SHAPE))
    assert text == ISSUE_SHAPE
    schema_line = dump_contracts(parse_contracts(ISSUE_SHAPE), schema="./contracts.schema.json")
    assert schema_line.startswith("#:schema ./contracts.schema.json\n\n")
    assert parse_contracts(schema_line) == parse_contracts(ISSUE_SHAPE)
    assert dump_contracts(Contracts()) == ""


def test_claims_of_a_model_class_have_no_file_form() -> None:
    class Answer(BaseModel):
        status: str

    contracts = Contracts(claims=(define_claims(Answer, {"status": ("fc1/3", "status")}),))
    with pytest.raises(ValueError, match="keyed by a model class"):
        dump_contracts(contracts)


def test_a_value_toml_cannot_hold_is_refused_by_the_writer() -> None:
    tool = define_contract("t", input_schema={"default": None})
    with pytest.raises(ValueError, match="NoneType"):
        dump_contracts(Contracts(tools=(tool,)))


_NAME_CHARS = st.characters(exclude_categories=["Cs"])
names = st.text(_NAME_CHARS, min_size=1, max_size=12).filter(lambda s: bool(s.strip()))
plain_names = st.text(string.ascii_lowercase + "_", min_size=1, max_size=8)
json_scalars = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(_NAME_CHARS, max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(_NAME_CHARS, max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)
input_schemas = st.dictionaries(
    st.text(_NAME_CHARS, max_size=6).filter(lambda k: k != "enum"), json_values, max_size=3
) | st.builds(lambda words: {"type": "string", "enum": words}, st.lists(names, min_size=1, max_size=3))
columns = st.dictionaries(
    names,
    st.sampled_from(["number", "string", "boolean", "date"])
    | st.builds(lambda t, n: {"type": t, "nullable": n}, st.sampled_from(["number", "date"]), st.booleans()),
    min_size=1,
    max_size=4,
)


@st.composite
def contracts_files(draw: st.DrawFn) -> Contracts:
    tool_names = draw(st.lists(names, min_size=0, max_size=5, unique=True))
    tools = []
    for name in tool_names:
        others = [n for n in tool_names if n != name]
        keywords: dict[str, object] = {}
        if draw(st.booleans()):
            keywords["result_columns"] = draw(columns)
        if draw(st.booleans()) and others:
            keywords["arguments_from"] = draw(st.lists(st.sampled_from(others), min_size=1, max_size=3))
        if draw(st.booleans()):
            keywords["input_schema"] = draw(input_schemas)
        keywords["once_per_run"] = draw(st.booleans())
        keywords["result_wrapped"] = draw(st.booleans())
        if draw(st.booleans()):
            keywords["result_kind"] = draw(names)
        if draw(st.booleans()):
            keywords["description"] = draw(st.text(_NAME_CHARS, max_size=20))
        if draw(st.booleans()):
            entity = draw(names)
            facts = draw(st.lists(names.filter(entity.__ne__), min_size=1, max_size=3))
            keywords["settles"] = {"entity": entity, "facts": facts}
        tools.append(define_contract(name, **keywords))  # type: ignore[arg-type]
    paths = st.lists(names.filter(lambda p: "." not in p), min_size=1, max_size=3).map(".".join)
    claim_maps = st.dictionaries(paths, st.tuples(names, names), min_size=1, max_size=3)
    claims = []
    if draw(st.booleans()):
        claims.append(define_answer_claims(draw(claim_maps)))
    for agent in draw(st.lists(names, max_size=2, unique=True)):
        claims.append(define_answer_claims(draw(claim_maps), agent=agent))
    toolsets = [
        define_toolset(name, draw(st.lists(names, min_size=1, max_size=3)), suspended=draw(st.booleans()))
        for name in draw(st.lists(names, max_size=2, unique=True))
    ]
    return Contracts(tools=tuple(tools), claims=tuple(claims), toolsets=tuple(toolsets))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(contracts_files())
def test_load_of_dump_is_what_was_dumped(contracts: Contracts) -> None:
    text = dump_contracts(contracts)
    loaded = parse_contracts(text)
    assert loaded == contracts
    assert [t.enum_values for t in loaded.tools] == [t.enum_values for t in contracts.tools]
    assert dump_contracts(loaded) == text


# ── 7. settles: facts from plain rows ────────────────────────────────────

SETTLES = SettledFields("port", ("status", "crc_errors"))


def _facts(value: object) -> list[tuple[str, str, object]]:
    rows = declared_fact_rows(read_result(value), value, SETTLES, tool_name="ports", call_id="c1", epoch=2)
    assert all((r.tool_name, r.call_id, r.epoch) == ("ports", "c1", 2) for r in rows)
    return [(r.entity, r.field, r.value) for r in rows]


def test_rows_settle_the_declared_fields_of_the_entity_they_name() -> None:
    rows = [
        {"port": "fc1/3", "status": "down", "crc_errors": 212, "speed": "16G"},
        {"port": 7, "status": None},  # a numeric id names the entity "7"; None says "unknown"
        {"port": "", "status": "up"},  # no entity: settles nothing
        {"status": "up"},
        {"port": True, "status": "up"},  # a boolean is no id
    ]
    assert _facts(rows) == [("fc1/3", "status", "down"), ("fc1/3", "crc_errors", 212), ("7", "status", None)]


def test_one_record_is_one_row_and_an_envelope_is_not_read_twice() -> None:
    assert _facts({"port": "fc1/3", "status": "down"}) == [("fc1/3", "status", "down")]
    assert _facts({"facts": [{"entity": "fc1/3", "status": "down"}]}) == []
    assert _facts("fc1/3 is down") == [] and _facts(None) == [] and _facts([1, 2]) == []


def test_dataclass_rows_read_column_by_column_settle_too() -> None:
    @dataclasses.dataclass
    class Port:
        port: str
        status: str

    assert _facts([Port("fc1/3", "down"), Port("fc1/4", "up")]) == [
        ("fc1/3", "status", "down"),
        ("fc1/4", "status", "up"),
    ]


def test_a_hostile_row_settles_what_was_read_before_it_failed() -> None:
    class Hostile(dict[str, object]):
        def get(self, key: str, default: object = None) -> object:
            raise RuntimeError("boom")

    rows = [{"port": "fc1/3", "status": "down"}, Hostile(port="x", status="y")]
    assert _facts(rows) == [("fc1/3", "status", "down")]
