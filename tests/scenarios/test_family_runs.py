"""The rest of the family, live: scripted multi-step runs through the real OTLP SDK pipeline.

The laws under test (one scripted run each, the issue's item 8):
(a) an answer claiming a port is healthy while the fact a tool settled says it is down: one
    unsupported-claim finding on the run span, the answer returned unchanged;
(b) a budget answered as 2 when the run recorded 30: the finding quotes the earlier value as history;
(c) a two-turn conversation whose second answer restates only values from the first turn: one
    advisory prior-turn-evidence finding, with the "called no tool" clause;
(d) a client whose wire body carries a tool the agent never offered (scripted httpx transport, no
    network): one invariant-violation @ wire finding on the chat span naming it;
(e) a suspended toolset whose tool is still offered: one invariant-violation @ compose finding
    naming the group and the tool; resumed, the next request is not-applicable;
(f) a provisioning tool called twice with the same arguments: one duplicate-execution finding on
    the second response's chat span, carrying the repeated call's id;
(g) every run's ledger has one row per registered check; unarmed rows are not-applicable.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.telemetry.schema import names

MODEL = "scripted-1"
CHAT = names.chat_span_name(MODEL)


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def events(span: ReadableSpan) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]


def summary_rows(telemetry: Telemetry) -> dict[tuple[str, str], dict[str, int]]:
    """The one summary span's ledger, keyed (check, seam); zero counts may be left off the span."""
    (summary,) = telemetry.summaries()
    summary_attrs = attrs(summary)
    fields = ("checked", "findings", "not_applicable", "unreachable")
    return {
        (c.check, c.seam): {
            f: int(summary_attrs.get(names.row_attribute(c.check, c.seam, f), 0)) for f in fields
        }
        for c in REGISTERED_CHECKS
    }


def run_span(telemetry: Telemetry) -> ReadableSpan:
    (span,) = [s for s in telemetry.finished() if attrs(s).get(names.GEN_AI_OPERATION_NAME) == "invoke_agent"]
    return span


def drive(
    run: ci.Run,
    history: list[Message],
    plan: list[ModelResponse],
    tools: Mapping[str, Callable[..., Any]],
    offered: Sequence[ToolDefinition],
    *,
    send: Callable[[RequestFrame], None] | None = None,
) -> ModelResponse:
    """One turn of a hand-written loop: request, (optional wire send), respond, run tools, until text."""
    while True:
        frame = RequestFrame.of(list(history), system="Answer from the tools.", tools=offered, model=MODEL)
        with run.request(frame) as model_call:
            if send is not None:
                send(frame)
            response = plan.pop(0)
            model_call.respond(response)
        history.append(Message("assistant", response.text or "", tool_calls=response.calls))
        if not response.calls:
            return response
        for planned in response.calls:
            result = tools[planned.name](**planned.arguments)
            history.append(Message("tool", result, tool_name=planned.name, tool_call_id=planned.call_id))


# ── (a) and (b): unsupported-claim ───────────────────────────────────────


class PortAnswer(BaseModel):
    port: str
    status: str


class BudgetAnswer(BaseModel):
    project: str
    budget_start: int | None = None


def test_an_answer_claiming_a_port_healthy_while_the_settled_fact_says_down(telemetry: Telemetry) -> None:
    telemetry.configure()

    @ci.tool
    def port_status(port: str) -> dict[str, object]:
        return ci.semantic(facts=[{"entity": port, "status": "down", "crc_errors": 212}])

    ci.declare_claims(PortAnswer, {"status": ("fc1/3", "status")})
    written = PortAnswer(port="fc1/3", status="healthy")
    with ci.run("Is fc1/3 healthy?") as run:
        history = [Message("user", "Is fc1/3 healthy?")]
        drive(
            run,
            history,
            [
                ModelResponse(calls=(ToolCall("port_status", "c1", {"port": "fc1/3"}),)),
                ModelResponse(text="ok"),
            ],
            {"port_status": port_status},
            [ToolDefinition("port_status")],
        )
        found = run.answer(output=written)
    assert written == PortAnswer(port="fc1/3", status="healthy")  # detection only
    (finding,) = found
    assert (finding.kind, finding.seam, finding.predicate, finding.advisory) == (
        "unsupported-claim",
        "claim",
        "status",
        False,
    )
    (event,) = events(run_span(telemetry))
    assert event[names.FINDING_KIND] == "unsupported-claim"
    assert event[names.witness_attribute(0, "value")] == "down"
    assert event[names.witness_attribute(1, "value")] == "healthy"
    assert ci.CEILINGS["unsupported-claim@claim"] in event[names.FINDING_MESSAGE]
    assert summary_rows(telemetry)[("unsupported-claim", "claim")] == {
        "checked": 1,
        "findings": 1,
        "not_applicable": 0,
        "unreachable": 0,
    }


