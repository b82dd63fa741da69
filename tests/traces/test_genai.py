"""The GenAI-conventions dialect, on traces written from the documented shapes.

The laws under test:

- A trace written to the conventions is read into the loop's data model and judged by the same
  checks as in process: the made-up argument is an unsupported-argument finding on the model call's
  span, with the call id the model gave it; the typed rows pass the column check on the tool's span.
- Content written as JSON text and as structure reads the same; tool results in a ``user`` message
  (read by part type, never by role) read the same as in a ``tool`` message.
- Without content capture nothing passes: every armed check's encounter is ``unreachable`` and says
  that the span has no content attribute.
- Without call ids (the Agents SDK), tool executions are joined to the model's calls by name and
  order, the findings are the same, and the run says the join was inferred.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.traces.shapes import document, triage_book, triage_trace, write_lines

from context_integrity.judge import Dials
from context_integrity.ledger import LedgerRow
from context_integrity.traces import JudgedRun, judge_runs, read_runs
from context_integrity.traces.model import ToolStep

DIALS = Dials(check_column_types="warn", notice_empty_lookups=True)


def judged(path: Path) -> list[JudgedRun]:
    runs = read_runs(path)
    out = list(judge_runs(runs, triage_book(), DIALS))
    assert runs.problems.listed == []
    return out


def findings(run: JudgedRun) -> set[tuple[str, str, str | None, str | None, str | None]]:
    return {
        (f.finding.kind, f.finding.seam, f.tool_name, f.call_id, f.finding.predicate) for f in run.findings
    }


@pytest.mark.parametrize("as_text", [True, False], ids=["json-text", "structured"])
@pytest.mark.parametrize("results_in_user_message", [False, True], ids=["tool-role", "user-role"])
def test_a_genai_trace_is_judged_like_the_run_in_process(
    tmp_path: Path, as_text: bool, results_in_user_message: bool
) -> None:
    trace = triage_trace(as_text=as_text, results_in_user_message=results_in_user_message)
    (run,) = judged(write_lines(tmp_path / "t.jsonl", [document(trace.spans)]))
    assert run.run.dialects == ("genai",)
    assert run.run.agent_name == "triage"
    assert findings(run) == {("unsupported-argument", "choice", "host_paths", "call_2", "host")}
    (finding,) = run.findings
    chat_spans = [s["spanId"] for s in trace.spans if s["name"].startswith("chat")]
    assert finding.span_id == chat_spans[1]  # the model call that made the call, as in process
    rows = {(r.check, r.seam): r for r in run.ledger}
    assert rows["column-type-mismatch", "write"].checked == 1  # list_hosts' typed rows passed
    assert rows["unsupported-argument", "choice"].checked == 1
    assert all(row.unreachable == 0 for row in run.ledger)
    assert not run.unreachable


def test_without_content_capture_every_armed_check_is_unreachable_and_says_why(tmp_path: Path) -> None:
    trace = triage_trace(capture=False)
    (run,) = judged(write_lines(tmp_path / "t.jsonl", [document(trace.spans)]))
    assert run.findings == ()
    rows: dict[tuple[str, str], LedgerRow] = {(r.check, r.seam): r for r in run.ledger}
    for armed in [
        ("dangling-reference", "compose"),
        ("unsupported-argument", "choice"),
        ("empty-lookup", "write"),
    ]:
        assert rows[armed].checked == 0 and rows[armed].unreachable > 0, armed
    reasons = {u.seam: u.reason for u in run.unreachable}
    assert "gen_ai.input.messages" in reasons["compose"]
    assert "gen_ai.tool.call.result" in reasons["write"]
    assert "content capture is off" in reasons["write"]


def test_without_call_ids_tools_are_joined_by_name_and_order_and_the_run_says_so(tmp_path: Path) -> None:
    trace = triage_trace(call_ids=False)
    (run,) = judged(write_lines(tmp_path / "t.jsonl", [document(trace.spans)]))
    tools = [s for s in run.run.steps if isinstance(s, ToolStep)]
    assert [(t.tool_name, t.call_id, t.call_id_source) for t in tools] == [
        ("list_hosts", "call_1", "joined"),
        ("host_paths", "call_2", "joined"),
    ]
    assert any("joined to the model's call" in note for note in run.run.notes)
    assert findings(run) == {("unsupported-argument", "choice", "host_paths", "call_2", "host")}
