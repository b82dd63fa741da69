"""LangChain v1 ``create_agent``, real and offline, judged by the integration at every seam.

The laws under test, each with a scripted chat model that records every message list it received:
(a) the LUN rows: warn hands the model the rows and files the finding on the tool's span; enforce
    hands the model the refusal sentence as the tool's result, and no rows;
(b) one run per agent invocation: one ``invoke_agent`` span, one summary under it, one trace,
    whatever raised, and a ``ci.run`` written around the agent doubles nothing;
(c) the grounding checks judge what the model received: the self-reference case through a
    window an outer middleware applies, and dangling-reference through trimming;
(d) declarations by ``BaseTool.metadata``, by name and by ``@ci.tool`` in either order, under
    the LangChain tool name; a bad one raises at ``create_agent``; one not offered is warned about;
(e) arming is by ``create_agent`` itself: this module's ``create_agent``, imported before
    ``instrument_all()``, is covered; an agent compiled before it is not;
(f) with every dial off, the model receives the same messages and the agent returns the same
    result as without the library.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import os
import typing
from collections.abc import AsyncGenerator, Generator, Iterator
from typing import Any, cast

import pytest
from tests.conftest import Telemetry, run_docs_example

try:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware, InputAgentState
    from langchain_core.callbacks import CallbackManagerForToolRun
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.outputs import ChatResult
    from langchain_core.runnables import RunnableConfig
    from langchain_core.tools import BaseTool, tool
except ImportError:  # pragma: no cover - CI installs the extra
    if os.environ.get("CI"):
        raise
    pytest.skip("langchain is not installed", allow_module_level=True)

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic import BaseModel, Field

import context_integrity as ci
from context_integrity.findings import CHECKED_PASS, Encounter
from context_integrity.integrations import SUPPORTED, _langchain_runs
from context_integrity.integrations import _langchain_frames as frames
from context_integrity.integrations import _langchain_tools as tool_part
from context_integrity.integrations import langchain as integration
from context_integrity.judge.registry import REGISTRY, RegisteredCheck
from context_integrity.judge.seams import unjudged_refusal
from context_integrity.ledger import CheckerDeadError, CheckId
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.setup import CONTRACTS

LUN_ROWS: list[dict[str, Any]] = [{"logical_unit_number": ""}, {"logical_unit_number": 3}]
LUN_COLUMNS = {"logical_unit_number": "number"}
QUESTION = [{"role": "user", "content": "why can't vdi-a see its boot LUN?"}]


class ScriptedModel(FakeMessagesListChatModel):
    """The fake chat model with ``bind_tools`` (create_agent binds the tools it offers)."""

    received: list[list[BaseMessage]] = Field(default_factory=list)

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=list(tools), tool_choice=tool_choice, **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.received.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kw)


def scripted(*responses: AIMessage) -> ScriptedModel:
    return ScriptedModel(responses=list(responses))


def call(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    return AIMessage(
        content="", tool_calls=[{"name": name, "args": args, "id": call_id, "type": "tool_call"}]
    )


def lun_tool() -> Any:
    @tool("lun_mappings")
    def mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return LUN_ROWS

    mappings.metadata = {"context_integrity": {"result_columns": LUN_COLUMNS}}
    return mappings


def carries_a_lun_row(streamed: object) -> bool:
    """Whether what was streamed holds LUN_ROWS' second row, as JSON text or as a Python value."""
    text = repr(streamed)
    return '"logical_unit_number": 3' in text or "'logical_unit_number': 3" in text


def tool_messages(received: list[BaseMessage]) -> list[ToolMessage]:
    return [m for m in received if isinstance(m, ToolMessage)]


def events(span: ReadableSpan) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]


def kinds(span: ReadableSpan) -> list[Any]:
    return [e[names.FINDING_KIND] for e in events(span)]


def one_run(telemetry: Telemetry, agent: str = "agent") -> tuple[ReadableSpan, ReadableSpan]:
    """The run's ``invoke_agent`` span and its one summary, which is its direct child."""
    (run_span,) = telemetry.named(names.run_span_name(agent))
    (summary,) = telemetry.summaries()
    assert summary.parent is not None and run_span.context is not None
    assert summary.parent.span_id == run_span.context.span_id
    traces = {s.context.trace_id for s in telemetry.finished() if s.context is not None}
    assert traces == {run_span.context.trace_id}, "one trace per run"
    return run_span, summary


@pytest.fixture
def armed(telemetry: Telemetry) -> Iterator[Telemetry]:
    integration.instrument_all()
    yield telemetry
    integration.uninstrument_all()


def test_the_integration_is_in_the_table_setup_reads() -> None:
    assert ("langchain", integration.__name__) in SUPPORTED


