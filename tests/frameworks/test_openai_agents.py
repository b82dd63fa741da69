"""The OpenAI Agents SDK, judged through ``instrument_all()`` alone, offline with its ScriptedModel.

The laws under test, each against the real SDK and a real OpenTelemetry SDK pipeline:
(a) the host's run is the run: no ``ci.run`` is written, and each host run has exactly one summary,
    a direct child of its run span (ours, or OpenInference's when its instrumentor traces the SDK);
(b) the write seam sees the raw tool value: warn leaves what the model reads alone, enforce makes
    the model read the refusal sentence as the call's result, and no rows;
(c) compose and choice see what the model really received, after ``call_model_input_filter``: an
    eviction made there dangles, and a fragment of the model's own prose is self-reference;
(d) never break the agent: a tool that raises keeps the SDK's default, a run that raises raises
    the same exception, and a clean run with every dial off is byte-identical to one without us;
(e) accounting: a handoff is one run; a nested ``as_tool`` run is a run of its own, same trace;
    a ``ci.run`` written around a host run doubles nothing.

NEUTRALIZE-PROOFS: dropping the guardrail's reject_content turns the enforce test red (the rows
reach the model); judging ``on_llm_start``'s unfiltered history instead of its input turns the
dangling test red; opening our own chat span under OpenInference turns the coexistence test red.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext, StatusCode
from tests.conftest import Telemetry, run_docs_example

import context_integrity as ci
from context_integrity.checks.unsupported_argument import ArmedCall, check_unsupported_arguments
from context_integrity.telemetry.schema import names

agents = pytest.importorskip("agents") if not os.environ.get("CI") else __import__("agents")

from agents import (  # noqa: E402
    Agent,
    ModelBehaviorError,
    RunConfig,
    RunHooks,
    Runner,
    TResponseInputItem,
    function_tool,
    set_trace_processors,
)
from agents.run_config import CallModelData, ModelInputData  # noqa: E402
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call  # noqa: E402
from openai.types.responses import ResponseFunctionToolCallParam  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from context_integrity.integrations import SUPPORTED, openai_agents  # noqa: E402

# The SDK's default processor uploads to api.openai.com: nothing leaves this machine.
set_trace_processors([])
os.environ.setdefault("OPENAI_API_KEY", "sk-offline-never-used")

LUN_ROWS: list[dict[str, object]] = [{"logical_unit_number": ""}, {"logical_unit_number": 3}]
LUN_COLUMNS = {"logical_unit_number": "number"}


@pytest.fixture
def armed(telemetry: Telemetry) -> Iterator[Telemetry]:
    openai_agents.instrument_all()
    yield telemetry
    openai_agents.uninstrument_all()


def _lun_tool() -> Any:
    @function_tool
    def lun_mappings() -> list[dict[str, Any]]:
        """The LUN mappings of the array."""
        return [dict(row) for row in LUN_ROWS]

    return lun_mappings


def _model(*steps: Sequence[Any] | ModelStep, traces: bool = False) -> ScriptedModel:
    return ScriptedModel([list(s) if not isinstance(s, ModelStep) else s for s in steps], emit_traces=traces)


def _outputs(model: ScriptedModel, call: int) -> dict[str, str]:
    """call_id -> the tool output the model read in its ``call``-th request."""
    out: dict[str, str] = {}
    for item in model.calls[call].input:
        data = item if isinstance(item, dict) else item.model_dump()
        if data.get("type") == "function_call_output":
            out[data["call_id"]] = str(data["output"])
    return out


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _findings(span: ReadableSpan) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]


def _all_findings(telemetry: Telemetry) -> list[tuple[str, dict[str, Any]]]:
    return [(s.name, f) for s in telemetry.finished() for f in _findings(s)]


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    context: SpanContext = span.context  # the SDK leaves ReadableSpan.context unannotated (Any)
    return context.span_id


def _run_spans(telemetry: Telemetry) -> list[ReadableSpan]:
    return [s for s in telemetry.finished() if _attrs(s).get(names.GEN_AI_OPERATION_NAME) == "invoke_agent"]


def _summary_under(telemetry: Telemetry, run_span: ReadableSpan) -> ReadableSpan:
    found = [s for s in telemetry.summaries() if _parent_id(s) == _span_id(run_span)]
    assert len(found) == 1, [(s.name, _parent_id(s)) for s in telemetry.summaries()]
    return found[0]


def test_the_integration_is_in_the_table_setup_reads() -> None:
    assert ("openai_agents", openai_agents.__name__) in SUPPORTED


async def test_setup_alone_arms_the_sdk_and_shutdown_disarms_it(telemetry: Telemetry) -> None:
    """No instrument_all(), no ci.run: ``ci.setup()`` (instrument="auto") is the one call."""
    telemetry.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    model = _model([function_call("lun_mappings", {}, call_id="call_lun")], [assistant_message("mapped")])
    agent = Agent(name="storage", instructions="Map the LUNs.", model=model, tools=[_lun_tool()])
    result = await Runner.run(agent, "Which LUNs are mapped?")
    assert result.final_output == "mapped"
    ((span_name, finding),) = _all_findings(telemetry)
    assert span_name == names.tool_span_name("lun_mappings")
    assert finding[names.FINDING_KIND] == "column-type-mismatch"
    (run_span,) = _run_spans(telemetry)
    _summary_under(telemetry, run_span)
    ci.shutdown()
    telemetry.spans.clear()
    model = _model([function_call("lun_mappings", {}, call_id="call_lun")], [assistant_message("mapped")])
    agent = Agent(name="storage", instructions="Map the LUNs.", model=model, tools=[_lun_tool()])
    await Runner.run(agent, "Which LUNs are mapped?")
    assert telemetry.summaries() == [] and _all_findings(telemetry) == []


# ── (a)+(b) the LUN rows ─────────────────────────────────────────────────


class TestLunRows:
    async def _run(self, telemetry: Telemetry, mode: str) -> tuple[ScriptedModel, Any]:
        telemetry.configure(check_column_types=mode)
        ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
        model = _model([function_call("lun_mappings", {}, call_id="call_lun")], [assistant_message("mapped")])
        agent = Agent(name="storage", instructions="Map the LUNs.", model=model, tools=[_lun_tool()])
        result = await Runner.run(agent, "Which LUNs are mapped?")
        return model, result

    async def test_warn_files_on_the_tool_span_and_the_model_reads_the_rows(self, armed: Telemetry) -> None:
        model, result = await self._run(armed, "warn")
        assert result.final_output == "mapped"
        assert _outputs(model, 1) == {"call_lun": str(LUN_ROWS)}
        ((span_name, finding),) = _all_findings(armed)
        assert span_name == names.tool_span_name("lun_mappings")
        assert finding[names.FINDING_KIND] == "column-type-mismatch"
        assert finding[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
        tool_span = armed.one(names.tool_span_name("lun_mappings"))
        assert _attrs(tool_span)[names.GEN_AI_TOOL_CALL_ID] == "call_lun"
        (run_span,) = _run_spans(armed)
        assert _parent_id(tool_span) == _span_id(run_span)
        summary = _summary_under(armed, run_span)
        assert _attrs(summary)[names.RUN_OUTCOME] == "ok"
        assert len(armed.summaries()) == 1

    async def test_enforce_the_model_reads_the_refusal_as_the_result_and_no_rows(
        self, armed: Telemetry
    ) -> None:
        model, result = await self._run(armed, "enforce")
        assert result.final_output == "mapped"
        (read,) = _outputs(model, 1).values()
        ((_, finding),) = _all_findings(armed)
        assert "lun_mappings" in read and "logical_unit_number" in read
        assert str(LUN_ROWS) not in read and "{'logical_unit_number'" not in read
        assert len(model.calls) == 2, "a refusal is the result, not a retry prompt"
        tool_span = armed.one(names.tool_span_name("lun_mappings"))
        assert tool_span.status.status_code is StatusCode.ERROR
        assert _attrs(tool_span)[names.ERROR_TYPE] == names.ERROR_RESULT_REJECTED
        assert finding[names.FINDING_KIND] == "column-type-mismatch"
        assert len(armed.summaries()) == 1


@pytest.mark.parametrize("broken", ["_current", "take_raw", "ToolScope"])
async def test_enforce_fails_closed_when_our_bookkeeping_fails(
    armed: Telemetry, monkeypatch: pytest.MonkeyPatch, broken: str
) -> None:
    """Whatever of ours fails around a call (the host run not found, the guardrail's own reading,
    the call's scope), enforce never hands over rows it would refuse; the run goes on."""
    from context_integrity.integrations import _openai_agents_mcp, _openai_agents_run

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("a bug of ours")

    owner = _openai_agents_mcp if broken == "take_raw" else _openai_agents_run
    monkeypatch.setattr(owner, broken, (lambda *a, **k: None) if broken == "_current" else fail)
    model, result = await TestLunRows()._run(armed, "enforce")
    assert result.final_output == "mapped"
    (read,) = _outputs(model, 1).values()
    assert read.startswith("Result rejected") and "lun_mappings" in read
    assert str(LUN_ROWS) not in read and "{'logical_unit_number'" not in read
    assert len(model.calls) == 2, "a refusal is the result, not a retry prompt"


# ── (c) what the model received ──────────────────────────────────────────

JOBS = {"4417": [{"job": "bkp-4417-ganymede-tier2", "machine": "4417"}]}
TURN_ONE_ANSWER = "Machine 4417 is protected by the job bkp-4417-ganymede-tier2 (tier 2, nightly)."


def _answers_only(data: CallModelData[Any]) -> ModelInputData:
    """The application's window: the model's own answers and the newest user message."""
    kept: list[Any] = []
    given = list(data.model_data.input)
    last_user = max(
        i for i, item in enumerate(given) if isinstance(item, dict) and item.get("role") == "user"
    )
    for i, item in enumerate(given):
        data_ = item if isinstance(item, dict) else item.model_dump()
        if i >= last_user or (data_.get("role") == "assistant"):
            kept.append(item)
    return ModelInputData(input=kept, instructions=data.model_data.instructions)


async def test_turn_two_self_reference_as_the_sdks_own_messages_carry_it(armed: Telemetry) -> None:
    armed.configure()

    @function_tool
    def list_jobs(machine: str) -> list[dict[str, str]]:
        """The backup jobs protecting a machine."""
        return list(JOBS.get(machine, []))

    @function_tool
    def machine_status(machine: str) -> str:
        """The protection status of one machine."""
        return "unknown machine"

    ci.declare_tool("machine_status", arguments_from=["list_jobs"])
    model = _model(
        [function_call("list_jobs", {"machine": "4417"}, call_id="t1-c1")],
        [assistant_message(TURN_ONE_ANSWER)],
        [function_call("machine_status", {"machine": "4417-ganymede"}, call_id="t2-c1")],
        [assistant_message("4417-ganymede has no record.")],
    )
    agent = Agent(name="backup-triage", model=model, tools=[list_jobs, machine_status])
    first = await Runner.run(agent, "Which backup jobs protect machine 4417?")
    history: list[TResponseInputItem] = [
        *first.to_input_list(),
        {"role": "user", "content": "What's the status for that machine?"},
    ]
    await Runner.run(agent, history, run_config=RunConfig(call_model_input_filter=_answers_only))
    turn_two = [item if isinstance(item, dict) else item.model_dump() for item in model.calls[2].input]
    assert [i.get("role") for i in turn_two] == ["assistant", "user"], "the window kept only prose"
    ((span_name, finding),) = _all_findings(armed)
    assert span_name.startswith(names.OPERATION_CHAT)
    assert finding[names.FINDING_KIND] == "unsupported-argument"
    assert finding[names.GEN_AI_TOOL_CALL_ID] == "t2-c1"
    assert finding[names.witness_attribute(0, "value")] == "4417-ganymede"
    # the self-reference message, not the "nowhere" one the call would get without the prose
    served = ("What's the status for that machine?",)
    call = ArmedCall("machine_status", "t2-c1", {"machine": "4417-ganymede"}, ("list_jobs",), frozenset())

    def expected(assistant: tuple[str, ...]) -> str:
        (f,) = check_unsupported_arguments(
            calls=[call], grounded=served, assistant=assistant, epoch=1
        ).findings
        return f.message

    assert finding[names.FINDING_MESSAGE] == expected((TURN_ONE_ANSWER,)) != expected(())
    assert len(armed.summaries()) == 2, "two host runs, two summaries"


async def test_an_eviction_by_the_input_filter_dangles_on_the_next_request(armed: Telemetry) -> None:
    armed.configure()

    @function_tool
    def whats_here() -> list[dict[str, str]]:
        """The screens in this room."""
        return [{"screen": "scr-81"}]

    @function_tool
    def screen_fire(screen: str) -> str:
        """Put a screen on."""
        return "on"

    ci.declare_tool("screen_fire", arguments_from=["whats_here"])

    def evict_whats_here(data: CallModelData[Any]) -> ModelInputData:
        drop = {
            cast("ResponseFunctionToolCallParam", i)["call_id"]  # a function_call item, by the filter below
            for i in data.model_data.input
            if isinstance(i, dict) and i.get("type") == "function_call" and i.get("name") == "whats_here"
        }
        kept = [i for i in data.model_data.input if not (isinstance(i, dict) and i.get("call_id") in drop)]
        return ModelInputData(input=kept, instructions=data.model_data.instructions)

    model = _model([function_call("whats_here", {}, call_id="w1")], [assistant_message("ready")])
    agent = Agent(name="room", model=model, tools=[whats_here, screen_fire])
    await Runner.run(
        agent, "Set up the room.", run_config=RunConfig(call_model_input_filter=evict_whats_here)
    )
    assert "w1" not in _outputs(model, 1), "the filter really evicted the producer's result"
    ((_, finding),) = _all_findings(armed)
    chats = [s for s in armed.finished() if s.name.startswith(names.OPERATION_CHAT)]
    assert len(chats) == 2 and _findings(chats[1]) and not _findings(chats[0])
    assert finding[names.FINDING_KIND] == "dangling-reference"
    assert "whats_here" in finding[names.FINDING_MESSAGE]


class Verdict(BaseModel):
    answer: str
    confidence: float


async def test_structured_output_is_the_typed_answer_claimed(armed: Telemetry) -> None:
    armed.configure(capture_content=True)
    model = _model([assistant_message('{"answer": "42", "confidence": 0.9}')])
    result = await Runner.run(Agent(name="typed", model=model, output_type=Verdict), "q")
    assert result.final_output == Verdict(answer="42", confidence=0.9)
    (run_span,) = _run_spans(armed)
    claimed = json.loads(_attrs(run_span)[names.GEN_AI_OUTPUT_MESSAGES])
    # One answer, in the GenAI conventions' parts (telemetry.schema.content).
    assert json.loads(claimed[0]["parts"][0]["content"]) == {"answer": "42", "confidence": 0.9}
    assert _attrs(_summary_under(armed, run_span))[names.RUN_OUTCOME] == "ok"


# ── (d) never break the agent ────────────────────────────────────────────


async def test_a_run_that_raises_midway_raises_the_same_and_is_summarised_as_an_error(
    armed: Telemetry,
) -> None:
    armed.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    failure = ModelBehaviorError("the provider went away")
    model = _model([function_call("lun_mappings", {}, call_id="c1")], ModelStep.raise_error(failure))
    agent = Agent(name="storage", model=model, tools=[_lun_tool()])
    with pytest.raises(ModelBehaviorError) as raised:
        await Runner.run(agent, "go")
    assert raised.value is failure
    (run_span,) = _run_spans(armed)
    assert run_span.status.status_code is StatusCode.ERROR
    assert _attrs(_summary_under(armed, run_span))[names.RUN_OUTCOME] == "error"
    assert [f[names.FINDING_KIND] for _, f in _all_findings(armed)] == ["column-type-mismatch"]
    assert all(s.end_time is not None for s in armed.finished())


async def test_a_tool_that_raises_keeps_the_sdks_default_message_and_the_run_completes(
    armed: Telemetry,
) -> None:
    armed.configure(check_column_types="enforce")

    @function_tool
    def flaky() -> list[dict[str, Any]]:
        """Always fails."""
        raise RuntimeError("disk on fire")

    ci.declare_tool("flaky", result_columns=LUN_COLUMNS)
    model = _model([function_call("flaky", {}, call_id="f1")], [assistant_message("sorry")])
    result = await Runner.run(Agent(name="a", model=model, tools=[flaky]), "go")
    assert result.final_output == "sorry"
    assert _outputs(model, 1) == {"f1": "An error occurred while running the tool. Please try again."}
    assert _all_findings(armed) == [], "a failure is not a result: nothing judged it"
    tool_span = armed.one(names.tool_span_name("flaky"))
    assert tool_span.status.status_code is StatusCode.ERROR
    (run_span,) = _run_spans(armed)
    assert _attrs(_summary_under(armed, run_span))[names.RUN_OUTCOME] == "ok"


def _clean_agent() -> tuple[Agent[Any], ScriptedModel]:
    @function_tool
    def read_row(i: int) -> dict[str, int]:
        """Read one row."""
        return {"row": i, "value": i * i}

    model = _model(
        [function_call("read_row", {"i": 1}, call_id="r1")],
        [function_call("read_row", {"i": 2}, call_id="r2")],
        [assistant_message("sum is 5")],
    )
    return Agent(name="clean", instructions="Add.", model=model, tools=[read_row]), model


def _as_seen(model: ScriptedModel) -> list[Any]:
    return [
        (
            call.system_instructions,
            json.dumps([i if isinstance(i, dict) else i.model_dump() for i in call.input], sort_keys=True),
            [
                (t.name, json.dumps(getattr(t, "params_json_schema", None), sort_keys=True))
                for t in call.tools
            ],
        )
        for call in model.calls
    ]


async def test_a_clean_run_with_every_dial_off_is_byte_identical(telemetry: Telemetry) -> None:
    telemetry.configure(instrument=())  # the bare run must not be armed by setup()
    bare_agent, bare_model = _clean_agent()
    bare = await Runner.run(bare_agent, "add rows")
    openai_agents.instrument_all()
    try:
        agent, model = _clean_agent()
        judged = await Runner.run(agent, "add rows")
    finally:
        openai_agents.uninstrument_all()
    assert _as_seen(model) == _as_seen(bare_model)
    assert judged.final_output == bare.final_output
    assert [i.to_input_item() for i in judged.new_items] == [i.to_input_item() for i in bare.new_items]
    assert len(telemetry.summaries()) == 1 and _all_findings(telemetry) == []


def _registered_trace_processors() -> tuple[Any, ...]:
    from agents.tracing import get_trace_provider

    registered = get_trace_provider()._multi_processor._processors  # type: ignore[attr-defined]
    assert isinstance(registered, tuple)
    return registered


def test_uninstrument_all_leaves_the_sdk_trace_processors_as_they_were(telemetry: Telemetry) -> None:
    from agents.tracing import TracingProcessor

    class Theirs(TracingProcessor):
        def on_trace_start(self, trace: Any) -> None: ...
        def on_trace_end(self, trace: Any) -> None: ...
        def on_span_start(self, span: Any) -> None: ...
        def on_span_end(self, span: Any) -> None: ...
        def shutdown(self) -> None: ...
        def force_flush(self) -> None: ...

    theirs = Theirs()
    telemetry.configure(instrument=())
    set_trace_processors([theirs])
    try:
        openai_agents.instrument_all()
        armed_with = _registered_trace_processors()
        assert armed_with[0] is theirs and len(armed_with) == 2, "ours runs after the host's"
        openai_agents.uninstrument_all()
        assert _registered_trace_processors() == (theirs,), "ours is gone, the host's kept"
        openai_agents.instrument_all()  # and armed again, it is back once
        assert _registered_trace_processors() == armed_with
    finally:
        openai_agents.uninstrument_all()
        set_trace_processors([])


# ── (e) accounting ───────────────────────────────────────────────────────


def _lun_agent(name: str = "storage", *, traces: bool = False) -> tuple[Agent[Any], ScriptedModel]:
    model = _model(
        [function_call("lun_mappings", {}, call_id=f"{name}-lun")],
        [assistant_message("mapped")],
        traces=traces,
    )
    return Agent(name=name, model=model, tools=[_lun_tool()]), model


async def test_a_handoff_is_one_run_with_one_summary(armed: Telemetry) -> None:
    armed.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    specialist, _ = _lun_agent("specialist")
    triage = Agent(
        name="triage",
        model=_model([function_call("transfer_to_specialist", {}, call_id="h1")]),
        handoffs=[specialist],
    )
    result = await Runner.run(triage, "map the LUNs")
    assert result.last_agent is specialist and result.final_output == "mapped"
    (run_span,) = _run_spans(armed)
    assert _attrs(run_span)[names.GEN_AI_AGENT_NAME] == "triage"
    tool_span = armed.one(names.tool_span_name("lun_mappings"))
    assert _parent_id(tool_span) == _span_id(run_span) and _findings(tool_span)
    assert len(armed.named(names.chat_span_name("ScriptedModel"))) == 3, "both agents' requests judged"
    _summary_under(armed, run_span)
    assert len(armed.summaries()) == 1


async def test_an_agent_as_tool_is_a_run_of_its_own_in_the_same_trace(armed: Telemetry) -> None:
    armed.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    inner, _ = _lun_agent("inner")
    outer = Agent(
        name="outer",
        model=_model(
            [function_call("ask_inner", {"input": "map"}, call_id="o1")], [assistant_message("done")]
        ),
        tools=[inner.as_tool("ask_inner", "Ask the storage agent.")],
    )
    assert (await Runner.run(outer, "go")).final_output == "done"
    runs = {_attrs(s)[names.GEN_AI_AGENT_NAME]: s for s in _run_spans(armed)}
    assert set(runs) == {"outer", "inner"}
    assert len({s.context.trace_id for s in armed.finished() if s.context is not None}) == 1
    assert _parent_id(runs["inner"]) in {_span_id(s) for s in armed.finished()}
    lun = armed.one(names.tool_span_name("lun_mappings"))
    assert _parent_id(lun) == _span_id(runs["inner"]) and _findings(lun)
    assert armed.one(names.tool_span_name("ask_inner")).name
    for run_span in runs.values():
        _summary_under(armed, run_span)
    assert len(armed.summaries()) == 2


async def test_a_ci_run_written_around_a_host_run_doubles_nothing(armed: Telemetry) -> None:
    armed.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    agent, _ = _lun_agent()
    with ci.run("map", agent_name="storage") as mine:
        await Runner.run(agent, "map")
    (run_span,) = _run_spans(armed)
    assert mine.span is not None and _span_id(run_span) == mine.span.get_span_context().span_id
    assert [f.kind for f in mine.findings] == ["column-type-mismatch"]
    _summary_under(armed, run_span)
    assert len(armed.summaries()) == 1


# ── declarations ────────────────────────────────────────────────────────


async def test_ci_tool_above_function_tool_declares_under_the_sdks_name(armed: Telemetry) -> None:
    armed.configure(check_column_types="warn")

    @function_tool(name_override="db_fetch")
    def sdk_tool() -> list[dict[str, Any]]:
        """Rows."""
        return [dict(row) for row in LUN_ROWS]

    # What `@ci.tool(...)` stacked above `@function_tool(...)` does, written as the call it is, so
    # the result can be compared with the SDK's tool.
    fetch_rows = ci.tool(result_columns=LUN_COLUMNS)(sdk_tool)
    # The SDK's tool, untouched: declared under its name, not wrapped (the integration judges its calls).
    assert fetch_rows is sdk_tool
    model = _model([function_call("db_fetch", {}, call_id="d1")], [assistant_message("ok")])
    await Runner.run(Agent(name="a", model=model, tools=[fetch_rows]), "go")
    ((span_name, finding),) = _all_findings(armed)
    assert span_name == names.tool_span_name("db_fetch") and finding[names.GEN_AI_TOOL_NAME] == "db_fetch"


def _unoffered_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "context_integrity" and "not offered" in r.getMessage()
    ]


