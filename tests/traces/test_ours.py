"""Our own spans, judged again: a run recorded here, read back and replayed, files what it filed.

The law under test: the family demo (one scripted agent whose story trips every built check) runs in
process through ``ci.run`` with content capture on and recording to a file; that file, judged under
the same declarations and dials, yields the same findings (kind, seam, tool, predicate), each on the
same span the run put it on, but for what no trace carries: the body sent to the provider (the wire
check reads it in process), which the replay says is unreachable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.findings import Finding
from context_integrity.integrations.functions import contract_of
from context_integrity.judge import Dials
from context_integrity.limits import MAX_RECORDED_ANSWERS
from context_integrity.loop import Message, RequestFrame, Role, ToolCall, ToolDefinition, message_text
from context_integrity.recording import read_recording
from context_integrity.telemetry.export.file_export import OtlpJsonLinesSpanExporter
from context_integrity.telemetry.schema import names
from context_integrity.telemetry.schema.content import request_content
from context_integrity.telemetry.setup import CONTRACTS
from context_integrity.traces import JudgedRun, ModelStep, judge_runs, read_runs
from context_integrity.traces.dialects.genai import model_call_of

DIALS = {"check_column_types": "warn", "notice_empty_lookups": True, "notice_prior_turn_evidence": True}

Key = tuple[str, str, str | None, str | None]


def _tool(finding: Finding) -> str | None:
    return next((s.id for s in finding.subjects if s.kind == "tool"), None)


def key(finding: Finding) -> Key:
    return (finding.kind, finding.seam, _tool(finding), finding.predicate)


@pytest.fixture
def recorded(tmp_path: Path, telemetry: Telemetry) -> Iterator[tuple[Path, list[Finding]]]:
    """The family run in process, content captured, its spans written by our OTLP/JSON-lines
    exporter: the recording ``ci.setup()`` writes when no endpoint is configured."""
    path = tmp_path / "family.otlp.jsonl"
    telemetry.provider.add_span_processor(SimpleSpanProcessor(OtlpJsonLinesSpanExporter(path)))
    telemetry.configure(capture_content=True, instrument=(), **DIALS)
    # Imported here: the demo family declares its tools when imported, and a test module imported at
    # collection would leave them in the book every other test starts from. An earlier test may have
    # imported it already, and its book was put back since: the tools are declared again, as the
    # first import declared them, for the replay to judge under.
    from context_integrity import demo_family

    for value in vars(demo_family).values():
        if (contract := contract_of(value)) is not None:
            CONTRACTS.declare(contract, replace=True)
    outcome = demo_family.run_family()
    telemetry.provider.force_flush()
    yield path, outcome.run.findings


def judged_again(path: Path) -> JudgedRun:
    runs = read_runs(path)
    (run,) = judge_runs(runs, CONTRACTS, Dials(**DIALS))  # type: ignore[arg-type]
    assert runs.problems.listed == []
    return run


def test_a_run_recorded_here_and_judged_again_files_what_it_filed(
    recorded: tuple[Path, list[Finding]],
) -> None:
    path, in_process = recorded
    run = judged_again(path)
    assert run.run.dialects == ("ours",)
    replayed = {key(f.finding) for f in run.findings}
    wire = ("invariant-violation", "wire", "trace_eval", None)
    assert {key(f) for f in in_process} - replayed == {wire}
    assert replayed <= {key(f) for f in in_process}


def test_each_finding_lands_on_the_span_the_run_put_it_on(recorded: tuple[Path, list[Finding]]) -> None:
    path, _ = recorded
    recorded_where = sorted(
        (f.kind, f.seam, f.tool_name or "", f.predicate or "", f.span_id)
        for r in read_recording(path).runs
        for f in r.findings
        if f.seam != "wire"
    )
    run = judged_again(path)
    again = sorted(
        (f.finding.kind, f.finding.seam, f.tool_name or "", f.finding.predicate or "", f.span_id)
        for f in run.findings
    )
    assert again == recorded_where


def test_the_wire_check_armed_is_unreachable_and_says_no_trace_carries_the_body(
    recorded: tuple[Path, list[Finding]],
) -> None:
    path, _ = recorded
    CONTRACTS.declare_wire_reader("test")
    try:
        run = judged_again(path)
    finally:
        CONTRACTS.forget_wire_reader("test")
    rows = {(r.check, r.seam): r for r in run.ledger}
    wire = rows["invariant-violation", "wire"]
    model_calls = [step for step in run.run.steps if isinstance(step, ModelStep)]
    assert len(model_calls) == 13  # the family's script: thirteen responses
    assert wire.checked == 0 and wire.unreachable == len(model_calls)  # one per model call, none passed
    assert {u.reason for u in run.unreachable if u.seam == "wire"} == {
        "the request body sent to the provider is not in the trace (no span carries it)"
    }


roles: st.SearchStrategy[Role] = st.sampled_from(["system", "user", "assistant", "tool"])
texts = st.text(max_size=30)
json_scalars = st.none() | st.booleans() | st.integers(min_value=-(10**6), max_value=10**6) | texts
contents = texts | st.lists(st.dictionaries(texts, json_scalars, max_size=3), max_size=3)
calls = st.builds(
    ToolCall,
    name=st.text(min_size=1, max_size=12),
    call_id=st.text(min_size=1, max_size=8),
    arguments=st.dictionaries(texts, json_scalars, max_size=3),
)


@st.composite
def frames(draw: st.DrawFn) -> RequestFrame:
    messages = []
    for role in draw(st.lists(roles, max_size=6)):
        if role == "tool":
            messages.append(
                Message(
                    "tool",
                    draw(contents),
                    tool_name=draw(st.none() | texts.filter(bool)),
                    tool_call_id=draw(st.text(min_size=1, max_size=8)),
                )
            )
        elif role == "assistant":
            messages.append(
                Message("assistant", draw(contents), tool_calls=tuple(draw(st.lists(calls, max_size=2))))
            )
        else:
            messages.append(Message(role, draw(contents), correction=role == "user" and draw(st.booleans())))
    tools = [
        ToolDefinition(name, draw(st.none() | texts), draw(st.none() | st.just({"type": "object"})))
        for name in draw(st.lists(st.text(min_size=1, max_size=10), max_size=3, unique=True))
    ]
    return RequestFrame.of(messages, system=draw(st.none() | texts.filter(bool)), tools=tools, model="m")


def _one_tool_message(content: str) -> RequestFrame:
    return RequestFrame(
        messages=(Message("tool", content, tool_call_id="0"),), system=None, tools=(), model="m"
    )


@settings(max_examples=200, deadline=None)
@given(frame=frames())
# Tool results whose text is a JSON scalar in another spelling: read as JSON they came back as 0.0,
# nothing, x without its quotes, 100.0.
@example(frame=_one_tool_message("0E0"))
@example(frame=_one_tool_message("null"))
@example(frame=_one_tool_message('"x"'))
@example(frame=_one_tool_message("1e2"))
def test_what_content_capture_writes_of_a_request_reads_back_as_the_checks_saw_it(
    frame: RequestFrame,
) -> None:
    written = {key: json.dumps(value, default=str) for key, value in request_content(frame).items()}
    reading = model_call_of({**written, names.GEN_AI_REQUEST_MODEL: "m"})
    read = reading.request
    assert read is not None
    assert [m for m in reading.missing if "response" not in m.what] == []  # no response was written
    assert read.system == frame.system
    assert read.tools == frame.tools

    def seen(messages: tuple[Message, ...]) -> list[tuple[object, ...]]:
        return [
            (m.role, message_text(m), m.tool_calls, m.tool_call_id, m.tool_name, m.correction)
            for m in messages
        ]

    assert seen(read.messages) == seen(frame.messages)


def test_a_run_of_many_turns_records_its_newest_answers_only(telemetry: Telemetry) -> None:
    telemetry.configure(capture_content=True, instrument=())
    with ci.run("q", agent_name="chatty") as agent_run:
        for turn in range(MAX_RECORDED_ANSWERS + 4):
            agent_run.answer(f"answer {turn}")
    (run_span,) = telemetry.named(names.run_span_name("chatty"))
    answers = json.loads(str((run_span.attributes or {})[names.GEN_AI_OUTPUT_MESSAGES]))
    assert [a["parts"][0]["content"] for a in answers] == [
        f"answer {turn}" for turn in range(4, MAX_RECORDED_ANSWERS + 4)
    ]
    assert all(isinstance(a["time_unix_nano"], int) for a in answers)
