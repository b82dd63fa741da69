"""pydantic-ai, for real: ``ci.setup()`` alone arms every agent, every seam is fed from the host.

Each test runs a real ``Agent`` on pydantic-ai's scripted ``FunctionModel``, offline, with
pydantic-ai's own instrumentation pointed at the test's in-memory SDK pipeline, and asserts what
the scripted model actually received and which span each finding landed on.

The laws under test:
- LUN rows: warn hands the rows over unchanged and files one finding on pydantic-ai's own
  ``execute_tool`` span; enforce hands the model the refusal sentence as that call's tool result
  (no rows, no retry) and marks the host's span; either way exactly one summary, a direct child of
  pydantic-ai's ``invoke_agent``, with no span of ours doubling the host's. Every way of declaring
  (``@ci.tool`` above or below the framework decorator, ``declare_tool``, the tool's ``metadata``)
  works under the framework's tool name.
- the self-reference case and the dangling-reference case are judged on the request the model
  received after pydantic-ai's own history processing;
- structured output reaches the claim seam typed; a run that raises keeps its exception and its summary;
- with every dial off the model receives byte for byte what it receives without the library;
- with Logfire configured the pipeline is joined: one trace, nothing doubled.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("pydantic_ai") is None:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise RuntimeError("pydantic-ai is not installed; CI installs it with the test extra")
    pytest.skip("pydantic-ai is not installed", allow_module_level=True)

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic import BaseModel
from pydantic_ai import Agent, RunContext
from pydantic_ai import messages as pm
from pydantic_ai.capabilities import AbstractCapability, ProcessHistory
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from tests.conftest import Telemetry, run_docs_example

import context_integrity as ci
from context_integrity.checks.unsupported_argument import ArmedCall, check_unsupported_arguments
from context_integrity.integrations import pydantic_ai as integration
from context_integrity.integrations import supported_names
from context_integrity.judge.seams import RunJudge
from context_integrity.loop import frame_ground
from context_integrity.telemetry.export.pipeline import sdk_provider_of
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[2]
LUN_ROWS: list[dict[str, Any]] = [
    {"host_group": "vdi-a", "logical_unit_number": ""},
    {"host_group": "vdi-a", "logical_unit_number": 3},
]
LUN_COLUMNS = {"logical_unit_number": "number", "host_group": "string"}
TOOL = "host_group_mappings"


# ── the scripted model ───────────────────────────────────────────────────


@dataclass
class Script:
    """A FunctionModel that answers the n-th request with the n-th planned response, and keeps what it got."""

    plan: list[list[pm.ModelResponsePart]]
    received: list[list[pm.ModelMessage]]
    tools: list[list[str]]

    @classmethod
    def of(cls, *plan: list[pm.ModelResponsePart]) -> Script:
        return cls(list(plan), [], [])

    def __call__(self, messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        self.received.append(list(messages))
        self.tools.append([t.name for t in info.function_tools])
        assert self.plan, "the model was asked more often than the script planned"
        return pm.ModelResponse(parts=self.plan.pop(0))

    def model(self) -> FunctionModel:
        return FunctionModel(self, model_name="scripted")


def call(tool: str, call_id: str, **arguments: Any) -> list[pm.ModelResponsePart]:
    return [pm.ToolCallPart(tool, arguments, tool_call_id=call_id)]


def text(words: str) -> list[pm.ModelResponsePart]:
    return [pm.TextPart(words)]


def returns(messages: list[pm.ModelMessage]) -> list[pm.ToolReturnPart]:
    return [
        p
        for m in messages
        if isinstance(m, pm.ModelRequest)
        for p in m.parts
        if isinstance(p, pm.ToolReturnPart)
    ]


def instrumented(telemetry: Telemetry) -> InstrumentationSettings:
    return InstrumentationSettings(tracer_provider=telemetry.provider)


A = Any


def hosted(agent: A, telemetry: Telemetry) -> A:
    """The agent with pydantic-ai's own instrumentation on, into the test's pipeline."""
    agent.instrument = instrumented(telemetry)
    return agent


# ── reading spans back ───────────────────────────────────────────────────


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def operation(telemetry: Telemetry, op: str) -> list[ReadableSpan]:
    return [s for s in telemetry.finished() if attrs(s).get(names.GEN_AI_OPERATION_NAME) == op]


def findings(span: ReadableSpan) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]


def all_findings(telemetry: Telemetry) -> list[tuple[ReadableSpan, dict[str, Any]]]:
    return [(s, f) for s in telemetry.finished() for f in findings(s)]


def is_pydantic_ai(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope
    return scope is not None and scope.name != names.INSTRUMENTATION_NAME


def the_summary_under_the_host_run(telemetry: Telemetry) -> ReadableSpan:
    (run,) = operation(telemetry, names.OPERATION_INVOKE_AGENT)
    assert is_pydantic_ai(run)
    (summary,) = telemetry.summaries()
    assert summary.parent is not None and run.context is not None
    assert summary.parent.span_id == run.context.span_id
    return summary


def nothing_doubled(telemetry: Telemetry, *, requests: int, tool_calls: int) -> None:
    """Every GenAI span is pydantic-ai's, one per operation: none of ours beside them."""
    assert len(operation(telemetry, names.OPERATION_INVOKE_AGENT)) == 1
    assert len(operation(telemetry, names.OPERATION_CHAT)) == requests
    assert len(operation(telemetry, names.OPERATION_EXECUTE_TOOL)) == tool_calls
    for op in (names.OPERATION_INVOKE_AGENT, names.OPERATION_CHAT, names.OPERATION_EXECUTE_TOOL):
        assert all(is_pydantic_ai(s) for s in operation(telemetry, op))
    assert len({s.context.trace_id for s in telemetry.finished() if s.context is not None}) == 1


# ── the LUN column, every way of declaring it ────────────────────────────


def _rows() -> list[dict[str, Any]]:
    return LUN_ROWS


