"""Adoption: a host's own invoke_agent / chat / execute_tool span is used, never doubled.

The laws under test, each with real SDK spans (the host's opened by its own tracer, on our
provider or on a separate one, as Logfire or an OpenInference instrumentor would):
(a) a host span is recognised by ``gen_ai.operation.name`` and by OpenInference's span kind;
(b) an adopted span gets our findings but stays the host's: we never end it or mark it;
(c) a run, adopted or ours, has exactly one disposition summary, a direct child of its run span;
(d) a span our own tracer opened is never taken for a host's (a run nested in a run keeps its own).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Span, StatusCode, Tracer
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.loop import Message, RequestFrame, ToolCall, ToolDefinition
from context_integrity.telemetry.schema import names

LUN_ROWS = [{"logical_unit_number": ""}, {"logical_unit_number": 3}]
GEN_AI_AGENT = {names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT}
OPENINFERENCE_AGENT = {names.OPENINFERENCE_SPAN_KIND: names.OPENINFERENCE_KIND_AGENT}


class Elsewhere:
    """A second tracer provider, the host's own (Logfire's, an OpenInference instrumentor's)."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.tracer = self.provider.get_tracer("host")

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())


@pytest.fixture
def elsewhere() -> Iterator[Elsewhere]:
    host = Elsewhere()
    yield host
    host.provider.shutdown()


def _host_tracer(telemetry: Telemetry) -> Tracer:
    return telemetry.provider.get_tracer("host-framework")


def _lun_tool() -> Any:
    @ci.tool(result_columns={"logical_unit_number": "number"}, name="lun_mappings")
    def lun_mappings() -> Any:
        return LUN_ROWS

    return lun_mappings


def _events(span: ReadableSpan, name: str = names.FINDING_EVENT) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == name]


def _span_id(span: Span | ReadableSpan) -> int:
    context = span.get_span_context()
    assert context is not None
    return context.span_id


def _trace_id(span: Span | ReadableSpan) -> int:
    context = span.get_span_context()
    assert context is not None
    return context.trace_id


def _summary_under(telemetry: Telemetry, run_span: Span | ReadableSpan) -> ReadableSpan:
    (summary,) = telemetry.summaries()
    assert summary.parent is not None and summary.parent.span_id == _span_id(run_span)
    assert summary.context is not None and summary.context.trace_id == _trace_id(run_span)
    return summary


def test_our_names_are_openinferences_own_strings() -> None:
    try:
        from openinference.semconv.trace import OpenInferenceSpanKindValues, SpanAttributes
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("openinference-semantic-conventions is not installed")
    assert names.OPENINFERENCE_SPAN_KIND == SpanAttributes.OPENINFERENCE_SPAN_KIND
    assert OpenInferenceSpanKindValues.AGENT.value == names.OPENINFERENCE_KIND_AGENT
    assert OpenInferenceSpanKindValues.LLM.value == names.OPENINFERENCE_KIND_LLM
    assert OpenInferenceSpanKindValues.TOOL.value == names.OPENINFERENCE_KIND_TOOL
    assert names.OPENINFERENCE_TOOL_NAME == SpanAttributes.TOOL_NAME
    assert names.OPENINFERENCE_TOOL_ID == SpanAttributes.TOOL_ID


