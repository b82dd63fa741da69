"""Many runs of one framework agent at once, and one after another: each is judged alone.

A production agent is one object serving many requests: runs of it overlap on one event loop
(``asyncio.gather``) and on worker threads (a sync web server). Each framework's test runs one
agent object for eight host groups at once, in enforce, the tool's rows for the odd groups
carrying an empty LUN. The laws:

- what each run's model received is that run's own verdict: the refusal for an odd group, its
  rows for an even one. A refusal crossing into another run (or a clean run's rows judged as
  another's) would hand rows enforce refused, or refuse a clean run;
- each run is one trace holding one ``invoke_agent``, one ``execute_tool`` (its call id) and one
  summary, a direct child of that run span, whose ledger counts only that run's encounter; the
  finding sits on that run's tool span, with its call id;
- nothing the integration keeps for an open run outlives the run: after two hundred runs one
  after another, no run is left open and every one wrote its summary.

The model of each framework decides from the messages it receives (the host group in the user's
message, then the tool's result), so the script holds whatever order the runs interleave in.
"""

from __future__ import annotations

import ast
import asyncio
import gc
import json
import os
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sized
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from tests.conftest import Telemetry
from tests.frameworks.required import every_framework

import context_integrity as ci
from context_integrity.telemetry.schema import names

every_framework()

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-never-used")

from context_integrity.integrations import (  # noqa: E402
    _langchain_runs,
    _openai_agents_run,
    langchain,
    openai_agents,
    pydantic_ai,
)

TOOL = "lun_mappings"
LUN_COLUMNS = {"logical_unit_number": "number"}
GROUPS = [f"vdi-{i}" for i in range(8)]
RUNS_IN_A_ROW = 200
REFUSAL_START = "Result rejected"
ROW_FINDINGS = names.row_attribute("column-type-mismatch", "write", "findings")
ROW_CHECKED = names.row_attribute("column-type-mismatch", "write", "checked")


def is_bad(group: str) -> bool:
    return int(group.rsplit("-", 1)[1]) % 2 == 1


def rows_for(host_group: str) -> list[dict[str, Any]]:
    """An odd group's first LUN is empty (a string where a number is declared); an even one's is 1."""
    first: object = "" if is_bad(host_group) else 1
    return [{"logical_unit_number": first}, {"logical_unit_number": 3}]


def call_id_of(group: str) -> str:
    return f"call-{group}"


# ── reading each run back ────────────────────────────────────────────────


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _operation(span: ReadableSpan) -> object:
    return _attrs(span).get(names.GEN_AI_OPERATION_NAME)


def _findings(span: ReadableSpan) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]


def assert_each_run_judged_alone(telemetry: Telemetry, delivered: Mapping[str, str]) -> None:
    """``delivered``: host group -> the tool result its run's model received, as text."""
    assert sorted(delivered) == sorted(GROUPS), "every run's model read a tool result"
    refusals = {text for group, text in delivered.items() if is_bad(group)}
    assert len(refusals) == 1, refusals  # the same rows, the same sentence, whichever run
    for group, text in delivered.items():
        if is_bad(group):
            assert text.startswith(REFUSAL_START), (group, text)
            assert json.dumps(rows_for(group)[1]) not in text, (group, text)  # no row of it
        else:
            assert not text.startswith(REFUSAL_START), (group, text)
            assert json.loads(text) == rows_for(group), (group, text)
    traces: dict[int, list[ReadableSpan]] = defaultdict(list)
    for span in telemetry.finished():
        assert span.context is not None
        traces[span.context.trace_id].append(span)
    assert len(traces) == len(GROUPS), "one trace per run"
    judged: list[str] = []
    for spans in traces.values():
        (run_span,) = [s for s in spans if _operation(s) == names.OPERATION_INVOKE_AGENT]
        (tool_span,) = [s for s in spans if _operation(s) == names.OPERATION_EXECUTE_TOOL]
        (summary,) = [s for s in spans if s.name == names.DISPOSITION_SPAN]
        assert run_span.context is not None and summary.parent is not None
        assert summary.parent.span_id == run_span.context.span_id
        call_id = _attrs(tool_span)[names.GEN_AI_TOOL_CALL_ID]
        group = str(call_id).removeprefix("call-")
        judged.append(group)
        findings = [(s, f) for s in spans for f in _findings(s)]
        assert _attrs(summary)[ROW_CHECKED] == 1, (group, _attrs(summary))
        if is_bad(group):
            ((on, finding),) = findings
            assert on is tool_span
            assert finding[names.FINDING_KIND] == "column-type-mismatch"
            assert finding[names.GEN_AI_TOOL_CALL_ID] == call_id
            assert _attrs(summary)[ROW_FINDINGS] == 1
        else:
            assert findings == [], (group, findings)
            assert _attrs(summary)[ROW_FINDINGS] == 0
    assert sorted(judged) == sorted(GROUPS)