def test_the_docs_example_is_complete_and_the_model_reads_the_refusal(
    telemetry: Telemetry, capsys: pytest.CaptureFixture[str]
) -> None:
    """The LangChain section's first example runs as it stands, offline: its setup() alone arms
    create_agent, the tool's result the model reads is the refusal, not the rows, and the spans
    are the tree the section draws."""
    scope = run_docs_example("frameworks/langchain.md", telemetry)
    (printed,) = capsys.readouterr().out.splitlines()
    assert printed.startswith("Result rejected: tool 'lun_mappings'"), printed
    (delivered,) = [m for m in scope["state"]["messages"] if isinstance(m, ToolMessage)]
    assert delivered.content == printed and delivered.tool_call_id == "c1"
    assert "logical_unit_number': ''" not in printed
    assert sorted(s.name for s in telemetry.finished()) == sorted(
        [
            "invoke_agent triage",
            "chat ScriptedModel",
            "chat ScriptedModel",
            "execute_tool lun_mappings",
            names.DISPOSITION_SPAN,
        ]
    )


def test_setup_alone_arms_create_agent_and_shutdown_disarms_it(telemetry: Telemetry) -> None:
    """No instrument_all(), no middleware passed, no ci.run: ``ci.setup()`` is the one call."""
    telemetry.configure(check_column_types="warn")
    model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
    create_agent(model, tools=[lun_tool()]).invoke({"messages": QUESTION})
    assert kinds(telemetry.one(names.tool_span_name("lun_mappings"))) == ["column-type-mismatch"]
    one_run(telemetry)
    ci.shutdown()
    telemetry.spans.clear()
    model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
    create_agent(model, tools=[lun_tool()]).invoke({"messages": QUESTION})
    assert telemetry.summaries() == []


