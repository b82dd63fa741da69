"""The Agents SDK dialect on spans written by hand from what Logfire and contrib export.

Each fixture follows ``logfire/_internal/integrations/openai_agents.py`` (``LogfireSpanWrapper``'s
``msg_template`` per span type; ``attributes_from_span_data``: a ``ResponseSpanData`` becomes
``raw_input``, the Responses input items, and ``response``, the Response with its ``id``,
``instructions``, ``tools`` and ``output`` items; a ``GenerationSpanData`` its ``input`` / ``output``
Chat Completions messages; a ``FunctionSpanData`` its ``name``, ``input`` and ``output``) and
contrib's ``opentelemetry-instrumentation-openai-agents-v2`` (``readacted`` in place of content when
the SDK's ``trace_include_sensitive_data`` is off). The laws under test:

- a Responses API span reads into the exact request (the input items: messages, function calls with
  their call ids, their outputs), instructions and tools offered, and the response's calls and text;
- a Responses API span whose input is one string is that user message;
- a Chat Completions span reads its messages, and says it records no tools offered;
- a function span reads its arguments (JSON text) and result (JSON or plain text), with no call id;
- contrib's ``readacted`` content is hidden, never evidence.
"""

from __future__ import annotations

from collections.abc import Mapping

from tests.traces.dialects.written import span, text

from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall, ToolDefinition
from context_integrity.traces.dialects import openai_agents
from context_integrity.traces.readings import AgentReading, Missing, ModelCallReading, ToolReading

LOGFIRE = openai_agents.LOGFIRE_SCOPE
SCHEMA = {
    "type": "object",
    "properties": {"host": {"type": "string"}},
    "required": ["host"],
    "additionalProperties": False,
}
RESPONSES = {
    "logfire.msg_template": "Responses API with {gen_ai.request.model!r}",
    "gen_ai.request.model": "gpt-scripted",
    "raw_input": text(
        [
            {"role": "user", "content": "Check esx-07's paths."},
            {
                "type": "function_call",
                "call_id": "call-1",
                "name": "list_hosts",
                "arguments": "{}",
                "id": "fc_1",
            },
            {"type": "function_call_output", "call_id": "call-1", "output": '[{"host": "esx-07"}]'},
        ]
    ),
    "response": text(
        {
            "id": "resp_2",
            "instructions": "Never guess identifiers.",
            "tools": [
                {
                    "type": "function",
                    "name": "host_paths",
                    "description": "Paths of a host.",
                    "parameters": SCHEMA,
                },
                {"type": "web_search_preview"},
            ],
            "output": [
                {
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Checking its paths.", "annotations": []}],
                },
                {
                    "type": "function_call",
                    "call_id": "call-2",
                    "name": "host_paths",
                    "arguments": '{"host": "esx-07"}',
                },
            ],
        }
    ),
}


def read(name: str, attributes: Mapping[str, object], scope: str = LOGFIRE) -> object:
    return openai_agents.DIALECT.read(span(name, attributes, scope=scope))


def test_a_responses_api_span_reads_the_request_and_the_response() -> None:
    assert read("Responses API with 'gpt-scripted'", RESPONSES) == ModelCallReading(
        RequestFrame(
            (
                Message("user", "Check esx-07's paths."),
                Message("assistant", "", tool_calls=(ToolCall("list_hosts", "call-1", {}),)),
                Message("tool", [{"host": "esx-07"}], tool_call_id="call-1"),
            ),
            "Never guess identifiers.",
            (ToolDefinition("host_paths", "Paths of a host.", SCHEMA),),  # hosted tools are no function
            "gpt-scripted",
        ),
        ModelResponse(
            (ToolCall("host_paths", "call-2", {"host": "esx-07"}),),
            "Checking its paths.",
            response_id="resp_2",
        ),
    )


def test_a_responses_api_span_whose_input_is_a_string_and_whose_body_lists_no_tools() -> None:
    body = {
        "id": "resp_1",
        "output": [
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello."}]}
        ],
    }
    reading = read(
        "Responses API",
        {"logfire.msg_template": "Responses API", "raw_input": "Hi there.", "response": text(body)},
    )
    assert reading == ModelCallReading(
        RequestFrame((Message("user", "Hi there."),)),
        ModelResponse((), "Hello.", response_id="resp_1"),
        (
            Missing(
                "the tools offered with the request",
                "the span has no response.tools (content capture is off, or this instrumentation does not record it)",
            ),
        ),
    )