def assert_every_run_closed(telemetry: Telemetry, agent: Agent, runs: int) -> None:
    """Every run wrote its one summary under its run span, and none is still held open."""
    summaries = telemetry.summaries()
    run_spans = [s for s in telemetry.finished() if _operation(s) == names.OPERATION_INVOKE_AGENT]
    assert len(summaries) == len(run_spans) == runs
    assert {s.parent.span_id for s in summaries if s.parent is not None} == {
        s.context.span_id for s in run_spans if s.context is not None
    }
    processor = agent.instrumentation.processor
    assert processor is not None
    if agent.held_open is not None:
        assert len(agent.held_open) == 0
    assert not processor._expected  # no run span still waiting for its summary
    assert ci.current_run() is None


@dataclass
class Agent:
    """One agent object of a framework, run for a host group; what each run's model read."""

    run: Callable[[str], Awaitable[str]]
    run_sync: Callable[[str], str]
    delivered: dict[str, str]
    instrumentation: ci.Instrumentation
    # The integration's own table of the runs it holds open, where it keeps one (LangChain's,
    # keyed by each invocation's root run).
    held_open: Sized | None = None
    # The framework's own agent object, for what only one framework has (LangChain's batch).
    host: Any = None


async def at_once_on_one_loop(agent: Agent) -> None:
    outputs = await asyncio.gather(*(agent.run(group) for group in GROUPS))
    assert outputs == [answer(g) for g in GROUPS]


def at_once_on_threads(agent: Agent) -> None:
    with ThreadPoolExecutor(4) as pool:
        outputs = list(pool.map(agent.run_sync, GROUPS))
    assert outputs == [answer(g) for g in GROUPS]


def answer(group: str) -> str:
    return f"{group} read its mappings"


def configure(telemetry: Telemetry, per_agent: bool) -> ci.Instrumentation:
    """Enforce, and the tool's columns declared; ``per_agent`` leaves every framework unarmed."""
    instrumentation = telemetry.configure(
        check_column_types="enforce", instrument=() if per_agent else "auto"
    )
    ci.declare_tool(TOOL, result_columns=LUN_COLUMNS)
    return instrumentation


# ── pydantic-ai ──────────────────────────────────────────────────────────