def test_a_budget_answered_as_2_when_the_run_recorded_30_quotes_the_history(telemetry: Telemetry) -> None:
    telemetry.configure()
    readings = iter([25, 30])

    @ci.tool
    def project_ledger(project: str) -> dict[str, object]:
        return ci.semantic(
            series=[{"entity": project, "metric": "budget_start", "value": next(readings), "t": "2026-11-30"}]
        )

    ci.declare_claims(BudgetAnswer, {"budget_start": ("apollo", "budget_start")})
    with ci.run("What did apollo start with?") as run:
        history = [Message("user", "What did apollo start with?")]
        drive(
            run,
            history,
            [
                ModelResponse(calls=(ToolCall("project_ledger", "c1", {"project": "apollo"}),)),
                ModelResponse(calls=(ToolCall("project_ledger", "c2", {"project": "apollo"}),)),
                ModelResponse(text='{"project": "apollo", "budget_start": 2}'),
            ],
            {"project_ledger": project_ledger},
            [ToolDefinition("project_ledger")],
        )
        (finding,) = run.answer('{"project": "apollo", "budget_start": 2}')
    settled, claimed, history_witness = finding.witnesses
    assert (settled.value, settled.stratum) == (30, "asserted")
    assert (claimed.value, claimed.provenance) == (2, "answer field 'budget_start'")
    assert (history_witness.value, history_witness.stratum, history_witness.epoch) == (25, "quoted", None)
    assert "2026-11-30" in settled.provenance


# ── (c) prior-turn evidence ──────────────────────────────────────────────


def test_a_second_answer_restating_only_first_turn_values_is_one_advisory(telemetry: Telemetry) -> None:
    telemetry.configure(notice_prior_turn_evidence=True)

    @ci.tool
    def owner_of(wwpn: str) -> list[dict[str, str]]:
        return [{"host": "esx-0417", "wwpn": wwpn, "job": "bkp-4417-ganymede-tier2"}]

    with ci.run("Which host owns it?") as run:
        history = [Message("user", "Which host owns c0:50:76:0a:11:7e:00:10?")]
        drive(
            run,
            history,
            [
                ModelResponse(calls=(ToolCall("owner_of", "c1", {"wwpn": "c0:50:76:0a:11:7e:00:10"}),)),
                ModelResponse(text="esx-0417 owns it."),
            ],
            {"owner_of": owner_of},
            [ToolDefinition("owner_of")],
        )
        assert run.answer("esx-0417 owns it.") == []  # turn one: the value is this turn's
        history.append(Message("user", "And its backup job?"))
        drive(run, history, [ModelResponse(text="Job bkp-4417-ganymede-tier2 on esx-0417.")], {}, [])
        (finding,) = run.answer("Job bkp-4417-ganymede-tier2 on esx-0417.")
    assert (finding.kind, finding.advisory, finding.predicate) == ("prior-turn-evidence", True, "grounding")
    assert "This turn called no tool" in finding.message
    assert ci.CEILINGS["prior-turn-evidence@claim"] in finding.message
    row = summary_rows(telemetry)[("prior-turn-evidence", "claim")]
    assert row == {"checked": 2, "findings": 1, "not_applicable": 0, "unreachable": 0}


# ── (d) invariant-violation @ wire ───────────────────────────────────────


def _chat_completion(request: httpx.Request) -> httpx.Response:
    return httpx.Response(
        200,
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": MODEL,
            "choices": [
                {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "done"}}
            ],
        },
    )


@pytest.fixture
def openai_client() -> Iterator[Any]:
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(
        api_key="sk-test",
        base_url="http://model.test/v1",
        http_client=httpx.Client(transport=httpx.MockTransport(_chat_completion)),
    )
    reader = ci.install_wire_reader(client)
    yield client
    reader.uninstall()


def test_a_wire_body_carrying_a_tool_the_agent_never_offered(
    telemetry: Telemetry, openai_client: Any
) -> None:
    telemetry.configure()
    composed = [ToolDefinition("list_hosts")]

    def send(frame: RequestFrame) -> None:
        # The "SDK helper" that injects a tool between the composed request and the wire.
        tools = [{"type": "function", "function": {"name": t.name, "parameters": {}}} for t in frame.tools]
        tools.append({"type": "function", "function": {"name": "delete_host", "parameters": {}}})
        openai_client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "hi"}], tools=tools
        )

    with ci.run("hi") as run:
        drive(run, [Message("user", "hi")], [ModelResponse(text="done")], {}, composed, send=send)
    (chat,) = telemetry.named(CHAT)
    (event,) = events(chat)
    assert (event[names.FINDING_KIND], event[names.FINDING_SEAM]) == ("invariant-violation", "wire")
    assert "delete_host" in event[names.FINDING_MESSAGE] and "list_hosts" not in event[names.FINDING_MESSAGE]
    assert summary_rows(telemetry)[("invariant-violation", "wire")] == {
        "checked": 1,
        "findings": 1,
        "not_applicable": 0,
        "unreachable": 0,
    }