def test_a_chat_completions_span_reads_its_messages_and_says_it_has_no_tools() -> None:
    reading = read(
        "Chat completion with 'gpt-scripted'",
        {
            "logfire.msg_template": "Chat completion with {gen_ai.request.model!r}",
            "gen_ai.request.model": "gpt-scripted",
            "input": text(
                [
                    {"role": "system", "content": "Never guess identifiers."},
                    {"role": "user", "content": [{"type": "text", "text": "Check esx-07's paths."}]},
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "call-1",
                                "type": "function",
                                "function": {"name": "list_hosts", "arguments": "{}"},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "call-1", "content": '[{"host": "esx-07"}]'},
                ]
            ),
            "output": text(
                [
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call-2",
                                "type": "function",
                                "function": {"name": "host_paths", "arguments": '{"host": "esx-07"}'},
                            }
                        ],
                    }
                ]
            ),
        },
    )
    assert reading == ModelCallReading(
        RequestFrame(
            (
                Message("user", "Check esx-07's paths."),
                Message("assistant", "", tool_calls=(ToolCall("list_hosts", "call-1", {}),)),
                Message("tool", '[{"host": "esx-07"}]', tool_call_id="call-1"),
            ),
            "Never guess identifiers.",
            (),
            "gpt-scripted",
        ),
        ModelResponse((ToolCall("host_paths", "call-2", {"host": "esx-07"}),)),
        (
            Missing(
                "the tools offered with the request",
                "Logfire's Chat Completions span records the messages, not the tools offered",
            ),
        ),
    )


def test_function_and_agent_spans() -> None:
    template = {"logfire.msg_template": "Function: {name}", "name": "host_paths"}
    assert read(
        "Function: host_paths", {**template, "input": '{"host": "esx-07"}', "output": "no paths"}
    ) == (ToolReading("host_paths", None, {"host": "esx-07"}, "no paths"))
    assert read("Function: host_paths", {**template, "input": '{"host": "esx-07"}', "output": text([1])}) == (
        ToolReading("host_paths", None, {"host": "esx-07"}, [1])
    )
    assert read("Function: host_paths", template) == ToolReading(
        "host_paths",
        None,
        Missing(
            "the tool's arguments",
            "the span has no input (content capture is off, or this instrumentation does not record it)",
        ),
        Missing(
            "the tool's result",
            "the span has no output (content capture is off, or this instrumentation does not record it)",
        ),
    )
    agent = read(
        "Agent run: 'storage-triage'",
        {"logfire.msg_template": "Agent run: {name!r}", "name": "storage-triage"},
    )
    assert agent == AgentReading("storage-triage")


def test_contribs_readacted_content_is_hidden() -> None:
    contrib = openai_agents.CONTRIB_SCOPE
    tool = read(
        "execute_tool host_paths",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "host_paths",
            "gen_ai.tool.call.arguments": "readacted",
            "gen_ai.tool.call.result": "readacted",
        },
        scope=contrib,
    )
    said = "is hidden (__REDACTED__): the instrumentation was told not to record it"
    assert tool == ToolReading(
        "host_paths",
        None,
        Missing("the tool's arguments", f"gen_ai.tool.call.arguments {said}"),
        Missing("the tool's result", f"gen_ai.tool.call.result {said}"),
    )
    chat = read(
        "chat gpt-scripted",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": text(
                [{"role": "user", "parts": [{"type": "text", "content": "readacted"}]}]
            ),
            "gen_ai.output.messages": text(
                [{"role": "assistant", "parts": [{"type": "text", "content": "readacted"}]}]
            ),
        },
        scope=contrib,
    )
    assert isinstance(chat, ModelCallReading)
    assert chat.request is None and chat.response is None
    assert (
        Missing("the request the model received", f"part of gen_ai.input.messages ('readacted') {said}")
        in chat.missing
    )
