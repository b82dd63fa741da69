"""Readers that cannot be crashed, hung or fooled (issue 38, part 3).

The laws under test:
(a) the matrix: every hostile input below, through ``report``, ``report -v``, ``report --html`` and
    ``report --find`` in a process of its own under a memory limit and a time limit, ends with an
    answer (status 0) or a sentence (status 2), never a traceback, a hang or a MemoryError;
(b) what each hostile input is said to be: a FIFO, a device, a socket, a directory, a symlink loop
    are refused with a sentence naming what the path is; a time out of range is clamped and said;
    an overlong line is skipped, counted, and the next line read;
(c) lines end at ``\\n`` only: a tool output quoting U+2028, U+2029 or U+0085 costs ``--find``
    nothing, and its findings are listed;
(d) ``--find`` streams: its memory follows the runs in flight, as ``report``'s does.
"""

from __future__ import annotations

import json
import os
import resource
import socket
import subprocess
import sys
import textwrap
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.otlp_documents import RUN_ID, TOOL_ID, document, jaeger, line, recording, span

from context_integrity.limits import MAX_RECORDING_LINE_BYTES
from context_integrity.report.find import find_context_errors, read_evidence
from context_integrity.telemetry.schema import names

ROOT = Path(__file__).resolve().parents[1]
READERS = ("report", "report -v", "report --html", "report --find")
# Each reader of each input: a limit a healthy read of these small inputs never comes near.
MEMORY_LIMIT_BYTES = 2 * 1024**3
TIME_LIMIT_S = 60