def pydantic_ai_agent(telemetry: Telemetry, *, per_agent: bool) -> Agent:
    """``per_agent``: the agent carries one ``ContextIntegrity`` capability, shared by its runs;
    else ``ci.setup()`` arms every run."""
    from pydantic_ai import Agent as PaiAgent
    from pydantic_ai import messages as pm
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    instrumentation = configure(telemetry, per_agent)
    delivered: dict[str, str] = {}

    def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        parts = [p for m in messages if isinstance(m, pm.ModelRequest) for p in m.parts]
        (group,) = [p.content for p in parts if isinstance(p, pm.UserPromptPart)]
        assert isinstance(group, str)
        results = [p for p in parts if isinstance(p, pm.ToolReturnPart)]
        if not results:
            return pm.ModelResponse(
                parts=[pm.ToolCallPart(TOOL, {"host_group": group}, tool_call_id=call_id_of(group))]
            )
        (result,) = results
        assert result.tool_call_id == call_id_of(group)
        content = result.content
        delivered[group] = content if isinstance(content, str) else json.dumps(content)
        return pm.ModelResponse(parts=[pm.TextPart(answer(group))])

    capabilities = [pydantic_ai.ContextIntegrity()] if per_agent else None
    agent: PaiAgent[None, str] = PaiAgent(
        FunctionModel(model, model_name="scripted"), name="storage", capabilities=capabilities
    )
    agent.instrument = InstrumentationSettings(tracer_provider=telemetry.provider)

    @agent.tool_plain(name=TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        return rows_for(host_group)

    async def run(group: str) -> str:
        return (await agent.run(group)).output

    return Agent(run, lambda group: agent.run_sync(group).output, delivered, instrumentation)


# ── the OpenAI Agents SDK ────────────────────────────────────────────────


def agents_sdk_agent(telemetry: Telemetry, *, per_agent: bool) -> Agent:
    """Each run gets its own scripted model (the SDK's ScriptedModel plays its steps in order).
    ``per_agent``: ``instrument()`` given the agent and a runner of its own; else ``ci.setup()``."""
    from agents import Agent as SdkAgent
    from agents import RunConfig, Runner, function_tool, set_trace_processors
    from agents.run import AgentRunner
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_trace_processors([])  # the SDK's default processor would upload: nothing leaves
    instrumentation = configure(telemetry, per_agent)

    @function_tool(name_override=TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return rows_for(host_group)

    agent = SdkAgent(name="storage", instructions="Map the LUNs.", tools=[mappings])
    runner: Any = Runner
    if per_agent:
        runner = openai_agents.instrument(AgentRunner())
        openai_agents.instrument(agent)
    delivered: dict[str, str] = {}

    async def run(group: str) -> str:
        model = ScriptedModel(
            [
                [function_call(TOOL, {"host_group": group}, call_id=call_id_of(group))],
                [assistant_message(answer(group))],
            ]
        )
        result = await runner.run(agent, group, run_config=RunConfig(model=model))
        (output,) = [
            data
            for data in (i if isinstance(i, dict) else i.model_dump() for i in model.calls[1].input)
            if data.get("type") == "function_call_output"
        ]
        assert output["call_id"] == call_id_of(group)
        text = str(output["output"])
        # The SDK hands the model a list result as its str(); read back as JSON to compare.
        delivered[group] = text if text.startswith(REFUSAL_START) else json.dumps(ast.literal_eval(text))
        return str(result.final_output)

    return Agent(run, lambda group: asyncio.run(run(group)), delivered, instrumentation)


# ── LangChain ────────────────────────────────────────────────────────────


def langchain_agent(telemetry: Telemetry, *, per_agent: bool) -> Agent:
    """``per_agent``: the agent is given the middleware; else ``ci.setup()`` appends it."""
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from tests.frameworks.langchain_models import ReadingChatModel, calling

    instrumentation = configure(telemetry, per_agent)
    delivered: dict[str, str] = {}

    def respond(messages: list[BaseMessage]) -> AIMessage:
        """The lookup first, then a word on what it read."""
        (group,) = [m.content for m in messages if isinstance(m, HumanMessage)]
        assert isinstance(group, str)
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            return calling(TOOL, {"host_group": group}, call_id_of(group))
        (result,) = results
        assert result.tool_call_id == call_id_of(group)
        assert isinstance(result.content, str)
        delivered[group] = result.content
        return AIMessage(content=answer(group))

    @tool(TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return rows_for(host_group)

    middleware = [langchain.ContextIntegrityMiddleware()] if per_agent else []
    agent = create_agent(
        ReadingChatModel(respond=respond), tools=[mappings], name="storage", middleware=middleware
    )

    def last_words(state: Any) -> str:
        return str(state["messages"][-1].content)

    async def run(group: str) -> str:
        return last_words(await agent.ainvoke({"messages": [{"role": "user", "content": group}]}))

    def run_sync(group: str) -> str:
        return last_words(agent.invoke({"messages": [{"role": "user", "content": group}]}))

    return Agent(run, run_sync, delivered, instrumentation, held_open=_langchain_runs._runs, host=agent)


BUILDERS: dict[str, Callable[..., Agent]] = {
    "pydantic-ai": pydantic_ai_agent,
    "Agents SDK": agents_sdk_agent,
    "LangChain": langchain_agent,
}
FRAMEWORKS = [(name, per_agent) for name in BUILDERS for per_agent in (False, True)]
IDS = [f"{name}, {'its per-agent form' if per_agent else 'setup() alone'}" for name, per_agent in FRAMEWORKS]


@pytest.fixture(params=FRAMEWORKS, ids=IDS)
def agent(telemetry: Telemetry, request: pytest.FixtureRequest) -> Iterator[Agent]:
    name, per_agent = request.param
    yield BUILDERS[name](telemetry, per_agent=per_agent)
    disarm_every_framework()


def disarm_every_framework() -> None:
    """What a test armed (globally, or the process-wide parts a per-agent form installs) is undone."""
    for module in (pydantic_ai, openai_agents, langchain):
        module.uninstrument_all()


async def test_runs_at_once_on_one_loop_are_each_judged_alone(telemetry: Telemetry, agent: Agent) -> None:
    await at_once_on_one_loop(agent)
    assert_each_run_judged_alone(telemetry, agent.delivered)


def test_runs_at_once_on_threads_are_each_judged_alone(telemetry: Telemetry, agent: Agent) -> None:
    at_once_on_threads(agent)
    assert_each_run_judged_alone(telemetry, agent.delivered)


@pytest.fixture(params=[False, True], ids=["setup() alone", "its per-agent form"])
def langchain_only(telemetry: Telemetry, request: pytest.FixtureRequest) -> Iterator[Agent]:
    yield langchain_agent(telemetry, per_agent=request.param)
    disarm_every_framework()


@pytest.mark.parametrize("call", ["batch", "abatch"])
def test_langchain_batch_judges_each_input_alone(
    telemetry: Telemetry, langchain_only: Agent, call: str
) -> None:
    """LangChain's own way of running many inputs at once (``batch`` on a thread pool, ``abatch``
    on the loop): each input is an invocation of its own, judged alone."""
    graph = langchain_only.host
    inputs = [{"messages": [{"role": "user", "content": group}]} for group in GROUPS]
    results = graph.batch(inputs) if call == "batch" else asyncio.run(graph.abatch(inputs))
    assert [r["messages"][-1].content for r in results] == [answer(g) for g in GROUPS]
    assert_each_run_judged_alone(telemetry, langchain_only.delivered)
    assert langchain_only.held_open is not None and len(langchain_only.held_open) == 0


def test_runs_one_after_another_leave_nothing_open(telemetry: Telemetry, agent: Agent) -> None:
    for index in range(RUNS_IN_A_ROW):
        group = GROUPS[index % len(GROUPS)]
        assert agent.run_sync(group) == answer(group)
    assert_every_run_closed(telemetry, agent, RUNS_IN_A_ROW)


def test_an_agent_built_for_each_request_leaves_nothing_behind_it(telemetry: Telemetry) -> None:
    """A server that builds its Agents SDK agent (and its tools) per request: the tools armed for
    one request are forgotten with them, not kept for the life of the process."""
    from agents import Agent as SdkAgent
    from agents import RunConfig, Runner, function_tool, set_trace_processors
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_trace_processors([])
    configure(telemetry, per_agent=False)

    def serve(group: str) -> None:
        @function_tool(name_override=TOOL)
        def mappings(host_group: str) -> list[dict[str, Any]]:
            """The LUN mappings of a host group."""
            return rows_for(host_group)

        agent = SdkAgent(name="storage", instructions="Map the LUNs.", tools=[mappings])
        model = ScriptedModel(
            [
                [function_call(TOOL, {"host_group": group}, call_id=call_id_of(group))],
                [assistant_message(answer(group))],
            ]
        )
        Runner.run_sync(agent, group, run_config=RunConfig(model=model))

    for index in range(RUNS_IN_A_ROW):
        serve(GROUPS[index % len(GROUPS)])
    gc.collect()
    assert len(_openai_agents_run._armed_tools) <= 1  # the last request's, at most
    assert len(telemetry.summaries()) == RUNS_IN_A_ROW


# ── calls at once within one run ─────────────────────────────────────────


def assert_each_call_judged_alone(telemetry: Telemetry, delivered: Mapping[str, str]) -> None:
    """One response asked for the tool once per host group: the calls run at once, and each call
    id gets its own verdict, the refusal for each bad one (a repeat of a defect already filed is
    counted, not filed again, but still refused)."""
    assert sorted(delivered) == sorted(call_id_of(g) for g in GROUPS)
    for group in GROUPS:
        text = delivered[call_id_of(group)]
        if is_bad(group):
            assert text.startswith(REFUSAL_START), (group, text)
        else:
            assert json.loads(text) == rows_for(group), (group, text)
    tool_spans = [s for s in telemetry.finished() if _operation(s) == names.OPERATION_EXECUTE_TOOL]
    assert sorted(_attrs(s)[names.GEN_AI_TOOL_CALL_ID] for s in tool_spans) == sorted(
        call_id_of(g) for g in GROUPS
    )
    for span in tool_spans:
        call_id = _attrs(span)[names.GEN_AI_TOOL_CALL_ID]
        if not is_bad(str(call_id).removeprefix("call-")):
            assert _findings(span) == [], call_id
        assert all(f[names.GEN_AI_TOOL_CALL_ID] == call_id for f in _findings(span))
    (summary,) = telemetry.summaries()
    bad = sum(is_bad(g) for g in GROUPS)
    assert (_attrs(summary)[ROW_CHECKED], _attrs(summary)[ROW_FINDINGS]) == (len(GROUPS), bad)
    assert len({s.context.trace_id for s in telemetry.finished() if s.context is not None}) == 1


def test_pydantic_ai_calls_at_once_within_one_run(telemetry: Telemetry) -> None:
    from pydantic_ai import Agent as PaiAgent
    from pydantic_ai import messages as pm
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.models.instrumented import InstrumentationSettings

    configure(telemetry, per_agent=False)
    delivered: dict[str, str] = {}

    def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        parts = [p for m in messages if isinstance(m, pm.ModelRequest) for p in m.parts]
        results = [p for p in parts if isinstance(p, pm.ToolReturnPart)]
        if not results:
            calls = [pm.ToolCallPart(TOOL, {"host_group": g}, tool_call_id=call_id_of(g)) for g in GROUPS]
            return pm.ModelResponse(parts=list(calls))
        for result in results:
            content = result.content
            delivered[result.tool_call_id] = content if isinstance(content, str) else json.dumps(content)
        return pm.ModelResponse(parts=[pm.TextPart("read them all")])

    agent: PaiAgent[None, str] = PaiAgent(FunctionModel(model), name="storage")
    agent.instrument = InstrumentationSettings(tracer_provider=telemetry.provider)

    @agent.tool_plain(name=TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        return rows_for(host_group)

    assert agent.run_sync("Map every group.").output == "read them all"
    assert_each_call_judged_alone(telemetry, delivered)


async def test_agents_sdk_calls_at_once_within_one_run(telemetry: Telemetry) -> None:
    from agents import Agent as SdkAgent
    from agents import Runner, function_tool, set_trace_processors
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_trace_processors([])
    configure(telemetry, per_agent=False)

    @function_tool(name_override=TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return rows_for(host_group)

    model = ScriptedModel(
        [
            [function_call(TOOL, {"host_group": g}, call_id=call_id_of(g)) for g in GROUPS],
            [assistant_message("read them all")],
        ]
    )
    agent = SdkAgent(name="storage", model=model, tools=[mappings])
    assert (await Runner.run(agent, "Map every group.")).final_output == "read them all"
    delivered: dict[str, str] = {}
    for item in model.calls[1].input:
        data = item if isinstance(item, dict) else item.model_dump()
        if data.get("type") == "function_call_output":
            text = str(data["output"])
            delivered[data["call_id"]] = (
                text if text.startswith(REFUSAL_START) else json.dumps(ast.literal_eval(text))
            )
    assert_each_call_judged_alone(telemetry, delivered)


def test_langchain_calls_at_once_within_one_run(telemetry: Telemetry) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.tools import tool
    from tests.frameworks.langchain_models import ReadingChatModel

    configure(telemetry, per_agent=False)
    delivered: dict[str, str] = {}

    def respond(messages: list[BaseMessage]) -> AIMessage:
        results = [m for m in messages if isinstance(m, ToolMessage)]
        if not results:
            calls = [{"name": TOOL, "args": {"host_group": g}, "id": call_id_of(g)} for g in GROUPS]
            return AIMessage(content="", tool_calls=calls)
        delivered.update((m.tool_call_id, str(m.content)) for m in results)
        return AIMessage(content="read them all")

    @tool(TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return rows_for(host_group)

    agent = create_agent(ReadingChatModel(respond=respond), tools=[mappings])
    result = agent.invoke({"messages": [{"role": "user", "content": "Map every group."}]})
    assert result["messages"][-1].content == "read them all"
    assert_each_call_judged_alone(telemetry, delivered)


# ── a run the framework itself stops ─────────────────────────────────────


def assert_one_errored_run(telemetry: Telemetry, error_type: str) -> None:
    (run_span,) = [s for s in telemetry.finished() if _operation(s) == names.OPERATION_INVOKE_AGENT]
    (summary,) = telemetry.summaries()
    assert summary.parent is not None and run_span.context is not None
    assert summary.parent.span_id == run_span.context.span_id
    assert _attrs(summary)[names.RUN_OUTCOME] == "error"
    assert _attrs(run_span)[names.ERROR_TYPE] == error_type
    assert ci.current_run() is None


def test_a_pydantic_ai_run_past_its_request_limit_raises_unchanged_with_one_summary(
    telemetry: Telemetry,
) -> None:
    from pydantic_ai import Agent as PaiAgent
    from pydantic_ai import messages as pm
    from pydantic_ai.exceptions import UsageLimitExceeded
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import UsageLimits

    configure(telemetry, per_agent=False)

    def forever(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        step = sum(isinstance(m, pm.ModelResponse) for m in messages)
        return pm.ModelResponse(
            parts=[pm.ToolCallPart(TOOL, {"host_group": "vdi-0"}, tool_call_id=f"c{step}")]
        )

    agent: PaiAgent[None, str] = PaiAgent(FunctionModel(forever), name="storage")

    @agent.tool_plain(name=TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        return rows_for(host_group)

    with pytest.raises(UsageLimitExceeded):
        agent.run_sync("Map vdi-0.", usage_limits=UsageLimits(request_limit=3))
    assert_one_errored_run(telemetry, "UsageLimitExceeded")


async def test_an_agents_sdk_run_past_its_max_turns_raises_unchanged_with_one_summary(
    telemetry: Telemetry,
) -> None:
    from agents import Agent as SdkAgent
    from agents import MaxTurnsExceeded, Runner, function_tool, set_trace_processors
    from agents.testing import ScriptedModel, function_call

    set_trace_processors([])
    configure(telemetry, per_agent=False)

    @function_tool(name_override=TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return rows_for(host_group)

    model = ScriptedModel([[function_call(TOOL, {"host_group": "vdi-0"}, call_id=f"c{i}")] for i in range(5)])
    agent = SdkAgent(name="storage", model=model, tools=[mappings])
    with pytest.raises(MaxTurnsExceeded):
        await Runner.run(agent, "Map vdi-0.", max_turns=2)
    assert_one_errored_run(telemetry, "MaxTurnsExceeded")


def test_a_langchain_run_past_its_recursion_limit_raises_unchanged_with_one_summary(
    telemetry: Telemetry,
) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.tools import tool
    from langgraph.errors import GraphRecursionError
    from tests.frameworks.langchain_models import ReadingChatModel, calling

    configure(telemetry, per_agent=False)

    def forever(messages: list[BaseMessage]) -> AIMessage:
        step = sum(isinstance(m, ToolMessage) for m in messages)
        return calling(TOOL, {"host_group": "vdi-0"}, f"c{step}")

    @tool(TOOL)
    def mappings(host_group: str) -> list[dict[str, Any]]:
        """The LUN mappings of a host group."""
        return rows_for(host_group)

    agent = create_agent(ReadingChatModel(respond=forever), tools=[mappings])
    with pytest.raises(GraphRecursionError):
        agent.invoke({"messages": [{"role": "user", "content": "Map vdi-0."}]}, {"recursion_limit": 5})
    assert_one_errored_run(telemetry, "GraphRecursionError")
    assert len(_langchain_runs._runs) == 0
