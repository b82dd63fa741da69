"""The OpenInference dialect on spans written by hand from OpenInference's documented shapes.

Each fixture follows ``spec/semantic_conventions.md`` and ``spec/tool_calling.md`` (the flattened
``llm.input_messages.{i}.message.*``, ``message.contents.{j}.message_content.text``,
``message.tool_calls.{k}.tool_call.*``, ``llm.tools.{i}.tool.json_schema``; ``TOOL`` spans with
``input.value`` / ``output.value``) and ``openinference/instrumentation/config.py``
(``TraceConfig.mask``: ``hide_inputs`` / ``hide_outputs`` write ``__REDACTED__`` in ``input.value`` /
``output.value`` and drop the messages; ``hide_input_text`` / ``hide_output_text`` redact each
message's content; ``hide_llm_tools`` drops ``llm.tools``). The laws under test:

- the flattened messages read in index order, whatever indices are skipped, into the exact request,
  calls (ids, arguments; an absent ``function.arguments`` is ``{}``) and tools offered (the OpenAI
  tool shape, or a bare parameters schema beside ``tool.name``);
- Phoenix's API, which hands the messages as a nested list, reads the same as the flat keys;
- a tool span's arguments and result read from JSON text, from structure and from plain text;
- each ``hide_*`` option makes what it hid ``Missing`` and says it was hidden; never evidence.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.traces.dialects.written import span, text

from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from context_integrity.traces.detect import detect
from context_integrity.traces.dialects import openinference
from context_integrity.traces.readings import (
    AgentReading,
    AnswerReading,
    Missing,
    ModelCallReading,
    ToolReading,
)

SCHEMA = {"type": "object", "properties": {"host": {"type": "string"}}, "required": ["host"]}
ROWS = [{"path": "vmhba2:C0:T1:L0", "state": "active"}]
IN = "llm.input_messages"
OUT = "llm.output_messages"
# A request whose indices skip (0, 2, 5), as instrumentors that number across messages write it.
FLAT: dict[str, Any] = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "gpt-scripted",
    f"{IN}.0.message.role": "system",
    f"{IN}.0.message.content": "Never guess identifiers.",
    f"{IN}.2.message.role": "user",
    f"{IN}.2.message.contents.0.message_content.type": "text",
    f"{IN}.2.message.contents.0.message_content.text": "Check esx-07's paths.",
    f"{IN}.2.message.contents.3.message_content.text": "Quickly.",
    f"{IN}.5.message.role": "assistant",
    f"{IN}.5.message.tool_calls.0.tool_call.id": "call-1",
    f"{IN}.5.message.tool_calls.0.tool_call.function.name": "list_hosts",  # no arguments: {}
    f"{IN}.7.message.role": "tool",
    f"{IN}.7.message.tool_call_id": "call-1",
    f"{IN}.7.message.name": "list_hosts",
    f"{IN}.7.message.content": '[{"host": "esx-07"}]',
    f"{OUT}.0.message.role": "assistant",
    f"{OUT}.0.message.content": "Checking its paths.",
    f"{OUT}.0.message.tool_calls.0.tool_call.id": "call-2",
    f"{OUT}.0.message.tool_calls.0.tool_call.function.name": "host_paths",
    f"{OUT}.0.message.tool_calls.0.tool_call.function.arguments": '{"host": "esx-07"}',
    "llm.tools.0.tool.json_schema": text(
        {
            "type": "function",
            "function": {"name": "host_paths", "description": "Paths of a host.", "parameters": SCHEMA},
        }
    ),
    # A bare parameters schema beside tool.name (as some instrumentors write it).
    "llm.tools.3.tool.name": "list_hosts",
    "llm.tools.3.tool.json_schema": text({"type": "object", "properties": {}}),
}
REQUEST = RequestFrame(
    (
        Message("user", "Check esx-07's paths.\nQuickly."),
        Message("assistant", "", tool_calls=(ToolCall("list_hosts", "call-1", {}),)),
        Message("tool", '[{"host": "esx-07"}]', tool_name="list_hosts", tool_call_id="call-1"),
    ),
    "Never guess identifiers.",
    (
        ToolDefinition("host_paths", "Paths of a host.", SCHEMA),
        ToolDefinition("list_hosts", None, {"type": "object", "properties": {}}),
    ),
    "gpt-scripted",
)
RESPONSE = ModelResponse((ToolCall("host_paths", "call-2", {"host": "esx-07"}),), "Checking its paths.")


def llm(attributes: dict[str, Any]) -> ModelCallReading:
    reading = openinference.DIALECT.read(span("ChatCompletion", attributes))
    assert isinstance(reading, ModelCallReading)
    return reading


def test_flattened_messages_read_in_index_order_whatever_indices_skip() -> None:
    assert llm(FLAT) == ModelCallReading(REQUEST, RESPONSE)


def test_phoenix_nested_messages_read_as_the_flat_keys() -> None:
    # Phoenix's span API hands llm.input_messages as a list of nested objects.
    nested = {key: value for key, value in FLAT.items() if not key.startswith((f"{IN}.", f"{OUT}."))} | {
        IN: [
            {"message": {"role": "system", "content": "Never guess identifiers."}},
            {
                "message": {
                    "role": "user",
                    "contents": [{"message_content": {"text": "Check esx-07's paths.\nQuickly."}}],
                }
            },
            {
                "message": {
                    "role": "assistant",
                    "tool_calls": [{"tool_call": {"id": "call-1", "function": {"name": "list_hosts"}}}],
                }
            },
            {
                "message": {
                    "role": "tool",
                    "tool_call_id": "call-1",
                    "name": "list_hosts",
                    "content": '[{"host": "esx-07"}]',
                }
            },
        ],
        OUT: [
            {
                "message": {
                    "role": "assistant",
                    "content": "Checking its paths.",
                    "tool_calls": [
                        {
                            "tool_call": {
                                "id": "call-2",
                                "function": {"name": "host_paths", "arguments": '{"host": "esx-07"}'},
                            }
                        }
                    ],
                }
            }
        ],
    }
    assert llm(nested) == ModelCallReading(REQUEST, RESPONSE)


@pytest.mark.parametrize(
    ("given", "arguments"),
    [
        ('{"host": "esx-07"}', {"host": "esx-07"}),  # application/json text
        ({"host": "esx-07"}, {"host": "esx-07"}),  # structure, from a backend that decodes it
        ('{"args": [], "kwargs": {"host": "esx-07"}}', {"host": "esx-07"}),  # smolagents' wrapped call
        ("{'host': 'esx-07'}", {"host": "esx-07"}),  # LangChain's str() of the arguments
    ],
    ids=["json-text", "structure", "wrapped", "python-literal"],
)
def test_a_tool_spans_arguments_and_result(given: object, arguments: dict[str, Any]) -> None:
    reading = openinference.DIALECT.read(
        span(
            "host_paths",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "host_paths",
                "tool_call.id": "call-2",
                "input.value": given,
                "output.value": text(ROWS),
                "output.mime_type": "application/json",
            },
        )
    )
    assert reading == ToolReading("host_paths", "call-2", arguments, ROWS)


def test_a_tool_spans_plain_text_input_and_result() -> None:
    reading = openinference.DIALECT.read(
        span(
            "host_paths",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "host_paths",
                "input.value": "esx-07",
                "input.mime_type": "text/plain",
                "output.value": "no paths",
                "output.mime_type": "text/plain",
            },
        )
    )
    assert reading == ToolReading(
        "host_paths",
        None,
        Missing(
            "the tool's arguments",
            "input.value holds the tool's input as text, not its arguments by name "
            "(LangChain's tracer writes the input string a single-argument tool was given)",
        ),
        "no paths",
    )


def hidden(what: str, where: str) -> Missing:
    return Missing(what, f"{where} is hidden (__REDACTED__): the instrumentation was told not to record it")


def without(*prefixes: str) -> dict[str, Any]:
    return {key: value for key, value in FLAT.items() if not key.startswith(prefixes)}


def test_hide_inputs_and_hide_outputs() -> None:
    # TraceConfig(hide_inputs=True): input.value redacted, llm.input_messages and llm.tools dropped.
    reading = llm({**without(f"{IN}.", "llm.tools."), "input.value": "__REDACTED__"})
    assert reading == ModelCallReading(
        None, RESPONSE, (hidden("the request the model received", "input.value"),)
    )
    # TraceConfig(hide_outputs=True): output.value redacted, llm.output_messages dropped.
    reading = llm({**without(f"{OUT}."), "output.value": "__REDACTED__"})
    assert reading == ModelCallReading(REQUEST, None, (hidden("the model's response", "output.value"),))
    tool = openinference.DIALECT.read(
        span(
            "host_paths",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "host_paths",
                "input.value": "__REDACTED__",
                "output.value": "__REDACTED__",
            },
        )
    )
    assert tool == ToolReading(
        "host_paths",
        None,
        hidden("the tool's arguments", "input.value"),
        hidden("the tool's result", "output.value"),
    )
    run = openinference.DIALECT.read(
        span("storage-triage", {"openinference.span.kind": "AGENT", "output.value": "__REDACTED__"})
    )
    assert run == AgentReading(
        "storage-triage", None, None, (hidden("the run's final answer", "output.value"),)
    )


def test_hide_input_text_and_hide_output_text() -> None:
    # TraceConfig(hide_input_text=True): each input message's content (or contents' text) redacted.
    redacted_in = {
        **FLAT,
        f"{IN}.0.message.content": "__REDACTED__",
        f"{IN}.2.message.contents.0.message_content.text": "__REDACTED__",
        f"{IN}.2.message.contents.3.message_content.text": "__REDACTED__",
        f"{IN}.7.message.content": "__REDACTED__",
    }
    assert llm(redacted_in) == ModelCallReading(
        None, RESPONSE, (hidden("the request the model received", f"part of {IN}"),)
    )
    # TraceConfig(hide_output_text=True): the calls are kept, the words are not: the response is
    # not judged on half of itself.
    assert llm({**FLAT, f"{OUT}.0.message.content": "__REDACTED__"}) == ModelCallReading(
        REQUEST, None, (hidden("the model's response", f"part of {OUT}"),)
    )


def test_hide_input_messages_and_hide_llm_tools() -> None:
    # TraceConfig(hide_input_messages=True): the messages are dropped, input.value stays.
    reading = llm({**without(f"{IN}."), "input.value": '{"messages": []}'})
    assert reading == ModelCallReading(
        None,
        RESPONSE,
        (
            Missing(
                "the request the model received",
                f"the span has no {IN} (content capture is off, or this instrumentation does not record it)",
            ),
        ),
    )
    # TraceConfig(hide_llm_tools=True): llm.tools dropped; the request is read, its tools are not.
    reading = llm(without("llm.tools."))
    assert reading.request == RequestFrame(REQUEST.messages, REQUEST.system, (), REQUEST.model)
    assert reading.missing == (
        Missing(
            "the tools offered with the request",
            "the span has no llm.tools (content capture is off, or this instrumentation does not record it)",
        ),
    )


def test_an_agent_spans_output_is_its_answer() -> None:
    # smolagents' AGENT span: output.value is the final answer, text or a typed answer's JSON.
    said = "Port fc1/3 is down."
    run = openinference.DIALECT.read(
        span("triage.run", {"openinference.span.kind": "AGENT", "output.value": said})
    )
    assert run == AgentReading("triage.run", AnswerReading(said, None, 2))
    typed = '{"port": "fc1/3", "status": "down"}'
    run = openinference.DIALECT.read(
        span("triage.run", {"openinference.span.kind": "AGENT", "output.value": typed})
    )
    assert run == AgentReading("triage.run", AnswerReading(typed, {"port": "fc1/3", "status": "down"}, 2))
    # A root CHAIN's output that is no LangGraph state is a chain's output, not an answer.
    chain = openinference.DIALECT.read(
        span("RunnableSequence", {"openinference.span.kind": "CHAIN", "output.value": said})
    )
    assert chain == AgentReading("RunnableSequence")


def test_a_genai_span_phoenix_gave_a_span_kind_is_read_in_the_genai_conventions() -> None:
    # A chat span in the GenAI conventions as Phoenix's span API answers it: Phoenix infers its kind
    # (lifted back into openinference.span.kind by the source) and adds a partial translation into
    # OpenInference's attributes, with no output messages. The conventions' original is read.
    attributes = {
        "openinference.span.kind": "LLM",
        "llm.model_name": "test-model",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": "hi",
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": text([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]),
        "gen_ai.output.messages": text(
            [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}]
        ),
        "gen_ai.tool.definitions": text([]),
    }
    dialect, reading = detect(span("chat test-model", attributes), print)
    assert dialect is not None and dialect.key == "genai"
    assert reading == ModelCallReading(RequestFrame((Message("user", "hi"),)), ModelResponse((), "hello"))
    # A tool span so stored: its arguments became tool.parameters, its call id tool.id.
    tool = {
        "openinference.span.kind": "TOOL",
        "tool.name": "host_paths",
        "tool.id": "call-2",
        "tool.parameters": '{"host": "esx-07"}',
        "output.value": "[]",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "host_paths",
        "gen_ai.tool.call.id": "call-2",
        "gen_ai.tool.call.arguments": '{"host": "esx-07"}',
        "gen_ai.tool.call.result": "[]",
    }
    dialect, reading = detect(span("execute_tool host_paths", tool), print)
    assert dialect is not None and dialect.key == "genai"
    assert reading == ToolReading("host_paths", "call-2", {"host": "esx-07"}, [])
    # OpenInference's own spans that also name a GenAI operation stay OpenInference's.
    dialect, _ = detect(span("ChatCompletion", {**FLAT, "gen_ai.operation.name": "chat"}), print)
    assert dialect is not None and dialect.key == "openinference"
