"""The offline reach is real: a run recorded by a third-party instrumentation alone, judged from its
file, files what our in-process integration files for the same run.

The laws under test, per framework and instrumentation (pydantic-ai: its own, Logfire, OpenInference;
the Agents SDK: OpenInference, Logfire, contrib's openai-agents-v2; LangChain: OpenInference,
OpenLLMetry):

- the scripted triage run (:mod:`tests.traces.recorded_agents`) is recorded in its own process with no
  ``ci.setup``: the framework, one instrumentation, spans exported to an OTLP/JSON lines file;
- read back and judged under the same declarations, its findings (kind, seam, tool, predicate) equal
  the findings the in-process integration files for the same run, in this process;
- the dialect that reads it is the one the instrumentation is documented to write;
- what the instrumentation does not record is ``unreachable``, row by row, with the reason, never
  ``passed``: the Agents SDK's spans carry no call id (the join is said), OpenInference and Logfire
  record no tools offered with an Agents SDK request, contrib's 0.1 writes no response's tool calls,
  OpenInference records a LangChain one-argument tool's input as a bare string (no empty-lookup),
  and the Agents SDK's instrumentations and OpenLLMetry's LangChain one record no final answer (the
  claim seam, which prior-turn evidence and claims judge, is unreachable, said why);
- a two-turn pydantic-ai conversation with a typed answer, recorded by each of pydantic-ai's
  instrumentations, files its false claim and its answer from a prior turn offline as in process;
  the same conversation in words on LangChain files its prior-turn evidence under OpenInference, and
  under OpenLLMetry (no answer recorded) is unreachable at the claim seam on both turns.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import Telemetry
from tests.traces import recorded_agents as scenario

import context_integrity as ci
from context_integrity.contracts import define_contract
from context_integrity.judge import ContractBook, Dials
from context_integrity.telemetry.schema import names
from context_integrity.traces import JudgedRun, judge_runs, read_runs

ROOT = Path(__file__).resolve().parents[2]

Finding = tuple[str, str, str | None, str | None]

# Every finding the scripted run holds, as the in-process integrations file them.
EXPECTED: list[Finding] = sorted(
    [
        ("column-type-mismatch", "write", "host_group_mappings", "logical_unit_number"),
        ("column-type-mismatch", "write", "port_counters", "crc_errors"),
        ("column-type-mismatch", "write", "port_counters", "frames_per_sec"),
        ("missing-column", "write", "array_volumes", "tier"),
        ("empty-lookup", "write", "volume_snapshots", "volume"),
        ("unsupported-argument", "choice", "host_paths", "host"),
        ("duplicate-execution", "choice", "provision_disk", None),
    ],
    key=str,
)
WRITE_ONLY = [f for f in EXPECTED if f[1] == "write"]
NOT_IN_TRACE = "the run's final answer is not in the trace"
EMPTY_LOOKUP: Finding = ("empty-lookup", "write", "volume_snapshots", "volume")


@dataclass(frozen=True)
class Recording:
    framework: str
    instrumentation: str
    dialect: str
    # The findings the recording holds evidence for (the rest are unreachable rows).
    findings: tuple[Finding, ...]
    # Rows unreachable on every model call: (check, seam, a phrase of the reason).
    unreachable: tuple[tuple[str, str, str], ...] = ()
    # Rows unreachable on some tools' executions: (check, seam, a phrase of the reason, how many).
    unreachable_on_tools: tuple[tuple[str, str, str, int], ...] = ()
    # Tool executions joined to the model's calls by name and order (no call id on their spans).
    joined: bool = False
    # Why the claim seam (the final answer, which prior-turn evidence reads) is unreachable, where
    # the instrumentation records no answer; ``None``: the answer is read and judged.
    no_answer: str | None = None

    @property
    def id(self) -> str:
        return f"{self.framework}-{self.instrumentation}"


RECORDINGS = [
    Recording("pydantic_ai", "pydantic_ai", "pydantic_ai", tuple(EXPECTED)),
    Recording("pydantic_ai", "logfire", "pydantic_ai", tuple(EXPECTED)),
    # OpenInference's processor maps pydantic-ai's own spans in place: the pydantic-ai dialect,
    # first in the detector's order, reads them.
    Recording("pydantic_ai", "openinference", "pydantic_ai", tuple(EXPECTED)),
    Recording(
        "openai_agents",
        "openinference",
        "openinference",
        tuple(EXPECTED),
        unreachable=(("dangling-reference", "compose", "the span has no llm.tools"),),
        joined=True,
        no_answer=NOT_IN_TRACE,  # its AGENT span records no output
    ),
    Recording(
        "openai_agents",
        "logfire",
        "openai_agents",
        tuple(EXPECTED),
        unreachable=(("dangling-reference", "compose", "records the messages, not the tools offered"),),
        joined=True,
        no_answer=NOT_IN_TRACE,  # its 'Agent run' span records no output
    ),
    Recording(
        "openai_agents",
        "contrib",
        "openai_agents",
        tuple(WRITE_ONLY),
        unreachable=(
            ("dangling-reference", "compose", "the span has no gen_ai.tool.definitions"),
            ("unsupported-argument", "choice", "writes a response as text parts only"),
            ("duplicate-execution", "choice", "writes a response as text parts only"),
        ),
        no_answer=NOT_IN_TRACE,
    ),
    # LangChain's tracer records a one-argument tool's input as the bare string it was given: the
    # arguments by name that empty-lookup reads are not in the recording.
    Recording(
        "langchain",
        "openinference",
        "openinference",
        tuple(f for f in EXPECTED if f != EMPTY_LOOKUP),
        # Both one-argument tools whose producers are declared: volume_snapshots and host_paths.
        unreachable_on_tools=(
            ("empty-lookup", "write", "holds the tool's input as text, not its arguments by name", 2),
        ),
    ),
    # Its invoke_agent span records no output.
    Recording("langchain", "openllmetry", "openllmetry", tuple(EXPECTED), no_answer=NOT_IN_TRACE),
]


def recorded_file(framework: str, instrumentation: str, tmp_path: Path) -> tuple[Path, object]:
    """Record the run in a process of its own (instrumentations patch globals): its file and answer."""
    path = tmp_path / f"{framework}-{instrumentation}.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "tests.traces.recorded_agents", framework, instrumentation, str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return path, json.loads(done.stdout.strip().splitlines()[-1])["answer"]


def judged_file(path: Path, book: ContractBook, dials: Dials) -> list[JudgedRun]:
    runs = read_runs(path)
    judged = list(judge_runs(runs, book, dials))
    assert runs.problems.listed == []
    assert all(run.internal_errors == () for run in judged)
    return judged


def recorded(recording: Recording, tmp_path: Path) -> JudgedRun:
    """The triage run recorded as ``recording`` says, judged from its file."""
    path, answer = recorded_file(recording.framework, recording.instrumentation, tmp_path)
    assert answer == scenario.ANSWER
    (run,) = judged_file(path, scenario.contract_book(), scenario.DIALS)
    return run


def offline_findings(run: JudgedRun) -> list[Finding]:
    return sorted(
        ((f.finding.kind, f.finding.seam, f.tool_name, f.finding.predicate) for f in run.findings), key=str
    )


# ── the same run, in process ─────────────────────────────────────────────


def findings_filed(telemetry: Telemetry) -> list[Finding]:
    """Every finding the in-process integration filed on the spans it made."""
    ci.flush()
    found = [
        dict(event.attributes or {})
        for span in telemetry.finished()
        for event in span.events
        if event.name == names.FINDING_EVENT
    ]
    return sorted(
        (
            (
                str(e[names.FINDING_KIND]),
                str(e[names.FINDING_SEAM]),
                _text(e.get(names.GEN_AI_TOOL_NAME)),
                _text(e.get(names.FINDING_PREDICATE)),
            )
            for e in found
        ),
        key=str,
    )


def in_process_findings(framework: str, telemetry: Telemetry) -> list[Finding]:
    telemetry.configure(**scenario.SETUP_DIALS)
    for name, declared in scenario.DECLARATIONS.items():
        ci.declare_tool(name, replace=True, **declared)  # the book is restored after the test
    if framework == "pydantic_ai":
        from pydantic_ai.models.instrumented import InstrumentationSettings

        agent = scenario.pydantic_ai_agent(InstrumentationSettings(tracer_provider=telemetry.provider))
        answer = scenario.run_pydantic_ai(agent)
    elif framework == "openai_agents":
        from agents import set_trace_processors

        set_trace_processors([])
        answer = scenario.run_openai_agents()
    else:
        answer = scenario.run_langchain()
    assert answer == scenario.ANSWER
    return findings_filed(telemetry)


def _text(value: Any) -> str | None:
    return str(value) if value not in (None, "") else None


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda r: r.id)
def test_a_recording_judged_offline_files_what_the_integration_files_in_process(
    recording: Recording, telemetry: Telemetry, tmp_path: Path
) -> None:
    in_process = in_process_findings(recording.framework, telemetry)
    assert in_process == EXPECTED  # the scenario holds every defect it is written to hold
    run = recorded(recording, tmp_path)
    assert recording.dialect in run.run.dialects
    assert offline_findings(run) == sorted(recording.findings, key=str)
    # What the recording cannot show is unreachable with its reason, on every model call.
    rows: dict[tuple[str, str], Any] = {(r.check, r.seam): r for r in run.ledger}
    model_calls = len(scenario.SCRIPT)
    for check, seam, reason in recording.unreachable:
        assert rows[check, seam].unreachable == model_calls, (check, seam)
        reasons = [u.reason for u in run.unreachable if any(r.render() == f"{check}@{seam}" for r in u.rows)]
        assert len(reasons) == model_calls and all(reason in r for r in reasons), reasons
    for check, seam, reason, count in recording.unreachable_on_tools:
        assert rows[check, seam].unreachable == count, (check, seam)
        reasons = [u.reason for u in run.unreachable if any(r.render() == f"{check}@{seam}" for r in u.rows)]
        assert len(reasons) == count and all(reason in r for r in reasons), reasons
    reachable = {(f[0], f[1]) for f in recording.findings}
    for key, row in rows.items():
        if key in reachable:
            assert row.unreachable == 0, key
    prior_turn = rows["prior-turn-evidence", "claim"]
    at_claim = [u.reason for u in run.unreachable if u.seam == "claim"]
    if recording.no_answer is None:
        assert (prior_turn.checked, prior_turn.unreachable, at_claim) == (1, 0, [])
    else:
        assert prior_turn.unreachable == 1 and at_claim == [recording.no_answer], at_claim
    joined = [n for n in run.run.notes if "joined to the model's call" in n]
    assert bool(joined) == recording.joined, run.run.notes


def test_a_framework_with_no_integration_is_judged_from_its_instrumentors_traces(tmp_path: Path) -> None:
    """smolagents (no integration of ours), traced by OpenInference alone, files every defect the
    integrated frameworks file in process. Its requests hold tool results as 'tool-response' text
    naming no tool nor call id: from the second request on, the compose seam is unreachable, and
    says why; its tool spans carry no call id, and the join by name and order is said."""
    run = recorded(Recording("smolagents", "openinference", "openinference", tuple(EXPECTED)), tmp_path)
    assert run.run.dialects == ("openinference",)
    assert offline_findings(run) == EXPECTED
    rows: dict[tuple[str, str], Any] = {(r.check, r.seam): r for r in run.ledger}
    requests = len(scenario.SCRIPT)
    assert rows["dangling-reference", "compose"].unreachable == requests - 1  # the first holds no result
    assert rows["dangling-reference", "compose"].not_applicable == 1
    assert all("'tool-response' messages" in u.reason for u in run.unreachable)
    # Its AGENT span's output is the final answer: the claim seam is reached.
    assert (
        rows["prior-turn-evidence", "claim"].checked,
        rows["prior-turn-evidence", "claim"].unreachable,
    ) == (1, 0)
    assert any("joined to the model's call" in note for note in run.run.notes)


# ── a conversation: claims and prior-turn evidence ──────────────────────────
# Turn 1's typed answer claims fc1/3 is healthy where link_status settled it down; turn 2 restates
# fc1/3 from turn 1's result without looking again.
CONVERSATION_FINDINGS: list[list[Finding]] = [
    [("unsupported-claim", "claim", None, "status")],
    [("prior-turn-evidence", "claim", None, "grounding")],
]


@pytest.mark.parametrize("instrumentation", ["pydantic_ai", "logfire", "openinference"])
def test_a_conversation_judged_offline_files_its_claims_and_prior_turn_evidence_as_in_process(
    instrumentation: str, telemetry: Telemetry, tmp_path: Path
) -> None:
    """pydantic-ai writes the typed answer on its run span (final_result) and every turn's history in
    the request: the claim seam is reached offline, turn by turn, as in process."""
    from pydantic_ai.models.instrumented import InstrumentationSettings

    telemetry.configure(**scenario.CONVERSATION_SETUP_DIALS)
    for name, declared in scenario.CONVERSATION_DECLARATIONS.items():
        ci.declare_tool(name, replace=True, **declared)
    ci.declare_claims(scenario.PortReport, dict(scenario.CLAIMS))
    answers = scenario.run_pydantic_ai_conversation(
        InstrumentationSettings(tracer_provider=telemetry.provider)
    )
    in_process = findings_filed(telemetry)
    assert in_process == sorted((f for turn in CONVERSATION_FINDINGS for f in turn), key=str)

    path, recorded_answers = recorded_file("pydantic_ai_conversation", instrumentation, tmp_path)
    assert json.loads(str(recorded_answers)) == answers
    first, second = judged_file(path, scenario.conversation_book(), scenario.CONVERSATION_DIALS)
    assert [offline_findings(first), offline_findings(second)] == CONVERSATION_FINDINGS
    rows = {(r.check, r.seam): r for r in first.ledger}
    assert rows["unsupported-claim", "claim"].findings == 1
    rows = {(r.check, r.seam): r for r in second.ledger}
    assert rows["prior-turn-evidence", "claim"].findings == 1
    # Turn 2 called no tool: nothing settled fc1/3's status in it, as in process.
    assert rows["unsupported-claim", "claim"].unreachable == 1


@pytest.mark.parametrize(
    ("instrumentation", "no_answer"), [("openinference", None), ("openllmetry", NOT_IN_TRACE)]
)
def test_a_langchain_conversation_judged_offline_files_its_prior_turn_evidence_as_in_process(
    instrumentation: str, no_answer: str | None, telemetry: Telemetry, tmp_path: Path
) -> None:
    """LangChain answers in words: OpenInference records each turn's LangGraph state, whose last message
    is the answer, so the follow-up's answer from turn one is filed offline as in process; OpenLLMetry
    records no answer, so the claim seam is unreachable on both turns, said why."""
    telemetry.configure(**scenario.CONVERSATION_SETUP_DIALS)
    for name, declared in scenario.CONVERSATION_DECLARATIONS.items():
        ci.declare_tool(name, replace=True, **declared)
    answers = scenario.run_langchain_conversation()
    assert findings_filed(telemetry) == CONVERSATION_FINDINGS[1]

    path, recorded_answers = recorded_file("langchain_conversation", instrumentation, tmp_path)
    assert json.loads(str(recorded_answers)) == answers
    book = ContractBook()
    for name, declared in scenario.CONVERSATION_DECLARATIONS.items():
        book.declare(define_contract(name, **declared))
    runs = judged_file(path, book, scenario.CONVERSATION_DIALS)
    assert len(runs) == 2
    for run in runs:
        at_claim = [u.reason for u in run.unreachable if u.seam == "claim"]
        assert at_claim == ([] if no_answer is None else [no_answer])
    expected = CONVERSATION_FINDINGS[1] if no_answer is None else []
    assert [offline_findings(run) for run in runs] == [[], expected]
