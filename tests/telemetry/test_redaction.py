"""The redaction hook sees each value whole, once, before anything is clipped (issue 38, part 1).

The laws under test:
(a) a quoted value reaches the hook whole, however long, and only what it returns is clipped: a
    pattern hook recognises a secret that sits past the 80 characters a quote is cut to;
(b) the hook is handed each distinct value once per encounter, however many places quote it;
(c) argument keys are the model's: a key holding a value passes the hook, in the predicate, the
    message, the witnesses and the identity;
(d) a once-per-run tool's arguments leave through the subjects and identity only as the hook lets
    them, with no digest of the unredacted value, and two different repeats are still two findings
    (dedupe keeps the unredacted identity, in memory only);
(e) opt-in content passes the hook before it is clipped;
(f) without a hook a finding reads exactly as its check wrote it;
(g) no check renders a value itself: checks never import the renderers, they quote.
Read back from a real SDK pipeline (the ``telemetry`` fixture).
"""

from __future__ import annotations

import ast
import logging
import re
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import Telemetry

import context_integrity as ci
from context_integrity.findings import Finding
from context_integrity.limits import MAX_ATTRIBUTE_CHARS, MAX_CONTENT_CHARS, MAX_QUOTED_CHARS
from context_integrity.redaction import Redaction, rendered_finding
from context_integrity.telemetry.schema import names
from context_integrity.text import Quote, Text, render_value

SECRET = "sk-" + "A1b2C3d4" * 4  # 35 characters
KEY = re.compile(r"sk-[A-Za-z0-9]{32}")
PAD = "p" * 70


def _finding_events(telemetry: Telemetry) -> list[dict[str, object]]:
    return [
        dict(event.attributes or {})
        for span in telemetry.finished()
        for event in span.events
        if event.name == names.FINDING_EVENT
    ]


def _strings(attributes: dict[str, object]) -> list[str]:
    out: list[str] = []
    for value in attributes.values():
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(v for v in value if isinstance(v, str))
    return out


def _respond(arguments: dict[str, object]) -> None:
    frame = ci.RequestFrame.of([ci.Message("user", "go")], tools=[ci.ToolDefinition("search")])
    with ci.run("q") as agent_run, agent_run.request(frame) as call:
        call.respond(calls=[ci.ToolCall("search", "c1", arguments)])


def test_a_secret_past_the_quote_cut_reaches_the_hook_whole(telemetry: Telemetry) -> None:
    seen: list[str] = []

    def hook(text: str) -> str:
        seen.append(text)
        return KEY.sub("[key]", text)

    telemetry.configure(redact=hook)
    ci.declare_tool("producer")
    ci.declare_tool("search", arguments_from=["producer"])
    _respond({"owner": PAD + SECRET})
    (event,) = _finding_events(telemetry)
    assert PAD + SECRET in seen
    assert not [text for text in _strings(event) if SECRET[:12] in text or SECRET[-12:] in text]
    message = event[names.FINDING_MESSAGE]
    assert isinstance(message, str) and '= "' + PAD[: MAX_QUOTED_CHARS - 1] in message


def test_the_hook_is_handed_each_value_once_per_encounter(telemetry: Telemetry) -> None:
    seen: list[str] = []

    def hook(text: str) -> str:
        seen.append(text)
        return text.upper()

    telemetry.configure(redact=hook)
    ci.declare_tool("producer")
    ci.declare_tool("search", arguments_from=["producer"])
    # The path is quoted in the predicate, the message, both witnesses' predicates and a provenance;
    # the value in the message and a witness.
    _respond({"filters": {"by-owner": "owner-value-9"}})
    counts = Counter(seen)
    assert counts["filters.by-owner"] == 1 and counts["owner-value-9"] == 1
    (event,) = _finding_events(telemetry)
    assert event[names.FINDING_PREDICATE] == "FILTERS.BY-OWNER"
    assert event[names.witness_attribute(0, "value")] == "OWNER-VALUE-9"


def test_an_argument_key_holding_a_value_passes_the_hook(telemetry: Telemetry) -> None:
    telemetry.configure(redact=lambda text: text.replace("alice@example.com", "[email]"))
    ci.declare_tool("producer")
    ci.declare_tool("search", arguments_from=["producer"])
    _respond({"filters": {"alice@example.com": "unserved-value"}})
    (event,) = _finding_events(telemetry)
    assert event[names.FINDING_PREDICATE] == "filters.[email]"
    assert "filters.[email]" in str(event[names.FINDING_IDENTITY])
    assert not [text for text in _strings(event) if "alice" in text]


def _provision(agent_run: ci.Run, call_id: str, arguments: dict[str, str]) -> None:
    frame = ci.RequestFrame.of([ci.Message("user", "go")], tools=[ci.ToolDefinition("provision")])
    with agent_run.request(frame) as call:
        call.respond(calls=[ci.ToolCall("provision", call_id, arguments)])
    agent_run.tool_result("provision", call_id, {"ok": True}, arguments=arguments)


