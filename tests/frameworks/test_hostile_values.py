"""What tools and models hand a framework agent, fuzzed: judged, the run is the run without us,
except where enforce must refuse.

For any value a tool returns (nested containers, NaN and infinities, bytes, huge integers,
control characters, rows whose every read raises, objects whose ``repr`` raises) and any
arguments the model writes (JSON of every shape, or text that is not JSON at all), one agent of
each framework runs twice: bare, and judged by its per-agent form with every check armed
(the tool's columns in warn or in enforce, its arguments grounded in another tool, both notices
on, content captured). The laws:

- in warn, and in enforce when the columns held: the model receives the same messages, request
  for request, in both runs (the tool's very value where the framework hands it on as an object,
  the same text where it renders one), and the run ends the same way: the same answer, or the
  same exception;
- in enforce when the column check found the value mistyped, or could not read it: the model
  read the refusal sentence in the tool result's place, and never the value;
- the judged run writes exactly one summary, with every check armed, and what it wrote of the
  values on our spans stays within the bounds.

``CI_FRAMEWORK_FUZZ_EXAMPLES`` sets the number of examples per framework and mode.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.conftest import Telemetry
from tests.frameworks.required import every_framework
from tests.hostile import HostileRow, Unprintable

import context_integrity as ci
from context_integrity.judge.registry import REGISTRY
from context_integrity.limits import MAX_ATTRIBUTE_CHARS, MAX_CONTENT_CHARS, MAX_STACKTRACE_CHARS
from context_integrity.telemetry.schema import names

every_framework()

os.environ.setdefault("OPENAI_API_KEY", "sk-offline-never-used")

from context_integrity.integrations import langchain, openai_agents, pydantic_ai  # noqa: E402

EXAMPLES = int(os.environ.get("CI_FRAMEWORK_FUZZ_EXAMPLES", "60"))
TOOL = "lun_mappings"
GROUND = "host_groups"
ANSWER = "the mappings are read"
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    # One pipeline for the whole test: each example counts the summaries it added.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.just(math.nan),
    st.text(max_size=12),
    st.binary(max_size=6),
    st.builds(Unprintable),
    st.builds(HostileRow),
)
tool_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.tuples(children, children),
        st.dictionaries(st.sampled_from(["logical_unit_number", "host_group", "x"]), children, max_size=3),
    ),
    max_leaves=8,
)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=12)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)
argument_dicts = st.one_of(
    st.fixed_dictionaries({"host_group": st.text(max_size=12)}),
    st.dictionaries(st.sampled_from(["host_group", "x", ""]), json_values, max_size=3),
)
raw_arguments = st.one_of(argument_dicts, st.text(max_size=16))  # text: JSON or not


# The checks arm() arms: every one a tool's declaration and setup's dials can arm.
ARMED_CHECKS = (
    "column types",
    "unsupported argument",
    "dangling reference",
    "empty lookup",
    "prior-turn evidence",
)
ARMED_ROWS = [row for entry in REGISTRY if entry.name in ARMED_CHECKS for row in entry.rows]
COLUMN_ROWS = [row for entry in REGISTRY if entry.name == "column types" for row in entry.rows]
REFUSAL_START = "Result rejected"
# What pydantic-ai's record of the model's messages holds where the tool's very value was handed on.
THE_TOOLS_VALUE = "<the tool's value>"
assert len({entry.name for entry in REGISTRY} & set(ARMED_CHECKS)) == len(ARMED_CHECKS)


def arm(telemetry: Telemetry, mode: str) -> None:
    """Every check armed, the columns in ``mode``, content captured, the frameworks left alone (each
    test judges through a per-agent form)."""
    telemetry.configure(
        check_column_types=mode,
        notice_empty_lookups=True,
        notice_prior_turn_evidence=True,
        capture_content=True,
        instrument=(),
    )
    ci.declare_tool(GROUND)
    ci.declare_tool(
        TOOL,
        result_columns={"logical_unit_number": "number", "host_group": "string"},
        arguments_from=[GROUND],
    )


def rendered(value: object) -> str:
    """A message's content as comparable text: never raises, the same for equal content."""
    try:
        return json.dumps(value, default=repr, sort_keys=True)
    except Exception as error:
        return f"<unrenderable {type(value).__name__}: {type(error).__name__}>"


def outcome(run: Callable[[], object]) -> tuple[str, str]:
    try:
        return "answer", rendered(run())
    except Exception as error:
        return type(error).__name__, str(error)


def draining(sent: list[list[object]]) -> Callable[[], list[list[object]]]:
    """What the model was sent in the last run, request by request, read and cleared."""

    def take() -> list[list[object]]:
        out = list(sent)
        sent.clear()
        return out

    return take


def refused(ledger: Mapping[str, object]) -> bool:
    """Whether enforce had to refuse the run's result: the column check found it mistyped, or
    could not judge it."""
    return any(
        ledger.get(names.row_attribute(row.check, row.seam, field), 0)
        for row in COLUMN_ROWS
        for field in ("findings", "unreachable")
    )