async def test_a_declaration_the_agent_never_offers_is_one_warning_per_run(
    armed: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    armed.configure(check_column_types="warn")
    ci.declare_tool("lun_mapings", result_columns=LUN_COLUMNS)  # a typo of the tool's name
    with caplog.at_level("WARNING", logger="context_integrity"):
        for _ in range(2):
            agent, _model_used = _lun_agent()
            await Runner.run(agent, "map")
    warned = _unoffered_warnings(caplog)
    assert len(warned) == 2, warned
    assert all("'lun_mapings'" in w and "name_override" in w for w in warned)
    assert all("offered: 'lun_mappings'" in w for w in warned)


async def test_an_offered_declaration_is_not_warned_about_nor_one_offered_by_a_nested_run(
    armed: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    armed.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    inner, _ = _lun_agent("inner")
    outer = Agent(
        name="outer",
        model=_model(
            [function_call("ask_inner", {"input": "map"}, call_id="o1")], [assistant_message("done")]
        ),
        tools=[inner.as_tool("ask_inner", "Ask the storage agent.")],
    )
    with caplog.at_level("WARNING", logger="context_integrity"):
        agent, _ = _lun_agent()
        await Runner.run(agent, "map")
        assert (await Runner.run(outer, "go")).final_output == "done"
    assert _unoffered_warnings(caplog) == []


async def test_a_ci_tool_function_the_agent_does_not_offer_is_not_warned_about(
    armed: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    """A plain @ci.tool function is judged by its own wrapper wherever it is called (a hand-written
    loop beside the agent): the agent not offering it is no typo. A by-name declaration is."""
    armed.configure(check_column_types="warn")

    @ci.tool(result_columns=LUN_COLUMNS)
    def array_inventory() -> list[dict[str, Any]]:
        return []

    with caplog.at_level("WARNING", logger="context_integrity"):
        agent, _ = _lun_agent()
        await Runner.run(agent, "map")
    assert _unoffered_warnings(caplog) == []
    ci.declare_tool("array_inventory", result_columns=LUN_COLUMNS, replace=True)
    with caplog.at_level("WARNING", logger="context_integrity"):
        agent, _ = _lun_agent()
        await Runner.run(agent, "map")
    (warned,) = _unoffered_warnings(caplog)
    assert "'array_inventory'" in warned.split("(offered:")[0]


async def test_ci_tool_under_function_tool_is_judged_once_under_the_sdks_name(armed: Telemetry) -> None:
    armed.configure(check_column_types="warn")

    @function_tool(name_override="db_fetch")
    @ci.tool(result_columns=LUN_COLUMNS)
    def fetch_rows() -> list[dict[str, Any]]:
        """Rows."""
        return [dict(row) for row in LUN_ROWS]

    model = _model([function_call("db_fetch", {}, call_id="d1")], [assistant_message("ok")])
    await Runner.run(Agent(name="a", model=model, tools=[fetch_rows]), "go")
    ((span_name, finding),) = _all_findings(armed)
    assert span_name == names.tool_span_name("db_fetch") and finding[names.GEN_AI_TOOL_CALL_ID] == "d1"
    assert armed.named(names.tool_span_name("fetch_rows")) == []


# ── the other entry points ──────────────────────────────────────────────


async def test_a_streamed_run_is_one_run_and_leaves_the_callers_context_alone(armed: Telemetry) -> None:
    armed.configure(check_column_types="enforce")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    agent, model = _lun_agent()
    streamed = Runner.run_streamed(agent, "map")
    assert ci.current_run() is None
    async for _ in streamed.stream_events():
        pass
    assert streamed.final_output == "mapped"
    assert str(LUN_ROWS) not in _outputs(model, 1)["storage-lun"]
    (run_span,) = _run_spans(armed)
    _summary_under(armed, run_span)
    assert ci.current_run() is None


@pytest.mark.parametrize("mode", ["cancel", "after_turn", "walk away"])
async def test_a_stream_the_caller_abandons_midway_still_ends_its_run_with_one_summary(
    armed: Telemetry, mode: str
) -> None:
    """A client that goes away after the first event: the SDK's ``cancel()`` (now, or after the
    turn), or the events simply no longer read. The run is closed, and the next run is a run of
    its own, not a child of the abandoned one."""
    armed.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    agent, _ = _lun_agent()
    streamed = Runner.run_streamed(agent, "map")
    async for _event in streamed.stream_events():
        if mode == "cancel":
            streamed.cancel()
        elif mode == "after_turn":
            streamed.cancel(mode="after_turn")
        break
    if mode == "walk away":
        streamed.cancel()  # what a server does when its client disconnects
    for _ in range(50):  # the SDK ends the run's task on its loop
        if armed.summaries():
            break
        await asyncio.sleep(0.01)
    (run_span,) = _run_spans(armed)
    summary = _summary_under(armed, run_span)
    # Cancelled now, the run is cancelled; after the turn, the SDK ends it as a finished run.
    assert _attrs(summary)[names.RUN_OUTCOME] == ("ok" if mode == "after_turn" else "cancelled")
    assert ci.current_run() is None
    again, _ = _lun_agent()
    await Runner.run(again, "map")
    runs = _run_spans(armed)
    assert len(runs) == 2 and all(r.parent is None for r in runs)
    assert len(armed.summaries()) == 2


def test_run_sync_is_covered(armed: Telemetry) -> None:
    armed.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    agent, _ = _lun_agent()
    assert Runner.run_sync(agent, "map").final_output == "mapped"
    assert [f[names.FINDING_KIND] for _, f in _all_findings(armed)] == ["column-type-mismatch"]
    assert len(armed.summaries()) == 1


async def test_the_per_agent_and_per_runner_forms(telemetry: Telemetry) -> None:
    telemetry.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    agent, _ = _lun_agent()
    assert openai_agents.instrument(agent) is agent
    with ci.run("map", agent_name="storage") as mine:
        await Runner.run(agent, "map")  # no runner wrapped: the agent's hooks and guardrail judge
    assert [f.kind for f in mine.findings] == ["column-type-mismatch"]
    runner = openai_agents.instrument(agents.run.AgentRunner())
    again, _ = _lun_agent("again")
    await runner.run(again, "map")
    assert len(telemetry.summaries()) == 2
    assert len(_all_findings(telemetry)) == 2
    with pytest.raises(ci.DeclarationError, match="instrument"):
        openai_agents.instrument(object())


async def test_user_hooks_still_see_every_callback(armed: Telemetry) -> None:
    armed.configure(check_column_types="enforce")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    seen: list[str] = []

    class Mine(RunHooks[Any]):
        async def on_llm_start(self, context: Any, agent: Any, system_prompt: Any, input_items: Any) -> None:
            seen.append("llm_start")

        async def on_tool_end(self, context: Any, agent: Any, tool: Any, result: Any) -> None:
            seen.append(f"tool_end:{'rows' if result == LUN_ROWS else 'refusal'}")

        async def on_agent_end(self, context: Any, agent: Any, output: Any) -> None:
            seen.append(f"end:{output}")

    agent, _ = _lun_agent()
    await Runner.run(agent, "map", hooks=Mine())
    assert seen == ["llm_start", "tool_end:refusal", "llm_start", "end:mapped"]


# ── coexistence: OpenInference's instrumentor traces the SDK ─────────────


@pytest.fixture
def openinference(armed: Telemetry) -> Iterator[Telemetry]:
    try:
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("openinference-instrumentation-openai-agents is not installed")
    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=armed.provider)
    yield armed
    instrumentor.uninstrument()
    set_trace_processors([])


def _kind(span: ReadableSpan) -> Any:
    return _attrs(span).get(names.OPENINFERENCE_SPAN_KIND)


async def test_with_openinference_its_spans_are_adopted_one_trace_no_duplicates(
    openinference: Telemetry,
) -> None:
    telemetry = openinference
    telemetry.configure(check_column_types="enforce")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    agent, model = _lun_agent(traces=True)
    await Runner.run(agent, "map")
    spans = telemetry.finished()
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    ours = [
        s
        for s in spans
        if s.instrumentation_scope is not None and s.instrumentation_scope.name == "context_integrity"
    ]
    assert [s.name for s in ours] == [names.DISPOSITION_SPAN], "no second invoke_agent, chat or execute_tool"
    (tool_span,) = [s for s in spans if _kind(s) == names.OPENINFERENCE_KIND_TOOL]
    assert tool_span.name == "lun_mappings"
    assert [f[names.FINDING_KIND] for f in _findings(tool_span)] == ["column-type-mismatch"]
    assert tool_span.status.status_code is StatusCode.ERROR, "refused: the host's span says so"
    assert _attrs(tool_span)[names.ERROR_TYPE] == names.ERROR_RESULT_REJECTED
    assert str(LUN_ROWS) not in _outputs(model, 1)["storage-lun"]
    (summary,) = telemetry.summaries()
    (run_span,) = [s for s in spans if s.context is not None and s.context.span_id == _parent_id(summary)]
    assert _kind(run_span) == "CHAIN" and run_span.instrumentation_scope is not None
    assert run_span.instrumentation_scope.name != "context_integrity"
    assert _parent_id(tool_span) in {_span_id(s) for s in spans}
    assert len([s for s in spans if _kind(s) == names.OPENINFERENCE_KIND_LLM]) == 2


async def test_with_openinference_a_request_finding_lands_on_its_turn_span(openinference: Telemetry) -> None:
    telemetry = openinference
    telemetry.configure()

    @function_tool
    def whats_here() -> list[dict[str, str]]:
        """The screens in this room."""
        return [{"screen": "scr-81"}]

    @function_tool
    def screen_fire(screen: str) -> str:
        """Put a screen on."""
        return "on"

    ci.declare_tool("screen_fire", arguments_from=["whats_here"])

    def evict(data: CallModelData[Any]) -> ModelInputData:
        kept = [i for i in data.model_data.input if not (isinstance(i, dict) and i.get("call_id") == "w1")]
        return ModelInputData(input=kept, instructions=data.model_data.instructions)

    model = _model([function_call("whats_here", {}, call_id="w1")], [assistant_message("ready")], traces=True)
    agent = Agent(name="room", model=model, tools=[whats_here, screen_fire])
    await Runner.run(agent, "Set up.", run_config=RunConfig(call_model_input_filter=evict))
    ((span_name, finding),) = _all_findings(telemetry)
    assert span_name == "turn" and finding[names.FINDING_KIND] == "dangling-reference"
    assert not [s for s in telemetry.finished() if s.name.startswith(names.OPERATION_CHAT)]


async def test_with_openinference_a_nested_run_is_summarised_under_its_own_run_span(
    openinference: Telemetry,
) -> None:
    telemetry = openinference
    telemetry.configure(check_column_types="warn")
    ci.declare_tool("lun_mappings", result_columns=LUN_COLUMNS)
    inner, _ = _lun_agent("inner", traces=True)
    outer = Agent(
        name="outer",
        model=_model(
            [function_call("ask_inner", {"input": "map"}, call_id="o1")],
            [assistant_message("ok")],
            traces=True,
        ),
        tools=[inner.as_tool("ask_inner", "Ask the storage agent.")],
    )
    await Runner.run(outer, "go")
    spans = telemetry.finished()
    assert len({s.context.trace_id for s in spans if s.context is not None}) == 1
    by_id = {_span_id(s): s for s in spans}
    parents = [by_id[p] for s in telemetry.summaries() if (p := _parent_id(s)) is not None]
    assert len(parents) == 2 and all(_kind(p) == "CHAIN" for p in parents)
    (nested,) = [p for p in parents if p.parent is not None and _kind(by_id[p.parent.span_id]) == "TOOL"]
    assert by_id[_parent_id(nested) or 0].name == "ask_inner"


def test_the_docs_example_runs_and_the_model_reads_the_refusal(armed: Telemetry) -> None:
    scope = run_docs_example("frameworks/openai-agents.md", armed)
    (read,) = _outputs(scope["model"], 1).values()
    assert read.startswith("Result rejected") and "'logical_unit_number': ''" not in read