def lun_agent(how: str, script: Script, telemetry: Telemetry) -> Agent[None, str]:
    """An agent offering ``host_group_mappings`` (a Python function of another name), declared ``how``."""
    agent: Agent[None, str] = hosted(Agent(script.model(), name="storage"), telemetry)
    if how == "ci.tool above":

        @ci.tool(result_columns=LUN_COLUMNS)
        @agent.tool_plain(name=TOOL)
        def mappings_above(host_group: str) -> list[dict[str, Any]]:
            return _rows()

    elif how == "ci.tool below":

        @agent.tool_plain(name=TOOL)
        @ci.tool(result_columns=LUN_COLUMNS)
        def mappings_below(host_group: str) -> list[dict[str, Any]]:
            return _rows()

    elif how == "declare_tool":
        ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)

        @agent.tool_plain(name=TOOL)
        def mappings_declared(host_group: str) -> list[dict[str, Any]]:
            return _rows()

    else:

        @agent.tool_plain(name=TOOL, metadata={"context_integrity": {"result_columns": LUN_COLUMNS}})
        def mappings_metadata(host_group: str) -> list[dict[str, Any]]:
            return _rows()

    return agent


DECLARATIONS = ["ci.tool above", "ci.tool below", "declare_tool", "metadata"]


def lun_script() -> Script:
    return Script.of(call(TOOL, "call_lun", host_group="vdi-a"), text("vdi-a maps two LUNs."))