def same_run(
    telemetry: Telemetry,
    mode: str,
    bare: Callable[[], object],
    judged: Callable[[], object],
    received: Callable[[], list[list[object]]],
) -> None:
    """``received()`` reads (and clears) what the model was sent in the last run, request by request.

    In warn, and in enforce when the columns held, the judged run is the bare run. In enforce when
    they did not (or could not be read), the model read the refusal in the tool result's place:
    from there on the run may go otherwise (a value the framework could not render raised in the
    bare run; refused, it never reaches the framework's renderer).
    """
    bare_outcome = outcome(bare)
    bare_received = received()
    summaries = len(telemetry.summaries())
    judged_outcome = outcome(judged)
    judged_received = received()
    assert len(telemetry.summaries()) == summaries + 1
    ledger = dict(telemetry.summaries()[-1].attributes or {})
    if mode == "enforce" and refused(ledger):
        assert REFUSAL_START in rendered(judged_received), judged_received
        assert THE_TOOLS_VALUE not in rendered(judged_received)
    else:
        assert judged_received == bare_received
        assert judged_outcome == bare_outcome
    for span in telemetry.finished():  # what we wrote of the hostile values left clipped
        ours = (
            span.instrumentation_scope is not None
            and span.instrumentation_scope.name == names.INSTRUMENTATION_NAME
        )
        for key, value in (span.attributes or {}).items():
            if isinstance(value, str) and (ours or key.startswith(names.INSTRUMENTATION_NAME)):
                # Opt-in content is bounded apart: it is captured to be judged again.
                bound = MAX_CONTENT_CHARS if key in names.CONTENT_ATTRIBUTES else MAX_ATTRIBUTE_CHARS
                assert len(value) <= bound, (span.name, key, value[:80])
        for event in span.events:
            for key, value in (event.attributes or {}).items():
                if isinstance(value, str) and (ours or event.name == names.FINDING_EVENT):
                    bound = MAX_STACKTRACE_CHARS if key == names.EXCEPTION_STACKTRACE else MAX_ATTRIBUTE_CHARS
                    assert len(value) <= bound, (span.name, event.name, key, value[:80])
    unarmed = [row for row in ARMED_ROWS if names.row_attribute(row.check, row.seam, "checked") not in ledger]
    assert not unarmed, f"every check is armed in the judged run; not: {unarmed}"


# ── pydantic-ai ──────────────────────────────────────────────────────────


def pydantic_ai_case(telemetry: Telemetry, mode: str, value: object, arguments: dict[str, Any] | str) -> None:
    from pydantic_ai import Agent
    from pydantic_ai import messages as pm
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    arm(telemetry, mode)
    sent: list[list[object]] = []

    def seen(part: object) -> object:
        content = getattr(part, "content", None)
        # The tool's value handed on as an object: the very one, or the model was given another.
        text = THE_TOOLS_VALUE if content is value else rendered(content)
        return [
            type(part).__name__,
            getattr(part, "tool_name", None),
            getattr(part, "tool_call_id", None),
            text,
        ]

    def model(messages: list[pm.ModelMessage], info: AgentInfo) -> pm.ModelResponse:
        parts = [p for m in messages if isinstance(m, pm.ModelRequest) for p in m.parts]
        sent.append([seen(p) for p in parts])
        if any(isinstance(p, (pm.ToolReturnPart, pm.RetryPromptPart)) for p in parts):
            return pm.ModelResponse(parts=[pm.TextPart(ANSWER)])
        return pm.ModelResponse(parts=[pm.ToolCallPart(TOOL, arguments, tool_call_id="call-1")])

    def agent(capabilities: list[Any] | None) -> Agent[None, str]:
        built: Agent[None, str] = Agent(FunctionModel(model), name="storage", capabilities=capabilities)

        @built.tool_plain(name=TOOL)
        def mappings(host_group: str) -> Any:
            return value

        @built.tool_plain(name=GROUND)
        def groups() -> list[str]:
            return ["vdi-a"]

        return built

    bare, judged = agent(None), agent([pydantic_ai.ContextIntegrity()])

    same_run(
        telemetry,
        mode,
        lambda: bare.run_sync("Map vdi-a.").output,
        lambda: judged.run_sync("Map vdi-a.").output,
        draining(sent),
    )


# ── the OpenAI Agents SDK ────────────────────────────────────────────────