class TestLunRows:
    def test_warn_hands_over_the_rows_and_files_the_finding_on_the_tool_span(self, armed: Telemetry) -> None:
        armed.configure(check_column_types="warn")
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
        result = create_agent(model, tools=[lun_tool()]).invoke({"messages": QUESTION})
        (delivered,) = tool_messages(model.received[1])
        assert json.loads(str(delivered.content)) == LUN_ROWS
        assert result["messages"][-1].content == "done"
        span = armed.one(names.tool_span_name("lun_mappings"))
        assert kinds(span) == ["column-type-mismatch"]
        assert dict(span.attributes or {})[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
        assert span.status.status_code is not StatusCode.ERROR
        run_span, summary = one_run(armed)
        assert span.parent is not None and run_span.context is not None
        assert span.parent.span_id == run_span.context.span_id
        assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "ok"

    @pytest.mark.parametrize("mode", ["sync", "async"])
    def test_enforce_hands_the_model_the_refusal_as_the_tool_result_and_no_rows(
        self, armed: Telemetry, mode: str
    ) -> None:
        armed.configure(check_column_types="enforce")
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
        agent = create_agent(model, tools=[lun_tool()])
        inputs: InputAgentState = {"messages": QUESTION}
        result = agent.invoke(inputs) if mode == "sync" else asyncio.run(agent.ainvoke(inputs))
        (delivered,) = tool_messages(model.received[1])
        assert delivered.status == "success", "a refusal is the tool's result, not an error to retry"
        assert delivered.tool_call_id == "call_lun"
        assert "No data was returned" in str(delivered.content)
        assert '"logical_unit_number": 3' not in str(delivered.content)
        assert len(model.received) == 2, "the model was not invited to call the tool again"
        assert result["messages"][-1].content == "done"
        span = armed.one(names.tool_span_name("lun_mappings"))
        assert span.status.status_code is StatusCode.ERROR
        assert kinds(span) == ["column-type-mismatch"]
        one_run(armed)

    @pytest.mark.parametrize("stream_mode", ["values", "updates", "messages"])
    @pytest.mark.parametrize("mode", ["sync", "async"])
    def test_a_streamed_run_is_judged_as_an_invoked_one(
        self, armed: Telemetry, mode: str, stream_mode: typing.Literal["values", "updates", "messages"]
    ) -> None:
        """``stream`` and ``astream``, in each mode an application streams in: the model reads the
        refusal, the stream carries no row, and the run is one trace with its one summary."""
        armed.configure(check_column_types="enforce")
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
        agent = create_agent(model, tools=[lun_tool()])
        inputs: InputAgentState = {"messages": QUESTION}

        async def collect() -> list[Any]:
            return [chunk async for chunk in agent.astream(inputs, stream_mode=stream_mode)]

        chunks = (
            list(agent.stream(inputs, stream_mode=stream_mode)) if mode == "sync" else asyncio.run(collect())
        )
        assert chunks, "the stream yielded"
        (delivered,) = tool_messages(model.received[1])
        assert "No data was returned" in str(delivered.content)
        assert not carries_a_lun_row(chunks), "no row reached the stream"
        assert kinds(armed.one(names.tool_span_name("lun_mappings"))) == ["column-type-mismatch"]
        _, summary = one_run(armed)
        assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "ok"

    def test_astream_events_is_judged_as_an_invoked_run(self, armed: Telemetry) -> None:
        """``astream_events`` (how a UI streams tokens and tool activity): the model reads the
        refusal, no event carries a row, one run, one summary."""
        armed.configure(check_column_types="enforce")
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
        agent = create_agent(model, tools=[lun_tool()])
        inputs: InputAgentState = {"messages": QUESTION}

        async def collect() -> list[Any]:
            return [event async for event in agent.astream_events(inputs, version="v2")]

        events_seen = asyncio.run(collect())
        assert any(e["event"] == "on_tool_end" for e in events_seen)
        (delivered,) = tool_messages(model.received[1])
        assert "No data was returned" in str(delivered.content)
        assert not carries_a_lun_row(events_seen), "no row reached an event"
        _, summary = one_run(armed)
        assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "ok"

    @pytest.mark.parametrize("mode", ["sync", "async"])
    def test_a_stream_the_caller_abandons_midway_still_ends_its_run_with_one_summary(
        self, armed: Telemetry, mode: str
    ) -> None:
        """A client that goes away after the first chunk (the generator is closed): the run is
        closed, not left open for the next invocation to inherit."""
        armed.configure(check_column_types="warn")
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
        agent = create_agent(model, tools=[lun_tool()])
        inputs: InputAgentState = {"messages": QUESTION}
        if mode == "sync":
            # LangGraph's stream is a generator (typed as an iterator): closing it is what a
            # framework serving the stream does when its client disconnects.
            stream = cast(Generator[Any, None, None], agent.stream(inputs, stream_mode="updates"))
            next(stream)
            stream.close()
        else:

            async def first_only() -> None:
                stream = cast(AsyncGenerator[Any, None], agent.astream(inputs, stream_mode="updates"))
                await anext(stream)
                await stream.aclose()

            asyncio.run(first_only())
        assert len(model.received) == 1, "the run stopped after its first step"
        run_span, summary = one_run(armed)
        # The caller stopped the run (LangGraph ends it with the GeneratorExit of the closed
        # stream): cancelled, as a cancelled task is, not an error of the agent's.
        assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "cancelled"
        assert dict(run_span.attributes or {})[names.ERROR_TYPE] == "GeneratorExit"
        assert not _langchain_runs._runs, "no run is held open"
        # The next invocation is a run of its own, not a child of the abandoned one.
        agent.invoke(inputs)
        assert len(armed.summaries()) == 2
        runs = armed.named(names.run_span_name("agent"))
        assert len(runs) == 2 and all(r.parent is None for r in runs)

    @pytest.mark.parametrize("mode", ["warn", "enforce"])
    def test_a_content_and_artifact_tool_is_judged_on_its_artifact(self, armed: Telemetry, mode: str) -> None:
        """``response_format="content_and_artifact"``: the model reads the content, the rows travel
        as the artifact. The artifact is what is judged; enforce replaces both, so no row reaches
        LangChain's message either way."""
        armed.configure(check_column_types=mode)

        @tool("lun_mappings", response_format="content_and_artifact")
        def mappings(host_group: str) -> tuple[str, list[dict[str, Any]]]:
            """The LUN mappings of a host group."""
            return "2 mappings", LUN_ROWS

        mappings.metadata = {"context_integrity": {"result_columns": LUN_COLUMNS}}
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
        result = create_agent(model, tools=[mappings]).invoke({"messages": QUESTION})
        (delivered,) = tool_messages(model.received[1])
        (kept,) = [m for m in result["messages"] if isinstance(m, ToolMessage)]
        span = armed.one(names.tool_span_name("lun_mappings"))
        assert kinds(span) == ["column-type-mismatch"]
        if mode == "warn":
            assert delivered.content == "2 mappings" and kept.artifact is LUN_ROWS
        else:
            assert str(delivered.content).startswith("Result rejected") and kept.artifact is None
            assert span.status.status_code is StatusCode.ERROR
        one_run(armed)

    def test_parallel_calls_of_one_response_are_each_judged_under_their_own_call_id(
        self, armed: Telemetry
    ) -> None:
        armed.configure(check_column_types="warn")
        both = AIMessage(
            content="",
            tool_calls=[
                {"name": "lun_mappings", "args": {"host_group": g}, "id": f"call_{g}", "type": "tool_call"}
                for g in ("vdi-a", "vdi-b")
            ],
        )
        create_agent(scripted(both, AIMessage(content="done")), tools=[lun_tool()]).invoke(
            {"messages": QUESTION}
        )
        spans = armed.named(names.tool_span_name("lun_mappings"))
        ids = sorted(cast(str, dict(s.attributes or {})[names.GEN_AI_TOOL_CALL_ID]) for s in spans)
        assert ids == ["call_vdi-a", "call_vdi-b"]
        # One event per defect per run: the second sighting is counted, not filed again.
        assert sorted(len(kinds(s)) for s in spans) == [0, 1]
        _, summary = one_run(armed)
        checked = names.row_attribute("column-type-mismatch", "write", "checked")
        assert dict(summary.attributes or {})[checked] == 2


class TestDeclarations:
    def test_a_tool_declared_by_name_under_its_langchain_name_is_judged(self, armed: Telemetry) -> None:
        armed.configure(check_column_types="enforce")
        ci.declare_tool("list_luns", result_columns=LUN_COLUMNS)

        @tool("list_luns")
        def luns() -> list[dict[str, Any]]:
            """LUNs."""
            return LUN_ROWS

        model = scripted(call("list_luns", {}, "c1"), AIMessage(content="done"))
        create_agent(model, tools=[luns]).invoke({"messages": QUESTION})
        (delivered,) = tool_messages(model.received[1])
        assert "No data was returned" in str(delivered.content)

    def test_ci_tool_inside_a_renamed_tool_is_judged_once_under_the_langchain_name(
        self, armed: Telemetry
    ) -> None:
        armed.configure(check_column_types="warn")

        @tool("lun_rows")
        @ci.tool(result_columns=LUN_COLUMNS)
        def rows() -> list[dict[str, Any]]:
            """LUNs."""
            return LUN_ROWS

        model = scripted(call("lun_rows", {}, "c1"), AIMessage(content="done"))
        create_agent(model, tools=[rows]).invoke({"messages": QUESTION})
        assert [s.name for s in armed.finished() if s.name.startswith(names.OPERATION_EXECUTE_TOOL)] == [
            names.tool_span_name("lun_rows")
        ]
        assert kinds(armed.one(names.tool_span_name("lun_rows"))) == ["column-type-mismatch"]

    def test_ci_tool_above_tool_declares_under_the_langchain_name_and_returns_the_tool(
        self, armed: Telemetry
    ) -> None:
        armed.configure(check_column_types="enforce")

        @ci.tool(result_columns=LUN_COLUMNS)
        @tool("lun_table")
        def table() -> list[dict[str, Any]]:
            """LUNs."""
            return LUN_ROWS

        assert isinstance(table, BaseTool) and table.name == "lun_table", (
            "LangChain's tool object is returned as it is"
        )

        @ci.tool(once_per_run=True)  # over a LangChain tool object, as above
        @tool("open_ticket")
        def ticket() -> str:
            """Opens a ticket."""
            return "T-1"

        contract = CONTRACTS.get("open_ticket")
        assert contract is not None and contract.once_per_run
        model = scripted(call("lun_table", {}, "c1"), AIMessage(content="done"))
        create_agent(model, tools=[table]).invoke({"messages": QUESTION})
        (delivered,) = tool_messages(model.received[1])
        assert "No data was returned" in str(delivered.content)

    def test_a_declared_tool_the_agent_does_not_offer_is_warned_about_once_per_run(
        self, armed: Telemetry, caplog: pytest.LogCaptureFixture
    ) -> None:
        armed.configure(check_column_types="warn")
        ci.declare_tool("lun_mapings", result_columns=LUN_COLUMNS)
        agent = create_agent(
            scripted(call("lun_mappings", {"host_group": "a"}, "c1"), AIMessage(content="done")),
            tools=[lun_tool()],
        )
        with caplog.at_level("WARNING", logger="context_integrity"):
            agent.invoke({"messages": QUESTION})
        warned = [r for r in caplog.records if "not offered" in r.getMessage()]
        assert len(warned) == 1 and "'lun_mapings'" in warned[0].getMessage()
        missing, offered = warned[0].getMessage().split("(offered:")
        # The offered name is not listed as missing: it is suggested beside the typo.
        assert missing.endswith(
            "tool(s) 'lun_mapings' (did you mean 'lun_mappings'?) are not offered by LangChain agent 'agent' "
        )
        assert "'lun_mappings'" in offered

    def test_a_bad_metadata_declaration_raises_at_create_agent_naming_tool_and_field(
        self, armed: Telemetry
    ) -> None:
        bad = lun_tool()
        bad.metadata = {"context_integrity": {"result_colums": LUN_COLUMNS}}
        with pytest.raises(ci.DeclarationError, match=r"lun_mappings.*result_colums"):
            create_agent(scripted(AIMessage(content="x")), tools=[bad])

    def test_a_bad_metadata_declaration_read_at_run_time_is_logged_once_and_the_run_goes_on(
        self, telemetry: Telemetry, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The middleware given by hand to an agent made while LangChain was not armed: the tool's
        metadata is first read when a run opens, where raising would break the run. It is logged
        naming the tool, the field and the fix, once however many runs read it; the rows go
        through unjudged."""
        telemetry.configure(check_column_types="enforce", instrument=())
        bad = lun_tool()
        bad.metadata = {"context_integrity": {"result_colums": LUN_COLUMNS}}
        with caplog.at_level(logging.WARNING, logger="context_integrity"):
            for _ in range(3):
                model = scripted(
                    call("lun_mappings", {"host_group": "vdi-a"}, "c1"), AIMessage(content="done")
                )
                agent = create_agent(
                    model, tools=[bad], middleware=[integration.ContextIntegrityMiddleware()]
                )
                assert agent.invoke({"messages": QUESTION})["messages"][-1].content == "done"
                (delivered,) = tool_messages(model.received[1])
                assert '"logical_unit_number": 3' in str(delivered.content), "handed over unjudged"
        told = [r.getMessage() for r in caplog.records if "lun_mappings" in r.getMessage()]
        assert len(told) == 1, told
        assert "result_colums" in told[0] and "declare_tool" in told[0] and "not judged" in told[0]
        assert len(telemetry.summaries()) == 3
        assert [e for s in telemetry.finished() for e in events(s)] == []


class TestRun:
    @pytest.mark.parametrize("mode", ["sync", "async"])
    def test_a_raising_tool_raises_unchanged_and_the_run_still_has_its_one_summary(
        self, armed: Telemetry, mode: str
    ) -> None:
        armed.configure(check_column_types="warn")

        @tool
        def fragile(host_group: str) -> str:
            """Raises."""
            raise ValueError("array unreachable")

        agent = create_agent(scripted(call("fragile", {"host_group": "a"}, "c1")), tools=[fragile])
        with pytest.raises(ValueError, match="array unreachable"):
            if mode == "sync":
                agent.invoke({"messages": QUESTION})
            else:
                asyncio.run(agent.ainvoke({"messages": QUESTION}))
        _, summary = one_run(armed)
        assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "error"
        assert armed.one(names.tool_span_name("fragile")).status.status_code is StatusCode.ERROR

    def test_a_model_that_raises_ends_its_chat_span_in_error_and_the_run_with_one_summary(
        self, armed: Telemetry
    ) -> None:
        armed.configure(check_column_types="warn")

        class Unreachable(ScriptedModel):
            def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
                if self.received:
                    raise ConnectionError("provider unreachable")
                return super()._generate(messages, *args, **kwargs)

        model = Unreachable(responses=[call("lun_mappings", {"host_group": "vdi-a"}, "c1")])
        with pytest.raises(ConnectionError, match="provider unreachable"):
            create_agent(model, tools=[lun_tool()]).invoke({"messages": QUESTION})
        _, summary = one_run(armed)
        assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "error"
        chats = [s for s in armed.finished() if s.name.startswith(names.OPERATION_CHAT)]
        assert [s.status.status_code for s in chats] == [StatusCode.UNSET, StatusCode.ERROR]

    def test_a_ci_run_written_around_the_agent_doubles_nothing(self, armed: Telemetry) -> None:
        armed.configure(check_column_types="warn")
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "c1"), AIMessage(content="done"))
        agent = create_agent(model, tools=[lun_tool()])
        with ci.run("q", agent_name="triage") as outer:
            agent.invoke({"messages": QUESTION})
        run_span, _ = one_run(armed, "triage")
        assert [s.name for s in armed.finished()].count(names.run_span_name("agent")) == 0
        assert [f.kind for f in outer.findings] == ["column-type-mismatch"]
        tool_span = armed.one(names.tool_span_name("lun_mappings"))
        assert tool_span.parent is not None and run_span.context is not None
        assert tool_span.parent.span_id == run_span.context.span_id

    def test_an_agent_called_as_a_tool_is_its_own_run_under_that_tool_span(self, armed: Telemetry) -> None:
        armed.configure(check_column_types="warn")
        inner = create_agent(
            scripted(call("lun_mappings", {"host_group": "vdi-a"}, "c2"), AIMessage(content="inner done")),
            tools=[lun_tool()],
            name="storage",
        )

        @tool
        def ask_storage(question: str) -> str:
            """Ask the storage agent."""
            return str(
                inner.invoke({"messages": [{"role": "user", "content": question}]})["messages"][-1].content
            )

        outer = create_agent(
            scripted(call("ask_storage", {"question": "luns?"}, "c1"), AIMessage(content="done")),
            tools=[ask_storage],
            name="triage",
        )
        outer.invoke({"messages": QUESTION})
        assert len(armed.summaries()) == 2
        (inner_run,) = armed.named(names.run_span_name("storage"))
        ask = armed.one(names.tool_span_name("ask_storage"))
        assert inner_run.parent is not None and ask.context is not None
        assert inner_run.parent.span_id == ask.context.span_id
        assert len({s.context.trace_id for s in armed.finished() if s.context is not None}) == 1

    def test_a_run_parked_at_an_interrupt_is_closed_and_its_resumption_is_a_judged_run_of_its_own(
        self, armed: Telemetry
    ) -> None:
        from langchain.agents.middleware import HumanInTheLoopMiddleware
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.types import Command

        armed.configure(check_column_types="warn")
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "c1"), AIMessage(content="done"))
        agent = create_agent(
            model,
            tools=[lun_tool()],
            middleware=[HumanInTheLoopMiddleware(interrupt_on={"lun_mappings": True})],
            checkpointer=InMemorySaver(),
        )
        thread: RunnableConfig = {"configurable": {"thread_id": "t1"}}
        parked = agent.invoke({"messages": QUESTION}, thread)
        assert "__interrupt__" in parked
        one_run(armed)  # the parked invocation: its own summary, no tool run yet
        armed.spans.clear()
        resumed = agent.invoke(Command(resume={"decisions": [{"type": "approve"}]}), thread)
        assert resumed["messages"][-1].content == "done"
        one_run(armed)
        assert kinds(armed.one(names.tool_span_name("lun_mappings"))) == ["column-type-mismatch"]

    def test_uninstrument_all_gives_create_agent_back_its_own_code(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        integration.instrument_all()
        integration.uninstrument_all()
        create_agent(scripted(AIMessage(content="hi")), tools=[lun_tool()]).invoke({"messages": QUESTION})
        assert telemetry.summaries() == []

    def test_an_agent_created_before_instrumenting_is_not_covered(self, telemetry: Telemetry) -> None:
        telemetry.configure(check_column_types="warn")
        integration.uninstrument_all()  # whatever setup() armed: this agent is compiled unarmed
        before = create_agent(scripted(AIMessage(content="hi")), tools=[lun_tool()])
        integration.instrument_all()
        try:
            before.invoke({"messages": QUESTION})
        finally:
            integration.uninstrument_all()
        assert telemetry.summaries() == []


class TestGrounding:
    def test_self_reference_through_the_window_an_outer_middleware_applies(self, armed: Telemetry) -> None:
        armed.configure()
        ci.declare_tool("machine_backups", arguments_from=["list_machines"])

        @tool
        def machine_backups(machine: str) -> str:
            """Backups of one machine."""
            return "no backups found"

        class Window(AgentMiddleware[Any, Any, Any]):
            """Keeps the last two messages: the user's turn with the true id falls out."""

            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                return handler(request.override(messages=request.messages[-2:]))

        history = [
            HumanMessage("Machine srv-0042-callisto runs job bkp-4417-ganymede-tier2; is it protected?"),
            AIMessage("The job bkp-4417-ganymede-tier2 finished at 02:00."),
            HumanMessage("And that machine, does it have backups?"),
        ]
        model = scripted(
            call("machine_backups", {"machine": "4417-ganymede"}, "call_m"), AIMessage(content="none")
        )
        create_agent(model, tools=[machine_backups], middleware=[Window()]).invoke({"messages": history})
        assert [type(m).__name__ for m in model.received[0]] == ["AIMessage", "HumanMessage"]
        chats = [s for s in armed.finished() if s.name.startswith(names.OPERATION_CHAT)]
        found = [e for s in chats for e in events(s)]
        assert [e[names.FINDING_KIND] for e in found] == ["unsupported-argument"]
        assert found[0][names.GEN_AI_TOOL_CALL_ID] == "call_m"

    def test_dangling_reference_sees_the_trimming_an_outer_middleware_does(self, armed: Telemetry) -> None:
        armed.configure()
        ci.declare_tool("host_paths", arguments_from=["list_hosts"])

        @tool
        def list_hosts() -> str:
            """Hosts."""
            return "host-7f3a"

        @tool
        def host_paths(host: str) -> str:
            """Paths of one host."""
            return "2 paths"

        class Trim(AgentMiddleware[Any, Any, Any]):
            """From the third request on, drops list_hosts' result (a context window)."""

            def wrap_model_call(self, request: Any, handler: Any) -> Any:
                if len(request.messages) > 3:
                    kept = [m for m in request.messages if getattr(m, "name", None) != "list_hosts"]
                    request = request.override(messages=kept)
                return handler(request)

        model = scripted(
            call("list_hosts", {}, "c1"),
            call("host_paths", {"host": "host-7f3a"}, "c2"),
            AIMessage(content="ok"),
        )
        create_agent(model, tools=[list_hosts, host_paths], middleware=[Trim()]).invoke(
            {"messages": QUESTION}
        )
        assert "host-7f3a" not in " ".join(str(m.content) for m in tool_messages(model.received[2]))
        chats = [s for s in armed.finished() if s.name.startswith(names.OPERATION_CHAT)]
        assert [kinds(s) for s in chats] == [[], [], ["dangling-reference"]]
        one_run(armed)


class Weather(BaseModel):
    city: str
    celsius: float


def test_structured_output_is_the_claim_not_a_tool_call(armed: Telemetry) -> None:
    armed.configure(capture_content=True)
    model = scripted(call("Weather", {"city": "Oslo", "celsius": -3.5}, "c_out"))
    result = create_agent(model, tools=[lun_tool()], response_format=Weather).invoke({"messages": QUESTION})
    assert result["structured_response"] == Weather(city="Oslo", celsius=-3.5)
    assert not [s for s in armed.finished() if s.name.startswith(names.OPERATION_EXECUTE_TOOL)]
    run_span, _ = one_run(armed)
    output = json.loads(str(dict(run_span.attributes or {})[names.GEN_AI_OUTPUT_MESSAGES]))
    # One answer, in the GenAI conventions' parts (telemetry.schema.content).
    assert json.loads(output[0]["parts"][0]["content"]) == {"city": "Oslo", "celsius": -3.5}


def _plain(messages: list[BaseMessage]) -> list[dict[str, Any]]:
    # Message ids name LangChain's own run ids, fresh every run: everything else must match.
    return [m.model_dump(exclude={"id"}) for m in messages]


def _script() -> ScriptedModel:
    return scripted(call("lun_mappings", {"host_group": "vdi-a"}, "c1"), AIMessage(content="done"))


def test_with_every_dial_off_the_model_and_the_caller_see_exactly_what_they_saw_without_it(
    telemetry: Telemetry,
) -> None:
    integration.uninstrument_all()
    bare_model = _script()
    bare = create_agent(bare_model, tools=[lun_tool()]).invoke({"messages": QUESTION})
    telemetry.configure()
    integration.instrument_all()
    try:
        judged_model = _script()
        judged = create_agent(judged_model, tools=[lun_tool()]).invoke({"messages": QUESTION})
    finally:
        integration.uninstrument_all()
    assert [_plain(r) for r in judged_model.received] == [_plain(r) for r in bare_model.received]
    assert list(judged) == list(bare)
    assert _plain(judged["messages"]) == _plain(bare["messages"])
    assert len(telemetry.summaries()) == 1, "it did run"


class _RowsTool(BaseTool):
    """A tool class of the user's own, whose ``_run`` asks LangChain for its run manager and config."""

    name: str = "lun_mappings"
    description: str = "The LUN mappings of a host group."
    seen: list[tuple[bool, Any]] = Field(default_factory=list)

    def _run(
        self, host_group: str, config: RunnableConfig, run_manager: CallbackManagerForToolRun | None = None
    ) -> list[dict[str, Any]]:
        self.seen.append((run_manager is not None, (config.get("metadata") or {}).get("tenant")))
        return LUN_ROWS


def test_the_judged_copy_reads_to_langchain_as_the_tool_does_and_is_read_without_parsing(
    armed: Telemetry,
) -> None:
    """LangChain reads a tool's ``_run`` signature and type hints on every call, to decide whether
    to hand it the run manager and the config: the judged copy must answer exactly as the tool does
    (or the tool would lose them), from what was read once when the copy was made."""
    armed.configure(check_column_types="warn")
    function_saw: list[Any] = []

    @tool("lun_mappings")
    def with_config(host_group: str, config: RunnableConfig) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        function_saw.append((config.get("metadata") or {}).get("tenant"))
        return LUN_ROWS

    class_tool = _RowsTool()
    for original in (with_config, class_tool):
        original.metadata = {"context_integrity": {"result_columns": LUN_COLUMNS}}
        copy = tool_part.judging_copy(original)
        assert inspect.signature(copy._run) == inspect.signature(original._run)
        assert typing.get_type_hints(copy._run) == typing.get_type_hints(original._run)
        # Read once, when the copy was made: nothing to unwrap or parse on each call.
        assert "__signature__" in vars(copy._run)
        assert not any(isinstance(hint, str) for hint in copy._run.__annotations__.values())
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "call_lun"), AIMessage(content="done"))
        armed.spans.clear()
        create_agent(model, tools=[original]).invoke({"messages": QUESTION}, {"metadata": {"tenant": "t-1"}})
        assert kinds(armed.one(names.tool_span_name("lun_mappings"))) == ["column-type-mismatch"]
        (delivered,) = tool_messages(model.received[1])
        assert json.loads(str(delivered.content)) == LUN_ROWS
    assert function_saw == ["t-1"], "the function tool was handed the run's config"
    assert class_tool.seen == [(True, "t-1")], "the tool class was handed its run manager and the config"


