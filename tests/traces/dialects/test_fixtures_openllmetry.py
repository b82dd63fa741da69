"""The OpenLLMetry dialect on spans written by hand from OpenLLMetry's documented shapes.

Each fixture follows OpenLLMetry's sources: the legacy flattened content its instrumentors wrote
before the GenAI conventions' messages (``opentelemetry-instrumentation-openai``'s
``shared/chat_wrappers.py``: ``gen_ai.prompt.{i}.role`` / ``.content`` / ``.tool_call_id`` /
``.tool_calls.{j}.{id,name,arguments}``, ``gen_ai.completion.{i}.*`` alike, and
``shared/__init__.py``'s ``llm.request.functions.{i}.{name,description,parameters}``), and the
Traceloop SDK's entity spans (``traceloop.span.kind``, ``traceloop.entity.input`` / ``.output``,
with the ``{"args", "kwargs"}`` wrapper of ``@tool``-decorated functions and LangChain's
``{"input_str"}`` / ``{"output"}``). The laws under test:

- legacy prompts and completions read in index order, whatever indices skip, into the exact
  request (the tool messages with their call ids), tools offered and response calls;
- an entity span's arguments and result are unwrapped from each wrapper, JSON text or structure;
  positional arguments have no names and are ``Missing``; a ``ToolMessage`` output carries its call id;
- with content capture off (``TRACELOOP_TRACE_CONTENT=false``) every piece is ``Missing``, said why.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.traces.dialects.written import span, text

from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from context_integrity.traces.dialects import openllmetry
from context_integrity.traces.readings import (
    AgentReading,
    AnswerReading,
    Missing,
    ModelCallReading,
    ToolReading,
)

SCHEMA = {"type": "object", "properties": {"switch": {"type": "string"}}, "required": ["switch"]}
ROWS = [{"port": "fc1/3", "crc_errors": 212}]
LEGACY: dict[str, Any] = {
    "gen_ai.request.model": "gpt-scripted",
    "gen_ai.response.id": "chatcmpl-1",
    "gen_ai.prompt.0.role": "system",
    "gen_ai.prompt.0.content": "Never guess identifiers.",
    "gen_ai.prompt.1.role": "user",
    "gen_ai.prompt.1.content": "Is the fabric healthy?",
    "gen_ai.prompt.3.role": "assistant",
    "gen_ai.prompt.3.tool_calls.0.id": "call-1",
    "gen_ai.prompt.3.tool_calls.0.name": "list_switches",
    "gen_ai.prompt.4.role": "tool",
    "gen_ai.prompt.4.tool_call_id": "call-1",
    "gen_ai.prompt.4.content": '["edge-sw-02"]',
    "gen_ai.completion.0.role": "assistant",
    "gen_ai.completion.0.finish_reason": "tool_calls",
    "gen_ai.completion.0.tool_calls.0.id": "call-2",
    "gen_ai.completion.0.tool_calls.0.name": "port_counters",
    "gen_ai.completion.0.tool_calls.0.arguments": '{"switch": "edge-sw-02"}',
    "llm.request.functions.0.name": "port_counters",
    "llm.request.functions.0.description": "Counters of a switch's ports.",
    "llm.request.functions.0.parameters": text(SCHEMA),
    "llm.request.functions.2.name": "list_switches",
}


def test_legacy_prompts_and_completions_read_in_index_order() -> None:
    reading = openllmetry.DIALECT.read(span("openai.chat", LEGACY))
    assert reading == ModelCallReading(
        RequestFrame(
            (
                Message("user", "Is the fabric healthy?"),
                Message("assistant", "", tool_calls=(ToolCall("list_switches", "call-1", {}),)),
                Message("tool", '["edge-sw-02"]', tool_call_id="call-1"),
            ),
            "Never guess identifiers.",
            (
                ToolDefinition("port_counters", "Counters of a switch's ports.", SCHEMA),
                ToolDefinition("list_switches", None, None),
            ),
            "gpt-scripted",
        ),
        ModelResponse(
            (ToolCall("port_counters", "call-2", {"switch": "edge-sw-02"}),), None, response_id="chatcmpl-1"
        ),
    )


def test_legacy_content_off_is_missing_with_its_reason() -> None:
    content = ("gen_ai.prompt.", "gen_ai.completion.", "llm.request.functions.")
    kept = {key: value for key, value in LEGACY.items() if not key.startswith(content)}
    off = "content capture is off (TRACELOOP_TRACE_CONTENT=false), or this instrumentor does not record it"
    reading = openllmetry.DIALECT.read(span("openai.chat", {**kept, "traceloop.span.kind": "llm"}))
    assert reading == ModelCallReading(
        None,
        None,
        (
            Missing(
                "the request the model received",
                f"the span has no gen_ai.input.messages nor gen_ai.prompt.*: {off}",
            ),
            Missing(
                "the model's response",
                f"the span has no gen_ai.output.messages nor gen_ai.completion.*: {off}",
            ),
        ),
    )
    tool = openllmetry.DIALECT.read(
        span("port_counters.tool", {"traceloop.span.kind": "tool", "traceloop.entity.name": "port_counters"})
    )
    assert tool == ToolReading(
        "port_counters",
        None,
        Missing("the tool's arguments", f"the span has no traceloop.entity.input: {off}"),
        Missing("the tool's result", f"the span has no traceloop.entity.output: {off}"),
    )


@pytest.mark.parametrize(
    ("given", "arguments"),
    [
        (text({"args": [], "kwargs": {"switch": "edge-sw-02"}}), {"switch": "edge-sw-02"}),
        ({"args": [], "kwargs": {"switch": "edge-sw-02"}}, {"switch": "edge-sw-02"}),
        (text({"input_str": "{'switch': 'edge-sw-02'}", "tags": []}), {"switch": "edge-sw-02"}),
        (text({"input_str": '{"switch": "edge-sw-02"}'}), {"switch": "edge-sw-02"}),
        (text({"switch": "edge-sw-02"}), {"switch": "edge-sw-02"}),
        (
            text({"args": ["edge-sw-02"], "kwargs": {}}),
            Missing(
                "the tool's arguments",
                "traceloop.entity.input holds positional arguments, which have no names",
            ),
        ),
        (
            text({"input_str": "edge-sw-02"}),
            Missing(
                "the tool's arguments",
                "traceloop.entity.input holds the tool's input_str ('edge-sw-02'), which names no arguments",
            ),
        ),
    ],
    ids=[
        "wrapped-text",
        "wrapped-structure",
        "input_str-literal",
        "input_str-json",
        "bare",
        "positional",
        "one-string",
    ],
)
def test_an_entity_inputs_arguments(given: object, arguments: object) -> None:
    reading = openllmetry.DIALECT.read(
        span(
            "port_counters.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "port_counters",
                "traceloop.entity.input": given,
                "traceloop.entity.output": text({"output": ROWS, "kwargs": {}}),
            },
        )
    )
    assert reading == ToolReading("port_counters", None, arguments, ROWS)  # type: ignore[arg-type]


def test_a_tool_message_output_carries_its_call_id() -> None:
    # LangChain's ToolMessage, serialized in its constructor form (dumpd), under {"output": ...}.
    message = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "ToolMessage"],
        "kwargs": {"content": text(ROWS), "tool_call_id": "call-2", "name": "port_counters", "type": "tool"},
    }
    reading = openllmetry.DIALECT.read(
        span(
            "port_counters.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "port_counters",
                "traceloop.entity.input": text({"input_str": "{'switch': 'edge-sw-02'}"}),
                "traceloop.entity.output": text({"output": message, "kwargs": {"name": "port_counters"}}),
            },
        )
    )
    assert reading == ToolReading("port_counters", "call-2", {"switch": "edge-sw-02"}, ROWS)


def test_a_workflow_spans_text_output_is_the_answer() -> None:
    reading = openllmetry.DIALECT.read(
        span(
            "triage.workflow",
            {
                "traceloop.span.kind": "workflow",
                "traceloop.workflow.name": "triage",
                "traceloop.entity.name": "triage",
                "traceloop.entity.output": text("Port fc1/3 shows CRC errors."),
            },
        )
    )
    assert reading == AgentReading("triage", AnswerReading("Port fc1/3 shows CRC errors.", None, 2))
