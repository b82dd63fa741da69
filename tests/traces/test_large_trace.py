"""A 100 MB trace: read in bounded memory, judged with what fits, and said, never a traceback.

The trace is an agent whose every model call carries its whole (windowed) history, as content capture
writes it: 100 MB of OTLP/JSON lines, one trace. It is read in a child process, so its peak memory is
its own.

The laws under test:

- the reader's memory stays within a few bytes per character of
  :data:`~context_integrity.limits.MAX_HELD_TRACE_CHARS`, whatever the size of the trace;
- the spans past the bound are counted and said in one line, and the run is judged with what came
  before them: every armed check reads ``unreachable`` once for the spans not read, never a pass;
- the trace after it in the same file is read and judged whole.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.traces.shapes import (
    Trace,
    agent_attributes,
    chat_attributes,
    document,
    message,
    span_id,
    text,
    tool_call,
    tool_definitions,
    tool_response,
    triage_trace,
)

from context_integrity.limits import MAX_HELD_TRACE_CHARS

SIZE = 100 * 1024 * 1024
# Decoded content takes a few bytes a character; the bound holds the reader well inside this.
BYTES_PER_HELD_CHAR = 5


def write_large_trace(path: Path) -> Trace:
    trace = Trace()
    agent = span_id()
    history = [message("user", text("Summarise every lookup."))]
    written = 0
    with path.open("w") as out:
        batch: list[dict[str, object]] = []
        call = 0
        while written < SIZE:
            call += 1
            history.append(message("assistant", tool_call(f"c{call}", "lookup", {"page": call})))
            history.append(
                message("tool", tool_response(f"c{call}", [{"row": "x" * 100, "page": call}] * 20))
            )
            attributes = chat_attributes(
                history[-200:], [message("assistant", text("more"))], tools=tool_definitions("lookup")
            )
            trace.span("chat test-model", attributes, parent=agent)
            batch.append(trace.spans.pop())
            if len(batch) == 10:  # a batch exporter's line
                line = json.dumps(document(batch)) + "\n"
                out.write(line)
                written += len(line)
                batch = []
        trace.span("invoke_agent pager", agent_attributes("pager", "done"), parent=None, span=agent)
        batch.append(trace.spans.pop())
        out.write(json.dumps(document(batch)) + "\n")
        out.write(json.dumps(document(triage_trace().spans)) + "\n")
    return trace


READER = textwrap.dedent(
    """
    import json, resource, sys
    from context_integrity.contracts import define_contract
    from context_integrity.judge import ContractBook, Dials
    from context_integrity.traces import judge_runs, read_runs

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    book = ContractBook()
    book.declare(define_contract("lookup", result_columns={"row": "string"}))
    book.declare(define_contract("list_hosts"))
    book.declare(define_contract("host_paths", arguments_from=["list_hosts"]))
    runs = read_runs(sys.argv[1])
    judged = [
        {
            "agent": j.run.agent_name,
            "findings": [f.finding.kind for f in j.findings],
            "unreachable": [[u.seam, u.reason] for u in j.unreachable],
        }
        for j in judge_runs(runs, book, Dials(check_column_types="warn"))
    ]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"runs": judged, "problems": runs.problems.listed, "grew_kib": peak - before}))
    """
)


def test_a_100_mb_trace_is_read_in_bounded_memory_and_says_what_it_left(tmp_path: Path) -> None:
    path = tmp_path / "large.otlp.jsonl"
    large = write_large_trace(path)
    assert path.stat().st_size > SIZE
    done = subprocess.run(
        [sys.executable, "-c", READER, str(path)], capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    grew = report["grew_kib"] * 1024
    assert grew < BYTES_PER_HELD_CHAR * MAX_HELD_TRACE_CHARS, f"the reader grew by {grew / 2**20:.0f} MiB"
    (said,) = [p for p in report["problems"] if "past the bound on one trace" in p]
    assert said.startswith(f"trace {large.trace_id}: ")
    pager, triage = report["runs"]
    assert pager["agent"] == "pager" and triage["agent"] == "triage"
    not_read = [reason for seam, reason in pager["unreachable"] if "past the bound" in reason]
    assert len(not_read) == 3  # once for each armed seam: write (columns), compose and choice (grounding)
    assert triage["findings"] == ["unsupported-argument"] and triage["unreachable"] == []
