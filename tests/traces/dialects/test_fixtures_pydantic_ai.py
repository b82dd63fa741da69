"""The pydantic-ai dialect on spans written by hand from pydantic-ai's documented formats.

Each fixture follows ``pydantic_ai/models/instrumented.py`` (``InstrumentationSettings``' ``version``:
2 to 6), ``pydantic_ai/_instrumentation.py`` (``InstrumentationConfig.for_version``: format 2's
``agent run`` / ``running tool`` spans with ``agent_name``, ``tool_arguments``, ``tool_response``),
``pydantic_ai/_otel_messages.py`` and ``messages.py`` (``otel_message_parts``: a part without its
content when ``include_content=False``). The laws under test:

- format 2's run and tool spans read as format 3's: the same run, call id, arguments and result;
- format 3's thinking parts and format 4's media parts are no text of the model's or the user's;
- format 5's tool results in a ``user`` message and format 6's in a ``tool`` message read the same;
- content written as JSON text and as structure (an OTLP kvlist) read the same;
- ``include_content=False``: every message, argument, result and answer is ``Missing`` with its
  reason, never an empty message; format 1's spans say they are not read.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.traces.dialects.written import span, text

from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from context_integrity.traces.dialects import pydantic_ai
from context_integrity.traces.readings import (
    AgentReading,
    AnswerReading,
    Missing,
    ModelCallReading,
    ToolReading,
)

SCOPE = pydantic_ai.SCOPE
ROWS = [{"host": "esx-07", "wwpn": "c0:50:76:0a:11:7e:00:10"}]
SCHEMA = {"type": "object", "properties": {"host_group": {"type": "string"}}, "required": ["host_group"]}
DEFINITIONS = [{"type": "function", "name": "host_group_mappings", "parameters": SCHEMA}]
QUESTION = {"role": "user", "parts": [{"type": "text", "content": "Which LUNs does vdi-a see?"}]}
CALLED = {
    "role": "assistant",
    "parts": [
        {"type": "text", "content": "Looking up the hosts."},
        {"type": "tool_call", "id": "call-1", "name": "list_hosts", "arguments": {}},
    ],
}
RETURNED = {"type": "tool_call_response", "id": "call-1", "name": "list_hosts", "result": ROWS}
CALL_2 = {
    "type": "tool_call",
    "id": "call-2",
    "name": "host_group_mappings",
    "arguments": {"host_group": "vdi-a"},
}


def chat(attributes: dict[str, Any]) -> ModelCallReading:
    reading = pydantic_ai.DIALECT.read(
        span("chat scripted", {"gen_ai.operation.name": "chat", **attributes}, scope=SCOPE)
    )
    assert isinstance(reading, ModelCallReading)
    return reading


def test_format_2_run_and_tool_spans_read_as_the_later_formats() -> None:
    # Format 2 (InstrumentationConfig.for_version(2)): 'agent run' with agent_name, 'running tool'.
    run = pydantic_ai.DIALECT.read(
        span(
            "agent run",
            {
                "agent_name": "storage-triage",
                "final_result": '{"host": "esx-07", "lun": 0}',
                "pydantic_ai.all_messages": text([QUESTION]),
            },
            scope=SCOPE,
        )
    )
    assert run == AgentReading(
        "storage-triage",
        AnswerReading('{"host": "esx-07", "lun": 0}', {"host": "esx-07", "lun": 0}, 2),
        (Message("user", "Which LUNs does vdi-a see?"),),
    )
    legacy = pydantic_ai.DIALECT.read(
        span(
            "running tool",
            {
                "gen_ai.tool.name": "host_group_mappings",
                "gen_ai.tool.call.id": "call-2",
                "tool_arguments": '{"host_group": "vdi-a"}',
                "tool_response": text(ROWS),
            },
            scope=SCOPE,
        )
    )
    later = pydantic_ai.DIALECT.read(
        span(
            "execute_tool host_group_mappings",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "host_group_mappings",
                "gen_ai.tool.call.id": "call-2",
                "gen_ai.tool.call.arguments": '{"host_group": "vdi-a"}',
                "gen_ai.tool.call.result": text(ROWS),
            },
            scope=SCOPE,
        )
    )
    assert legacy == later == ToolReading("host_group_mappings", "call-2", {"host_group": "vdi-a"}, ROWS)


def test_a_plain_text_final_result_is_an_answer_with_no_typed_output() -> None:
    run = pydantic_ai.DIALECT.read(
        span(
            "invoke_agent storage-triage",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "storage-triage",
                "final_result": "LUN 0.",
            },
            scope=SCOPE,
        )
    )
    assert run == AgentReading("storage-triage", AnswerReading("LUN 0.", None, 2))


def test_format_3_thinking_and_format_4_media_are_nobodys_words() -> None:
    reading = chat(
        {
            "gen_ai.system_instructions": text([{"type": "text", "content": "Never guess identifiers."}]),
            "gen_ai.tool.definitions": text(DEFINITIONS),
            # Format 4: URL media as type 'uri', inline as type 'blob', beside the text.
            "gen_ai.input.messages": text(
                [
                    {
                        "role": "user",
                        "parts": [
                            {"type": "text", "content": "What does this screenshot show?"},
                            {
                                "type": "uri",
                                "uri": "https://example.test/a.png",
                                "mime_type": "image/png",
                                "modality": "image",
                            },
                            {
                                "type": "blob",
                                "content": "aGk=",
                                "mime_type": "image/png",
                                "modality": "image",
                            },
                        ],
                    }
                ]
            ),
            # Format 3: thinking parts beside the text.
            "gen_ai.output.messages": text(
                [
                    {
                        "role": "assistant",
                        "parts": [
                            {"type": "thinking", "content": "vdi-a, so esx-07"},
                            CALLED["parts"][0],
                            CALL_2,
                        ],
                    }
                ]
            ),
        }
    )
    assert reading == ModelCallReading(
        RequestFrame(
            (Message("user", "What does this screenshot show?"),),
            "Never guess identifiers.",
            (ToolDefinition("host_group_mappings", None, SCHEMA),),
        ),
        ModelResponse(
            (ToolCall("host_group_mappings", "call-2", {"host_group": "vdi-a"}),), "Looking up the hosts."
        ),
    )


@pytest.mark.parametrize("role", ["user", "tool"], ids=["format-5", "format-6"])
@pytest.mark.parametrize("as_text", [True, False], ids=["json-text", "structured"])
def test_tool_results_are_read_by_part_type_whatever_role_holds_them(role: str, as_text: bool) -> None:
    messages = [QUESTION, CALLED, {"role": role, "parts": [RETURNED]}]
    reading = chat(
        {
            "gen_ai.input.messages": text(messages) if as_text else messages,
            "gen_ai.output.messages": text([{"role": "assistant", "parts": [CALL_2]}])
            if as_text
            else [{"role": "assistant", "parts": [CALL_2]}],
            "gen_ai.tool.definitions": text(DEFINITIONS) if as_text else DEFINITIONS,
        }
    )
    assert reading.request == RequestFrame(
        (
            Message("user", "Which LUNs does vdi-a see?"),
            Message("assistant", "Looking up the hosts.", tool_calls=(ToolCall("list_hosts", "call-1", {}),)),
            Message("tool", ROWS, tool_name="list_hosts", tool_call_id="call-1"),
        ),
        None,
        (ToolDefinition("host_group_mappings", None, SCHEMA),),
    )
    assert reading.response == ModelResponse(
        (ToolCall("host_group_mappings", "call-2", {"host_group": "vdi-a"}),)
    )
    assert reading.missing == ()


# What pydantic-ai 2.x wrote with InstrumentationSettings(include_content=False), recorded from it.
STRIPPED_INPUT = (
    '[{"role":"user","parts":[{"type":"text"}]},{"role":"assistant","parts":[{"type":"text"},'
    '{"type":"tool_call","id":"c1","name":"list_hosts"}]},{"role":"user","parts":'
    '[{"type":"tool_call_response","id":"c1","name":"list_hosts"}]}]'
)
STRIPPED_OUTPUT = '[{"role":"assistant","parts":[{"type":"tool_call","id":"c2","name":"host_paths"}]}]'
WITHHELD = (
    "holds its messages without their content: pydantic-ai was told not to record it "
    "(InstrumentationSettings(include_content=False))"
)


def test_include_content_false_is_missing_never_empty_messages() -> None:
    reading = chat(
        {
            "gen_ai.input.messages": STRIPPED_INPUT,
            "gen_ai.output.messages": STRIPPED_OUTPUT,
            "gen_ai.tool.definitions": text(DEFINITIONS),
        }
    )
    assert reading == ModelCallReading(
        None,
        None,
        (
            Missing("the request the model received", f"gen_ai.input.messages {WITHHELD}"),
            Missing("the model's response", f"gen_ai.output.messages {WITHHELD}"),
        ),
    )
    tool = pydantic_ai.DIALECT.read(
        span(
            "execute_tool list_hosts",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "list_hosts",
                "gen_ai.tool.call.id": "c1",
            },
            scope=SCOPE,
        )
    )
    unless = "pydantic-ai records it unless InstrumentationSettings(include_content=False)"
    assert tool == ToolReading(
        "list_hosts",
        "c1",
        Missing("the tool's arguments", f"the span has no gen_ai.tool.call.arguments: {unless}"),
        Missing("the tool's result", f"the span has no gen_ai.tool.call.result: {unless}"),
    )
    run = pydantic_ai.DIALECT.read(
        span(
            "invoke_agent storage-triage",
            {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.agent.name": "storage-triage",
                "pydantic_ai.all_messages": STRIPPED_INPUT,
            },
            scope=SCOPE,
        )
    )
    assert run == AgentReading(
        "storage-triage",
        None,
        None,  # the history holds no content: none is read
        (Missing("the run's final answer", f"the span has no final_result: {unless}"),),
    )


def test_format_1_spans_say_they_are_not_read() -> None:
    reading = chat({"events": text([{"event.name": "gen_ai.user.message", "content": "hi"}])})
    said = "the span is in pydantic-ai's data format 1 (messages as events), which is not read"
    assert reading.request is None and reading.response is None
    assert [m.what for m in reading.missing] == ["the request the model received", "the model's response"]
    assert all(m.why.startswith(said) for m in reading.missing)