def test_with_a_reader_installed_a_call_whose_body_it_never_saw_is_unreachable(
    telemetry: Telemetry, openai_client: Any
) -> None:
    telemetry.configure()
    with ci.run("hi") as run:
        drive(run, [Message("user", "hi")], [ModelResponse(text="done")], {}, [ToolDefinition("list_hosts")])
    assert summary_rows(telemetry)[("invariant-violation", "wire")]["unreachable"] == 1


# ── (e) invariant-violation @ compose ────────────────────────────────────


def test_a_suspended_toolset_whose_tool_is_still_offered(telemetry: Telemetry) -> None:
    telemetry.configure()
    offered = [ToolDefinition("list_hosts"), ToolDefinition("open_ticket")]
    with ci.run("triage") as run:
        run.suspend("ticketing", ["open_ticket", "close_ticket"])
        drive(run, [Message("user", "triage")], [ModelResponse(text="done")], {}, offered)
        run.resume("ticketing")
        drive(run, [Message("user", "again")], [ModelResponse(text="done")], {}, offered)
    first, second = telemetry.named(CHAT)
    (event,) = events(first)
    assert (event[names.FINDING_KIND], event[names.FINDING_SEAM]) == ("invariant-violation", "compose")
    assert "'ticketing'" in event[names.FINDING_MESSAGE] and "'open_ticket'" in event[names.FINDING_MESSAGE]
    assert "close_ticket" not in event[names.FINDING_MESSAGE]  # suspended but not offered: no defect
    assert event[names.witness_attribute(0, "value")] == "suspended"
    assert event[names.witness_attribute(1, "value")] == "available"
    assert events(second) == []
    # unarmed at the run's start (noted once), then one real comparison, then nothing suspended
    assert summary_rows(telemetry)[("invariant-violation", "compose")] == {
        "checked": 1,
        "findings": 1,
        "not_applicable": 2,
        "unreachable": 0,
    }


# ── (f) duplicate-execution @ choice ─────────────────────────────────────


def test_a_provisioning_tool_called_twice_with_the_same_arguments(telemetry: Telemetry) -> None:
    telemetry.configure()
    provisioned: list[str] = []

    @ci.tool(once_per_run=True)
    def provision_disk(name: str, size_gb: int) -> str:
        provisioned.append(name)
        return f"disk {name} provisioned"

    same = {"name": "vdi-a-gold-disk2", "size_gb": 100}
    with ci.run("add a disk") as run:
        drive(
            run,
            [Message("user", "add a disk")],
            [
                ModelResponse(calls=(ToolCall("provision_disk", "p1", dict(same)),)),
                ModelResponse(
                    calls=(ToolCall("provision_disk", "p2", {"size_gb": 100.0, "name": same["name"]}),)
                ),
                ModelResponse(text="done"),
            ],
            {"provision_disk": provision_disk},
            [ToolDefinition("provision_disk")],
        )
    assert provisioned == [same["name"]] * 2  # detection only: the call still ran
    chats = telemetry.named(CHAT)
    assert [len(events(c)) for c in chats] == [0, 1, 0]
    (event,) = events(chats[1])
    assert event[names.FINDING_KIND] == "duplicate-execution"
    assert event[names.GEN_AI_TOOL_CALL_ID] == "p2"
    assert event[names.GEN_AI_TOOL_NAME] == "provision_disk"
    assert summary_rows(telemetry)[("duplicate-execution", "choice")] == {
        "checked": 2,
        "findings": 1,
        "not_applicable": 1,
        "unreachable": 0,
    }


# ── (g) the ledger ───────────────────────────────────────────────────────


def test_a_run_that_arms_nothing_notes_every_family_row_not_applicable_once(telemetry: Telemetry) -> None:
    telemetry.configure()
    with ci.run("hi") as run:
        drive(run, [Message("user", "hi")], [ModelResponse(text="done")], {}, [])
        run.answer("done")
    rows = summary_rows(telemetry)
    for key in (
        ("invariant-violation", "wire"),
        ("invariant-violation", "compose"),
        ("unsupported-claim", "claim"),
        ("prior-turn-evidence", "claim"),
        ("duplicate-execution", "choice"),
    ):
        assert rows[key] == {"checked": 0, "findings": 0, "not_applicable": 1, "unreachable": 0}, key