def test_once_per_run_arguments_leave_only_as_the_hook_lets_them_and_still_dedupe(
    telemetry: Telemetry,
) -> None:
    telemetry.configure(redact=lambda text: "[gone]")
    ci.declare_tool("provision", once_per_run=True)
    first, second = {"name": SECRET}, {"name": SECRET + "-2"}
    with ci.run("q") as agent_run:
        for index, arguments in enumerate((first, first, first, second, second)):
            _provision(agent_run, f"c{index}", arguments)
    events = [e for e in _finding_events(telemetry) if e[names.FINDING_KIND] == "duplicate-execution"]
    # Two different repeated argument sets are two defects; the third ask of the first is not a third.
    assert len(events) == 2 and len(agent_run.findings) == 2
    for event in events:
        assert list(event[names.FINDING_SUBJECTS]) == ["tool provision", "arguments [gone]"]  # type: ignore[call-overload]
        assert "#" not in str(event[names.FINDING_IDENTITY])  # no digest of the unredacted value
        assert not [text for text in _strings(event) if "A1b2C3d4" in text]


def test_content_passes_the_hook_before_it_is_clipped(telemetry: Telemetry) -> None:
    seen: list[str] = []

    def hook(text: str) -> str:
        seen.append(text)
        return KEY.sub("[key]", text)

    telemetry.configure(redact=hook, capture_content=True)
    ci.declare_tool("lookup")
    # Content is clipped at MAX_CONTENT_CHARS (a recording judged offline reads it): the secret sits
    # past that bound, where a clip before the hook would have cut the text the hook needs to see.
    long_tail = "x" * (MAX_CONTENT_CHARS * 2)
    with ci.run(f"question {SECRET}") as agent_run:
        agent_run.tool_result("lookup", "c1", [{"note": "y" * (MAX_CONTENT_CHARS - 20) + SECRET + long_tail}])
        agent_run.answer(f"answer {SECRET}")
    texts = [
        value
        for span in telemetry.finished()
        for key, value in (span.attributes or {}).items()
        if key.startswith("gen_ai.") and isinstance(value, str)
    ]
    assert texts and not [text for text in texts if "A1b2C3d4" in text]
    assert all(len(text) <= MAX_CONTENT_CHARS for text in texts)
    assert any(SECRET in text and len(text) > MAX_ATTRIBUTE_CHARS for text in seen)


def test_without_a_hook_a_finding_reads_as_its_check_wrote_it() -> None:
    value = "v" * 200
    message = Text("called with ", Quote("a.b", bare=True, limit=None), " = ", Quote(value), ".")
    finding = Finding(
        "unsupported-argument", "choice", (), Text(Quote("a.b", bare=True, limit=None)), (), 1, message
    )
    rendered = rendered_finding(finding, Redaction(None))
    assert rendered.message == message == f"called with a.b = {render_value(value)}."
    assert type(rendered.message) is str and type(rendered.predicate) is str


@settings(max_examples=200, deadline=None)
@given(
    before=st.text(max_size=300),
    after=st.text(max_size=300),
    bare=st.booleans(),
    limit=st.sampled_from([None, 10, MAX_QUOTED_CHARS, 500]),
)
def test_a_quoted_value_never_leaves_past_a_hook_that_recognises_it(
    before: str, after: str, bare: bool, limit: int | None
) -> None:
    value = before + SECRET + after
    text = Text("words ", Quote(value, bare=bare, limit=limit), " more words")
    redaction = Redaction(lambda seen: KEY.sub("[key]", seen))
    shown = redaction.text(text)
    assert SECRET[:10] not in shown and SECRET[-10:] not in shown
    assert shown.startswith("words ") and shown.endswith(" more words")
    # Without a hook the sentence is the check's: the value shown as render_value shows it.
    assert Redaction(None).text(text) == str(text)


CHECKS = Path(ci.__file__).resolve().parent / "checks"


def test_no_check_renders_a_value_itself() -> None:
    # A check quotes (text.Quote); it never clips or renders a value into its own sentence, where
    # the redaction hook could no longer see the value whole.
    rendering = {"render_value", "clip", "bounded_json"}
    found: list[str] = []
    for path in sorted(CHECKS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.endswith("text"):
                found.extend(f"{path.name}: {alias.name}" for alias in node.names if alias.name in rendering)
    assert found == []


def test_our_own_failure_is_logged_as_the_hook_lets_it_leave(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    from context_integrity.telemetry.emit import record_internal_error

    telemetry.configure(redact=lambda text: KEY.sub("[key]", text))
    with caplog.at_level(logging.DEBUG, logger="context_integrity"):
        for _ in range(2):  # the first with its stack trace, the repeat at debug
            try:
                raise ValueError(f"row held {SECRET}")
            except ValueError as error:
                record_internal_error(None, "reading a hostile row (test)", error)
    logged = [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    assert len(logged) == 2 and all("[key]" in text for text in logged)
    assert not [text for text in logged if "A1b2C3d4" in text]


def test_what_a_span_holds_is_plain_text_never_a_quoted_value(telemetry: Telemetry) -> None:
    # A Text on a span would hold its quoted values (a tool's whole result) until the span is exported.
    telemetry.configure(check_column_types="warn", notice_empty_lookups=True)
    ci.declare_tool("producer")
    ci.declare_tool("lookup", result_columns={"lun": "number"}, arguments_from=["producer"])
    with ci.run("q") as agent_run:
        agent_run.tool_result("producer", "p1", [{"id": "value-served-1"}])
        agent_run.tool_result("lookup", "c1", [], arguments={"id": "value-served-1"})
        agent_run.tool_result("lookup", "c2", [{"lun": "not a number"}])
    held = [
        value
        for span in telemetry.finished()
        for event in span.events
        for value in (event.attributes or {}).values()
        if isinstance(value, str)
    ]
    assert held and all(type(value) is str for value in held)
    assert all(type(finding.message) is str for finding in agent_run.findings)