def test_the_agent_graph_gets_no_node_and_no_state_of_ours(telemetry: Telemetry) -> None:
    """A node of ours would be one more step the host's tracers record, with the whole state."""
    telemetry.configure(check_column_types="warn")
    integration.uninstrument_all()
    bare = create_agent(_script(), tools=[lun_tool()])
    integration.instrument_all()
    try:
        judged = create_agent(_script(), tools=[lun_tool()])
        out = judged.invoke({"messages": QUESTION})
    finally:
        integration.uninstrument_all()
    assert set(judged.get_graph().nodes) == set(bare.get_graph().nodes)
    assert set(judged.builder.channels) == set(bare.builder.channels)
    assert set(out) == {"messages"}
    one_run(telemetry)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_dev_posture_fails_the_invocation_whose_check_is_dead(telemetry: Telemetry, mode: str) -> None:
    """As ``ci.run`` does: the run ends on the record first, then the caller sees the dead check."""
    rotted = CheckId("duplicate-execution", "write")
    double = RegisteredCheck(
        "rotted double",
        rows=(rotted,),
        armed=lambda contracts, dials: True,
        write=lambda state, seen: Encounter(disposition=CHECKED_PASS),
        rule_version="1",
        canary=lambda: Encounter(findings=[], disposition=CHECKED_PASS),  # misses its canary
    )
    REGISTRY.register(double)
    try:
        telemetry.configure(posture="dev", check_column_types="warn")
        agent = create_agent(
            _script(), tools=[lun_tool()], middleware=[integration.ContextIntegrityMiddleware()]
        )
        with pytest.raises(CheckerDeadError) as raised:
            if mode == "sync":
                agent.invoke({"messages": QUESTION})
            else:
                asyncio.run(agent.ainvoke({"messages": QUESTION}))
    finally:
        REGISTRY.unregister(double)
    assert (raised.value.check, raised.value.seam) == rotted
    _, summary = one_run(telemetry)
    assert dict(summary.attributes or {})[names.RUN_OUTCOME] == "checker-dead"


