"""A run's profile: the evidence suggest reads, gathered by the judge, carried on the summary span
without a single value, and read back by the recording reader."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import Telemetry
from tests.hostile import HostileRow, Unprintable

import context_integrity as ci
from context_integrity.judge import ContractBook, Dials, RunJudge
from context_integrity.judge.profile import (
    PROFILE_VERSION,
    Profile,
    ProfileUnreadable,
    decode_profile,
    value_kind,
)
from context_integrity.limits import MAX_PROFILE_CHARS, MAX_PROFILED_COLUMNS, MAX_PROFILED_TOOLS
from context_integrity.loop import Message, ModelResponse, RequestFrame, ToolCall
from context_integrity.recording import read_recording
from context_integrity.telemetry.run.summary import ABANDONED
from context_integrity.telemetry.schema import names
from context_integrity.traces.assemble import Assembler
from context_integrity.traces.model import TracedRun
from context_integrity.traces.spans import Span

HOSTILE_VALUES: list[object] = [
    HostileRow(),
    Unprintable(),
    [HostileRow()],
    [{"a": Unprintable()}],
    float("nan"),
    "x" * 100_000,
    "\u2028\x1b]52;c;AAAA\x07",
    {"deep": [[[[[[[[[["end"]]]]]]]]]]},
    10**400,
    b"\xff\xfe",
    None,
]
HOSTS = [{"host": "server-alpha", "lun": 0}, {"host": "server-beta", "lun": ""}, {"host": "server-gamma"}]


def _judge(**dials: Any) -> RunJudge:
    judge = RunJudge(ContractBook(), Dials(**dials))
    judge.begin()
    return judge


def test_value_kinds_follow_the_column_check() -> None:
    import datetime as dt
    import decimal

    assert value_kind(3) == value_kind(2.5) == value_kind(decimal.Decimal("1")) == "number"
    assert value_kind(True) == "boolean"  # never a number: the trap the column check exists for
    assert value_kind("1240") == value_kind("") == "string"
    assert value_kind("2026-12-05") == "date-string"
    assert value_kind(dt.date(2026, 1, 1)) == "date"
    assert value_kind(None) == "null"
    assert value_kind([1]) == value_kind({"a": 1}) == value_kind(b"x") == "other"


def test_the_profile_counts_kinds_columns_producers_repeats_and_echoes() -> None:
    judge = _judge(profile=True)
    judge.write("list_hosts", "c1", HOSTS, arguments={"query": "servers"})
    frame = RequestFrame.of([Message("user", "paths for the host named server-gamma")])
    response = ModelResponse(
        calls=(
            ToolCall("host_paths", "c2", {"host": "server-beta"}),
            ToolCall("host_paths", "c3", {"host": "server-gamma", "id": "x1"}),
        )
    )
    judge.choice(frame, response)
    judge.write("host_paths", "c2", [{"path": "/a"}], arguments={"host": "server-beta"})
    judge.write("host_paths", "c3", [{"path": "/b"}], arguments={"host": "server-beta"})
    judge.write("echo", "c4", {"said": "please find server-delta"}, arguments={"q": "server-delta"})
    assert judge.profiler is not None and not judge.internal_errors
    profile = judge.profiler.profile

    hosts = profile.tools["list_hosts"]
    assert (hosts.calls, hosts.rowset_calls, hosts.rows) == (1, 1, 3)
    assert hosts.columns["host"] == {"string": 3}
    assert hosts.columns["lun"] == {"number": 1, "string": 1, "missing": 1}
    assert hosts.column_calls == {"host": 1, "lun": 1}

    paths = profile.tools["host_paths"]
    host = paths.arguments["host"]
    assert host.judged == 2 and host.producers == {"list_hosts": 2}
    assert host.from_user == 1  # server-gamma was also in the user's message
    assert paths.arguments["id"].short == 1  # shorter than the grounding checks judge
    assert paths.repeats == 1 and paths.runs_with_repeats == 1
    assert profile.tools["echo"].echoing_calls == 1


def test_an_echoed_value_is_counted_apart_from_a_served_one() -> None:
    judge = _judge(profile=True)
    judge.write("search", "c1", [{"hit": "vm-0042 found"}], arguments={"query": "vm-0042"})
    judge.choice(None, ModelResponse(calls=(ToolCall("power_off", "c2", {"vm": "vm-0042"}),)))
    assert judge.profiler is not None
    vm = judge.profiler.profile.tools["power_off"].arguments["vm"]
    assert vm.echoed == {"search": 1} and vm.producers == {}


def test_profiling_is_off_by_default_and_on_in_dev_posture() -> None:
    assert _judge().profiler is None
    assert _judge(posture="dev").profiler is not None
    assert _judge(posture="dev", profile=False).profiler is None
    assert Dials(posture="dev").in_force()["profile"] == "true"
    assert Dials().in_force()["profile"] == "false"


def test_a_result_whose_arguments_were_not_recorded_is_still_profiled() -> None:
    """A trace that records a tool's result but not its arguments by name (OpenInference writes a
    LangChain one-argument tool's input as the bare string) still tells its columns; a repeat or an
    echo, which need the arguments, is never guessed."""

    def not_recorded() -> dict[str, Any]:
        raise LookupError("the span holds the tool's input as text")

    judge = _judge(profile=True)
    for call in ("c1", "c2"):
        judge.write("list_hosts", call, HOSTS, arguments=not_recorded)
    assert judge.profiler is not None
    hosts = judge.profiler.profile.tools["list_hosts"]
    assert (hosts.calls, hosts.rowset_calls, hosts.rows) == (2, 2, 6)
    assert hosts.columns["host"] == {"string": 6}
    assert hosts.repeats == 0 and hosts.echoing_calls == 0


def test_a_key_made_of_data_is_counted_never_named() -> None:
    judge = _judge(profile=True)
    judge.write("lookup", "c1", [{"alice@example.com": 1, "ok": 2}], arguments={})
    judge.choice(None, ModelResponse(calls=(ToolCall("lookup", "c2", {"bob@example.com": "something"}),)))
    assert judge.profiler is not None
    encoded = judge.profiler.profile.encode(MAX_PROFILE_CHARS)
    assert "example.com" not in encoded
    tally = judge.profiler.profile.tools["lookup"]
    assert tally.unnamed >= 2 and set(tally.columns) == {"ok"}


def test_the_profile_is_bounded() -> None:
    judge = _judge(profile=True)
    wide = [{f"c{i}": i for i in range(MAX_PROFILED_COLUMNS * 3)}]
    for tool in range(MAX_PROFILED_TOOLS * 2):
        judge.write(f"tool_{tool}", f"c{tool}", wide, arguments={})
    assert judge.profiler is not None
    profile = judge.profiler.profile
    assert len(profile.tools) == MAX_PROFILED_TOOLS
    assert profile.unnamed_tools == MAX_PROFILED_TOOLS
    assert all(len(t.columns) == MAX_PROFILED_COLUMNS for t in profile.tools.values())
    text = profile.encode(MAX_PROFILE_CHARS)
    assert 0 < len(text) <= MAX_PROFILE_CHARS
    kept = decode_profile(text)
    # Tools that did not fit were left out whole, and counted.
    assert len(kept.tools) + kept.unnamed_tools == MAX_PROFILED_TOOLS * 2


def test_encode_and_decode_are_partners_and_merging_adds() -> None:
    judge = _judge(profile=True)
    judge.write("list_hosts", "c1", HOSTS, arguments={"query": "all"})
    judge.choice(None, ModelResponse(calls=(ToolCall("host_paths", "c2", {"host": "server-alpha"}),)))
    assert judge.profiler is not None
    one = judge.profiler.profile
    back = decode_profile(one.encode(MAX_PROFILE_CHARS))
    assert back == one
    merged = Profile()
    merged.merge(back)
    merged.merge(back)
    assert merged.runs == 2
    assert merged.tools["list_hosts"].columns["lun"] == {"number": 2, "string": 2, "missing": 2}
    assert merged.tools["host_paths"].arguments["host"].producers == {"list_hosts": 2}


@given(st.one_of(st.text(max_size=50), st.binary(max_size=20).map(repr), st.sampled_from(["{}", '{"v": 1}'])))
@settings(max_examples=200, deadline=None)
def test_decoding_garbage_says_why_and_never_raises_otherwise(text: str) -> None:
    try:
        profile = decode_profile(text)
    except ProfileUnreadable:
        return
    assert isinstance(profile, Profile)


def test_decoding_a_hostile_document_keeps_only_what_it_can_read() -> None:
    document = {
        "v": PROFILE_VERSION,
        "runs": "many",
        "tools": {
            "t": {"calls": -3, "columns": {"a": {"number": 2, "bogus": 9}, "b@x": {}}, "arguments": []}
        },
    }
    profile = decode_profile(json.dumps(document))
    assert profile.runs == 0
    assert profile.tools["t"].calls == 0
    assert profile.tools["t"].columns == {"a": {"number": 2}}


@given(st.lists(st.sampled_from(HOSTILE_VALUES), min_size=1, max_size=5))
@settings(max_examples=100, deadline=None)
def test_hostile_results_and_arguments_never_break_the_profile(values: list[object]) -> None:
    judge = _judge(profile=True)
    for index, value in enumerate(values):
        judge.write("t", f"c{index}", value, arguments={"a": value})
        judge.write("t", f"r{index}", [{"col": value}], arguments={"a": value})
        judge.choice(None, ModelResponse(calls=(ToolCall("t", f"d{index}", {"a": value}),)))
    assert judge.profiler is not None
    decode_profile(judge.profiler.profile.encode(MAX_PROFILE_CHARS))


def test_the_summary_span_carries_the_profile(telemetry: Telemetry) -> None:
    telemetry.configure(profile=True)
    with ci.run("triage") as run:
        run.tool_result("list_hosts", "c1", HOSTS, arguments={"query": "all"})
    (summary,) = telemetry.summaries()
    assert summary.attributes is not None
    assert summary.attributes[names.dial_attribute("profile")] == "true"
    profile = decode_profile(summary.attributes[names.PROFILE])
    assert profile.tools["list_hosts"].rows == 3


def test_without_profiling_the_summary_span_has_no_profile(telemetry: Telemetry) -> None:
    telemetry.configure()
    with ci.run("triage") as run:
        run.tool_result("list_hosts", "c1", HOSTS)
    (summary,) = telemetry.summaries()
    assert summary.attributes is not None and names.PROFILE not in summary.attributes


SECRET = "sk_live_4f9a2c7e1b"


def _scrub(seen: list[str]) -> Any:
    def hook(text: str) -> str:
        seen.append(text)
        return text.replace(SECRET, "[key]")

    return hook


def test_every_name_in_the_exported_profile_passes_the_redaction_hook(telemetry: Telemetry) -> None:
    """The profile's names come from the world (column keys of a tool's rows, argument paths the
    model chose, tool and producer names): each is handed to the application's hook whole before it
    leaves, like every other exported string, and the names the hook left alone stay readable."""
    seen: list[str] = []
    telemetry.configure(profile=True, redact=_scrub(seen))
    with ci.run("triage") as run:
        rows = [{"host": "server-alpha", SECRET: 1, f"token_{SECRET}": "x"}, {"host": "server-beta"}]
        run.tool_result("list_hosts", "c1", rows, arguments={"query": "all"})
        with run.request(RequestFrame.of([Message("user", "paths please")])) as call:
            call.respond(
                ModelResponse(
                    calls=(ToolCall("host_paths", "c2", {"host": "server-alpha", "by": {SECRET: "yes!"}}),)
                )
            )
        run.tool_result("host_paths", "c2", [{"path": "/a"}], arguments={"host": "server-alpha"})
    (summary,) = telemetry.summaries()
    assert summary.attributes is not None
    exported = str(summary.attributes[names.PROFILE])
    assert SECRET not in exported
    assert all(
        SECRET not in str(value)
        for span in telemetry.finished()
        for value in (span.attributes or {}).values()
    )
    # The hook was handed each name whole: the column keys and the argument path holding the secret.
    assert {SECRET, f"token_{SECRET}", f"by.{SECRET}"} <= set(seen)
    profile = decode_profile(exported)
    hosts = profile.tools["list_hosts"]
    assert set(hosts.columns) == {"host", "token_[key]"}  # the bare secret became "[key]": no name
    assert hosts.unnamed >= 1  # what is left out is counted
    assert profile.tools["host_paths"].arguments["host"].producers == {"list_hosts": 1}
    assert len(exported) <= MAX_PROFILE_CHARS


def test_a_hook_that_fails_on_a_name_leaves_it_out_of_the_profile(telemetry: Telemetry) -> None:
    def hook(text: str) -> str:
        if SECRET in text:
            raise ValueError("refused")
        return text

    telemetry.configure(profile=True, redact=hook)
    with ci.run("triage") as run:
        run.tool_result("list_hosts", "c1", [{"host": "a", SECRET: 1}], arguments={})
    (summary,) = telemetry.summaries()
    assert summary.attributes is not None
    exported = str(summary.attributes[names.PROFILE])
    assert SECRET not in exported
    assert set(decode_profile(exported).tools["list_hosts"].columns) == {"host"}


def test_renaming_keeps_the_counts_and_merges_names_that_come_back_equal() -> None:
    judge = _judge(profile=True)
    judge.write("list_hosts", "c1", [{"key_1": 1, "key_2": "a", "host": "server-alpha"}], arguments={})
    judge.choice(None, ModelResponse(calls=(ToolCall("host_paths", "c2", {"host": "server-alpha"}),)))
    assert judge.profiler is not None
    profile = judge.profiler.profile
    assert profile.renamed(lambda name: name) == profile
    merged = profile.renamed(lambda name: "key_n" if name.startswith("key_") else name).tools["list_hosts"]
    assert merged.columns["key_n"] == {"number": 1, "string": 1}
    assert merged.column_calls["key_n"] == 1  # the same call held both: never more calls than there were
    gone = profile.renamed(lambda name: "[x]" if name == "list_hosts" else name)
    assert "list_hosts" not in gone.tools and gone.unnamed_tools == 1
    # The producer it named is gone too, and the value it served counted as left out.
    paths = gone.tools["host_paths"]
    assert paths.arguments["host"].producers == {} and paths.unnamed == 1


def test_the_hook_is_handed_the_profiles_names_outside_the_runs_lock(telemetry: Telemetry) -> None:
    """The application's hook may be slow or log: while it runs, another thread can still take the
    run's lock (a tool result on another thread is never held up by it)."""
    taken: list[bool] = []
    runs: list[ci.Run] = []

    def hook(text: str) -> str:
        if text == "list_hosts":
            judge = runs[0].judge
            assert judge is not None

            def take() -> None:
                got = judge.lock.acquire(timeout=2)
                taken.append(got)
                if got:
                    judge.lock.release()

            other = threading.Thread(target=take)
            other.start()
            other.join()
        return text

    telemetry.configure(profile=True, redact=hook)
    with ci.run("triage") as run:
        runs.append(run)
        run.tool_result("list_hosts", "c1", HOSTS, arguments={})
    assert taken == [True]


