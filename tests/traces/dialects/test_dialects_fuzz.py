"""Each dialect's ``read``, fuzzed: any attribute it reads, holding any hostile value, never raises.

The laws under test, for the pydantic-ai, OpenInference, OpenLLMetry and Agents SDK dialects:

- a span written in the dialect's documented shape, with one attribute (chosen by hypothesis among the
  ones the dialect reads) replaced by a hostile value a source can decode (garbage text, JSON of the
  wrong shape, JSON and Python literals nested past the parser, huge numbers, NaN, the hidden marker,
  200,000 characters), is read by the dialect itself without raising, into a reading or ``None``;
- the same span holding a value no source decodes, only a caller handing spans in (a mapping whose
  every read raises, a value that cannot be printed, an error that cannot be printed), is read
  through the detector, the boundary the Dialect contract names: it never raises, and a read that
  failed is said in one line naming the dialect and the span, the span read as no agent work;
- a content attribute holding ``__REDACTED__`` never reads as evidence: what it held is ``Missing``,
  and the reason says it was hidden.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.hostile import HostileRow, Unprintable
from tests.traces.recorded_agents import DIALS, contract_book

from context_integrity.traces import judge_runs, read_runs
from context_integrity.traces.detect import detect
from context_integrity.traces.dialects import openai_agents, openinference, openllmetry, pydantic_ai
from context_integrity.traces.readings import Missing, ModelCallReading, ToolReading
from context_integrity.traces.spans import Span

CALL = {"type": "tool_call", "id": "c1", "name": "list_hosts", "arguments": {"a": 1}}
MESSAGES = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
OUTPUT = json.dumps([{"role": "assistant", "parts": [CALL]}])

# name -> (dialect, span name, scope, attributes in the dialect's documented shape)
SHAPES: dict[str, tuple[Any, str, str | None, dict[str, object]]] = {
    "pydantic_ai-chat": (
        pydantic_ai.DIALECT,
        "chat scripted",
        pydantic_ai.SCOPE,
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": MESSAGES,
            "gen_ai.output.messages": OUTPUT,
            "gen_ai.tool.definitions": json.dumps([{"type": "function", "name": "list_hosts"}]),
        },
    ),
    "pydantic_ai-tool": (
        pydantic_ai.DIALECT,
        "running tool",
        pydantic_ai.SCOPE,
        {"gen_ai.tool.name": "list_hosts", "tool_arguments": "{}", "tool_response": "[1]"},
    ),
    "pydantic_ai-run": (
        pydantic_ai.DIALECT,
        "invoke_agent storage",
        pydantic_ai.SCOPE,
        {
            "gen_ai.operation.name": "invoke_agent",
            "final_result": '{"a": 1}',
            "pydantic_ai.all_messages": MESSAGES,
        },
    ),
    "openinference-llm": (
        openinference.DIALECT,
        "llm",
        None,
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "hi",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.tool_calls.0.tool_call.id": "c1",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "list_hosts",
            "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"a": 1}',
            "llm.tools.0.tool.json_schema": json.dumps(
                {"type": "function", "function": {"name": "list_hosts"}}
            ),
        },
    ),
    "openinference-tool": (
        openinference.DIALECT,
        "list_hosts",
        None,
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "list_hosts",
            "input.value": "{}",
            "output.value": "[1]",
        },
    ),
    "openllmetry-tool": (
        openllmetry.DIALECT,
        "list_hosts.tool",
        None,
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "list_hosts",
            "traceloop.entity.input": json.dumps({"input_str": "{'a': 1}"}),
            "traceloop.entity.output": json.dumps({"output": [1]}),
        },
    ),
    "openllmetry-legacy-chat": (
        openllmetry.DIALECT,
        "openai.chat",
        None,
        {
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "hi",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.tool_calls.0.name": "list_hosts",
            "gen_ai.completion.0.tool_calls.0.arguments": '{"a": 1}',
        },
    ),
    "openai_agents-logfire-chat": (
        openai_agents.DIALECT,
        "Chat completion with 'm'",
        openai_agents.LOGFIRE_SCOPE,
        {
            "logfire.msg_template": "Chat completion with {gen_ai.request.model!r}",
            "input": json.dumps([{"role": "user", "content": "hi"}]),
            "output": json.dumps(
                [{"role": "assistant", "tool_calls": [{"id": "c1", "function": {"name": "x"}}]}]
            ),
        },
    ),
    "openai_agents-logfire-responses": (
        openai_agents.DIALECT,
        "Responses API with 'm'",
        openai_agents.LOGFIRE_SCOPE,
        {
            "logfire.msg_template": "Responses API with {gen_ai.request.model!r}",
            "raw_input": json.dumps([{"role": "user", "content": "hi"}]),
            "response": json.dumps(
                {"output": [{"type": "function_call", "call_id": "c1", "name": "x", "arguments": "{}"}]}
            ),
        },
    ),
    "openai_agents-logfire-function": (
        openai_agents.DIALECT,
        "Function: x",
        openai_agents.LOGFIRE_SCOPE,
        {"logfire.msg_template": "Function: {name}", "name": "x", "input": "{}", "output": "[1]"},
    ),
}

HOSTILE: list[object] = [
    None,
    "",
    "not json {",
    "[" * 5000 + "]" * 5000,
    "{" + "'a': " * 3000 + "1" + "}" * 3000,
    '{"a": ' * 2000 + "1" + "}" * 2000,
    "null",
    "[1, 2",
    "…",
    json.dumps({"parts": 7}),
    json.dumps([7, "x", None, {"role": 3, "parts": [{"type": "tool_call", "arguments": "{"}]}]),
    json.dumps({"output": {"type": "tool", "data": 7}}),
    json.dumps({"input_str": 7}),
    json.dumps({"args": [1], "kwargs": 3}),
    10**40,
    -1.5,
    float("nan"),
    True,
    [None, 3, "x"],
    "__REDACTED__",
    "x" * 200_000,
]


class UnprintableError(Exception):
    """An error that cannot be printed either: its ``str`` raises."""

    def __str__(self) -> str:
        raise RuntimeError("no str")


class ExplodingWithUnprintableError(Mapping[str, Any]):
    """A mapping whose every read raises an error that cannot be printed."""

    def __getitem__(self, key: str) -> Any:
        raise UnprintableError

    def __iter__(self) -> Any:
        raise UnprintableError

    def __len__(self) -> int:
        raise UnprintableError


# Values only a caller handing spans in can put in an attribute: no source decodes them.
HANDED_IN: list[object] = [
    HostileRow(),
    Unprintable(),
    ExplodingWithUnprintableError(),
    [HostileRow()],
    [{"role": "user", "parts": [HostileRow()]}],
    {"output": HostileRow()},
    {"a": Unprintable()},
]


def span(name: str, scope: str | None, attributes: Mapping[str, object]) -> Span:
    return Span("0" * 32, "1" * 16, None, name, 1, 2, attributes=attributes, scope=scope)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_read_never_raises_whatever_an_attribute_holds(data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from(sorted(SHAPES)))
    dialect, name, scope, attributes = SHAPES[shape]
    key = data.draw(st.sampled_from(sorted(attributes)))
    value = data.draw(st.sampled_from(HOSTILE))
    hostile = {**attributes, key: value}
    the_span = span(name, scope, hostile)
    assert dialect.claims(span(name, scope, attributes))
    dialect.claims(the_span)
    dialect.read(the_span)  # never raises


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_detector_reads_any_value_handed_in_without_raising(data: st.DataObject) -> None:
    shape = data.draw(st.sampled_from(sorted(SHAPES)))
    dialect, name, scope, attributes = SHAPES[shape]
    key = data.draw(st.sampled_from(sorted(attributes)))
    value = data.draw(st.sampled_from(HOSTILE + HANDED_IN))
    said: list[str] = []
    claimed, reading = detect(span(name, scope, {**attributes, key: value}), said.append, (dialect,))
    assert claimed is dialect or said  # a claim that failed is said
    for line in said:
        assert "\n" not in line and dialect.key in line and "1" * 16 in line, line
    if said and claimed is dialect:
        assert reading is None and "read as no agent work" in said[0]


def test_the_detector_says_a_read_that_failed() -> None:
    dialect, name, scope, attributes = SHAPES["openai_agents-logfire-function"]
    said: list[str] = []
    for value in (HostileRow(), ExplodingWithUnprintableError()):
        said.clear()
        claimed, reading = detect(span(name, scope, {**attributes, "input": value}), said.append, (dialect,))
        assert claimed is dialect and reading is None
        (line,) = said
        assert line.startswith("the openai_agents dialect failed reading span 'Function: x'"), line


CONTENT_KEYS = {
    "pydantic_ai-tool": ("tool_response", "result"),
    "openinference-tool": ("output.value", "result"),
    "openllmetry-tool": ("traceloop.entity.output", "result"),
    "openai_agents-logfire-function": ("output", "result"),
    "openinference-llm": ("llm.output_messages.0.message.content", "response"),
    "pydantic_ai-chat": ("gen_ai.output.messages", "response"),
}


def test_a_hidden_value_is_never_read_as_evidence() -> None:
    for shape, (key, field) in CONTENT_KEYS.items():
        dialect, name, scope, attributes = SHAPES[shape]
        reading = dialect.read(span(name, scope, {**attributes, key: "__REDACTED__"}))
        if field == "result":
            assert isinstance(reading, ToolReading), shape
            assert isinstance(reading.result, Missing) and "hidden" in reading.result.why, shape
        else:
            assert isinstance(reading, ModelCallReading), shape
            assert reading.response is None, shape
            assert any("hidden" in m.why for m in reading.missing), (shape, reading.missing)


def test_a_run_holding_values_handed_in_is_judged_without_raising() -> None:
    """Past the detector, what a read let through (an unprintable result, a row whose reads raise)
    is judged as a tool's hostile return is in process: the judge never raises."""
    root = Span(
        "0" * 32,
        "2" * 16,
        None,
        "invoke_agent storage",
        0,
        3,
        scope=pydantic_ai.SCOPE,
        attributes={"gen_ai.operation.name": "invoke_agent", "final_result": "done"},
    )
    judged = 0
    for _dialect, name, scope, attributes in SHAPES.values():
        for key in attributes:
            for value in HANDED_IN:
                child = Span(
                    "0" * 32,
                    "1" * 16,
                    "2" * 16,
                    name,
                    1,
                    2,
                    attributes={**attributes, key: value},
                    scope=scope,
                )
                runs = read_runs([root, child])
                for run in judge_runs(runs, contract_book(), DIALS):
                    assert run.internal_errors == ()
                    judged += 1
    assert judged == sum(len(shape[3]) for shape in SHAPES.values()) * len(HANDED_IN)