def test_an_invocation_begun_without_our_callback_is_not_judged_says_so_and_the_next_is(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry.configure(check_column_types="warn")
    agent = create_agent(_script(), tools=[lun_tool()], middleware=[integration.ContextIntegrityMiddleware()])
    integration.uninstrument_all()  # takes our callback away from every invocation begun after it
    with caplog.at_level("ERROR", logger="context_integrity"):
        first = agent.invoke({"messages": QUESTION})
    assert first["messages"][-1].content == "done"
    assert telemetry.summaries() == []
    assert "root run is unknown" in caplog.text
    agent.invoke({"messages": QUESTION})  # the first call put the callback back
    one_run(telemetry)


def test_the_per_agent_middleware_works_without_instrument_all(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="warn")
    mw = integration.ContextIntegrityMiddleware()
    model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "c1"), AIMessage(content="done"))
    create_agent(model, tools=[lun_tool()], middleware=[mw], name="triage").invoke({"messages": QUESTION})
    assert kinds(telemetry.one(names.tool_span_name("lun_mappings"))) == ["column-type-mismatch"]
    one_run(telemetry, "triage")


def test_our_own_failures_never_reach_the_agent(armed: Telemetry, monkeypatch: pytest.MonkeyPatch) -> None:
    armed.configure(check_column_types="warn")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(frames, "frame", broken)
    monkeypatch.setattr(tool_part, "ToolScope", broken)
    model = _script()
    result = create_agent(model, tools=[lun_tool()]).invoke({"messages": QUESTION})
    assert result["messages"][-1].content == "done"
    (delivered,) = tool_messages(model.received[1])
    assert json.loads(str(delivered.content)) == LUN_ROWS, "unjudged: handed over as the tool returned it"
    assert len(armed.summaries()) == 1


