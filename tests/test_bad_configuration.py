"""Bad configuration is refused where it is written, naming the option and the fix (issue 8, item 9).

One table: each bad input, the error it raises, and words its message must hold (the option's
name and the fix). Then what is accepted: external grounds in every documented shape, a second
identical declaration, a second setup() that only changes dials.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import textwrap
from collections.abc import Callable
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from tests.conftest import Telemetry

import context_integrity as ci

Case = tuple[str, Callable[[Telemetry], object], type[Exception], tuple[str, ...]]


def _setup(**options: Any) -> Callable[[Telemetry], object]:
    def call(telemetry: Telemetry) -> object:
        options.setdefault("tracer_provider", telemetry.provider)
        options.setdefault("meter_provider", telemetry.meter_provider)
        return ci.setup(**options)

    return call


def _bare_setup(**options: Any) -> Callable[[Telemetry], object]:
    return lambda telemetry: ci.setup(**options)


def _twice(first: dict[str, Any], second: dict[str, Any]) -> Callable[[Telemetry], object]:
    def call(telemetry: Telemetry) -> object:
        _setup(**first)(telemetry)
        return _setup(**second)(telemetry)

    return call


def _declare(name: Any = "lookup", **options: Any) -> Callable[[Telemetry], object]:
    return lambda telemetry: ci.declare_tool(name, **options)


def _declared_twice(telemetry: Telemetry) -> object:
    ci.declare_tool("lookup", result_columns={"lun": "number"})
    return ci.declare_tool("lookup", result_columns={"lun": "string"})


def _tool_42(telemetry: Telemetry) -> object:
    return ci.tool(42)  # type: ignore[call-overload]


def _tool_named(telemetry: Telemetry) -> object:
    @ci.tool("lookup")  # type: ignore[call-overload, untyped-decorator]
    def lookup() -> None:
        return None

    return lookup


def _tool_misspelled(telemetry: Telemetry) -> object:
    def lookup() -> None:
        return None

    # Refused where it decorates, naming the function.
    return ci.tool(result_colums={"lun": "number"})(lookup)  # type: ignore[call-overload]


def _run(*args: Any, **kwargs: Any) -> Callable[[Telemetry], object]:
    return lambda telemetry: ci.run(*args, **kwargs)


SE, DE = ci.SetupError, ci.DeclarationError
PROVIDER = TracerProvider()
ENUM = "input_schema"

CASES: list[Case] = [
    # ── setup(): where telemetry goes ──
    ("endpoint-int", _setup(endpoint=4318), SE, ("endpoint", "http://localhost:4318")),
    ("endpoint-no-scheme", _setup(endpoint="localhost:4318"), SE, ("endpoint", "scheme")),
    ("endpoint-empty", _setup(endpoint=""), SE, ("endpoint", "scheme")),
    ("endpoint-bytes", _setup(endpoint=b"http://x"), SE, ("endpoint", "string")),
    ("protocol-int", _setup(protocol=1), SE, ("protocol", "'grpc'")),
    ("protocol-unknown", _setup(protocol="http"), SE, ("protocol", "'http/protobuf'")),
    ("headers-str", _setup(headers="a=b"), SE, ("headers", "OTEL_EXPORTER_OTLP_HEADERS")),
    ("headers-list", _setup(headers=["a"]), SE, ("headers", "dict")),
    ("headers-int-value", _setup(headers={"a": 1}), SE, ("headers", "str()")),
    ("headers-int-name", _setup(headers={1: "a"}), SE, ("headers", "string")),
    ("recording-path-int", _setup(recording_path=123), SE, ("recording_path", "pathlib.Path")),
    ("recording-path-empty", _setup(recording_path=""), SE, ("recording_path", "default")),
    ("service-name-int", _setup(service_name=5), SE, ("service_name", "string")),
    ("service-name-blank", _setup(service_name="  "), SE, ("service_name", "non-empty")),
    ("tracer-provider-wrong", _setup(tracer_provider=object()), SE, ("tracer_provider", "TracerProvider")),
    ("meter-provider-wrong", _setup(meter_provider="x"), SE, ("meter_provider", "MeterProvider")),
    ("logger-provider-wrong", _setup(logger_provider=3), SE, ("logger_provider", "LoggerProvider")),
    ("log-events-str", _setup(log_events="yes"), SE, ("log_events", "True or False")),
    ("evaluation-events-str", _setup(evaluation_events="yes"), SE, ("evaluation_events", "'all'")),
    ("capture-content-int", _setup(capture_content=1), SE, ("capture_content", "True or False")),
    ("redact-not-callable", _setup(redact="***"), SE, ("redact", "function")),
    # ── setup(): the dials ──
    ("dial-unknown-word", _setup(check_column_types="on"), SE, ("check_column_types", "'enforce'")),
    ("dial-bool", _setup(check_column_types=True), SE, ("check_column_types", "'warn'")),
    ("dial-notice-str", _setup(notice_empty_lookups="yes"), SE, ("notice_empty_lookups", "boolean")),
    ("dial-grounds-list", _setup(external_grounds=[("a", "b")]), SE, ("external_grounds", "function")),
    ("dial-misspelled", _setup(check_colum_types="warn"), SE, ("check_colum_types", "'check_column_types'")),
    ("option-misspelled", _setup(endpont="http://x"), SE, ("endpont", "'endpoint'")),
    # ── a second setup(): exporter options cannot change while the pipeline runs ──
    (
        "second-endpoint",
        _twice({}, {"endpoint": "http://collector:4318"}),
        SE,
        ("endpoint", "already", "ci.shutdown()"),
    ),
    ("second-log-events", _twice({}, {"log_events": True}), SE, ("log_events", "ci.shutdown()")),
    ("second-provider", _twice({}, {"tracer_provider": PROVIDER}), SE, ("tracer_provider", "ci.shutdown()")),
    ("second-headers", _twice({}, {"headers": {"a": "b"}}), SE, ("headers", "ci.shutdown()")),
    ("second-service", _twice({}, {"service_name": "other"}), SE, ("service_name", "ci.shutdown()")),
    # ── declarations ──
    (
        "declare-misspelled",
        _declare(result_column={"lun": "number"}),
        DE,
        ("result_column", "'result_columns'"),
    ),
    (
        "declare-misspelled-grounds",
        _declare(arguments_form=["a"]),
        DE,
        ("arguments_form", "'arguments_from'"),
    ),
    ("declare-name-int", _declare(5), DE, ("tool name", "name=")),
    ("declare-name-blank", _declare("  "), DE, ("tool name",)),
    ("declare-twice-different", _declared_twice, DE, ("already declared", "result_columns", "replace=True")),
    ("declare-description-int", _declare(description=5), DE, ("description", "string")),
    ("declare-schema-str", _declare(input_schema="schema"), DE, ("input_schema", "dict")),
    ("enum-str", _declare(input_schema={"properties": {"a": {"enum": "a,b"}}}), DE, ("enum", "array")),
    ("enum-empty", _declare(input_schema={"properties": {"a": {"enum": []}}}), DE, ("enum", "non-empty")),
    ("enum-none", _declare(input_schema={"enum": None}), DE, ("enum", "array")),
    ("enum-mapping", _declare(input_schema={"items": {"enum": {"a": 1}}}), DE, ("enum", "array")),
    ("columns-unknown-type", _declare(result_columns={"lun": "num"}), DE, ("lun", "'number'")),
    ("columns-str", _declare(result_columns="lun"), DE, ("result_columns", "dict")),
    (
        "columns-nullable-str",
        _declare(result_columns={"lun": {"type": "number", "nullable": "yes"}}),
        DE,
        ("nullable",),
    ),
    ("grounds-str", _declare(arguments_from="list_hosts"), DE, ("arguments_from", "['list_hosts']")),
    ("grounds-empty", _declare(arguments_from=[]), DE, ("arguments_from", "at least one")),
    ("grounds-self", _declare(arguments_from=["lookup"]), DE, ("arguments_from", "itself")),
    ("grounds-int", _declare(arguments_from=[5]), DE, ("arguments_from", "name of a tool")),
    ("tool-42", _tool_42, DE, ("ci.tool()", "int", "@ci.tool")),
    ("tool-name-positional", _tool_named, DE, ("'lookup'", "@ci.tool(name='lookup')")),
    ("tool-misspelled", _tool_misspelled, DE, ("Tool 'lookup'", "result_colums", "'result_columns'")),
    # ── a run's own options ──
    ("run-agent-int", _run(agent_name=5), SE, ("agent_name", "string")),
    ("run-agent-blank", _run(agent_name=""), SE, ("agent_name", "non-empty")),
    ("run-question-list", _run(["hi"]), SE, ("question", "text")),
    ("run-conversation-int", _run("q", conversation_id=5), SE, ("conversation_id", "text")),
]


@pytest.mark.parametrize(("case", "call", "error", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_configuration_is_refused_naming_the_option_and_the_fix(
    telemetry: Telemetry,
    case: str,
    call: Callable[[Telemetry], object],
    error: type[Exception],
    words: tuple[str, ...],
) -> None:
    with pytest.raises(error) as raised:
        call(telemetry)
    message = str(raised.value)
    missing = [w for w in words if w not in message]
    assert not missing, f"{case}: {message!r} lacks {missing}"


@pytest.mark.parametrize(
    ("variable", "value", "words"),
    [
        ("OTEL_TRACES_EXPORTER", "jaeger", ("OTEL_TRACES_EXPORTER", "'otlp'")),
        ("OTEL_METRICS_EXPORTER", "statsd", ("OTEL_METRICS_EXPORTER", "'prometheus'")),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", ("protocol", "'grpc'")),
    ],
)
def test_bad_environment_is_refused_naming_the_variable(
    telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, words: tuple[str, ...]
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(ci.SetupError) as raised:
        ci.setup()
    assert all(w in str(raised.value) for w in words), str(raised.value)


def test_a_prometheus_port_in_use_is_refused_and_the_failed_setup_installs_nothing() -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        script = textwrap.dedent(
            """
            import context_integrity as ci
            from opentelemetry import metrics, trace
            from opentelemetry.sdk.metrics import MeterProvider
            from opentelemetry.sdk.trace import TracerProvider
            try:
                ci.setup()
            except ci.SetupError as error:
                print("REFUSED", error)
            print("TRACER_SDK", isinstance(trace.get_tracer_provider(), TracerProvider))
            print("METER_SDK", isinstance(metrics.get_meter_provider(), MeterProvider))
            print("STATE", ci.telemetry.setup.current())
            """
        )
        env = {
            "PYTHONPATH": os.pathsep.join(sys.path),
            "PATH": os.environ.get("PATH", "/usr/bin"),
            "OTEL_METRICS_EXPORTER": "prometheus",
            "OTEL_EXPORTER_PROMETHEUS_PORT": str(port),
            "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        }
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
        )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"127.0.0.1:{port}" in out and "OTEL_EXPORTER_PROMETHEUS_PORT" in out
    assert "TRACER_SDK False" in out and "METER_SDK False" in out and "STATE None" in out


def test_a_second_setup_applies_its_dials_and_keeps_the_pipeline(telemetry: Telemetry) -> None:
    first = telemetry.configure(check_column_types="warn")
    second = telemetry.configure(check_column_types="enforce", capture_content=True)
    assert second is first and first.dials.check_column_types == "enforce" and first.capture_content


def test_an_identical_declaration_is_accepted_and_replace_true_replaces(isolated_contracts: None) -> None:
    first = ci.declare_tool("lookup", result_columns={"lun": "number"})
    assert ci.declare_tool("lookup", result_columns={"lun": "number"}) == first
    replaced = ci.declare_tool("lookup", result_columns={"lun": "string"}, replace=True)
    assert replaced != first


def test_arguments_from_naming_an_undeclared_tool_warns_at_run_start(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture
) -> None:
    telemetry.configure(check_column_types="warn")
    ci.declare_tool("lookup_typo_target", arguments_from=["list_hostz"])
    with caplog.at_level(logging.WARNING, logger="context_integrity"), ci.run("q"):
        pass
    (line,) = [r.getMessage() for r in caplog.records if "list_hostz" in r.getMessage()]
    assert "arguments_from" in line and "declare" in line


def test_undeclared_grounds_are_told_once_each_and_boundedly(
    telemetry: Telemetry, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each (tool, undeclared ground) is warned about once per process, however many runs meet it;
    past MAX_WARNED_GROUNDS distinct ones nothing more is said or remembered."""
    from context_integrity._memo import ToldOnce
    from context_integrity.limits import MAX_WARNED_GROUNDS
    from context_integrity.telemetry.run import lifecycle as run_module

    told: ToldOnce[tuple[str, str]] = run_module._WARNED_GROUNDS
    monkeypatch.setattr(told, "_told", set())  # this process may already have told some
    telemetry.configure(check_column_types="warn")
    for index in range(MAX_WARNED_GROUNDS + 1):
        ci.declare_tool(f"lookup_{index}", arguments_from=[f"list_{index}_typo"])
    with caplog.at_level(logging.WARNING, logger="context_integrity"):
        for _ in range(2):
            with ci.run("q"):
                pass
    warned = [r.getMessage() for r in caplog.records if "_typo' in arguments_from" in r.getMessage()]
    assert len(warned) == MAX_WARNED_GROUNDS == len(told)
    assert len(set(warned)) == len(warned), "a repeat is not told again"


