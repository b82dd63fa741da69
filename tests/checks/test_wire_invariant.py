"""invariant-violation @ wire: the tool names that crossed against the tools composed.

The laws under test:
(a) set semantics: order and duplicates ignored; agreement passes;
(b) added / dropped / both -> one finding per direction naming every tool, two witnesses per tool;
(c) no reading -> unreachable; an empty reading is a stated zero that compares;
(d) the body reader: OpenAI chat (tools[].function.name, legacy functions), OpenAI responses, Anthropic
    messages; absent tools = stated zero; non-string names dropped; other paths, non-JSON, non-list
    tools -> unreadable;
(e) the installer: httpx sync and async clients and the OpenAI SDK client; a thing with no httpx client
    is refused at setup; a hook outside any model call does nothing; uninstall disarms;
(f) a drifting client is ONE finding across a run; the canary catches one synthetic finding.
"""

from __future__ import annotations

import json

import httpx
import pytest
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.checks.wire_invariant import (
    WIRE_INVARIANT_CEILING,
    wire_invariant_canary,
    wire_violations_of,
)
from context_integrity.findings import CHECKED_FAIL, CHECKED_PASS, UNREACHABLE
from context_integrity.integrations.wire import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    read_wire_body,
)
from context_integrity.judge import REGISTRY, ContractBook, Dials, RunJudge
from context_integrity.ledger import CheckId
from context_integrity.loop import Message, RequestFrame, ToolDefinition
from context_integrity.telemetry.setup import CONTRACTS

ROW = CheckId("invariant-violation", "wire")


def test_functional_set_semantics_agree() -> None:
    encounter = wire_violations_of(composed=["a", "b", "a"], wire=["b", "a", "b"])
    assert (encounter.findings, encounter.disposition) == ([], CHECKED_PASS)


def test_functional_one_finding_per_direction_naming_every_tool() -> None:
    encounter = wire_violations_of(composed=["a", "b", "c"], wire=["a", "x", "y"], epoch=2)
    assert encounter.disposition == CHECKED_FAIL
    added, dropped = encounter.findings
    assert [s.id for s in added.subjects] == ["x", "y"] and "crossed the wire" in added.message
    assert [s.id for s in dropped.subjects] == ["b", "c"] and "never crossed" in dropped.message
    assert [w.value for w in added.witnesses] == ["absent", "present", "absent", "present"]
    assert [w.value for w in dropped.witnesses] == ["present", "absent", "present", "absent"]
    assert WIRE_INVARIANT_CEILING in added.message


def test_contract_no_reading_is_unreachable_and_empty_is_a_stated_zero() -> None:
    assert wire_violations_of(composed=["a"], wire=None).disposition == UNREACHABLE
    assert wire_violations_of(composed=[], wire=[]).disposition == CHECKED_PASS
    assert wire_violations_of(composed=["a"], wire=[]).disposition == CHECKED_FAIL


def _body(document: object) -> bytes:
    return json.dumps(document).encode()


def test_unit_the_body_reader() -> None:
    chat = {"tools": [{"type": "function", "function": {"name": "a"}}, {"function": {"name": 7}}]}
    assert read_wire_body("/v1/chat/completions", _body(chat)) == (frozenset({"a"}), OPENAI_CHAT)
    legacy = {"functions": [{"name": "f"}]}
    assert read_wire_body("/v1/chat/completions", _body(legacy)) == (frozenset({"f"}), OPENAI_CHAT)
    responses = {"tools": [{"type": "function", "name": "r"}, {"type": "web_search"}]}
    assert read_wire_body("/v1/responses", _body(responses)) == (frozenset({"r"}), OPENAI_RESPONSES)
    assert read_wire_body("/v1/messages", _body({"tools": [{"name": "m"}]})) == (
        frozenset({"m"}),
        ANTHROPIC_MESSAGES,
    )
    assert read_wire_body("/v1/messages", _body({"model": "x"})) == (frozenset(), ANTHROPIC_MESSAGES)
    assert read_wire_body("/v1/embeddings", _body({"tools": []}))[0] is None
    assert read_wire_body("/v1/messages", b"not json")[0] is None
    assert read_wire_body("/v1/messages", _body({"tools": {"name": "m"}}))[0] is None
    assert read_wire_body("/v1/messages", _body([1, 2]))[0] is None


def _ok(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={})


def _send(client: httpx.Client, tools: list[str]) -> None:
    client.post("http://model.test/v1/messages", json={"model": "m", "tools": [{"name": t} for t in tools]})


def test_functional_a_drifting_client_is_one_finding_across_the_run(telemetry: Telemetry) -> None:
    telemetry.configure()
    client = httpx.Client(transport=httpx.MockTransport(_ok))
    reader = ci.install_wire_reader(client, client)  # installing twice adds one hook
    try:
        assert len(client.event_hooks["request"]) == 1
        _send(client, ["leak"])  # outside any model call: nothing to compare, nothing filed
        frame = RequestFrame.of([Message("user", "hi")], tools=[ToolDefinition("list_hosts")])
        with ci.run("hi") as run:
            for _ in range(3):
                with run.request(frame) as call:
                    _send(client, ["list_hosts", "leak"])
                    call.respond(text="ok")
        assert [f.kind for f in run.findings] == ["invariant-violation"]
        row = run.ledger()[REGISTRY.rows().index(ROW)]
        assert (row.checked, row.findings, row.unreachable) == (3, 3, 0)
    finally:
        reader.uninstall()
    assert client.event_hooks["request"] == [] and not CONTRACTS.any_wire_readers()


async def test_functional_an_async_client_is_read_too(telemetry: Telemetry) -> None:
    telemetry.configure()

    async def ok(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={})

    client = httpx.AsyncClient(transport=httpx.MockTransport(ok))
    reader = ci.install_wire_reader(client)
    try:
        frame = RequestFrame.of([Message("user", "hi")], tools=[ToolDefinition("a")])
        with ci.run("hi") as run, run.request(frame) as call:
            await client.post("http://model.test/v1/messages", json={"tools": [{"name": "a"}]})
            call.respond(text="ok")
        row = run.ledger()[REGISTRY.rows().index(ROW)]
        assert (row.checked, row.findings, row.unreachable) == (1, 0, 0)
    finally:
        reader.uninstall()
        await client.aclose()


def test_negative_a_client_without_httpx_is_refused() -> None:
    with pytest.raises(ci.SetupError, match="cannot find an httpx client"):
        ci.install_wire_reader(object())
    with pytest.raises(ci.SetupError, match="at least one"):
        ci.install_wire_reader()


def test_contract_without_a_reader_the_row_is_unarmed() -> None:
    judge = RunJudge(ContractBook(), Dials())
    judge.begin()
    judge.wire(None, None)
    assert judge.ledger is not None
    row = judge.ledger.row(ROW)
    assert (row.not_applicable, row.unreachable) == (1, 0)


def test_contract_the_canary_is_caught_and_synthetic() -> None:
    (finding,) = wire_invariant_canary().findings
    assert finding.kind == "invariant-violation" and finding.synthetic