class TestRunAdoption:
    def test_a_run_inside_the_hosts_invoke_agent_span_adopts_it_and_summarises_under_it(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _lun_tool()
        with _host_tracer(telemetry).start_as_current_span(
            "invoke_agent host", attributes=GEN_AI_AGENT
        ) as host:
            with ci.run("q") as agent_run:
                tool()
            assert agent_run.adopted and agent_run.span is host
            assert host.is_recording(), "the host's run span is the host's to end"
            assert len(telemetry.summaries()) == 1, "the summary is written when our run ends"
        # one invoke_agent span in the trace: the host's
        (run_span,) = [s for s in telemetry.finished() if s.name.startswith(names.OPERATION_INVOKE_AGENT)]
        assert run_span.instrumentation_scope is not None
        assert run_span.instrumentation_scope.name == "host-framework"
        summary = _summary_under(telemetry, run_span)
        assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "ok"
        tool_span = telemetry.one(names.tool_span_name("lun_mappings"))
        assert tool_span.parent is not None and tool_span.parent.span_id == _span_id(run_span)

    def test_an_openinference_agent_span_of_another_provider_is_adopted(
        self, telemetry: Telemetry, elsewhere: Elsewhere
    ) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _lun_tool()
        with (
            elsewhere.tracer.start_as_current_span("Agent workflow", attributes=OPENINFERENCE_AGENT) as host,
            ci.run("q") as agent_run,
        ):
            tool()
        assert agent_run.span is host
        assert [s.name for s in elsewhere.finished()] == ["Agent workflow"]
        assert not [s for s in telemetry.finished() if s.name.startswith(names.OPERATION_INVOKE_AGENT)]
        _summary_under(telemetry, host)
        tool_span = telemetry.one(names.tool_span_name("lun_mappings"))
        assert tool_span.parent is not None and tool_span.parent.span_id == _span_id(host)

    def test_a_host_span_handed_in_is_adopted_and_made_current_for_the_run(
        self, telemetry: Telemetry, elsewhere: Elsewhere
    ) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _lun_tool()
        host = elsewhere.tracer.start_span("whatever the host calls its run")  # neither current nor named
        try:
            with ci.run("q", host_span=host) as agent_run:
                tool()
            assert agent_run.adopted
        finally:
            host.end()
        _summary_under(telemetry, host)
        tool_span = telemetry.one(names.tool_span_name("lun_mappings"))
        assert tool_span.parent is not None and tool_span.parent.span_id == _span_id(host)

    def test_a_run_that_raises_in_an_adopted_span_leaves_the_error_to_the_host(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure()
        tracer = _host_tracer(telemetry)
        with (
            pytest.raises(RuntimeError),
            tracer.start_as_current_span(
                "invoke_agent host",
                attributes=GEN_AI_AGENT,
                record_exception=False,
                set_status_on_exception=False,
            ),
            ci.run("q"),
        ):
            raise RuntimeError("model down")
        run_span = telemetry.one("invoke_agent host")
        assert run_span.status.status_code is StatusCode.UNSET
        assert not [e for e in run_span.events if e.name == "exception"]
        summary = _summary_under(telemetry, run_span)
        assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "error"

    def test_an_adopted_span_of_our_own_provider_still_gets_exactly_one_summary(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure()
        with (
            _host_tracer(telemetry).start_as_current_span("invoke_agent host", attributes=GEN_AI_AGENT),
            ci.run(),
        ):
            pass
        assert len(telemetry.summaries()) == 1  # none more when the host's span ended on our provider

    def test_a_run_nested_in_our_own_run_keeps_its_own_span_and_summary(self, telemetry: Telemetry) -> None:
        telemetry.configure()
        with ci.run(agent_name="outer") as outer, ci.run(agent_name="inner") as inner:
            pass
        assert not outer.adopted and not inner.adopted
        assert inner.span is not outer.span
        parents = sorted(s.parent.span_id for s in telemetry.summaries() if s.parent is not None)
        assert parents == sorted(
            [_span_id(telemetry.one("invoke_agent outer")), _span_id(telemetry.one("invoke_agent inner"))]
        )


def _grounded_frame() -> RequestFrame:
    ci.declare_tool("whats_here")
    ci.declare_tool("screen_fire", arguments_from=["whats_here"])
    return RequestFrame.of(
        [Message("user", "fire"), Message("tool", '["screen2"]', tool_name="whats_here", tool_call_id="w1")],
        tools=[ToolDefinition("whats_here"), ToolDefinition("screen_fire")],
    )


class TestModelCallAdoption:
    def test_the_hosts_current_chat_span_gets_the_choice_findings_and_no_second_chat_span(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure()
        frame = _grounded_frame()
        chat = {names.GEN_AI_OPERATION_NAME: names.OPERATION_CHAT}
        with ci.run("q") as agent_run:
            agent_run.tool_result("whats_here", "w1", ["screen2"])
            with _host_tracer(telemetry).start_as_current_span("chat host-model", attributes=chat) as host:
                agent_run.request(frame).respond(
                    calls=[ToolCall("screen_fire", "made-up", {"id": "screen-x"})]
                )
                assert host.is_recording(), "the host's chat span is the host's to end"
        (chat_span,) = [s for s in telemetry.finished() if s.name.startswith(names.OPERATION_CHAT)]
        assert chat_span.name == "chat host-model"
        (event,) = _events(chat_span)
        assert event[names.FINDING_KIND] == "unsupported-argument"
        assert event[names.GEN_AI_TOOL_CALL_ID] == "made-up"
        assert dict(chat_span.attributes or {})[names.FINDINGS_COUNT] == 1

    def test_an_openinference_llm_span_of_another_provider_handed_in_is_adopted(
        self, telemetry: Telemetry, elsewhere: Elsewhere
    ) -> None:
        telemetry.configure()
        frame = _grounded_frame()
        with ci.run("q") as agent_run:
            agent_run.tool_result("whats_here", "w1", ["screen2"])
            host = elsewhere.tracer.start_span(
                "ChatCompletion", attributes={names.OPENINFERENCE_SPAN_KIND: names.OPENINFERENCE_KIND_LLM}
            )
            call = agent_run.request(frame, host_span=host)
            call.respond(calls=[ToolCall("screen_fire", "made-up", {"id": "screen-x"})])
            assert call.span is host and host.is_recording()
            host.end()
        assert not telemetry.named(names.chat_span_name("model"))
        (chat_span,) = elsewhere.finished()
        assert [e[names.FINDING_KIND] for e in _events(chat_span)] == ["unsupported-argument"]


class TestToolAdoption:
    def test_an_openinference_tool_span_of_another_provider_is_adopted_by_its_name(
        self, telemetry: Telemetry, elsewhere: Elsewhere
    ) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _lun_tool()
        # OpenInference writes tool.name only when the span ends: until then the span's name says it.
        attributes = {
            names.OPENINFERENCE_SPAN_KIND: names.OPENINFERENCE_KIND_TOOL,
            names.OPENINFERENCE_TOOL_ID: "oi-3",
        }
        with ci.run("q"), elsewhere.tracer.start_as_current_span("lun_mappings", attributes=attributes):
            assert tool() is LUN_ROWS
        assert not telemetry.named(names.tool_span_name("lun_mappings"))
        (tool_span,) = elsewhere.finished()
        (event,) = _events(tool_span)
        assert event[names.FINDING_KIND] == "column-type-mismatch"
        assert event[names.GEN_AI_TOOL_CALL_ID] == "oi-3"

    def test_an_openinference_tool_span_for_another_tool_is_not_adopted(
        self, telemetry: Telemetry, elsewhere: Elsewhere
    ) -> None:
        telemetry.configure(check_column_types="warn")
        tool = _lun_tool()
        attributes = {
            names.OPENINFERENCE_SPAN_KIND: names.OPENINFERENCE_KIND_TOOL,
            names.OPENINFERENCE_TOOL_NAME: "other",
        }
        with ci.run("q"), elsewhere.tracer.start_as_current_span("lun_mappings", attributes=attributes):
            tool()
        assert _events(telemetry.one(names.tool_span_name("lun_mappings")))
        assert not _events(elsewhere.finished()[0])

    def test_a_tool_span_handed_in_is_adopted_whatever_it_is_called(
        self, telemetry: Telemetry, elsewhere: Elsewhere
    ) -> None:
        telemetry.configure(check_column_types="warn")
        ci.declare_tool("lun_mappings", result_columns={"logical_unit_number": "number"})
        host = elsewhere.tracer.start_span("tools/call")
        with ci.run("q") as agent_run:
            agent_run.tool_result("lun_mappings", "mcp-1", LUN_ROWS, host_span=host)
        assert host.is_recording()
        host.end()
        assert not telemetry.named(names.tool_span_name("lun_mappings"))
        assert [e[names.GEN_AI_TOOL_CALL_ID] for e in _events(elsewhere.finished()[0])] == ["mcp-1"]

    def test_content_capture_never_overwrites_what_the_host_wrote_on_its_span(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure(check_column_types="warn", capture_content=True)

        @ci.tool(name="lookup")
        def lookup(ctx: object, key: str) -> list[str]:
            return [key]

        host_attributes = {
            names.GEN_AI_OPERATION_NAME: names.OPERATION_EXECUTE_TOOL,
            names.GEN_AI_TOOL_NAME: "lookup",
            names.GEN_AI_TOOL_CALL_ARGUMENTS: '{"key": "k1"}',
        }
        with (
            ci.run("q"),
            _host_tracer(telemetry).start_as_current_span("execute_tool lookup", attributes=host_attributes),
        ):
            lookup(object(), "k1")
        attributes = dict(telemetry.one("execute_tool lookup").attributes or {})
        assert attributes[names.GEN_AI_TOOL_CALL_ARGUMENTS] == '{"key": "k1"}'
        assert attributes[names.GEN_AI_TOOL_CALL_RESULT] == '["k1"]'  # the host had not written it
