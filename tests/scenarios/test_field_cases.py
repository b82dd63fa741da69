"""The documents' field cases, end to end: scripted multi-step runs through the loop protocol.

Each test drives a hand-written agent loop -- a scripted "model" (a list of planned responses),
a message history, a window policy, tools the application owns (``@ci.tool``) and a framework
tool it does not (``ci.declare_tool`` + ``run.tool_result``) -- through ``ci.run``,
``run.request``, ``ModelCall.respond`` and ``run.answer``, then reads every span back from the
SDK's in-memory exporter.

The laws under test:
(a) screen ids evicted: once the window evicts ``whats_here`` while ``screen_fire`` stays offered,
    the next request files ONE dangling-reference finding (compose seam, on that request's ``chat``
    span) naming the ground to fetch again; re-detection is counted, never re-emitted; after the
    re-fetch the check passes; requests before anything was evicted are not-applicable;
(b) turn two, self-reference: an argument whose only trace is the model's own earlier answer files
    ONE unsupported-argument finding with the self-reference message (not the "nowhere" one), on the
    ``chat`` span, carrying the call id; the honest ``absent()`` that follows is ``unreachable`` for
    empty-lookup when no declared producer served anything in the run; and, a stated limit, the
    ``absent()`` sentence never quotes what was looked for, so a retry with the same value is not grounded;
(c) reverse lookup always empty: a served id that finds zero rows files ONE advisory empty-lookup
    finding with three witnesses on the lookup's ``execute_tool`` span; the row has the reference's
    field-test shape ``{checked: 1, findings: 1, not_applicable: 2}``;
(d) external grounds: an argument only the application vouched for is excused on the record (an
    ``external_ground_used`` event) and files nothing; a provider that raises contributes nothing;
(e) zero delta: with no ``arguments_from`` and no dials the loop sees the very objects its tools
    returned, nothing is filed, and every grounding row is ``not-applicable`` exactly once;
(f) every run ends with one summary span holding one row event per registered check.

NEUTRALIZE-PROOFS: deleting the eviction from the window in (a) turns its finding test red (no
event); dropping the assistant answer from the window in (b) turns the self-reference assertion red
(the "nowhere" message files instead); removing ``notice_empty_lookups`` in (c) turns the advisory
test red; removing the provider in (d) makes the excused argument file.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.checks.dangling_reference import (
    ARGUMENT_GROUND_PREDICATE,
    DANGLING_REFERENCE_CEILING,
)
from context_integrity.checks.empty_lookup import EMPTY_LOOKUP_CEILING
from context_integrity.checks.unsupported_argument import (
    UNSUPPORTED_ARGUMENT_CEILING,
    ArmedCall,
    check_unsupported_arguments,
)
from context_integrity.contracts import ToolContract
from context_integrity.judge import REGISTERED_CHECKS
from context_integrity.ledger import ROW_FIELDS
from context_integrity.loop import (
    Message,
    ModelResponse,
    RequestFrame,
    ToolCall,
    ToolDefinition,
    frame_ground,
)
from context_integrity.telemetry import schema
from context_integrity.telemetry.schema import names

MODEL = "scripted-1"
CHAT = names.chat_span_name(MODEL)
GROUNDING_ROWS = (
    ("dangling-reference", "compose"),
    ("unsupported-argument", "choice"),
    ("empty-lookup", "write"),
)


# ── the hand-written loop ────────────────────────────────────────────────


def call(name: str, call_id: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, call_id=call_id, arguments=arguments)


def calls(*planned: ToolCall) -> ModelResponse:
    return ModelResponse(calls=planned)


def answer(text: str) -> ModelResponse:
    return ModelResponse(text=text)


class ScriptedModel:
    """A model that answers each request with the next planned response, and keeps the frames."""

    def __init__(self, plan: Iterable[ModelResponse]) -> None:
        self._plan = list(plan)
        self.frames: list[RequestFrame] = []

    def __call__(self, frame: RequestFrame) -> ModelResponse:
        self.frames.append(frame)
        assert self._plan, "the model was asked more often than the script planned"
        return self._plan.pop(0)

    @property
    def exhausted(self) -> bool:
        return not self._plan


Window = Callable[[Sequence[Message]], list[Message]]


def keep_everything(history: Sequence[Message]) -> list[Message]:
    return list(history)


def keep_latest_tool_results(count: int) -> Window:
    """Observation masking: every user and assistant message stays, only the newest tool results do."""

    def window(history: Sequence[Message]) -> list[Message]:
        tool_positions = [i for i, m in enumerate(history) if m.role == "tool"]
        dropped = set(tool_positions[:-count]) if count else set(tool_positions)
        return [m for i, m in enumerate(history) if i not in dropped]

    return window


def answers_only_before(turn_start: int) -> Window:
    """Across turns keep only the assistant's final answers; inside the current turn keep everything."""

    def window(history: Sequence[Message]) -> list[Message]:
        return [
            m
            for i, m in enumerate(history)
            if i >= turn_start or (m.role == "assistant" and not m.tool_calls)
        ]

    return window


