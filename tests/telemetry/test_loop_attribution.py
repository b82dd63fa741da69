"""Which tool and which call a loop-protocol finding names, and which call id a tool span carries.

The laws under test:
(a) regression: an unsupported-argument event carries the id of the call that chose the value,
    even when the same response calls that tool more than once;
(b) regression: a request where several offered tools dangle files one event per tool, each named
    by its own consumer tool (event attribute and counter label);
(c) regression: a call id the application passes to ``run.tool_result`` settles the model's
    pending id for that tool, so a later report without an id gets the next call's id, not a
    stale one;
(d) the ids the model gave calls that never reached a tool span are kept in bounded memory.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.limits import MAX_PENDING_CALL_IDS
from context_integrity.loop import Message, RequestFrame, ToolCall, ToolDefinition
from context_integrity.telemetry.schema import names

CHAT = names.chat_span_name("model")


def _events(span: ReadableSpan) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]


def _declare_screens() -> list[ToolDefinition]:
    ci.declare_tool("whats_here")
    for consumer in ("screen_fire", "screen_peek"):
        ci.declare_tool(consumer, arguments_from=["whats_here"])
    return [ToolDefinition(n) for n in ("whats_here", "screen_fire", "screen_peek")]


def _served(tools: list[ToolDefinition]) -> RequestFrame:
    return RequestFrame.of(
        [Message("user", "fire"), Message("tool", '["screen2"]', tool_name="whats_here", tool_call_id="w1")],
        tools=tools,
    )


def test_regression_the_event_names_the_call_that_chose_the_value_not_its_sibling(
    telemetry: Telemetry,
) -> None:
    telemetry.configure()
    tools = _declare_screens()
    with ci.run("q") as agent_run:
        agent_run.tool_result("whats_here", "w1", ["screen2"])
        agent_run.request(_served(tools)).respond(
            calls=[
                ToolCall("screen_fire", "made-up", {"id": "screen-x"}),
                ToolCall("screen_fire", "grounded", {"id": "screen2"}),
            ]
        )
    (event,) = _events(telemetry.one(CHAT))
    assert event[names.FINDING_KIND] == "unsupported-argument"
    assert event[names.GEN_AI_TOOL_CALL_ID] == "made-up"
    assert "made-up" in event[names.witness_attribute(0, "provenance")]


def test_regression_each_dangling_tool_is_named_on_its_own_event_and_counter_point(
    telemetry: Telemetry,
) -> None:
    telemetry.configure()
    tools = _declare_screens()
    with ci.run("q") as agent_run:
        agent_run.tool_result("whats_here", "w1", ["screen2"])
        agent_run.request(_served(tools)).respond(text="thinking")
        agent_run.request(RequestFrame.of([Message("user", "fire")], tools=tools)).respond(text="done")
    evicted = telemetry.named(CHAT)[1]
    named = [(e[names.GEN_AI_TOOL_NAME], e[names.FINDING_SUBJECTS][0]) for e in _events(evicted)]
    assert named == [("screen_fire", "tool screen_fire"), ("screen_peek", "tool screen_peek")]
    points = {(p[names.METRIC_KIND], p[names.METRIC_TOOL]): v for p, v in telemetry.findings_metric()}
    assert points == {("dangling-reference", "screen_fire"): 1, ("dangling-reference", "screen_peek"): 1}


def test_regression_an_explicit_call_id_settles_the_pending_one(telemetry: Telemetry) -> None:
    telemetry.configure()
    ci.declare_tool("fw_lookup")
    frame = RequestFrame.of([Message("user", "look")], tools=[ToolDefinition("fw_lookup")])
    with ci.run("q") as agent_run:
        agent_run.request(frame).respond(calls=[ToolCall("fw_lookup", "L1", {})])
        agent_run.tool_result("fw_lookup", "L1", [1])
        agent_run.request(frame).respond(calls=[ToolCall("fw_lookup", "L2", {})])
        agent_run.tool_result("fw_lookup", None, [2])  # the framework lost the id; the run has it
    spans = telemetry.named(names.tool_span_name("fw_lookup"))
    assert [dict(s.attributes or {})[names.GEN_AI_TOOL_CALL_ID] for s in spans] == ["L1", "L2"]


def test_pending_call_ids_are_bounded_and_the_newest_are_kept(telemetry: Telemetry) -> None:
    telemetry.configure()
    with ci.run("q") as agent_run:
        for index in range(MAX_PENDING_CALL_IDS + 5):
            agent_run.expect_call("never_reported", f"id-{index}")
        assert agent_run.take_call_id("never_reported") == "id-5"
