"""setup()'s exporter options, validated before anything is built.

Each refusal names the option, what it got and the fix, so a bad configuration stops at
``setup()`` with a sentence instead of failing later inside an exporter thread. The options
that choose where telemetry goes (:data:`EXPORTER_OPTIONS`) are fixed for the life of the
process's pipeline: a second ``setup()`` that asks for different ones is refused, naming them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from ...judge import SetupError
from ..schema.names import EVALUATION_EVENTS_ALL

PROTOCOLS: Final = ("grpc", "http/protobuf")

# The options a running pipeline cannot change (its exporters and providers are built from them).
EXPORTER_OPTIONS: Final = (
    "service_name",
    "endpoint",
    "protocol",
    "headers",
    "recording_path",
    "log_events",
    "evaluation_events",
    "phoenix_annotations",
    "tracer_provider",
    "meter_provider",
    "logger_provider",
)


def _shown(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 120 else text[:119] + "…"


def _refuse(option: str, value: object, fix: str) -> SetupError:
    return SetupError(f"setup({option}=...) got {_shown(value)} ({type(value).__name__}). {fix}")


@dataclass(frozen=True, slots=True)
class ExporterOptions:
    """The validated options that decide where telemetry goes."""

    service_name: str | None = None
    endpoint: str | None = None
    protocol: str | None = None
    headers: Mapping[str, str] | None = None
    recording_path: str | os.PathLike[str] | None = None
    log_events: bool = False
    evaluation_events: bool | Literal["all"] = False
    phoenix_annotations: str | None = None
    tracer_provider: Any | None = None
    meter_provider: Any | None = None
    logger_provider: Any | None = None
    # The contracts file read into the process's declarations (not an exporter option: a later
    # setup() may read another, whose declarations then follow the re-declaration rule).
    contracts: str | os.PathLike[str] | None = None

    def differing(self, other: ExporterOptions) -> list[str]:
        """The options ``other`` (a later call) sets away from their defaults to something else than here."""
        out: list[str] = []
        for name in EXPORTER_OPTIONS:
            asked = getattr(other, name)
            if asked is None or asked is False:
                continue  # left at its default: keep what the pipeline has
            held = getattr(self, name)
            same = asked is held if name.endswith("_provider") else _same(asked, held)
            if not same:
                out.append(name)
        return out


def _same(a: object, b: object) -> bool:
    try:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            return dict(a) == dict(b)
        if isinstance(a, (str, os.PathLike)) and isinstance(b, (str, os.PathLike)):
            return bool(os.fspath(a) == os.fspath(b))
        return bool(a == b)
    except Exception:
        return False


def _has(value: object, method: str) -> bool:
    return callable(getattr(value, method, None))


def validated_options(
    *,
    service_name: object,
    endpoint: object,
    protocol: object,
    headers: object,
    recording_path: object,
    log_events: object,
    evaluation_events: object,
    capture_content: object,
    redact: object,
    tracer_provider: object,
    meter_provider: object,
    logger_provider: object,
    contracts: object = None,
) -> ExporterOptions:
    """Refuse any option ``setup()`` cannot honour; return the exporter options as given."""
    if service_name is not None and (not isinstance(service_name, str) or not service_name.strip()):
        raise _refuse("service_name", service_name, "Pass the service's name as a non-empty string.")
    if endpoint is not None:
        if not isinstance(endpoint, str):
            raise _refuse(
                "endpoint",
                endpoint,
                "Pass the collector's base URL as a string, e.g. 'http://localhost:4318'.",
            )
        if not endpoint.startswith(("http://", "https://")):
            raise _refuse(
                "endpoint",
                endpoint,
                "The endpoint needs its scheme: 'http://host:4318' (http/protobuf) or 'http://host:4317' (grpc).",
            )
    if protocol is not None and (not isinstance(protocol, str) or protocol.strip().lower() not in PROTOCOLS):
        raise _refuse("protocol", protocol, "Use 'http/protobuf' (port 4318) or 'grpc' (port 4317).")
    if headers is not None:
        if not isinstance(headers, Mapping):
            raise _refuse(
                "headers",
                headers,
                "Pass a dict of header names to values, e.g. {'authorization': 'Bearer ...'}; the "
                "'a=b,c=d' form belongs in OTEL_EXPORTER_OTLP_HEADERS.",
            )
        for key, value in headers.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise _refuse(
                    "headers",
                    {key: value},
                    "Every header name and value must be a string; convert it with str().",
                )
    if recording_path is not None:
        if not isinstance(recording_path, (str, os.PathLike)):
            raise _refuse(
                "recording_path", recording_path, "Pass a file path (a str or pathlib.Path), or leave it out."
            )
        if not os.fspath(recording_path):
            raise _refuse(
                "recording_path", recording_path, "An empty path names no file; leave it out for the default."
            )
    if contracts is not None and (not isinstance(contracts, (str, os.PathLike)) or not os.fspath(contracts)):
        raise _refuse(
            "contracts",
            contracts,
            "Pass the path of a contracts file (TOML, or a pyproject.toml with a [tool.context-integrity] "
            "table) as a str or pathlib.Path, or leave it out.",
        )
    if not isinstance(evaluation_events, bool) and evaluation_events != EVALUATION_EVENTS_ALL:
        raise _refuse(
            "evaluation_events",
            evaluation_events,
            f"Pass True (one fail event per finding), {EVALUATION_EVENTS_ALL!r} (also one pass event per "
            "checked-pass encounter) or False.",
        )
    for name, flag in (
        ("log_events", log_events),
        ("capture_content", capture_content),
    ):
        if not isinstance(flag, bool):
            raise _refuse(name, flag, f"{name} must be a boolean: pass True or False.")
    if redact is not None and not callable(redact):
        raise _refuse(
            "redact", redact, "Pass a function taking the text to export and returning what may leave."
        )
    for name, provider, method, kind in (
        ("tracer_provider", tracer_provider, "get_tracer", "TracerProvider"),
        ("meter_provider", meter_provider, "get_meter", "MeterProvider"),
        ("logger_provider", logger_provider, "get_logger", "LoggerProvider"),
    ):
        if provider is not None and not _has(provider, method):
            raise _refuse(
                name, provider, f"Pass an OpenTelemetry {kind} (it has no {method}()), or leave it out."
            )
    return ExporterOptions(
        service_name=service_name,
        endpoint=endpoint,
        protocol=protocol,
        headers=headers,
        recording_path=recording_path,
        log_events=bool(log_events),
        evaluation_events=evaluation_events if isinstance(evaluation_events, bool) else EVALUATION_EVENTS_ALL,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
        contracts=contracts,
    )


def refuse_changed(held: ExporterOptions, asked: ExporterOptions) -> None:
    """A second ``setup()``: dials and content options apply; different exporter options are refused."""
    changed = held.differing(asked)
    if changed:
        raise SetupError(
            f"setup() was already called, and its pipeline cannot change {', '.join(changed)} while it "
            "runs: the dials, capture_content and redact were not applied either. Call ci.shutdown() "
            "first, then setup() with the new options (or pass only dials to change the dials)."
        )


# What each of setup()'s options other than the dials does, in the operator's words. The dials
# explain themselves on ``Dials`` (judge/dials.py); the docs' reference of setup() is generated from
# the two, and a test fails when a parameter of setup() is in neither.
OPTION_MEANINGS: Final[Mapping[str, str]] = {
    "service_name": "The service's name on every span and metric; overrides `OTEL_SERVICE_NAME`.",
    "endpoint": (
        "The OTLP collector's base URL, with its scheme (`http://host:4318` for http/protobuf, "
        "`http://host:4317` for grpc); overrides `OTEL_EXPORTER_OTLP_ENDPOINT`. With no endpoint at all, "
        "telemetry is recorded to the local recording file."
    ),
    "protocol": "`'grpc'` or `'http/protobuf'`; overrides `OTEL_EXPORTER_OTLP_PROTOCOL`.",
    "headers": (
        "A dict of header names to values sent with every export (an API key); overrides "
        "`OTEL_EXPORTER_OTLP_HEADERS`."
    ),
    "recording_path": (
        "Where the local recording goes when no endpoint is configured; overrides "
        "`CONTEXT_INTEGRITY_RECORDING` (default `~/.local/state/context-integrity/recording.otlp.jsonl`)."
    ),
    "log_events": "Also emit each finding as an OpenTelemetry log record named `context_integrity.finding`.",
    "evaluation_events": (
        "`True`: also emit each finding as the GenAI conventions' `gen_ai.evaluation.result` log event "
        "(label `fail`); `'all'`: also one `pass` event per `checked-pass` encounter."
    ),
    "phoenix_annotations": (
        "Phoenix's base URL (`http://localhost:6006`): also post each finding to Phoenix as a span annotation."
    ),
    "capture_content": (
        "Record tool arguments and results and the messages as `gen_ai.*` content attributes, clipped. "
        "Off, no tool result reaches telemetry whole."
    ),
    "redact": (
        "A function `(text) -> text` that sees every witness value, provenance, message, log body and "
        "exception message before export and returns what may leave; one that raises redacts everything "
        "it was given, as `[redacted]`."
    ),
    "tracer_provider": "Use this TracerProvider instead of the global one (or one setup() would build).",
    "meter_provider": "Use this MeterProvider instead of the global one.",
    "logger_provider": "Use this LoggerProvider for the log events instead of the global one.",
    "contracts": (
        "The path of a contracts file (TOML, or a `pyproject.toml` with a `[tool.context-integrity]` "
        "table) whose declarations arm the checks, as if declared in code; overrides "
        "`CONTEXT_INTEGRITY_CONTRACTS`. A declaration in code and one in the file for the same tool "
        "must agree, or setup() refuses both, naming the tool."
    ),
    "instrument": (
        "Which framework integrations to arm: `'auto'` (every supported one that is installed), a list of "
        "names (`['pydantic_ai']`), or `()` for none. An integration that fails to arm is logged once and "
        "never fails setup()."
    ),
}