# The tool's span and judge (inside the judged copy), and making the judged copy at all.
@pytest.mark.parametrize(("owner", "broken_part"), [(tool_part, "ToolScope"), (integration, "judging_copy")])
def test_enforce_fails_closed_when_our_own_part_fails(
    armed: Telemetry, monkeypatch: pytest.MonkeyPatch, owner: object, broken_part: str
) -> None:
    armed.configure(check_column_types="enforce")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(owner, broken_part, broken)
    model = _script()
    result = create_agent(model, tools=[lun_tool()]).invoke({"messages": QUESTION})
    assert result["messages"][-1].content == "done"
    (delivered,) = tool_messages(model.received[1])
    assert delivered.content == unjudged_refusal("lun_mappings")
    assert delivered.tool_call_id == "c1"


def test_beside_openinference_one_trace_its_agent_and_tool_spans_adopted(armed: Telemetry) -> None:
    try:
        from openinference.instrumentation.langchain import LangChainInstrumentor
    except ImportError:  # pragma: no cover - the test extra installs it
        if os.environ.get("CI"):
            raise
        pytest.skip("openinference-instrumentation-langchain is not installed")
    armed.configure(check_column_types="warn")
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=armed.provider)
    try:
        model = scripted(call("lun_mappings", {"host_group": "vdi-a"}, "c1"), AIMessage(content="done"))
        create_agent(model, tools=[lun_tool()], name="triage").invoke({"messages": QUESTION})
    finally:
        instrumentor.uninstrument()
    spans = armed.finished()
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1, "one trace"
    assert not [s for s in spans if s.name.startswith(names.OPERATION_EXECUTE_TOOL)], (
        "its TOOL span is the one"
    )
    assert not armed.named(names.run_span_name("triage")), "its agent span is the run span"
    assert not [s for s in spans if s.name.startswith(names.OPERATION_CHAT)], (
        "its model spans take the chat's"
    )
    (tool_span,) = [s for s in spans if s.name == "lun_mappings"]
    assert kinds(tool_span) == ["column-type-mismatch"]
    (summary,) = armed.summaries()
    (root,) = [s for s in spans if s.name == "triage"]
    assert summary.parent is not None and root.context is not None
    assert summary.parent.span_id == root.context.span_id