def openai_agents_case(
    telemetry: Telemetry, mode: str, value: object, arguments: dict[str, Any] | str
) -> None:
    from agents import Agent, RunConfig, Runner, function_tool, set_trace_processors
    from agents.run import AgentRunner
    from agents.testing import ScriptedModel, assistant_message, function_call

    set_trace_processors([])  # the SDK's default processor would upload: nothing leaves
    arm(telemetry, mode)
    models: list[ScriptedModel] = []

    def agent() -> Agent[Any]:
        @function_tool(name_override=TOOL)
        def mappings(host_group: str) -> Any:
            """The LUN mappings of a host group."""
            return value

        @function_tool(name_override=GROUND)
        def groups() -> list[str]:
            """The host groups."""
            return ["vdi-a"]

        return Agent(name="storage", instructions="Map the LUNs.", tools=[mappings, groups])

    def run(runner: Any, on: Agent[Any]) -> object:
        model = ScriptedModel(
            [[function_call(TOOL, arguments, call_id="call-1")], [assistant_message(ANSWER)]]
        )
        models.append(model)
        return asyncio.run(runner.run(on, "Map vdi-a.", run_config=RunConfig(model=model))).final_output

    bare, judged = agent(), openai_agents.instrument(agent())
    runner = openai_agents.instrument(AgentRunner())

    def received() -> list[list[object]]:
        (model,) = models
        models.clear()
        return [
            [rendered(item if isinstance(item, dict) else item.model_dump()) for item in call.input]
            for call in model.calls
        ]

    same_run(telemetry, mode, lambda: run(Runner, bare), lambda: run(runner, judged), received)


# ── LangChain ────────────────────────────────────────────────────────────


def langchain_case(telemetry: Telemetry, mode: str, value: object, arguments: dict[str, Any]) -> None:
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.tools import tool
    from tests.frameworks.langchain_models import ReadingChatModel, calling

    arm(telemetry, mode)
    sent: list[list[object]] = []

    def seen(message: BaseMessage) -> object:
        calls = [
            [c["name"], c["id"], rendered(c["args"])] for c in getattr(message, "tool_calls", None) or []
        ]
        return [
            type(message).__name__,
            rendered(message.content),
            getattr(message, "tool_call_id", None),
            getattr(message, "status", None),
            calls,
        ]

    def respond(messages: list[BaseMessage]) -> AIMessage:
        sent.append([seen(m) for m in messages])
        if any(isinstance(m, ToolMessage) for m in messages):
            return AIMessage(content=ANSWER)
        return calling(TOOL, arguments, "call-1")

    @tool(TOOL)
    def mappings(host_group: str) -> Any:
        """The LUN mappings of a host group."""
        return value

    @tool(GROUND)
    def groups() -> list[str]:
        """The host groups."""
        return ["vdi-a"]

    def agent(middleware: list[Any]) -> Any:
        return create_agent(
            ReadingChatModel(respond=respond), tools=[mappings, groups], name="storage", middleware=middleware
        )

    bare, judged = agent([]), agent([langchain.ContextIntegrityMiddleware()])
    question = {"messages": [{"role": "user", "content": "Map vdi-a."}]}

    same_run(
        telemetry,
        mode,
        lambda: bare.invoke(question)["messages"][-1].content,
        lambda: judged.invoke(question)["messages"][-1].content,
        draining(sent),
    )


# ── the tests ────────────────────────────────────────────────────────────

MODES = ["warn", "enforce"]
CASES: dict[str, Callable[[Telemetry, str, object, Any], None]] = {
    "pydantic-ai": pydantic_ai_case,
    "Agents SDK": openai_agents_case,
    "LangChain": langchain_case,
}


@pytest.mark.parametrize("mode", MODES)
@given(value=tool_values, arguments=raw_arguments)
@FUZZ
def test_pydantic_ai_fuzzed(
    telemetry: Telemetry, mode: str, value: object, arguments: dict[str, Any] | str
) -> None:
    pydantic_ai_case(telemetry, mode, value, arguments)


@pytest.mark.parametrize("mode", MODES)
@given(value=tool_values, arguments=raw_arguments)
@FUZZ
def test_openai_agents_fuzzed(
    telemetry: Telemetry, mode: str, value: object, arguments: dict[str, Any] | str
) -> None:
    openai_agents_case(telemetry, mode, value, arguments)


@pytest.mark.parametrize("mode", MODES)
@given(value=tool_values, arguments=argument_dicts)  # LangChain's tool calls hold parsed arguments
@FUZZ
def test_langchain_fuzzed(telemetry: Telemetry, mode: str, value: object, arguments: dict[str, Any]) -> None:
    langchain_case(telemetry, mode, value, arguments)


# One of each kind of value a framework renders its own way, tried every time whatever the fuzz
# draws (as plain cases: Hypothesis prints an explicit example's arguments, and one of these has
# no printable form).
ALWAYS_TRIED: dict[str, Callable[[], object]] = {
    "bytes in a row": lambda: [{"logical_unit_number": b"\x00", "host_group": "vdi-a"}],
    "NaN and infinity": lambda: {"logical_unit_number": math.nan, "host_group": math.inf},
    "a tuple of rows": lambda: ({"logical_unit_number": 1}, {"logical_unit_number": "1"}),
    "a row whose reads raise": lambda: [HostileRow()],
    "a value whose repr raises": lambda: [Unprintable()],
    "an integer past 64 bits": lambda: 2**64,
    "a result past every bound": lambda: [{"logical_unit_number": "9" * 200_000, "host_group": "vdi-a"}],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("framework", CASES)
@pytest.mark.parametrize("value", ALWAYS_TRIED)
def test_always_tried(telemetry: Telemetry, mode: str, framework: str, value: str) -> None:
    CASES[framework](telemetry, mode, ALWAYS_TRIED[value](), {"host_group": "vdi-a"})