def test_a_dropped_runs_profile_passes_the_hook_too(telemetry: Telemetry) -> None:
    """A run entered and never exited is summarised when it is collected: its profile too leaves
    through the hook."""
    seen: list[str] = []
    telemetry.configure(profile=True, redact=_scrub(seen))
    dropped = ci.run("q", agent_name="dropped")
    dropped.__enter__()
    dropped.tool_result("list_hosts", "c1", [{"host": "a", f"token_{SECRET}": 1}], arguments={})
    del dropped
    gc.collect()
    (summary,) = telemetry.summaries()
    assert summary.attributes is not None
    assert summary.attributes[names.RUN_OUTCOME] == ABANDONED
    exported = str(summary.attributes[names.PROFILE])
    assert SECRET not in exported and f"token_{SECRET}" in seen
    assert set(decode_profile(exported).tools["list_hosts"].columns) == {"host", "token_[key]"}


MARKER = "ZZSECRET-7f3a9c"

_AGENT = """
import context_integrity as ci
ci.setup(recording_path=RECORDING, profile=True)
ci.declare_tool("list_hosts", result_columns={"host": "string"})
with ci.run("triage") as run:
    frame = ci.RequestFrame(messages=[ci.Message("user", "find MARKER-user please")])
    with run.request(frame) as call:
        call.respond(ci.ModelResponse(calls=(ci.ToolCall("list_hosts", "c1", {"query": "MARKER-arg"}),)))
    run.tool_result("list_hosts", "c1", [{"host": "MARKER-row", "n": 1}, {"host": 7}],
                    arguments={"query": "MARKER-arg"})
    with run.request(frame) as call:
        call.respond(ci.ModelResponse(calls=(ci.ToolCall("host_paths", "c2", {"host": "MARKER-row"}),)))
    run.tool_result("host_paths", "c2", {"paths": ["MARKER-path"]}, arguments={"host": "MARKER-row"})
    run.answer("MARKER-answer")
ci.shutdown()
"""