def definition(tool: Any) -> ToolDefinition:
    """The tool as offered to the model, from its contract (decorated function or declared contract)."""
    contract: ToolContract = getattr(tool, "contract", tool)
    return ToolDefinition(contract.name, contract.description, contract.input_schema)


@dataclass
class Loop:
    """One agent's loop: what it offers, how it windows, and which tools it executes itself."""

    model: ScriptedModel
    offered: Sequence[Any]
    app_tools: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    framework_tools: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    window: Window = keep_everything
    system: str = "You operate a storage estate. Use the tools; never guess identifiers."
    # (tool name, call id, what the tool returned, what the loop handed on to the model)
    executed: list[tuple[str, str, object, object]] = field(default_factory=list)

    def turn(self, run: ci.Run | None, history: list[Message]) -> str:
        """Drive the model until it answers; ``run`` is ``None`` for the uninstrumented baseline."""
        tools = tuple(definition(t) for t in self.offered)
        while True:
            frame = RequestFrame.of(self.window(history), system=self.system, tools=tools, model=MODEL)
            if run is not None:
                with run.request(frame) as model_call:
                    response = self.model(frame)
                    model_call.respond(response)
            else:
                response = self.model(frame)
            history.append(Message("assistant", response.text or "", tool_calls=response.calls))
            if not response.calls:
                if run is not None:
                    run.answer(response.text or "")
                return response.text or ""
            for planned in response.calls:
                if planned.name in self.app_tools:
                    raw = delivered = self.app_tools[planned.name](**planned.arguments)
                else:
                    raw = self.framework_tools[planned.name](**planned.arguments)
                    delivered = (
                        run.tool_result(planned.name, planned.call_id, raw, arguments=planned.arguments)
                        if run is not None
                        else raw
                    )
                self.executed.append((planned.name, planned.call_id, raw, delivered))
                history.append(
                    Message("tool", delivered, tool_name=planned.name, tool_call_id=planned.call_id)
                )


# ── reading the record back ──────────────────────────────────────────────


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def events(span: ReadableSpan, name: str = names.FINDING_EVENT) -> list[dict[str, Any]]:
    return [dict(e.attributes or {}) for e in span.events if e.name == name]


def all_finding_events(telemetry: Telemetry) -> list[tuple[str, dict[str, Any]]]:
    return [(s.name, e) for s in telemetry.finished() for e in events(s)]


def tool_span(telemetry: Telemetry, tool: str, call_id: str) -> ReadableSpan:
    (found,) = [
        s
        for s in telemetry.named(names.tool_span_name(tool))
        if attrs(s)[names.GEN_AI_TOOL_CALL_ID] == call_id
    ]
    return found


def witness(event: Mapping[str, Any], index: int, field_name: str) -> Any:
    return event[names.witness_attribute(index, field_name)]


def ledger_rows(summary: ReadableSpan) -> list[dict[str, Any]]:
    """A summary span's ledger rows, decoded as the recording reader decodes them."""
    problems: list[str] = []
    rows = schema.decode_summary(attrs(summary), problems).rows
    assert problems == []
    return rows


def summary_rows(telemetry: Telemetry) -> dict[tuple[str, str], dict[str, Any]]:
    """The one summary span's ledger rows, keyed (check, seam), after asserting their shape."""
    (summary,) = telemetry.summaries()
    rows = ledger_rows(summary)
    keys = [(r["check"], r["seam"]) for r in rows]
    assert keys == [(c.check, c.seam) for c in REGISTERED_CHECKS]
    return {key: {f: r[f] for f in ROW_FIELDS if f in r} for key, r in zip(keys, rows, strict=True)}


def counts(row: Mapping[str, Any]) -> dict[str, int]:
    return {f: row[f] for f in ("checked", "findings", "not_applicable", "unreachable")}


def findings_metric(telemetry: Telemetry) -> dict[tuple[str, str, str], int]:
    return {
        (p[names.METRIC_KIND], p[names.METRIC_SEAM], p[names.METRIC_TOOL]): v
        for p, v in telemetry.findings_metric()
    }


# ── (a) screen ids evicted ───────────────────────────────────────────────

SCREENS = ["screen2", "screen7", "screen9"]