@pytest.mark.parametrize(
    "entries",
    [
        [ci.ExternalGround("LUN-0042", "cmdb")],
        [("LUN-0042", "cmdb")],
        [["LUN-0042", "cmdb"]],
        [{"value": "LUN-0042", "source": "cmdb"}],
        ({"value": "LUN-0042", "source": "cmdb"},),
    ],
    ids=["ExternalGround", "pair", "list-pair", "mapping-entry", "tuple-of-mappings"],
)
def test_external_grounds_accept_every_documented_shape(telemetry: Telemetry, entries: object) -> None:
    telemetry.configure(external_grounds=lambda: entries)
    ci.declare_tool("list_hosts")
    ci.declare_tool("lookup", arguments_from=["list_hosts"])
    frame = ci.RequestFrame.of([ci.Message("user", "look it up")], tools=[ci.ToolDefinition("lookup")])
    with ci.run("q") as agent_run, agent_run.request(frame) as call:
        call.respond(calls=[ci.ToolCall("lookup", "c1", {"lun": "LUN-0042"})])
    assert [f for f in agent_run.findings if f.kind == "unsupported-argument"] == []
    (excusal,) = call.excusals
    assert (excusal.value, excusal.source) == ("LUN-0042", "cmdb")


def test_bad_declarations_read_at_run_time_are_told_once_each_and_boundedly(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a framework tool carries is read when a run opens: each bad declaration is logged once
    at error, a repeat at debug; past MAX_WARNED_DECLARATIONS distinct ones, a new one at debug too
    (a misconfigured fleet must not flood the log, nor grow the memory of what was told)."""
    from context_integrity._memo import ToldOnce
    from context_integrity.integrations import functions
    from context_integrity.limits import MAX_WARNED_DECLARATIONS

    monkeypatch.setattr(functions, "_TOLD_BAD_DECLARATIONS", ToldOnce(MAX_WARNED_DECLARATIONS))
    with caplog.at_level(logging.DEBUG, logger="context_integrity"):
        for index in range(MAX_WARNED_DECLARATIONS + 1):
            for _ in range(2):
                functions.tell_bad_declaration(ci.DeclarationError(f"Tool 't{index}': result_columns is bad"))
    told = [(r.levelno, r.getMessage()) for r in caplog.records if r.name == "context_integrity"]
    errors = [message for level, message in told if level == logging.ERROR]
    assert len(errors) == MAX_WARNED_DECLARATIONS
    assert (
        errors[0]
        == "context_integrity: Tool 't0': result_columns is bad (the tool is not judged until it is fixed)"
    )
    assert len(told) == 2 * (MAX_WARNED_DECLARATIONS + 1)  # the rest at debug, none dropped unsaid
    assert len(functions._TOLD_BAD_DECLARATIONS) == MAX_WARNED_DECLARATIONS
