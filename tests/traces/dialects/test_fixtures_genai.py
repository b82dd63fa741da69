"""The GenAI-conventions dialect on messages recorded without their content.

The shape follows pydantic-ai's ``_otel_messages.text_part`` and ``messages._tool_call_otel_part``
with ``include_content=False`` (and any instrumentation that records the conventions' message
structure with content capture off): a ``text`` part with no ``content``, a ``tool_call`` with no
``arguments``, a ``tool_call_response`` with no ``result``. The laws under test:

- a part with no content key is no empty text: the messages holding it are ``Missing``, with the
  reason, never messages of empty strings a check would judge;
- a ``tool_call`` without ``arguments`` in a span whose content was stripped is no call with ``{}``;
  with content recorded, a call that gives no arguments (the conventions make them optional) is a
  call with no arguments;
- the run's answer, written as stripped output messages on the agent span, is ``Missing`` too.
"""

from __future__ import annotations

import json

from context_integrity.traces.dialects import genai
from context_integrity.traces.readings import AgentReading, Missing, ModelCallReading
from context_integrity.traces.spans import Span

STRIPPED_REQUEST = [
    {"role": "user", "parts": [{"type": "text"}]},
    {
        "role": "assistant",
        "parts": [{"type": "text"}, {"type": "tool_call", "id": "c1", "name": "list_hosts"}],
    },
    {"role": "user", "parts": [{"type": "tool_call_response", "id": "c1", "name": "list_hosts"}]},
]
STRIPPED_CALL = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c2", "name": "host_paths"}]}]
WITHHELD = "without their content: the instrumentation recorded their structure only (content capture is off)"


def chat(input_messages: object, output_messages: object) -> Span:
    return Span(
        "0" * 32,
        "1" * 16,
        None,
        "chat scripted",
        1,
        2,
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(input_messages),
            "gen_ai.output.messages": json.dumps(output_messages),
            "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "host_paths"}]),
        },
    )


def test_messages_stripped_of_their_content_are_missing_not_empty() -> None:
    reading = genai.DIALECT.read(chat(STRIPPED_REQUEST, STRIPPED_CALL))
    assert isinstance(reading, ModelCallReading)
    assert reading.request is None
    assert reading.response is None  # its call's arguments were stripped with the rest
    assert reading.missing == (
        Missing("the request the model received", f"gen_ai.input.messages holds its messages {WITHHELD}"),
        Missing("the model's response", f"gen_ai.output.messages holds its messages {WITHHELD}"),
    )


def test_a_stripped_text_answer_is_missing() -> None:
    request = [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    reading = genai.DIALECT.read(chat(request, [{"role": "assistant", "parts": [{"type": "text"}]}]))
    assert isinstance(reading, ModelCallReading)
    assert reading.request is not None and reading.request.messages[0].content == "hi"
    assert reading.response is None
    assert reading.missing == (
        Missing("the model's response", f"gen_ai.output.messages holds its messages {WITHHELD}"),
    )


def test_a_call_without_arguments_in_recorded_content_is_a_call_with_none() -> None:
    request = [{"role": "user", "parts": [{"type": "text", "content": "which hosts?"}]}]
    reading = genai.DIALECT.read(
        chat(
            request,
            [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "list_hosts"}]}],
        )
    )
    assert isinstance(reading, ModelCallReading) and reading.response is not None
    (call,) = reading.response.calls
    assert (call.name, call.call_id, dict(call.arguments)) == ("list_hosts", "c1", {})
    assert reading.missing == ()


def test_an_agent_span_with_a_stripped_answer_says_so() -> None:
    span = Span(
        "0" * 32,
        "2" * 16,
        None,
        "invoke_agent triage",
        1,
        2,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "triage",
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [{"type": "text"}]}]),
        },
    )
    reading = genai.DIALECT.read(span)
    assert isinstance(reading, AgentReading)
    assert reading.answer is None
    assert reading.missing == (
        Missing("the run's final answer", f"gen_ai.output.messages holds its messages {WITHHELD}"),
    )