# Runs the four readers in one process (the limits apply to all four together) and prints, per
# reader, its exit status and what it wrote; an exception that escapes one is a traceback and a
# non-zero exit of the whole process.
DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, sys
    from context_integrity import cli
    path, page = sys.argv[1], sys.argv[2]
    said = {}
    for name, args in (
        ("report", ["report", path]),
        ("report -v", ["report", "-v", path]),
        ("report --html", ["report", "--html", page, path]),
        ("report --find", ["report", "--find", path]),
    ):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = cli.main(args)
        said[name] = {"status": status, "out": out.getvalue(), "err": err.getvalue()}
    print(json.dumps(said))
    """
)


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))
    resource.setrlimit(resource.RLIMIT_CPU, (TIME_LIMIT_S, TIME_LIMIT_S))


def _read_all(path: Path | str, tmp_path: Path) -> dict[str, dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CONTEXT_INTEGRITY_"))}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(path), str(tmp_path / "page.html")],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIME_LIMIT_S * 2,
        cwd=tmp_path,
        preexec_fn=_limits,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    said: dict[str, dict[str, Any]] = json.loads(done.stdout)
    return said


# ── The hostile inputs ──────────────────────────────────────────────────


def _write(path: Path, *docs: object) -> Path:
    path.write_text("".join(line(doc) for doc in docs), encoding="utf-8")
    return path


def _edited(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        doc = recording()
        edit(doc)
        return _write(tmp_path / "edited.jsonl", doc)

    return make


def _spans(doc: dict[str, Any]) -> list[dict[str, Any]]:
    spans: list[dict[str, Any]] = doc["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return spans


def _tool(doc: dict[str, Any]) -> dict[str, Any]:
    return _spans(doc)[0]


def _summary_row(doc: dict[str, Any], field: str) -> dict[str, Any]:
    for attribute in _spans(doc)[3]["attributes"]:
        if attribute["key"].endswith("." + field):
            return attribute  # type: ignore[no-any-return]
    raise AssertionError(field)


def _set(target: dict[str, Any], key: str, value: object) -> None:
    target[key] = value


def _fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


def _symlink_loop(tmp_path: Path) -> Path:
    first, second = tmp_path / "a", tmp_path / "b"
    first.symlink_to(second)
    second.symlink_to(first)
    return first


def _socket(tmp_path: Path) -> Path:
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))  # the file stays after the socket closes; reading it must still refuse
    server.close()
    return path


def _unreadable(tmp_path: Path) -> Path:
    path = _write(tmp_path / "secret.jsonl", recording())
    path.chmod(0)
    return path


def _overlong(tmp_path: Path) -> Path:
    path = tmp_path / "overlong.jsonl"
    with path.open("wb") as out:
        out.write(b'{"resourceSpans": ["')
        block = b"x" * (1 << 20)
        for _ in range(MAX_RECORDING_LINE_BYTES // len(block) + 2):
            out.write(block)
        out.write(b'"]}\n')
        out.write(line(recording()).encode())
    return path


def _many_traces(tmp_path: Path) -> Path:
    spans = [
        span(f"{index:016x}", "orphan", f"{index + 1:016x}", {}) | {"traceId": f"{index:032x}"}
        for index in range(20_000)
    ]
    return _write(tmp_path / "many.jsonl", document(spans))


def _raw(name: str, data: bytes) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / name
        path.write_bytes(data)
        return path

    return make


# An attribute value of arrays inside arrays, 500 deep.
_NESTED = '{"arrayValue": {"values": [' * 500 + "]}}" * 500


def _separators(tmp_path: Path) -> Path:
    quoted = "row 1\u2028row 2\u2029row 3\x85row 4"
    return _write(tmp_path / "separators.jsonl", recording(witness_value=quoted, message=f"found {quoted}"))


HOSTILE: dict[str, Callable[[Path], Path]] = {
    "an event name that is an object": _edited(lambda d: _set(_tool(d)["events"][0], "name", {"a": 1})),
    "an event name that is a list": _edited(lambda d: _set(_tool(d)["events"][0], "name", [1, 2])),
    "a 5,000-digit start time": _edited(lambda d: _set(_tool(d), "startTimeUnixNano", "9" * 5000)),
    "1e30 as a start time": _edited(lambda d: _set(_spans(d)[2], "startTimeUnixNano", 1e30)),
    "a start time past year 9999": _edited(lambda d: _set(_spans(d)[2], "startTimeUnixNano", "9" * 23)),
    "an end time past year 9999": _edited(lambda d: _set(_spans(d)[2], "endTimeUnixNano", "9" * 23)),
    "a negative time": _edited(lambda d: _set(_spans(d)[2], "startTimeUnixNano", "-5")),
    "NaN as a time": _raw(
        "nan.jsonl",
        line(recording())
        .replace('"startTimeUnixNano": "1717', '"startTimeUnixNano": NaN, "x": "1717', 1)
        .encode(),
    ),
    "last_fired_at = 2**63": _edited(
        lambda d: _set(_summary_row(d, "last_fired_at"), "value", {"intValue": str(2**63)})
    ),
    "a ledger count that is a list": _edited(
        lambda d: _set(_summary_row(d, "checked"), "value", {"arrayValue": {"values": [{"intValue": "1"}]}})
    ),
    "a symlink loop": _symlink_loop,
    "100k nested [ in resourceSpans": _raw(
        "nested.jsonl", b'{"resourceSpans": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    ),
    "an attribute value nested 500 deep": _raw(
        "deep.jsonl",
        line(document([span(RUN_ID, "x", None, {})]))
        .replace('"attributes": []', '"attributes": [{"key": "k", "value": ' + _NESTED + "}]")
        .encode(),
    ),
    "a 5,000-digit number": _raw("digits.jsonl", b'{"resourceSpans": [], "n": ' + b"7" * 5000 + b"}\n"),
    "Jaeger processes.*.tags = [1, 2]": lambda p: _write(p / "jaeger.json", jaeger(process_tags=[1, 2])),
    "Jaeger times, references and logs of the wrong type": lambda p: _write(
        p / "jaeger2.json", jaeger(start="abc", references=7, logs="x")
    ),
    "Jaeger, printed over many lines": lambda p: _raw(
        "pretty.json", json.dumps(jaeger(process_tags=[1, 2]), indent=2).encode()
    )(p),
    "Tempo batches of the wrong shape": lambda p: _write(
        p / "tempo.json", {"batches": [{"scopeSpans": 5}, 3]}
    ),
    "Tempo v2 with resourceSpans an object": lambda p: _write(
        p / "tempo2.json", {"trace": {"resourceSpans": {"a": 1}}}
    ),
    "a FIFO with no writer": _fifo,
    "/dev/zero": lambda p: Path("/dev/zero"),
    "a socket": _socket,
    "a directory": lambda p: p,
    "no file": lambda p: p / "missing.jsonl",
    "a file we may not read": _unreadable,
    "an empty file": _raw("empty.jsonl", b""),
    "binary garbage": _raw("garbage.bin", bytes(range(256)) * 64),
    "NUL bytes in a line": _raw(
        "nul.jsonl", line(recording()).replace("lookup", "lo\\u0000okup\x00").encode()
    ),
    "invalid UTF-8": _raw("latin.jsonl", b'{"resourceSpans": "\xff\xfe"}\n' + line(recording()).encode()),
    "lone surrogates": _raw(
        "surrogates.jsonl",
        line(recording(agent="\\ud800", tool="x")).replace("\\\\ud800", "\\ud800").encode(),
    ),
    "a line of a JSON list": _raw("list.jsonl", b"[]\n[1, 2]\n"),
    "attributes that are an object": _edited(lambda d: _set(_tool(d), "attributes", {"k": "v"})),
    "a span id that is a number": _edited(lambda d: _set(_tool(d), "spanId", 12345)),
    "events that are a string": _edited(lambda d: _set(_tool(d), "events", "oops")),
    "a status that is a list": _edited(lambda d: _set(_tool(d), "status", [1])),
    "a witness count of 10**18": _edited(
        lambda d: _set(_tool(d)["events"][0]["attributes"][8], "value", {"intValue": str(10**18)})
    ),
    "spans that are each other's parent": lambda p: _write(
        p / "cycle.jsonl",
        document([span(TOOL_ID, "execute_tool a", RUN_ID, {}), span(RUN_ID, "execute_tool b", TOOL_ID, {})]),
    ),
    "a metric point with an object start time": lambda p: _write(
        p / "metric.jsonl",
        {
            "resourceMetrics": [
                {
                    "scopeMetrics": [
                        {
                            "scope": {"name": ["not", "a", "name"]},
                            "metrics": [
                                {
                                    "name": names.FINDINGS_METRIC,
                                    "sum": {"dataPoints": [{"startTimeUnixNano": {"a": 1}, "asInt": "1"}]},
                                }
                            ],
                        }
                    ]
                }
            ]
        },
    ),
    "20,000 traces each waiting for its run": _many_traces,
    "a torn last line": _raw("torn.jsonl", (line(recording()) + line(recording())[:200]).encode()),
    "a line past the longest a recording line is read at": _overlong,
    "U+2028, U+2029 and U+0085 in a quoted tool output": _separators,
}


@pytest.fixture(params=sorted(HOSTILE), ids=lambda name: name)
def hostile(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    path = HOSTILE[request.param](tmp_path)
    yield request.param, path
    if path.exists() and not path.is_symlink() and path.is_file():
        path.chmod(0o600)


def test_every_reader_answers_every_hostile_input_within_its_limits(
    hostile: tuple[str, Path], tmp_path: Path
) -> None:
    name, path = hostile
    said = _read_all(path, tmp_path)
    for reader in READERS:
        outcome = said[reader]
        assert outcome["status"] in (0, 2), (name, reader, outcome)
        if outcome["status"] == 2:
            assert outcome["err"].startswith("context-integrity report: "), (name, reader, outcome)
        assert "Traceback" not in outcome["out"] + outcome["err"], (name, reader)
        if reader == "report --find":
            assert "could not read the trace" not in outcome["out"], (name, outcome["out"])


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("a FIFO with no writer", "is a FIFO"),
        ("/dev/zero", "is a device"),
        ("a socket", "is a socket"),
        ("a symlink loop", "a loop"),
        ("a directory", "is a directory"),
        ("no file", "No recording at"),
    ],
)
def test_a_path_that_is_not_a_recording_is_refused_with_a_sentence(
    name: str, said: str, tmp_path: Path
) -> None:
    answers = _read_all(HOSTILE[name](tmp_path), tmp_path)
    for reader in ("report", "report -v", "report --html"):
        assert answers[reader]["status"] == 2 and said in answers[reader]["err"], (reader, answers[reader])
    assert said in answers["report --find"]["out"] or "NO FINDING EVIDENCE" in answers["report --find"]["out"]


def test_a_file_we_may_not_read_is_refused_with_a_sentence(tmp_path: Path) -> None:
    path = _unreadable(tmp_path)
    if os.access(path, os.R_OK):  # as root, no permission is ever denied: the matrix still reads it
        path.chmod(0o600)
        return
    answers = _read_all(path, tmp_path)
    assert answers["report"]["status"] == 2 and "permission denied" in answers["report"]["err"]
    assert "permission denied" in answers["report --find"]["out"]


def test_times_out_of_range_are_clamped_and_said(tmp_path: Path) -> None:
    for name in (
        "a 5,000-digit start time",
        "1e30 as a start time",
        "last_fired_at = 2**63",
        "a negative time",
    ):
        answers = _read_all(HOSTILE[name](tmp_path), tmp_path)
        assert "outside the range a time can have" in " ".join(answers["report"]["out"].split()), name
        assert answers["report --find"]["status"] == 0


def test_an_overlong_line_is_skipped_and_counted_and_the_next_one_read(tmp_path: Path) -> None:
    answers = _read_all(_overlong(tmp_path), tmp_path)
    report = answers["report"]["out"]
    assert "skipped without being read" in report and "run 1: agent triage" in report
    assert "2 findings filed" in answers["report --find"]["out"]


def test_line_separators_inside_strings_do_not_split_lines(tmp_path: Path) -> None:
    path = _separators(tmp_path)
    answer = find_context_errors(path)
    assert "NO FINDING EVIDENCE" not in answer and "2 findings filed" in answer
    assert "\\u2028" in answer  # shown, not obeyed


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_find_holds_the_runs_in_flight_not_the_recording(tmp_path: Path) -> None:
    def runs(count: int) -> list[dict[str, Any]]:
        out = []
        for index in range(count):
            doc = recording(agent=f"agent-{index}", message=f"run {index} " + "m" * 50_000)
            for entry in _spans(doc):
                entry["traceId"] = f"{index + 1:032x}"
            out.append(doc)
        return out

    few = _write(tmp_path / "few.jsonl", *runs(20))
    many = _write(tmp_path / "many.jsonl", *runs(200))
    assert "40 findings filed across 20 runs" in find_context_errors(few)
    assert "400 findings filed across 200 runs" in find_context_errors(many)
    streamed_few, streamed_many = (
        _peak(lambda: find_context_errors(few)),
        _peak(lambda: find_context_errors(many)),
    )
    whole_few, whole_many = _peak(lambda: read_evidence(few)), _peak(lambda: read_evidence(many))
    assert streamed_many < 1.5 * streamed_few  # a line, the runs in it, the findings it lists
    assert whole_many > 2.5 * whole_few  # the contrast: holding every run grows with the trace


def _runs_recording(path: Path, count: int) -> Path:
    docs = []
    for index in range(count):
        doc = recording(agent=f"agent-{index}", tool=f"tool-{index % 50}")
        for entry in _spans(doc):
            entry["traceId"] = f"{index + 1:032x}"
        docs.append(doc)
    return _write(path, *docs)


def test_the_html_page_shows_the_first_runs_and_counts_the_rest(tmp_path: Path) -> None:
    from context_integrity.limits import MAX_HTML_CHART_BARS, MAX_HTML_RUNS
    from context_integrity.recording import RecordingStream
    from context_integrity.report.html import format_html

    just_over = format_html(RecordingStream(_runs_recording(tmp_path / "a.jsonl", MAX_HTML_RUNS + 1)))
    many = MAX_HTML_RUNS * 10
    page = format_html(RecordingStream(_runs_recording(tmp_path / "b.jsonl", many)))
    assert page.count('<section class="run" id="run-') == MAX_HTML_RUNS
    assert f"{many - MAX_HTML_RUNS} more runs" in page
    assert f"{many} runs · {2 * many} findings" in page  # the summary counts every run
    assert page.count('<div class="row">') <= 2 * MAX_HTML_CHART_BARS  # 50 tools: one bar for the others
    assert "(all others)" in page
    # Ten times the runs make a page no larger than the capped page, give or take the counts.
    assert len(page) < 1.05 * len(just_over)