def _screen_tools() -> tuple[Any, Any]:
    @ci.tool
    def whats_here() -> list[str]:
        """List the ids visible on the current screen."""
        return list(SCREENS)

    @ci.tool(
        arguments_from=["whats_here"],
        input_schema={"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
    )
    def screen_fire(id: str) -> str:
        """Fire the named screen id."""
        return f"fired {id}" if id in SCREENS else f"refused: there is no screen {id!r} here"

    return whats_here, screen_fire


def _screen_run(telemetry: Telemetry) -> tuple[ci.Run, Loop]:
    telemetry.configure()
    whats_here, screen_fire = _screen_tools()
    model = ScriptedModel(
        [
            calls(call("whats_here", "c1")),  # 1: nothing served yet
            calls(call("screen_fire", "c2", id="screen2")),  # 2: ground in the window
            calls(call("screen_fire", "c3", id="screen7")),  # 3: still in the window
            # 4: the window has evicted whats_here; the model rebuilds an id from memory
            calls(call("screen_fire", "c4", id="screen-9")),
            calls(call("whats_here", "c5")),  # 5: still dangling; the model takes the advice
            calls(call("screen_fire", "c6", id="screen9")),  # 6: re-fetched: grounded again
            answer("Fired screen2, screen7 and screen9."),  # 7
        ]
    )
    loop = Loop(
        model=model,
        offered=[whats_here, screen_fire],
        app_tools={"whats_here": whats_here, "screen_fire": screen_fire},
        window=keep_latest_tool_results(2),
    )
    with ci.run("Fire every screen on the current display.", agent_name="screens") as agent_run:
        loop.turn(agent_run, [Message("user", "Fire every screen on the current display, one at a time.")])
    assert model.exhausted
    return agent_run, loop


class TestScreenIdsEvicted:
    def test_the_window_really_evicts_the_ground_while_the_consumer_stays_offered(
        self, telemetry: Telemetry
    ) -> None:
        _, loop = _screen_run(telemetry)
        present = [{m.tool_name for m in frame.messages if m.role == "tool"} for frame in loop.model.frames]
        assert present == [
            set(),
            {"whats_here"},
            {"whats_here", "screen_fire"},
            {"screen_fire"},
            {"screen_fire"},
            {"screen_fire", "whats_here"},
            {"whats_here", "screen_fire"},
        ]
        assert all("screen_fire" in {t.name for t in f.tools} for f in loop.model.frames)

    def test_one_dangling_reference_on_the_first_evicted_request_naming_the_ground(
        self, telemetry: Telemetry
    ) -> None:
        agent_run, _ = _screen_run(telemetry)
        chats = telemetry.named(CHAT)
        assert len(chats) == 7
        dangling = [
            (index, e)
            for index, span in enumerate(chats, start=1)
            for e in events(span)
            if e[names.FINDING_KIND] == "dangling-reference"
        ]
        assert [index for index, _ in dangling] == [4]
        ((_, event),) = dangling
        assert event[names.FINDING_SEAM] == "compose"
        assert event[names.FINDING_ADVISORY] is False
        assert names.FINDING_PREDICATE not in event  # subjects suffice for this kind
        assert event[names.FINDING_EPOCH] == 4
        assert list(event[names.FINDING_SUBJECTS]) == ["tool screen_fire", "tool whats_here"]
        assert event[names.GEN_AI_TOOL_NAME] == "screen_fire"
        assert names.GEN_AI_TOOL_CALL_ID not in event  # a request is about no call yet
        message = event[names.FINDING_MESSAGE]
        assert "'whats_here' again" in message  # the honest fix: fetch the ground again
        assert DANGLING_REFERENCE_CEILING in message
        assert event[names.FINDING_WITNESS_COUNT] == 1
        assert witness(event, 0, "subject") == "tool screen_fire"
        assert witness(event, 0, "predicate") == ARGUMENT_GROUND_PREDICATE
        assert "'whats_here'" in witness(event, 0, "value")
        assert witness(event, 0, "epoch") == 4
        assert witness(event, 0, "stratum") == "asserted"
        assert [f.kind for f in agent_run.findings].count("dangling-reference") == 1

    def test_the_fabricated_id_on_the_dangling_request_is_an_unsupported_argument_with_its_call_id(
        self, telemetry: Telemetry
    ) -> None:
        _screen_run(telemetry)
        fourth = telemetry.named(CHAT)[3]
        kinds = [e[names.FINDING_KIND] for e in events(fourth)]
        assert kinds == ["dangling-reference", "unsupported-argument"]
        argument = events(fourth)[1]
        assert argument[names.FINDING_SEAM] == "choice"
        assert argument[names.FINDING_PREDICATE] == "id"
        assert argument[names.GEN_AI_TOOL_NAME] == "screen_fire"
        assert argument[names.GEN_AI_TOOL_CALL_ID] == "c4"
        assert witness(argument, 0, "value") == "screen-9"
        assert "c4" in witness(argument, 0, "provenance")
        assert UNSUPPORTED_ARGUMENT_CEILING in argument[names.FINDING_MESSAGE]
        assert "'whats_here' again" in argument[names.FINDING_MESSAGE]
        span = attrs(fourth)
        assert span[names.FINDINGS_COUNT] == 2
        assert list(span[names.FINDINGS_KINDS]) == ["dangling-reference", "unsupported-argument"]
        # the call still went out exactly as the model made it, and the tool said no
        refused = tool_span(telemetry, "screen_fire", "c4")
        assert events(refused) == []

    def test_re_detection_is_counted_not_re_emitted_and_the_re_fetch_is_silent(
        self, telemetry: Telemetry
    ) -> None:
        _screen_run(telemetry)
        chats = telemetry.named(CHAT)
        assert [len(events(span)) for span in chats] == [0, 0, 0, 2, 0, 0, 0]
        assert [attrs(span).get(names.FINDINGS_COUNT) for span in chats] == [None] * 3 + [2] + [None] * 3
        for call_id in ("c1", "c2", "c3", "c4", "c5", "c6"):
            name = "whats_here" if call_id in ("c1", "c5") else "screen_fire"
            assert events(tool_span(telemetry, name, call_id)) == []
        assert findings_metric(telemetry) == {
            ("dangling-reference", "compose", "screen_fire"): 1,
            ("unsupported-argument", "choice", "screen_fire"): 1,
        }

    def test_the_summary_rows_count_every_request_and_every_response(self, telemetry: Telemetry) -> None:
        _screen_run(telemetry)
        rows = summary_rows(telemetry)
        # requests 1-3: nothing evicted yet (not-applicable); 4-5 dangling (two encounters, one
        # event); 6-7 re-fetched and compared (pass)
        assert counts(rows[("dangling-reference", "compose")]) == {
            "checked": 4,
            "findings": 2,
            "not_applicable": 3,
            "unreachable": 0,
        }
        assert "last_fired_at" in rows[("dangling-reference", "compose")]
        # responses 2, 3, 4, 6 call the armed tool (one fails); 1 and 5 call only whats_here and 7
        # answers: three responses with no armed call
        assert counts(rows[("unsupported-argument", "choice")]) == {
            "checked": 4,
            "findings": 1,
            "not_applicable": 3,
            "unreachable": 0,
        }
        # the dial is off: one not-applicable for the whole run
        assert counts(rows[("empty-lookup", "write")]) == {
            "checked": 0,
            "findings": 0,
            "not_applicable": 1,
            "unreachable": 0,
        }
        (summary,) = telemetry.summaries()
        assert attrs(summary)[names.row_attribute("dangling-reference", "compose", "findings")] == 2
        assert attrs(summary)[names.totals_attribute("findings")] == 3


# ── (b) turn two: the model's own answer as the only ground ──────────────

JOBS = {"4417": [{"job": "bkp-4417-ganymede-tier2", "machine": "4417", "policy": "tier2-nightly"}]}
STATUS = {"4417": {"machine": "4417", "protected": True, "last_backup": "2026-11-28T02:10:00Z"}}
TURN_ONE_ANSWER = "Machine 4417 is protected by the job bkp-4417-ganymede-tier2 (tier 2, nightly)."
TURN_TWO_QUESTION = "What's the status for that machine?"


def _backup_tools() -> tuple[Any, Any]:
    @ci.tool
    def list_jobs(machine: str) -> list[dict[str, str]]:
        """The backup jobs that protect a machine."""
        return list(JOBS.get(machine, []))

    @ci.tool(arguments_from=["list_jobs"])
    def machine_status(machine: str) -> Any:
        """The protection status of one machine."""
        found = STATUS.get(machine)
        return found if found is not None else ci.absent(machine, reason="no machine by that id")

    return list_jobs, machine_status


def _two_turns(
    telemetry: Telemetry, *, one_run: bool, retry: bool = False
) -> tuple[list[ci.Run], Loop, list[Message]]:
    telemetry.configure(notice_empty_lookups=True)
    list_jobs, machine_status = _backup_tools()
    plan = [
        calls(call("list_jobs", "t1-c1", machine="4417")),
        answer(TURN_ONE_ANSWER),
        # turn two: "that machine" resolved out of the model's own rendered job name
        calls(call("machine_status", "t2-c1", machine="4417-ganymede")),
        answer("4417-ganymede has no backup record."),
    ]
    if retry:  # the model, unconvinced, asks again with the very same value
        plan.insert(3, calls(call("machine_status", "t2-c2", machine="4417-ganymede")))
    model = ScriptedModel(plan)
    loop = Loop(
        model=model,
        offered=[list_jobs, machine_status],
        app_tools={"list_jobs": list_jobs, "machine_status": machine_status},
    )
    history = [Message("user", "Which backup jobs protect machine 4417?")]
    runs: list[ci.Run] = []
    conversation = "triage-7"
    if one_run:
        with ci.run("two turns", agent_name="backup-triage", conversation_id=conversation) as only:
            loop.turn(only, history)
            loop.window = answers_only_before(len(history))
            history.append(Message("user", TURN_TWO_QUESTION))
            loop.turn(only, history)
        runs.append(only)
    else:
        with ci.run("turn one", agent_name="backup-triage", conversation_id=conversation) as first:
            loop.turn(first, history)
        runs.append(first)
        # between turns the application compacts: only the assistant's answers carry over
        loop.window = answers_only_before(len(history))
        history.append(Message("user", TURN_TWO_QUESTION))
        with ci.run(TURN_TWO_QUESTION, agent_name="backup-triage", conversation_id=conversation) as second:
            loop.turn(second, history)
        runs.append(second)
    assert model.exhausted
    return runs, loop, history


class TestTurnTwoSelfReference:
    def test_turn_two_frame_holds_the_assistant_answer_and_not_the_user_id_or_the_jobs(
        self, telemetry: Telemetry
    ) -> None:
        _, loop, _ = _two_turns(telemetry, one_run=False)
        turn_two = loop.model.frames[2]
        assert [m.role for m in turn_two.messages] == ["assistant", "user"]
        ground = frame_ground(turn_two)
        assert not any("4417-ganymede" in text for text in ground.grounded)
        assert any("4417-ganymede" in text for text in ground.assistant)

    def test_one_unsupported_argument_with_the_self_reference_message_on_the_chat_span(
        self, telemetry: Telemetry
    ) -> None:
        runs, loop, _ = _two_turns(telemetry, one_run=False)
        everything = all_finding_events(telemetry)
        assert [(span, e[names.FINDING_KIND]) for span, e in everything] == [(CHAT, "unsupported-argument")]
        ((_, event),) = everything
        assert event[names.FINDING_SEAM] == "choice"
        assert event[names.FINDING_PREDICATE] == "machine"
        assert event[names.GEN_AI_TOOL_NAME] == "machine_status"
        assert event[names.GEN_AI_TOOL_CALL_ID] == "t2-c1"
        assert witness(event, 0, "value") == "4417-ganymede"
        assert "t2-c1" in witness(event, 0, "provenance")
        # the message is the self-reference one, distinct from the "nowhere" one the same call
        # would get if the model's answer were not in the frame
        frame = loop.model.frames[2]
        ground = frame_ground(frame)
        armed = ArmedCall(
            "machine_status", "t2-c1", {"machine": "4417-ganymede"}, ("list_jobs",), frozenset()
        )

        def expected(assistant: Sequence[str]) -> ci.Finding:
            (finding,) = check_unsupported_arguments(
                calls=[armed], grounded=ground.grounded, assistant=assistant, epoch=1
            ).findings
            return finding

        self_reference, nowhere = expected(ground.assistant), expected(())
        assert event[names.FINDING_MESSAGE] == self_reference.message
        assert self_reference.message != nowhere.message
        assert witness(event, 1, "value") == self_reference.witnesses[1].value
        assert witness(event, 1, "value") != nowhere.witnesses[1].value
        assert "'list_jobs'" in event[names.FINDING_MESSAGE]  # the fix names the declared ground
        assert runs[0].findings == []
        assert [f.kind for f in runs[1].findings] == ["unsupported-argument"]

    def test_the_honest_absent_is_delivered_unchanged_and_empty_lookup_is_unreachable(
        self, telemetry: Telemetry
    ) -> None:
        # Spec 3.6 rule 4: with no declared producer text in reach the check cannot compare, so the
        # encounter is unreachable ("consumer called before its producers"), never a pass and never
        # a finding. In our protocol a run's producer corpus is what it served itself (tool calls
        # and frames of THIS run); the turn-one list_jobs result belongs to the previous run and the
        # window dropped it, so nothing list_jobs served is in reach of turn two.
        runs, loop, _ = _two_turns(telemetry, one_run=False)
        (status,) = [entry for entry in loop.executed if entry[0] == "machine_status"]
        _, _, raw, delivered = status
        assert ci.is_absence(raw) and delivered is raw
        assert events(tool_span(telemetry, "machine_status", "t2-c1")) == []
        turn_two = {(r.check, r.seam): r for r in runs[1].ledger()}
        empty = turn_two[("empty-lookup", "write")]
        # Noted at the write seam only: the one lookup result, whose producer served nothing this run.
        assert (empty.checked, empty.findings, empty.not_applicable, empty.unreachable) == (0, 0, 0, 1)
        argument = turn_two[("unsupported-argument", "choice")]
        assert (argument.checked, argument.findings, argument.not_applicable) == (1, 1, 1)
        dangling = turn_two[("dangling-reference", "compose")]
        # nothing this run served was ever evicted: the compose seam had nothing to be about
        assert (dangling.checked, dangling.not_applicable) == (0, 2)

    def test_the_chat_span_summarises_its_one_finding(self, telemetry: Telemetry) -> None:
        _two_turns(telemetry, one_run=False)
        chats = telemetry.named(CHAT)
        assert len(chats) == 4  # two requests per turn
        assert [len(events(span)) for span in chats] == [0, 0, 1, 0]
        assert attrs(chats[2])[names.FINDINGS_COUNT] == 1
        assert list(attrs(chats[2])[names.FINDINGS_KINDS]) == ["unsupported-argument"]
        assert all(names.FINDINGS_COUNT not in attrs(chats[i]) for i in (0, 1, 3))

    def test_regression_a_retry_after_absent_is_not_grounded_by_the_absence_text(
        self, telemetry: Telemetry
    ) -> None:
        # absent() keeps what was looked for off the sentence the model reads: were it echoed,
        # the "not found" would itself become ground and the same fabricated value, retried,
        # would count as served. The retry is judged again and fails again: the ledger counts
        # both encounters while the run keeps its one event.
        runs, loop, _ = _two_turns(telemetry, one_run=False, retry=True)
        retry_frame = loop.model.frames[3]
        (echo,) = [m for m in retry_frame.messages if m.role == "tool"]
        # an absence is a str (Absence subclasses it), and is_absence narrows to it
        assert ci.is_absence(echo.content) and "4417-ganymede" not in echo.content
        argument = next(r for r in runs[1].ledger() if r.check == "unsupported-argument")
        assert (argument.checked, argument.findings) == (2, 2)
        assert [len(events(span)) for span in telemetry.named(CHAT)] == [0, 0, 1, 0, 0]

    def test_each_turn_is_its_own_run_with_its_own_summary(self, telemetry: Telemetry) -> None:
        _two_turns(telemetry, one_run=False)
        assert len(telemetry.named(names.run_span_name("backup-triage"))) == 2
        assert len(telemetry.summaries()) == 2
        turn_one, turn_two = telemetry.summaries()
        assert attrs(turn_one)[names.totals_attribute("findings")] == 0
        assert attrs(turn_two)[names.totals_attribute("findings")] == 1
        assert findings_metric(telemetry) == {("unsupported-argument", "choice", "machine_status"): 1}

    def test_inside_one_run_the_same_conversation_also_dangles_and_notices_the_empty_lookup(
        self, telemetry: Telemetry
    ) -> None:
        # Contrast: when both turns are one run, the judge watched list_jobs being served and then
        # evicted, so the compose seam files too, and the producer text (the job name) is in the
        # run's corpus, so the empty result for a fragment of it is noticed -- advisory, naming
        # list_jobs as the producer. Same conversation, more evidence in reach, more said.
        runs, _, _ = _two_turns(telemetry, one_run=True)
        (agent_run,) = runs
        assert [(f.kind, f.seam) for f in agent_run.findings] == [
            ("dangling-reference", "compose"),
            ("unsupported-argument", "choice"),
            ("empty-lookup", "write"),
        ]
        lookup = events(tool_span(telemetry, "machine_status", "t2-c1"))
        assert [e[names.FINDING_KIND] for e in lookup] == ["empty-lookup"]
        assert witness(lookup[0], 1, "subject") == "tool list_jobs"


# ── (c) reverse lookup always empty ──────────────────────────────────────

WWPN = "c0:50:76:0a:11:7e:00:10"
HOSTS = [
    {"host": "esx-07", "wwpn": WWPN},
    {"host": "esx-08", "wwpn": "c0:50:76:0a:11:7e:00:12"},
]


def _reverse_lookup_tools() -> tuple[Any, ToolContract, Callable[..., list[Any]]]:
    @ci.tool
    def list_hosts() -> list[dict[str, str]]:
        """Every host with its initiator WWPN."""
        return [dict(h) for h in HOSTS]

    # A tool the framework owns (say, from an MCP server): declared by name, reported by the loop.
    lookup_contract = ci.declare_tool(
        "hosts_by_wwpn",
        arguments_from=["list_hosts"],
        input_schema={"type": "object", "properties": {"wwpn": {"type": "string"}}},
        description="The hosts logged in with one WWPN.",
    )

    def hosts_by_wwpn(wwpn: str) -> list[Any]:
        # The field bug: the index is keyed by the WWPN without colons, upper case, so the
        # filter never matches and every lookup is empty.
        index = {h["wwpn"].replace(":", "").upper(): h for h in HOSTS}
        return [index[wwpn]] if wwpn in index else []

    return list_hosts, lookup_contract, hosts_by_wwpn


def _reverse_lookup_run(
    telemetry: Telemetry, *, retry: bool = False, notice: bool = True
) -> tuple[ci.Run, Loop]:
    telemetry.configure(notice_empty_lookups=notice)
    list_hosts, lookup_contract, hosts_by_wwpn = _reverse_lookup_tools()
    plan = [
        calls(call("list_hosts", "c1")),
        calls(call("hosts_by_wwpn", "c2", wwpn=WWPN)),
        answer(f"No host is logged in with WWPN {WWPN}."),
    ]
    if retry:
        plan.insert(2, calls(call("hosts_by_wwpn", "c3", wwpn=WWPN)))
    model = ScriptedModel(plan)
    loop = Loop(
        model=model,
        offered=[list_hosts, lookup_contract],
        app_tools={"list_hosts": list_hosts},
        framework_tools={"hosts_by_wwpn": hosts_by_wwpn},
    )
    with ci.run(f"Which host owns {WWPN}?", agent_name="fabric") as agent_run:
        loop.turn(agent_run, [Message("user", f"Which host owns initiator {WWPN}?")])
    assert model.exhausted
    return agent_run, loop


class TestReverseLookupAlwaysEmpty:
    def test_one_advisory_empty_lookup_on_the_lookups_execute_tool_span(self, telemetry: Telemetry) -> None:
        agent_run, loop = _reverse_lookup_run(telemetry)
        everything = all_finding_events(telemetry)
        assert [(span, e[names.FINDING_KIND]) for span, e in everything] == [
            (names.tool_span_name("hosts_by_wwpn"), "empty-lookup")
        ]
        span = tool_span(telemetry, "hosts_by_wwpn", "c2")
        assert attrs(span)[names.GEN_AI_OPERATION_NAME] == names.OPERATION_EXECUTE_TOOL
        assert attrs(span)[names.FINDINGS_COUNT] == 1
        assert list(attrs(span)[names.FINDINGS_KINDS]) == ["empty-lookup"]
        (event,) = events(span)
        assert event[names.FINDING_SEAM] == "write"
        assert event[names.FINDING_ADVISORY] is True
        assert event[names.FINDING_PREDICATE] == "wwpn"
        assert event[names.GEN_AI_TOOL_NAME] == "hosts_by_wwpn"
        assert event[names.GEN_AI_TOOL_CALL_ID] == "c2"
        assert list(event[names.FINDING_SUBJECTS]) == ["tool hosts_by_wwpn", "tool list_hosts"]
        assert event[names.FINDING_WITNESS_COUNT] == 3
        assert [witness(event, i, "subject") for i in range(3)] == [
            "tool hosts_by_wwpn",
            "tool list_hosts",
            "tool hosts_by_wwpn",
        ]
        assert [witness(event, i, "predicate") for i in range(3)] == ["wwpn"] * 3
        assert witness(event, 0, "value") == WWPN
        assert "c2" in witness(event, 0, "provenance")
        assert "c2" in witness(event, 2, "provenance")
        message = event[names.FINDING_MESSAGE]
        for fact in ("'hosts_by_wwpn'", "'list_hosts'", WWPN, "c2", EMPTY_LOOKUP_CEILING):
            assert fact in message
        # advisory: nothing changed -- the loop handed the model the tool's very own empty list
        (lookup,) = [entry for entry in loop.executed if entry[0] == "hosts_by_wwpn"]
        assert lookup[2] == [] and lookup[3] is lookup[2]
        assert [f.advisory for f in agent_run.findings] == [True]
        assert findings_metric(telemetry) == {("empty-lookup", "write", "hosts_by_wwpn"): 1}
        (point,) = [p for p, _ in telemetry.findings_metric()]
        assert point[names.METRIC_ADVISORY] is True

    def test_the_row_has_the_reference_field_test_shape(self, telemetry: Telemetry) -> None:
        # The reference's field test (producer call, lookup call, answer) ends the row at
        # {checked: 1, findings: 1, notApplicable: 2}, two of its not-applicable notes made when a
        # model response holds no armed call. Ours notes a row only at its own seam (write): the
        # producer's result is out of scope (it declares no grounds) and the lookup's own result is
        # the one comparison, so {checked: 1, findings: 1, not_applicable: 1}.
        _reverse_lookup_run(telemetry)
        rows = summary_rows(telemetry)
        assert counts(rows[("empty-lookup", "write")]) == {
            "checked": 1,
            "findings": 1,
            "not_applicable": 1,
            "unreachable": 0,
        }
        assert "last_fired_at" in rows[("empty-lookup", "write")]
        # the WWPN the model chose was served by list_hosts: the choice seam passes it
        assert counts(rows[("unsupported-argument", "choice")]) == {
            "checked": 1,
            "findings": 0,
            "not_applicable": 2,
            "unreachable": 0,
        }
        # nothing was ever evicted from this window
        assert counts(rows[("dangling-reference", "compose")]) == {
            "checked": 0,
            "findings": 0,
            "not_applicable": 3,
            "unreachable": 0,
        }

    def test_a_retry_with_the_same_value_is_one_event_and_two_ledger_findings(
        self, telemetry: Telemetry
    ) -> None:
        agent_run, _ = _reverse_lookup_run(telemetry, retry=True)
        assert len(events(tool_span(telemetry, "hosts_by_wwpn", "c2"))) == 1
        assert events(tool_span(telemetry, "hosts_by_wwpn", "c3")) == []
        assert names.FINDINGS_COUNT not in attrs(tool_span(telemetry, "hosts_by_wwpn", "c3"))
        empty = next(r for r in agent_run.ledger() if r.check == "empty-lookup")
        assert (empty.checked, empty.findings, empty.not_applicable) == (2, 2, 1)
        assert findings_metric(telemetry) == {("empty-lookup", "write", "hosts_by_wwpn"): 1}

    def test_without_the_dial_the_declaration_alone_notices_nothing(self, telemetry: Telemetry) -> None:
        agent_run, _ = _reverse_lookup_run(telemetry, notice=False)
        assert agent_run.findings == []
        rows = summary_rows(telemetry)
        assert counts(rows[("empty-lookup", "write")]) == {
            "checked": 0,
            "findings": 0,
            "not_applicable": 1,
            "unreachable": 0,
        }


# ── (d) external grounds ─────────────────────────────────────────────────


def _selection_run(telemetry: Telemetry, provider: Callable[[], object]) -> tuple[ci.Run, Loop]:
    telemetry.configure(external_grounds=provider)
    whats_here, screen_fire = _screen_tools()
    model = ScriptedModel([calls(call("screen_fire", "c1", id="screen9")), answer("Fired screen9.")])
    loop = Loop(
        model=model,
        offered=[whats_here, screen_fire],
        app_tools={"whats_here": whats_here, "screen_fire": screen_fire},
    )
    with ci.run("Fire the screen I selected.", agent_name="screens") as agent_run:
        loop.turn(agent_run, [Message("user", "Fire the screen I selected in the panel.")])
    assert model.exhausted
    return agent_run, loop


class TestExternalGrounds:
    def test_an_app_verified_value_is_excused_on_the_record_and_files_nothing(
        self, telemetry: Telemetry
    ) -> None:
        selection = [ci.ExternalGround(value="screen9", source="viewer-selection")]
        agent_run, _ = _selection_run(telemetry, lambda: selection)
        assert all_finding_events(telemetry) == []
        assert agent_run.findings == []
        first = telemetry.named(CHAT)[0]
        (excusal,) = events(first, names.EXTERNAL_GROUND_EVENT)
        assert excusal == {
            names.GEN_AI_TOOL_NAME: "screen_fire",
            names.GEN_AI_TOOL_CALL_ID: "c1",
            names.EXTERNAL_GROUND_PATH: "id",
            names.EXTERNAL_GROUND_VALUE: "screen9",
            names.EXTERNAL_GROUND_SOURCE: "viewer-selection",
        }
        rows = summary_rows(telemetry)
        assert counts(rows[("unsupported-argument", "choice")]) == {
            "checked": 1,
            "findings": 0,
            "not_applicable": 1,
            "unreachable": 0,
        }

    def test_a_provider_that_raises_contributes_nothing_and_the_run_completes(
        self, telemetry: Telemetry
    ) -> None:
        def broken() -> object:
            raise RuntimeError("the viewer went away")

        agent_run, loop = _selection_run(telemetry, broken)
        assert agent_run.outcome == "ok"
        assert [entry[3] for entry in loop.executed] == ["fired screen9"]
        first = telemetry.named(CHAT)[0]
        assert events(first, names.EXTERNAL_GROUND_EVENT) == []
        assert [e[names.FINDING_KIND] for e in events(first)] == ["unsupported-argument"]
        assert events(first, names.INTERNAL_ERROR_EVENT) == []
        assert len(telemetry.summaries()) == 1


# ── (e) zero delta ───────────────────────────────────────────────────────


class TestZeroDelta:
    def test_undeclared_tools_and_no_dials_change_nothing_and_every_grounding_row_is_not_applicable(
        self, telemetry: Telemetry
    ) -> None:
        telemetry.configure()
        hosts = [dict(h) for h in HOSTS]
        nothing: list[Any] = []
        served: dict[str, object] = {"list_hosts": hosts, "hosts_by_wwpn": nothing}

        def plan() -> list[ModelResponse]:
            return [
                calls(call("list_hosts", "c1")),
                calls(call("hosts_by_wwpn", "c2", wwpn=WWPN)),
                answer("No host owns it."),
            ]

        @ci.tool
        def list_hosts() -> list[dict[str, str]]:
            """Every host with its initiator WWPN."""
            return hosts

        def hosts_by_wwpn(wwpn: str) -> object:
            return served["hosts_by_wwpn"]

        def make_loop(tools: Mapping[str, Callable[..., Any]]) -> Loop:
            return Loop(
                model=ScriptedModel(plan()),
                offered=[list_hosts, ToolDefinition("hosts_by_wwpn")],
                app_tools=tools,
                framework_tools={"hosts_by_wwpn": hosts_by_wwpn},
                window=keep_latest_tool_results(1),
            )

        # ci.tool keeps the function's type, which has no __wrapped__ (functools.wraps sets it)
        baseline = make_loop({"list_hosts": cast(Any, list_hosts).__wrapped__})
        baseline_history = [Message("user", "Which host owns it?")]
        baseline.turn(None, baseline_history)

        instrumented = make_loop({"list_hosts": list_hosts})
        history = [Message("user", "Which host owns it?")]
        with ci.run("Which host owns it?", agent_name="zero") as agent_run:
            instrumented.turn(agent_run, history)

        assert history == baseline_history
        assert instrumented.model.frames == baseline.model.frames
        for (name, _, raw, delivered), (_, _, base_raw, _) in zip(
            instrumented.executed, baseline.executed, strict=True
        ):
            assert delivered is raw is base_raw is served[name]
        assert agent_run.findings == []
        assert all_finding_events(telemetry) == []
        rows = summary_rows(telemetry)
        for key in GROUNDING_ROWS:
            assert counts(rows[key]) == {"checked": 0, "findings": 0, "not_applicable": 1, "unreachable": 0}
        assert telemetry.findings_metric() == []


# ── (f) every run, every row ─────────────────────────────────────────────


@pytest.mark.parametrize("case", ["screens", "turns", "lookup"])
def test_every_field_case_run_ends_with_one_summary_row_per_registered_check(
    telemetry: Telemetry, case: str
) -> None:
    runner: dict[str, Callable[[Telemetry], object]] = {
        "screens": _screen_run,
        "turns": lambda t: _two_turns(t, one_run=False),
        "lookup": _reverse_lookup_run,
    }
    runner[case](telemetry)
    run_spans = [
        s for s in telemetry.finished() if attrs(s).get(names.GEN_AI_OPERATION_NAME) == "invoke_agent"
    ]
    summaries = telemetry.summaries()
    assert len(summaries) == len(run_spans) >= 1
    for summary in summaries:
        rows = ledger_rows(summary)
        assert len(rows) == len(REGISTERED_CHECKS)
        assert attrs(summary)[names.WORK_EXISTED] is True
        assert attrs(summary)[names.RUN_OUTCOME] == "ok"
        for row in rows:
            touched = sum(row[f] for f in ("checked", "not_applicable", "unreachable"))
            assert touched >= 1, row  # no registered check is ever silent
    chat_parents = {s.parent.span_id for s in telemetry.named(CHAT) if s.parent is not None}
    assert chat_parents <= {s.context.span_id for s in run_spans}
