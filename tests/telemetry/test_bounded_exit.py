"""Exit stays bounded when the application owns the provider (issue 38, part 4).

The laws under test:
(a) with ``setup(tracer_provider=app_provider, phoenix_annotations=URL)`` and a Phoenix that accepts
    the connection and never answers, the process exits within ``limits.EXIT_FLUSH_MILLIS`` (and a
    margin) of its last run, with and without ``ci.shutdown()``; the warning counts the findings
    never posted;
(b) ``ci.shutdown()`` leaves what we added to the application's provider inert: a later ``setup()``
    on the same provider writes one summary per run, and OpenTelemetry warns of no shut-down provider;
(c) a flush that fails inside the SDK (the MeterProvider raises when a reader timed out) is one log
    line, not a traceback.
Timed end to end in a process of its own, against a real TCP server that never answers.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from context_integrity.limits import EXIT_FLUSH_MILLIS
from context_integrity.telemetry.export.bounded import flush_all

ROOT = Path(__file__).resolve().parents[2]
# What the bound may be exceeded by: interpreter teardown, a loaded machine. The failure it guards
# against took 20 s and more.
MARGIN_S = 3.0
RUNS = 300


@pytest.fixture
def blackhole() -> Iterator[str]:
    """A Phoenix that accepts every connection and never answers."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(128)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except OSError:
                continue
            held.append(connection)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}"
    stop.set()
    thread.join(2)
    for connection in held:
        connection.close()
    server.close()


AGENT = """
    import logging, sys, time
    logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="LOG %(name)s %(message)s")
    from opentelemetry.sdk.trace import TracerProvider
    import context_integrity as ci

    app = TracerProvider()  # the application's: its own exit shuts down what it holds
    ci.setup(tracer_provider=app, phoenix_annotations=sys.argv[1], check_column_types="warn", instrument=())
    ci.declare_tool("lookup", result_columns={"lun": "number"})
    for _ in range(int(sys.argv[2])):
        with ci.run("q") as run:
            run.tool_result("lookup", None, [{"lun": "x"}])
    print("RUNS DONE", time.time(), flush=True)
    if sys.argv[3] == "shutdown":
        ci.shutdown()
"""


def _timed_exit(url: str, how: str) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CONTEXT_INTEGRITY_"))}
    env.update({"PYTHONPATH": str(ROOT / "src"), "OTEL_METRICS_EXPORTER": "none"})
    process = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(AGENT), url, str(RUNS), how],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    )
    out, err = process.communicate(timeout=120)  # a guard against a hang, not the measurement
    ended = time.time()
    assert process.returncode == 0, err
    done = float(next(line for line in out.splitlines() if line.startswith("RUNS DONE")).split()[2])
    return ended - done, out + err


@pytest.mark.parametrize("how", ["exit", "shutdown"])
def test_exit_is_bounded_when_the_application_owns_the_provider_and_phoenix_never_answers(
    blackhole: str, how: str
) -> None:
    # From the last run to the end of the process: ci.shutdown() (when called) and exit together.
    took, said = _timed_exit(blackhole, how)
    assert took < EXIT_FLUSH_MILLIS / 1000 + MARGIN_S, said[-2000:]
    (line,) = [x for x in said.splitlines() if "did not finish within" in x]
    assert f"{RUNS} finding(s) were not posted to Phoenix" in line
    assert "Traceback" not in said


SETUP_TWICE = """
    import logging, sys
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="LOG %(name)s %(message)s")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    import context_integrity as ci
    from context_integrity.telemetry.schema import names

    exporter = InMemorySpanExporter()
    app = TracerProvider()
    app.add_span_processor(SimpleSpanProcessor(exporter))
    first = None
    for round in (1, 2):
        made = ci.setup(tracer_provider=app, instrument=())
        first = first or made
        with ci.run("q"):
            pass
        ci.shutdown()
        summaries = [s for s in exporter.get_finished_spans() if s.name == names.DISPOSITION_SPAN]
        print("SUMMARIES", round, len(summaries))
        print("FIRST SAW", round, first.processor.ended)
"""


def test_a_later_setup_on_the_same_provider_is_clean() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "CONTEXT_INTEGRITY_"))}
    env["PYTHONPATH"] = str(ROOT / "src")
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SETUP_TWICE)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    # One summary per run, and the first setup's summary processor saw nothing of the second run.
    assert "SUMMARIES 1 1" in lines and "SUMMARIES 2 2" in lines, done.stdout
    seen = [line.split()[-1] for line in lines if line.startswith("FIRST SAW")]
    assert len(seen) == 2 and seen[0] == seen[1], done.stdout
    assert not [x for x in lines + done.stderr.splitlines() if "shutdown" in x and "can not provide" in x]


class _Raising:
    def force_flush(self, timeout_millis: int) -> bool:
        raise Exception(
            "MeterProvider.force_flush failed because the following metric readers failed during "
            "collect:\nPeriodicExportingMetricReader: MetricsTimeoutError('Timed out')"
        )


def test_a_flush_that_fails_in_the_sdk_is_one_log_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        assert flush_all([_Raising()], 1000) is False
    (record,) = caplog.records
    assert record.exc_info is None and "\n" not in record.getMessage()
    assert (
        "_Raising.force_flush failed" in record.getMessage() and "MetricsTimeoutError" in record.getMessage()
    )