def test_no_value_leaves_with_the_profile(tmp_path: Path) -> None:
    """Marker strings in tool results, arguments, user messages and the answer appear in no export,
    file or report, while the profile names the tools, columns and producers."""
    recording = tmp_path / "run.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", _AGENT.replace("RECORDING", repr(str(recording))).replace("MARKER", MARKER)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert MARKER not in result.stdout + result.stderr
    written = recording.read_text()
    assert MARKER not in written
    (run,) = read_recording(recording).runs
    assert run.profile is not None
    profile = decode_profile(run.profile)
    assert profile.tools["host_paths"].arguments["host"].producers == {"list_hosts": 1}
    for command in (["report"], ["report", "-v"], ["report", "--find"]):
        shown = subprocess.run(
            [sys.executable, "-m", "context_integrity.cli", *command, str(recording)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert MARKER not in shown.stdout + shown.stderr


def _our_spans(number: int, *, summary_first: bool) -> list[Span]:
    trace = f"{number:032x}"
    run_span = Span(
        trace_id=trace,
        span_id=f"{number:016x}",
        parent_span_id=None,
        name=names.run_span_name("triage"),
        start_time_unix_nano=1,
        end_time_unix_nano=2,
        attributes={
            names.GEN_AI_OPERATION_NAME: names.OPERATION_INVOKE_AGENT,
            names.GEN_AI_AGENT_NAME: "triage",
        },
        scope=names.INSTRUMENTATION_NAME,
    )
    profile = Profile(runs=1)
    profile.tool("list_hosts")
    summary = Span(
        trace_id=trace,
        span_id=f"{number + 1 << 32:016x}",
        parent_span_id=run_span.span_id,
        name=names.DISPOSITION_SPAN,
        start_time_unix_nano=2,
        end_time_unix_nano=2,
        attributes={names.PROFILE: profile.encode(MAX_PROFILE_CHARS)},
        scope=names.INSTRUMENTATION_NAME,
    )
    return [summary, run_span] if summary_first else [run_span, summary]


def test_a_run_waits_for_its_summary_and_memory_stays_with_the_runs_in_flight() -> None:
    """Our summary span is written just after our run span ends, so it usually follows the run span:
    the run waits for it (its profile) and is handed out as soon as it comes; the open traces never
    pile up, whichever comes first."""
    for summary_first in (False, True):
        assembler = Assembler(lambda text: None)
        runs: list[TracedRun] = []
        held = 0
        for number in range(1, 2000):
            for span in _our_spans(number, summary_first=summary_first):
                runs.extend(assembler.add(span))
                held = max(held, len(assembler._traces))
        runs.extend(assembler.finish())
        assert len(runs) == 1999 and all(run.profile for run in runs)
        assert held <= 2


def test_a_summary_that_never_comes_leaves_the_run_judged_without_it() -> None:
    assembler = Assembler(lambda text: None)
    (run_span, _summary) = _our_spans(1, summary_first=False)
    assert list(assembler.add(run_span)) == []
    others = [span for number in range(2, 400) for span in _our_spans(number, summary_first=False)]
    handed = [run for span in others for run in assembler.add(span)]
    (alone,) = [run for run in handed if run.span_id == run_span.span_id]
    assert alone.profile is None  # handed out without its summary, well before the source ended
    assert handed.index(alone) < len(handed) - 100
