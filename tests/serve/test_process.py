"""``context-integrity serve`` as a process: started, fed, refused bad input, stopped with SIGTERM.

The laws under test:

- with port 0 it listens where it says, on one line at start, for gRPC, HTTP and its metrics;
  ``/healthz``, ``/readyz`` and ``/metrics`` answer, and its log is one JSON object a line;
- a contracts file arms the checks: a mistyped column is a finding on the forwarded tool span;
- malformed protobuf (HTTP and gRPC) and malformed JSON are refused as OTLP says and the process
  goes on; a bad option is refused at start with exit status 2 and a sentence;
- SIGTERM during load: the process stops taking requests, judges what is complete, forwards
  everything it took and exits 0 within its bound; every span of every request it answered 200
  reaches the next hop.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from context_integrity.limits import SERVE_SHUTDOWN_SECONDS
from context_integrity.telemetry.schema import names

from ._parts import MISTYPED_EVERY, small_traces, span_keys, spans_in, wait_for
from ._receiver import HttpOtlpReceiver

REPO = Path(__file__).resolve().parents[2]
START_S = 60
CONTRACTS = """
[tools.list_hosts]
result_columns = { host = "string", wwpn = "string" }
"""


@dataclass
class Process:
    popen: subprocess.Popen[str]
    addresses: dict[str, str]
    next_hop: HttpOtlpReceiver
    stderr: Path

    def get(self, path: str) -> tuple[int, bytes]:
        try:
            with urllib.request.urlopen(f"http://{self.addresses['metrics']}{path}", timeout=10) as answer:
                return int(answer.status), answer.read()
        except urllib.error.HTTPError as error:
            return int(error.code), error.read()

    def post(self, body: bytes, content_type: str = "application/x-protobuf") -> int:
        request = urllib.request.Request(
            f"http://{self.addresses['http']}/v1/traces",
            data=body,
            headers={"Content-Type": content_type},
            method="POST",
        )
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as error:
            return int(error.code)

    def log(self) -> list[dict[str, object]]:
        return [json.loads(line) for line in self.stderr.read_text().splitlines() if line.strip()]


def start(tmp_path: Path, next_hop: HttpOtlpReceiver, *extra: str) -> Process:
    contracts = tmp_path / "contracts.toml"
    contracts.write_text(CONTRACTS)
    stderr = tmp_path / "serve.log"
    popen = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "context_integrity.cli",
            "serve",
            "--contracts",
            str(contracts),
            "--forward",
            next_hop.url,
            "--listen-grpc",
            "127.0.0.1:0",
            "--listen-http",
            "127.0.0.1:0",
            "--metrics",
            "127.0.0.1:0",
            "--quiet-seconds",
            "0.1",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=stderr.open("w"),
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
    )
    assert popen.stdout is not None
    line = popen.stdout.readline()
    assert line.startswith("context-integrity serve: listening "), line + stderr.read_text()
    addresses = dict(part.split("=", 1) for part in line.split("listening ", 1)[1].split())
    return Process(popen, addresses, next_hop, stderr)


@pytest.fixture
def process(tmp_path: Path) -> Iterator[Process]:
    next_hop = HttpOtlpReceiver().start()
    started = start(tmp_path, next_hop)
    yield started
    if started.popen.poll() is None:
        started.popen.kill()
        started.popen.wait(timeout=30)
    next_hop.stop()


def test_it_says_where_it_listens_answers_health_and_judges_with_the_contracts_file(process: Process) -> None:
    assert set(process.addresses) == {"grpc", "http", "metrics", "forward"}
    assert all(not value.endswith(":0") for value in process.addresses.values())
    assert process.get("/healthz")[0] == 200
    assert process.get("/readyz")[0] == 200
    assert process.post(small_traces(MISTYPED_EVERY).SerializeToString()) == 200

    def judged() -> bool:
        return any(o.findings for o in spans_in(process.next_hop.received.requests))

    wait_for(judged, "the finding at the next hop")
    (finding,) = [f for o in spans_in(process.next_hop.received.requests) for f in o.findings]
    assert finding.kind == "column-type-mismatch" and finding.tool_name == "list_hosts"
    status, metrics = process.get("/metrics")
    assert status == 200
    text = metrics.decode()
    for name in (names.SERVE_SPANS_RECEIVED, names.SERVE_TRACES_HELD, names.PROMETHEUS_FINDINGS_METRIC):
        assert name in text
    assert all(record["level"] for record in process.log())


def test_bad_input_is_refused_and_the_process_goes_on(process: Process) -> None:
    assert process.post(b"\x0a\xff\xff\xff\xff\x0f") == 400
    assert process.post(b"{not json", "application/json") == 400
    with grpc.insecure_channel(process.addresses["grpc"]) as channel:
        export = channel.unary_unary(
            "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
            request_serializer=lambda body: body,
            response_deserializer=lambda body: body,
        )
        with pytest.raises(grpc.RpcError) as refused:
            export(b"\x0a\xff\xff\xff\xff\x0f", timeout=30)
        assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert process.popen.poll() is None
    assert process.post(small_traces(3).SerializeToString()) == 200


@pytest.mark.parametrize(
    ("option", "said"),
    [
        (("--listen-http", "nowhere"), "--listen-http 'nowhere': write HOST:PORT"),
        (("--forward", "collector:4318"), "must start with http://"),
        (("--quiet-seconds", "100", "--max-wait-seconds", "10"), "--quiet-seconds must be"),
    ],
)
def test_a_bad_option_is_refused_at_start_with_a_sentence(
    tmp_path: Path, option: tuple[str, ...], said: str
) -> None:
    arguments = ["--forward", "http://127.0.0.1:9", *option] if option[0] != "--forward" else list(option)
    done = subprocess.run(
        [sys.executable, "-m", "context_integrity.cli", "serve", *arguments],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        timeout=START_S,
    )
    assert done.returncode == 2
    assert said in done.stderr


def test_sigterm_during_load_forwards_everything_taken_and_exits_within_its_bound(process: Process) -> None:
    accepted: set[tuple[bytes, bytes]] = set()
    stop = threading.Event()
    sent_enough = threading.Event()

    def send() -> None:
        first = 0
        while not stop.is_set():
            request = small_traces(50, first=first)
            first += 50
            try:
                status = process.post(request.SerializeToString())
            except OSError:
                return  # the receiver is closed: these spans were never taken
            if status == 200:
                accepted.update(
                    span_keys(s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans)
                )
            if first >= 2000:
                sent_enough.set()

    sender = threading.Thread(target=send)
    sender.start()
    try:
        assert sent_enough.wait(60)
        process.popen.send_signal(signal.SIGTERM)
        started = time.monotonic()
        assert process.popen.wait(timeout=SERVE_SHUTDOWN_SECONDS + 30) == 0
        took = time.monotonic() - started
    finally:
        stop.set()
        sender.join(timeout=60)
    assert took < SERVE_SHUTDOWN_SECONDS + 10
    arrived = span_keys(
        o.proto for o in spans_in(process.next_hop.received.requests) if o.scope != names.INSTRUMENTATION_NAME
    )
    assert accepted and accepted <= arrived
    stopped = [record for record in process.log() if str(record["message"]).startswith("stopped")]
    assert len(stopped) == 1
    assert stopped[0]["received"] == stopped[0]["forwarded"]