class TestLunRows:
    @pytest.mark.parametrize("how", DECLARATIONS)
    def test_warn_hands_the_rows_over_and_files_one_finding_on_the_hosts_tool_span(
        self, telemetry: Telemetry, how: str
    ) -> None:
        telemetry.configure(check_column_types="warn")
        script = lun_script()
        result = lun_agent(how, script, telemetry).run_sync("Map host group vdi-a.")
        assert result.output == "vdi-a maps two LUNs."
        (delivered,) = returns(script.received[1])
        assert delivered.content is LUN_ROWS  # the very rows, unchanged
        nothing_doubled(telemetry, requests=2, tool_calls=1)
        ((span, finding),) = all_findings(telemetry)
        assert attrs(span)[names.GEN_AI_OPERATION_NAME] == names.OPERATION_EXECUTE_TOOL and is_pydantic_ai(
            span
        )
        assert finding[names.FINDING_KIND] == "column-type-mismatch"
        assert finding[names.GEN_AI_TOOL_NAME] == TOOL
        assert finding[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
        summary = the_summary_under_the_host_run(telemetry)
        assert attrs(summary)[names.POSTURE] == "observe"
        assert attrs(summary)[names.dial_attribute("check_column_types")] == "warn"
        assert attrs(summary)[names.row_attribute("column-type-mismatch", "write", "findings")] == 1

    @pytest.mark.parametrize("how", DECLARATIONS)
    def test_enforce_hands_the_model_the_refusal_as_the_calls_result_and_no_rows(
        self, telemetry: Telemetry, how: str
    ) -> None:
        telemetry.configure(check_column_types="enforce")
        script = lun_script()
        lun_agent(how, script, telemetry).run_sync("Map host group vdi-a.")
        (delivered,) = returns(script.received[1])
        assert delivered.tool_call_id == "call_lun" and delivered.tool_name == TOOL
        assert delivered.outcome == "success"  # the call's own result, not a retry prompt
        assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
        assert "vdi-a" not in json.dumps(delivered.content).replace(f"'{TOOL}'", "")
        nothing_doubled(telemetry, requests=2, tool_calls=1)
        ((span, finding),) = all_findings(telemetry)
        assert is_pydantic_ai(span) and finding[names.FINDING_KIND] == "column-type-mismatch"
        assert attrs(span)[names.ERROR_TYPE] == names.ERROR_RESULT_REJECTED
        summary = the_summary_under_the_host_run(telemetry)
        assert attrs(summary)[names.POSTURE] == "enforce"
        assert attrs(summary)[names.dial_attribute("check_column_types")] == "enforce"

    @pytest.mark.parametrize("how", DECLARATIONS)
    def test_without_host_telemetry_the_genai_spans_are_ours_with_the_models_call_id(
        self, telemetry: Telemetry, how: str
    ) -> None:
        telemetry.configure(check_column_types="warn")
        script = lun_script()
        agent = lun_agent(how, script, telemetry)
        agent.instrument = False  # pydantic-ai's instrumentation off: it opens no span at all
        agent.run_sync("Map host group vdi-a.")
        (tool_span,) = operation(telemetry, names.OPERATION_EXECUTE_TOOL)
        assert not is_pydantic_ai(tool_span)
        assert attrs(tool_span)[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
        assert [f[names.FINDING_KIND] for f in findings(tool_span)] == ["column-type-mismatch"]
        (run,) = operation(telemetry, names.OPERATION_INVOKE_AGENT)
        assert len(operation(telemetry, names.OPERATION_CHAT)) == 2
        (summary,) = telemetry.summaries()
        assert summary.parent is not None and run.context is not None
        assert summary.parent.span_id == run.context.span_id

    def test_a_users_ci_run_around_the_host_run_is_joined_not_doubled(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        script = lun_script()
        agent = lun_agent("declare_tool", script, telemetry)
        with ci.run("map it", agent_name="storage") as outer:
            agent.run_sync("Map host group vdi-a.")
        assert [f.kind for f in outer.findings] == ["column-type-mismatch"]
        nothing_doubled(telemetry, requests=2, tool_calls=1)
        self.the_summary_is_the_host_runs(telemetry)
        (grouping,) = telemetry.named(names.user_run_span_name("storage"))
        (run,) = operation(telemetry, names.OPERATION_INVOKE_AGENT)
        assert run.parent is not None and grouping.context is not None
        assert run.parent.span_id == grouping.context.span_id

    @staticmethod
    def the_summary_is_the_host_runs(telemetry: Telemetry) -> None:
        summary = the_summary_under_the_host_run(telemetry)
        assert attrs(summary)[names.row_attribute("column-type-mismatch", "write", "findings")] == 1

    def test_a_users_ci_run_without_host_telemetry_stays_the_run_span(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        agent = lun_agent("declare_tool", lun_script(), telemetry)
        agent.instrument = False
        with ci.run("map it", agent_name="storage"):
            agent.run_sync("Map host group vdi-a.")
        (run,) = operation(telemetry, names.OPERATION_INVOKE_AGENT)
        assert run.name == names.run_span_name("storage") and not is_pydantic_ai(run)
        (summary,) = telemetry.summaries()
        assert summary.parent is not None and run.context is not None
        assert summary.parent.span_id == run.context.span_id

    def test_a_declaration_the_agent_never_offers_is_one_warning_per_run(
        self, telemetry: Telemetry, caplog: pytest.LogCaptureFixture
    ) -> None:
        telemetry.configure(check_column_types="warn")
        ci.declare_tool("host_group_mapping", result_columns=LUN_COLUMNS)  # a typo of the tool's name
        agent = lun_agent("declare_tool", lun_script(), telemetry)
        with caplog.at_level(logging.WARNING, logger="context_integrity"):
            agent.run_sync("Map host group vdi-a.")
            agent.run_sync("again", model=lun_script().model())
        warned = [r.getMessage() for r in caplog.records if "not offered" in r.getMessage()]
        assert len(warned) == 2
        assert all("'host_group_mapping'" in w and f"'{TOOL}'" in w for w in warned)

    def test_a_streamed_run_is_judged_the_same(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        agent = streaming_lun_agent(lun_script(), telemetry)

        async def go() -> str:
            async with agent.run_stream("Map host group vdi-a.") as streamed:
                return await streamed.get_output()

        assert asyncio.run(go()) == "vdi-a maps two LUNs."
        ((span, finding),) = all_findings(telemetry)
        assert is_pydantic_ai(span) and finding[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
        assert len(telemetry.summaries()) == 1
        # Each streamed request was read on pydantic-ai's own chat span: none of ours beside them.
        nothing_doubled(telemetry, requests=2, tool_calls=1)

    def test_run_stream_events_is_judged_as_run_sync_is(self, telemetry: Telemetry) -> None:
        """``run_stream_events`` (every event of the run, as a UI consumes them): the model reads
        the refusal, no event carries a row, one summary, nothing doubled."""
        telemetry.configure(check_column_types="enforce")
        script = lun_script()
        agent = streaming_lun_agent(script, telemetry)

        async def every_event() -> list[Any]:
            async with agent.run_stream_events("Map host group vdi-a.") as events:
                return [event async for event in events]

        seen = asyncio.run(every_event())
        assert seen, "the run streamed its events"
        (delivered,) = returns(script.received[1])
        assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
        assert "'logical_unit_number': 3" not in repr(seen) and '"logical_unit_number": 3' not in repr(seen)
        nothing_doubled(telemetry, requests=2, tool_calls=1)
        assert attrs(the_summary_under_the_host_run(telemetry))[names.RUN_OUTCOME] == "ok"

    def test_a_stream_the_caller_abandons_midway_still_ends_its_run_with_one_summary(
        self, telemetry: Telemetry
    ) -> None:
        """A client that goes away after the first words of the answer: the run is closed, and the
        next run is a run of its own, not a child of the abandoned one."""
        telemetry.configure(check_column_types="warn")
        script = Script.of(
            call(TOOL, "call_lun", host_group="vdi-a"),
            text("vdi-a maps two LUNs, and more words after the first."),
        )
        agent = streaming_lun_agent(script, telemetry, chunk=4)

        async def first_words() -> str:
            async with agent.run_stream("Map host group vdi-a.") as streamed:
                async for words in streamed.stream_output(debounce_by=None):
                    return words
            raise AssertionError("the stream yielded nothing")

        assert asyncio.run(first_words()).startswith("vdi-")
        (summary,) = telemetry.summaries()
        (run,) = operation(telemetry, names.OPERATION_INVOKE_AGENT)
        assert summary.parent is not None and run.context is not None
        assert summary.parent.span_id == run.context.span_id
        assert attrs(summary)[names.RUN_OUTCOME] == "cancelled"  # its caller stopped it
        assert ci.current_run() is None
        agent.run_sync("Map host group vdi-a.", model=lun_script().model())
        assert len(telemetry.summaries()) == 2
        runs = operation(telemetry, names.OPERATION_INVOKE_AGENT)
        assert len(runs) == 2 and all(r.parent is None for r in runs)
        assert len({r.context.trace_id for r in runs if r.context is not None}) == 2


@pytest.mark.parametrize(
    ("metadata", "named"),
    [
        ({"context_integrity": ["result_columns"]}, "not a mapping"),
        ({"context_integrity": {"result_colums": LUN_COLUMNS}}, "'result_colums'"),
        ({"context_integrity": {"result_columns": {"logical_unit_number": "numbr"}}}, "numbr"),
    ],
    ids=["not a mapping", "a misspelt field", "an unknown column type"],
)
def test_a_bad_metadata_declaration_is_logged_once_and_the_run_goes_on_unjudged(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, metadata: dict[str, Any], named: str
) -> None:
    """pydantic-ai's tool ``metadata`` is read when a run starts, so a bad declaration there cannot
    raise at definition: it is logged naming the tool, the field and the fix, the rows go through
    unjudged, and a process running the agent a thousand times is told once, not a thousand."""
    telemetry.configure(check_column_types="enforce")
    agent: Agent[None, str] = hosted(Agent(name="storage"), telemetry)

    @agent.tool_plain(name=TOOL, metadata=metadata)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        return _rows()

    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        for _ in range(3):
            script = lun_script()
            assert (
                agent.run_sync("Map host group vdi-a.", model=script.model()).output == "vdi-a maps two LUNs."
            )
            (delivered,) = returns(script.received[1])
            assert delivered.content is LUN_ROWS  # not judged: handed over as it came
    told = [r for r in caplog.records if r.name == "context_integrity" and TOOL in r.getMessage()]
    assert len(told) == 1, [r.getMessage() for r in told]
    message = told[0].getMessage()
    assert named in message and "context_integrity" in message and "not judged" in message
    assert all_findings(telemetry) == []
    assert len(telemetry.summaries()) == 3


@pytest.mark.parametrize("mode", ["warn", "enforce"])
def test_a_tool_return_is_judged_on_its_return_value_and_enforce_replaces_it_whole(
    telemetry: Telemetry, mode: str
) -> None:
    """A tool answering ``ToolReturn(return_value=rows, content=..., metadata=...)``: the rows are
    what is judged; warn hands the ToolReturn over as it came, enforce replaces all of it (its extra
    content too) with the refusal, so nothing of the rows reaches the model."""
    telemetry.configure(check_column_types=mode)
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)
    script = lun_script()
    agent: Agent[None, str] = hosted(Agent(script.model(), name="storage"), telemetry)

    @agent.tool_plain(name=TOOL)
    def mappings(host_group: str) -> pm.ToolReturn:
        return pm.ToolReturn(return_value=LUN_ROWS, content="the vdi-a rows: 3", metadata={"rows": 2})

    agent.run_sync("Map host group vdi-a.")
    (delivered,) = returns(script.received[1])
    ((span, finding),) = all_findings(telemetry)
    assert finding[names.FINDING_KIND] == "column-type-mismatch"
    extra = [
        p
        for m in script.received[1]
        if isinstance(m, pm.ModelRequest)
        for p in m.parts
        if isinstance(p, pm.UserPromptPart)
    ]
    if mode == "warn":
        assert delivered.content is LUN_ROWS and delivered.metadata == {"rows": 2}
        assert any("the vdi-a rows: 3" in str(p.content) for p in extra)
    else:
        assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
        assert delivered.metadata is None
        assert not any("the vdi-a rows: 3" in str(p.content) for p in extra)
        assert attrs(span)[names.ERROR_TYPE] == names.ERROR_RESULT_REJECTED
    assert len(telemetry.summaries()) == 1


class TestIter:
    """``agent.iter``: a run driven node by node, as a UI streaming a run's steps drives it."""

    def test_driven_to_its_end_it_is_judged_as_run_sync_is(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="enforce")
        script = lun_script()
        agent = lun_agent("declare_tool", script, telemetry)

        async def drive() -> str:
            async with agent.iter("Map host group vdi-a.") as agent_run:
                async for _node in agent_run:
                    pass
            assert agent_run.result is not None
            return agent_run.result.output

        assert asyncio.run(drive()) == "vdi-a maps two LUNs."
        (delivered,) = returns(script.received[1])
        assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
        nothing_doubled(telemetry, requests=2, tool_calls=1)
        summary = the_summary_under_the_host_run(telemetry)
        assert attrs(summary)[names.RUN_OUTCOME] == "ok"
        assert attrs(summary)[names.row_attribute("column-type-mismatch", "write", "findings")] == 1

    def test_left_after_the_models_first_answer_it_ends_with_one_summary(self, telemetry: Telemetry) -> None:
        """The caller stops driving before the tool runs: nothing more is judged, the run is
        summarised, and the next run is a run of its own."""
        telemetry.configure(check_column_types="enforce")
        script = lun_script()
        agent = lun_agent("declare_tool", script, telemetry)

        async def leave_early() -> None:
            async with agent.iter("Map host group vdi-a.") as agent_run:
                async for node in agent_run:
                    if Agent.is_call_tools_node(node):
                        break

        asyncio.run(leave_early())
        assert len(script.received) == 1
        summary = the_summary_under_the_host_run(telemetry)
        assert attrs(summary)[names.RUN_OUTCOME] == "cancelled"  # its caller stopped it
        assert attrs(summary)[names.row_attribute("column-type-mismatch", "write", "checked")] == 0
        assert ci.current_run() is None
        agent.run_sync("Map host group vdi-a.", model=lun_script().model())
        runs = operation(telemetry, names.OPERATION_INVOKE_AGENT)
        assert len(runs) == 2 and all(r.parent is None for r in runs)
        assert len(telemetry.summaries()) == 2


def streaming_lun_agent(script: Script, telemetry: Telemetry, *, chunk: int = 0) -> Agent[None, str]:
    """The LUN agent on a streaming FunctionModel playing ``script``; text in ``chunk``-character
    pieces (whole when 0)."""

    async def stream(messages: list[pm.ModelMessage], info: AgentInfo) -> Any:
        script.received.append(list(messages))
        for part in script.plan.pop(0):
            if isinstance(part, pm.ToolCallPart):
                yield {
                    0: DeltaToolCall(
                        name=part.tool_name,
                        json_args=part.args_as_json_str(),
                        tool_call_id=part.tool_call_id,
                    )
                }
            elif isinstance(part, pm.TextPart):
                size = chunk or len(part.content)
                for start in range(0, len(part.content), size):
                    yield part.content[start : start + size]

    agent: Agent[None, str] = hosted(Agent(FunctionModel(stream_function=stream), name="storage"), telemetry)
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)

    @agent.tool_plain(name=TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        return _rows()

    return agent


# ── the docs page's example ────────────────────────────────────────────────


def test_the_docs_example_runs_and_the_model_reads_the_refusal(
    telemetry: Telemetry, capsys: pytest.CaptureFixture[str]
) -> None:
    """The pydantic-ai section's example runs as it stands: its setup() alone arms the agent, and
    TestModel's answer (the tool results it read, as JSON) holds the refusal, not the rows."""
    run_docs_example("frameworks/pydantic-ai.md", telemetry)
    (printed,) = capsys.readouterr().out.splitlines()
    read = json.loads(printed)
    assert list(read) == ["host_group_mappings"]
    assert read["host_group_mappings"].startswith("Result rejected: tool 'host_group_mappings'")
    assert "logical_unit_number': ''" not in printed
    (tool_span,) = telemetry.named("execute_tool host_group_mappings")
    assert tool_span.status.status_code is StatusCode.ERROR and len(telemetry.summaries()) == 1


# ── never break the agent ────────────────────────────────────────────────


@pytest.mark.parametrize("broken", ["frame_of", "response_of", "declare_agent_tools", "answer_text"])
def test_our_own_failure_never_reaches_the_agent(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    telemetry.configure(check_column_types="enforce")

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(integration, broken, fail)
    script = lun_script()
    result = lun_agent("metadata", script, telemetry).run_sync("Map host group vdi-a.")
    assert result.output == "vdi-a maps two LUNs."
    assert len(script.received) == 2
    assert len(telemetry.summaries()) == 1


def test_when_finding_the_hosts_spans_fails_the_agent_runs_on_and_the_failure_is_logged(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The span search is asked before every attempt, outside any seam: its failure stays ours."""
    telemetry.configure(check_column_types="warn")

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(integration, "find_host_span", fail)
    script = lun_script()
    with caplog.at_level(logging.ERROR, logger="context_integrity"):
        result = lun_agent("metadata", script, telemetry).run_sync("Map host group vdi-a.")
    assert result.output == "vdi-a maps two LUNs."
    assert len(script.received) == 2
    assert [p.content for p in returns(script.received[1])] == [LUN_ROWS]  # warn: the rows go on
    logged = [r.getMessage() for r in caplog.records if r.name == "context_integrity"]
    assert any("finding pydantic-ai's chat span failed" in m for m in logged)


@pytest.mark.parametrize("broken", ["ToolScope", "Run"])
def test_enforce_fails_closed_when_our_bookkeeping_fails(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """A call whose scope cannot open (or whose run never opened) still never hands over rows
    enforce would refuse: the tool runs, the model reads a refusal, the agent runs on."""
    telemetry.configure(check_column_types="enforce")

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(integration, broken, fail)
    script = lun_script()
    ran: list[str] = []
    agent: Agent[None, str] = hosted(Agent(script.model(), name="storage"), telemetry)

    @agent.tool_plain(name=TOOL, metadata={"context_integrity": {"result_columns": LUN_COLUMNS}})
    def mappings(host_group: str) -> list[dict[str, Any]]:
        ran.append(host_group)
        return _rows()

    assert agent.run_sync("Map host group vdi-a.").output == "vdi-a maps two LUNs."
    assert ran == ["vdi-a"]  # the tool itself ran: only its rows are withheld
    (delivered,) = returns(script.received[1])
    assert delivered.tool_call_id == "call_lun" and delivered.outcome == "success"
    assert isinstance(delivered.content, str) and delivered.content.startswith("Result rejected")
    assert "vdi-a" not in json.dumps(delivered.content).replace(f"'{TOOL}'", "")


# ── capture_content never writes over the host nor records the run context ──


@dataclass
class Deps:
    db_password: str


def test_capture_content_keeps_the_hosts_attributes_and_never_records_the_run_context(
    telemetry: Telemetry,
) -> None:
    ci.setup(
        tracer_provider=telemetry.provider,
        meter_provider=telemetry.meter_provider,
        capture_content=True,
        check_column_types="warn",
    )
    script = lun_script()
    agent: Agent[Deps, str] = Agent(script.model(), name="storage", deps_type=Deps)
    hosted(agent, telemetry)

    @ci.tool(result_columns=LUN_COLUMNS, name=TOOL)
    @agent.tool(name=TOOL)
    def mappings(ctx: RunContext[Deps], host_group: str) -> list[dict[str, Any]]:
        return LUN_ROWS

    agent.run_sync("Map host group vdi-a.", deps=Deps(db_password="hunter2-secret"))
    (tool_span,) = operation(telemetry, names.OPERATION_EXECUTE_TOOL)
    assert json.loads(attrs(tool_span)[names.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"host_group": "vdi-a"}
    for span in telemetry.finished():
        for value in attrs(span).values():
            assert "hunter2-secret" not in str(value) and "RunContext" not in str(value)
        for event in span.events:
            assert "hunter2-secret" not in str(dict(event.attributes or {}))


# ── grounding, on the request the model received ────────────────────────

JOBS = [{"job": "bkp-4417-ganymede-tier2", "machine": "4417", "policy": "tier2-nightly"}]
TURN_ONE_ANSWER = "Machine 4417 is protected by the job bkp-4417-ganymede-tier2 (tier 2, nightly)."


def prose_only_from_earlier_turns(
    ctx: RunContext[None], messages: list[pm.ModelMessage]
) -> list[pm.ModelMessage]:
    """The window between turns: of earlier runs only the model's prose answers carry over."""
    kept: list[pm.ModelMessage] = []
    for message in messages:
        if message.run_id == ctx.run_id or (
            isinstance(message, pm.ModelResponse) and all(isinstance(p, pm.TextPart) for p in message.parts)
        ):
            kept.append(message)
    return kept


def test_self_reference_the_model_calls_with_a_fragment_of_its_own_rendered_name(
    telemetry: Telemetry,
) -> None:
    telemetry.configure()
    script = Script.of(
        call("list_jobs", "t1-c1", machine="4417"),
        text(TURN_ONE_ANSWER),
        call("machine_status", "t2-c1", machine="4417-ganymede"),
        text("4417-ganymede has no backup record."),
    )
    agent: Agent[None, str] = Agent(
        script.model(),
        name="backup-triage",
        capabilities=[ProcessHistory(prose_only_from_earlier_turns)],
    )
    hosted(agent, telemetry)

    @agent.tool_plain
    @ci.tool
    def list_jobs(machine: str) -> list[dict[str, str]]:
        """The backup jobs that protect a machine."""
        return JOBS

    @agent.tool_plain
    @ci.tool(arguments_from=["list_jobs"])
    def machine_status(machine: str) -> Any:
        """The protection status of one machine."""
        return ci.absent(machine, reason="no machine by that id")

    first = agent.run_sync("Which backup jobs protect machine 4417?")
    agent.run_sync("What's the status for that machine?", message_history=first.all_messages())
    received = script.received[2]
    assert [type(m).__name__ for m in received] == ["ModelResponse", "ModelRequest"]  # the window held
    (event,) = [f for _, f in all_findings(telemetry)]
    (span,) = [s for s, _ in all_findings(telemetry)]
    assert attrs(span)[names.GEN_AI_OPERATION_NAME] == names.OPERATION_CHAT and is_pydantic_ai(span)
    assert event[names.FINDING_KIND] == "unsupported-argument"
    assert event[names.GEN_AI_TOOL_CALL_ID] == "t2-c1"
    # the message is the self-reference one for exactly the frame the model received
    frame = integration.frame_of(received, ModelRequestParameters(), "scripted")
    ground = frame_ground(frame)
    assert not any("4417-ganymede" in t for t in ground.grounded)
    assert any("4417-ganymede" in t for t in ground.assistant)
    armed = ArmedCall("machine_status", "t2-c1", {"machine": "4417-ganymede"}, ("list_jobs",), frozenset())
    (expected,) = check_unsupported_arguments(
        calls=[armed], grounded=ground.grounded, assistant=ground.assistant, epoch=1
    ).findings
    assert event[names.FINDING_MESSAGE] == expected.message
    assert len(telemetry.summaries()) == 2  # one per host run


def evict_whats_here_once_worked(messages: list[pm.ModelMessage]) -> list[pm.ModelMessage]:
    """Trimming: once the run has moved on, the whats_here call and its result leave the window."""
    if len(messages) <= 3:
        return messages

    def mentions_whats_here(message: pm.ModelMessage) -> bool:
        return any(getattr(p, "tool_name", None) == "whats_here" for p in message.parts)

    return [m for m in messages if not mentions_whats_here(m)]


def screens_agent(
    model: FunctionModel,
    telemetry: Telemetry,
    *,
    host_telemetry: bool = True,
    capabilities: tuple[AbstractCapability[Any], ...] = (),
) -> Agent[None, str]:
    """The screens agent: its history trimming evicts whats_here's result once the run moves on,
    and screen_fire's argument is declared to come from whats_here."""
    agent: Agent[None, str] = Agent(
        model, name="screens", capabilities=[ProcessHistory(evict_whats_here_once_worked), *capabilities]
    )
    if host_telemetry:
        hosted(agent, telemetry)
    else:
        agent.instrument = False  # pydantic-ai's instrumentation off: the GenAI spans are ours
    ci.declare_tool("screen_fire", arguments_from=["whats_here"])

    @agent.tool_plain
    def whats_here() -> list[dict[str, str]]:
        return [{"screen_id": "scr-7", "room": "lobby"}]

    @agent.tool_plain
    def note(text: str) -> str:
        return "noted"

    @agent.tool_plain
    def screen_fire(screen_id: str) -> str:
        return "fired"

    return agent


def test_dangling_reference_when_the_hosts_trimming_evicts_the_producers_result(telemetry: Telemetry) -> None:
    telemetry.configure()
    script = Script.of(
        call("whats_here", "c1"),
        call("note", "c2", text="scanning"),
        call("screen_fire", "c3", screen_id="scr-7"),
        text("done"),
    )
    agent = screens_agent(script.model(), telemetry)
    agent.run_sync("Fire the lobby screen.")
    assert not any(p.tool_name == "whats_here" for p in returns(script.received[2]))  # really evicted
    chats = sorted(operation(telemetry, names.OPERATION_CHAT), key=lambda s: s.start_time or 0)
    dangling = [
        (i, f)
        for i, s in enumerate(chats)
        for f in findings(s)
        if f[names.FINDING_KIND] == "dangling-reference"
    ]
    assert [i for i, _ in dangling] == [2]  # on the third request's own chat span, once
    assert dangling[0][1][names.FINDING_SEAM] == "compose"
    assert all(is_pydantic_ai(s) for s in chats)


@pytest.mark.parametrize("host_telemetry", [True, False], ids=["host chat spans", "our chat spans"])
def test_a_model_call_that_fails_is_still_judged_at_compose_on_its_own_chat_span(
    telemetry: Telemetry, host_telemetry: bool
) -> None:
    """The request was sent, so it is judged, whoever opened the chat span it failed in."""
    telemetry.configure()
    script = Script.of(call("whats_here", "c1"), call("note", "c2", text="scanning"))

    def flaky(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        if script.plan:
            return script(messages, info)
        script.received.append(list(messages))
        raise RuntimeError("the provider is down")

    agent = screens_agent(
        FunctionModel(flaky, model_name="scripted"), telemetry, host_telemetry=host_telemetry
    )
    with pytest.raises(RuntimeError, match="the provider is down"):
        agent.run_sync("Fire the lobby screen.")
    assert len(script.received) == 3  # the third request reached the model, which failed
    chats = sorted(operation(telemetry, names.OPERATION_CHAT), key=lambda s: s.start_time or 0)
    assert len(chats) == 3
    assert all(is_pydantic_ai(s) == host_telemetry for s in chats)
    failed = chats[2]
    assert failed.status.status_code is StatusCode.ERROR
    assert [f[names.FINDING_KIND] for f in findings(failed)] == ["dangling-reference"]
    assert not findings(chats[0]) and not findings(chats[1])
    (summary,) = telemetry.summaries()
    assert attrs(summary)[names.RUN_OUTCOME] == "error"


@pytest.mark.parametrize("host_telemetry", [True, False], ids=["host chat spans", "our chat spans"])
@pytest.mark.parametrize("falls_back_on", ["an error", "a rejected response"])
def test_an_attempt_model_fallback_moves_on_from_is_judged_at_compose_like_the_one_that_answers(
    telemetry: Telemetry, host_telemetry: bool, falls_back_on: str
) -> None:
    """ModelFallback sits innermost and moves on before any outer hook sees the attempt: the
    request the first model was sent is judged all the same, on the chat span it was sent in
    (pydantic-ai's span of the request step, or ours of that attempt)."""
    from pydantic_ai.capabilities import ModelFallback
    from pydantic_ai.exceptions import ModelAPIError

    telemetry.configure()
    script = Script.of(call("whats_here", "c1"), call("note", "c2", text="scanning"))
    backup = Script.of(text("done"))

    def primary(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        if script.plan:
            return script(messages, info)
        script.received.append(list(messages))
        if falls_back_on == "an error":
            raise ModelAPIError("primary", "the provider is down")
        return pm.ModelResponse(parts=text("I cannot say."), finish_reason="content_filter")

    agent = screens_agent(
        FunctionModel(primary, model_name="primary"),
        telemetry,
        host_telemetry=host_telemetry,
        capabilities=(ModelFallback(FunctionModel(backup, model_name="backup")),),
    )
    assert agent.run_sync("Fire the lobby screen.").output == "done"
    assert len(script.received) == 3 and len(backup.received) == 1  # the third request, twice
    assert script.received[2] == backup.received[0]  # the same request, to each model
    chats = sorted(operation(telemetry, names.OPERATION_CHAT), key=lambda s: s.start_time or 0)
    # pydantic-ai spans a request step with one chat span (an attempt it moved on from is a child
    # span of its own); ours is a chat span per request the model was sent.
    assert len(chats) == (3 if host_telemetry else 4)
    assert all(is_pydantic_ai(s) == host_telemetry for s in chats)
    dangling = [
        i for i, s in enumerate(chats) for f in findings(s) if f[names.FINDING_KIND] == "dangling-reference"
    ]
    assert dangling == [2]  # on the span of the first request that carried it
    summary = the_summary_under_the_host_run(telemetry) if host_telemetry else telemetry.summaries()[0]
    row = attrs(summary)
    assert row[names.RUN_OUTCOME] == "ok"
    # Each of the two sends of the third request is judged at compose, whoever opened the spans.
    assert row[names.row_attribute("dangling-reference", "compose", "checked")] == 2
    assert row[names.row_attribute("dangling-reference", "compose", "findings")] == 2
    # And every response a model returned is read at choice, the rejected one included.
    responses = 3 if falls_back_on == "an error" else 4
    choice = [
        row[names.row_attribute("unsupported-argument", "choice", f)] for f in ("checked", "not_applicable")
    ]
    assert sum(choice) == responses


def test_with_a_wire_reader_each_body_is_read_inside_its_model_call_on_the_hosts_chat_span(
    telemetry: Telemetry,
) -> None:
    """The wire seam needs the model call open while the body crosses, host spans or not."""
    import httpx2  # the OpenAI SDK's own HTTP client package
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    telemetry.configure()
    bodies: list[dict[str, Any]] = []

    def completion(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        message: dict[str, Any] = {"role": "assistant", "content": "vdi-a maps two LUNs."}
        if len(bodies) == 1:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_lun",
                        "type": "function",
                        "function": {"name": TOOL, "arguments": json.dumps({"host_group": "vdi-a"})},
                    }
                ],
            }
        return httpx2.Response(
            200,
            json={
                "id": f"chatcmpl-{len(bodies)}",
                "object": "chat.completion",
                "created": 0,
                "model": "gpt-test",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        )

    client = AsyncOpenAI(
        api_key="test",
        base_url="http://model.test/v1",
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(completion)),
    )
    model = OpenAIChatModel("gpt-test", provider=OpenAIProvider(openai_client=client))
    agent: Agent[None, str] = hosted(Agent(model, name="storage"), telemetry)

    @agent.tool_plain(name=TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        return _rows()

    reader = ci.install_wire_reader(client)
    try:
        assert agent.run_sync("Map host group vdi-a.").output == "vdi-a maps two LUNs."
    finally:
        reader.uninstall()
    assert len(bodies) == 2 and all(b["tools"][0]["function"]["name"] == TOOL for b in bodies)
    summary = the_summary_under_the_host_run(telemetry)
    wire = {
        # A field the row never counted is not written: zero.
        field: attrs(summary).get(names.row_attribute("invariant-violation", "wire", field), 0)
        for field in ("checked", "findings", "unreachable")
    }
    assert wire == {"checked": 2, "findings": 0, "unreachable": 0}
    nothing_doubled(telemetry, requests=2, tool_calls=1)


# ── structured output, a run that raises, and off ───────────────────────


class Verdict(BaseModel):
    host_group: str
    luns: int


def test_structured_output_reaches_the_claim_seam_typed(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    telemetry.configure()
    claimed: list[tuple[str | None, object]] = []
    original = RunJudge.claim

    def spy(self: RunJudge, text: str | None, output: object = None) -> list[ci.Finding]:
        claimed.append((text, output))
        return original(self, text, output)

    monkeypatch.setattr(RunJudge, "claim", spy)
    script = Script.of(
        [pm.ToolCallPart("final_result", {"host_group": "vdi-a", "luns": 2}, tool_call_id="out")]
    )
    agent = hosted(Agent(script.model(), output_type=Verdict), telemetry)
    result = agent.run_sync("How many LUNs?")
    assert result.output == Verdict(host_group="vdi-a", luns=2)
    ((said, output),) = claimed
    assert output is result.output
    assert said is not None and json.loads(said) == {"host_group": "vdi-a", "luns": 2}
    summary = the_summary_under_the_host_run(telemetry)
    assert attrs(summary)[names.RUN_OUTCOME] == "ok"


def test_a_run_that_raises_midway_keeps_its_exception_and_its_one_summary(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="enforce")
    script = Script.of(call("explode", "c1"), text("never"))
    agent: Agent[None, str] = hosted(Agent(script.model(), name="fragile"), telemetry)

    @agent.tool_plain
    def explode() -> str:
        raise ValueError("the storage array is down")

    with pytest.raises(ValueError, match="the storage array is down"):
        agent.run_sync("go")
    summary = the_summary_under_the_host_run(telemetry)
    assert attrs(summary)[names.RUN_OUTCOME] == "error"


# What pydantic-ai's messages say of the clock: when a part or a response was made, when its request
# was sent (2.78 added it) and how long the response took. Nothing else may differ between two runs.
_CLOCK_FIELDS = frozenset({"timestamp", "request_timestamp", "duration"})


def _stable(messages: list[list[pm.ModelMessage]]) -> list[Any]:
    """The messages as JSON, without the clock (the only thing two identical runs may differ in)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in _CLOCK_FIELDS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return [strip(json.loads(pm.ModelMessagesTypeAdapter.dump_json(m))) for m in messages]


def test_with_every_dial_off_the_model_receives_exactly_what_it_receives_without_the_library(
    telemetry: Telemetry,
) -> None:
    def one_run() -> tuple[Script, Any]:
        script = lun_script()
        agent = lun_agent("ci.tool below", script, telemetry)
        result = agent.run_sync("Map host group vdi-a.", run_id="run-1", conversation_id="conv-1")
        return script, result

    ci.shutdown()
    assert not integration.armed()  # the library is not in this run
    bare, bare_result = one_run()
    telemetry.configure()
    assert integration.armed()  # armed by setup() alone
    armed, armed_result = one_run()
    assert _stable(armed.received) == _stable(bare.received)
    assert armed.tools == bare.tools
    assert armed_result.output == bare_result.output
    assert returns(armed.received[1])[0].content is LUN_ROWS
    assert len(telemetry.summaries()) == 1


# ── setup(instrument=...) ────────────────────────────────────────────────


class TestInstrumentOption:
    def test_pydantic_ai_is_in_the_table(self) -> None:
        assert "pydantic_ai" in supported_names()

    @pytest.mark.parametrize("bad", ["pydantic-ai", ["pydantic_ai", "autogen"], 3])
    def test_a_bad_value_is_refused_naming_the_option_and_the_supported_names(
        self, telemetry: Telemetry, bad: Any
    ) -> None:
        with pytest.raises(ci.SetupError) as refused:
            telemetry.configure(instrument=bad)
        assert "instrument" in str(refused.value)
        assert all(repr(name) in str(refused.value) for name in supported_names())

    def test_off_leaves_pydantic_ai_alone_and_a_list_arms_it(self, telemetry: Telemetry) -> None:
        original = Agent.iter
        telemetry.configure(instrument=())
        assert Agent.iter is original
        script = lun_script()
        lun_agent("declare_tool", script, telemetry).run_sync("Map host group vdi-a.")
        assert telemetry.summaries() == []
        telemetry.configure(instrument=["pydantic_ai"])
        assert Agent.iter is not original
        ci.shutdown()
        assert Agent.iter is original

    def test_an_integration_that_fails_to_arm_is_logged_once_and_never_breaks_setup(
        self, telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
    ) -> None:
        import types

        import context_integrity.integrations as table

        broken = types.ModuleType("broken_framework_integration")

        def refuse() -> None:
            raise RuntimeError("cannot patch")

        broken.instrument_all = refuse  # type: ignore[attr-defined]
        broken.uninstrument_all = lambda: None  # type: ignore[attr-defined]
        monkeypatch.setitem(sys.modules, "broken_framework_integration", broken)
        monkeypatch.setattr(
            table, "SUPPORTED", (*table.SUPPORTED, ("broken", "broken_framework_integration"))
        )
        with caplog.at_level(logging.ERROR, logger="context_integrity"):
            telemetry.configure()
            telemetry.configure(check_column_types="warn")
        assert len([r for r in caplog.records if "could not instrument broken" in r.getMessage()]) == 1
        assert integration.armed()  # the others armed all the same


def test_a_proxy_provider_is_seen_through_to_the_sdk_provider(telemetry: Telemetry) -> None:
    class Proxy:
        provider = telemetry.provider

    assert sdk_provider_of(Proxy()) is telemetry.provider
    assert sdk_provider_of(telemetry.provider) is telemetry.provider
    assert sdk_provider_of(object()) is None


# ── coexistence: Logfire configured (its own process: Logfire owns the global provider) ──

LOGFIRE_RUN = r"""
import json, logging
import logfire
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic_ai import Agent
from pydantic_ai import messages as pm
from pydantic_ai.models.function import FunctionModel
import context_integrity as ci

exporter = InMemorySpanExporter()
logfire.configure(send_to_logfire=False, console=False, inspect_arguments=False, additional_span_processors=[SimpleSpanProcessor(exporter)])
logfire.instrument_pydantic_ai()
state = ci.setup(check_column_types="warn")

def model(messages, info):
    if len(messages) == 1:
        return pm.ModelResponse(parts=[pm.ToolCallPart("host_group_mappings", {"host_group": "vdi-a"}, tool_call_id="call_lun")])
    return pm.ModelResponse(parts=[pm.TextPart("done")])

agent = Agent(FunctionModel(model), name="storage")

@agent.tool_plain
@ci.tool(result_columns={"logical_unit_number": "number", "host_group": "string"})
def host_group_mappings(host_group: str) -> list:
    return [{"host_group": "vdi-a", "logical_unit_number": ""}, {"host_group": "vdi-a", "logical_unit_number": 3}]

with logfire.span("request handler"):
    agent.run_sync("Map host group vdi-a.")
ci.flush()
print(json.dumps({
    "destination": state.destination,
    "spans": [
        {
            "name": s.name,
            "trace": s.context.trace_id,
            "id": s.context.span_id,
            "parent": s.parent.span_id if s.parent else None,
            "scope": s.instrumentation_scope.name,
            "operation": (s.attributes or {}).get("gen_ai.operation.name"),
            "events": [e.name for e in s.events],
        }
        for s in exporter.get_finished_spans()
    ],
}))
"""


def test_with_logfire_configured_one_trace_nothing_doubled_findings_on_adopted_spans() -> None:
    if importlib.util.find_spec("logfire") is None and not os.environ.get("CI"):
        pytest.skip("logfire is not installed")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    done = subprocess.run(
        [sys.executable, "-c", LOGFIRE_RUN], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    spans = seen["spans"]
    assert "proxy" in seen["destination"]
    assert len({s["trace"] for s in spans}) == 1
    by_op: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_op.setdefault(span["operation"], []).append(span)
    assert len(by_op[names.OPERATION_INVOKE_AGENT]) == 1
    assert len(by_op[names.OPERATION_CHAT]) == 2
    assert len(by_op[names.OPERATION_EXECUTE_TOOL]) == 1
    ours = names.INSTRUMENTATION_NAME
    assert all(s["scope"] != ours for op in by_op.values() for s in op if s["operation"])
    (tool,) = by_op[names.OPERATION_EXECUTE_TOOL]
    assert tool["events"] == [names.FINDING_EVENT]
    (run,) = by_op[names.OPERATION_INVOKE_AGENT]
    (summary,) = [s for s in spans if s["name"] == names.DISPOSITION_SPAN]
    assert summary["parent"] == run["id"]


def test_with_openinference_nothing_doubled_and_findings_on_the_spans_it_maps(telemetry: Telemetry) -> None:
    if importlib.util.find_spec("openinference.instrumentation.pydantic_ai") is None and not os.environ.get(
        "CI"
    ):
        pytest.skip("openinference-instrumentation-pydantic-ai is not installed")
    from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor

    telemetry.provider.add_span_processor(OpenInferenceSpanProcessor())
    telemetry.configure(check_column_types="warn")
    lun_agent("ci.tool below", lun_script(), telemetry).run_sync("Map host group vdi-a.")
    nothing_doubled(telemetry, requests=2, tool_calls=1)
    ((span, finding),) = all_findings(telemetry)
    assert attrs(span)[names.OPENINFERENCE_SPAN_KIND] == names.OPENINFERENCE_KIND_TOOL
    assert finding[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
    the_summary_under_the_host_run(telemetry)


# ── nested runs: an agent run inside a tool is its own run ──────────────


def test_an_agent_run_inside_a_tool_is_its_own_run_with_its_own_summary(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="warn")
    inner_script = lun_script()
    inner = lun_agent("metadata", inner_script, telemetry)
    outer_script = Script.of(call("ask_storage", "c-outer", question="map vdi-a"), text("asked"))
    outer: Agent[None, str] = hosted(Agent(outer_script.model(), name="triage"), telemetry)

    @outer.tool_plain
    async def ask_storage(question: str) -> str:
        return (await inner.run(question)).output

    outer.run_sync("Ask storage about vdi-a.")
    runs = {attrs(s)[names.GEN_AI_AGENT_NAME]: s for s in operation(telemetry, names.OPERATION_INVOKE_AGENT)}
    assert set(runs) == {"triage", "storage"}
    parents = sorted(s.parent.span_id for s in telemetry.summaries() if s.parent is not None)
    assert parents == sorted(r.context.span_id for r in runs.values() if r.context is not None)
    ((span, _),) = all_findings(telemetry)
    assert span.parent is not None and runs["storage"].context is not None
    assert span.parent.span_id == runs["storage"].context.span_id


@pytest.fixture(autouse=True)
def _disarmed_after() -> Iterator[None]:
    yield
    integration.uninstrument_all()
