"""``setup()``: OpenTelemetry for context-integrity in one call.

Where traces go, in order of precedence:

1. a ``tracer_provider`` passed in (tests, or an application that wants to be explicit);
2. an SDK ``TracerProvider`` the application already installed globally — we add our
   span processor to it and leave its exporters alone. A proxy in front of one (Logfire's
   ``ProxyTracerProvider``, whose ``.provider`` is the SDK provider) is seen through: the processor
   goes on the real provider, our tracer comes from the proxy, so one trace holds everything;
3. a provider we create: OTLP (gRPC or HTTP/protobuf) when an endpoint is configured
   through the standard ``OTEL_*`` environment or the ``endpoint`` argument, the
   console or nothing when ``OTEL_TRACES_EXPORTER`` says so, and otherwise a local
   OTLP-JSON-lines recording that ``context-integrity report`` reads back.

Metrics and (opt-in) log events follow the same rule. Calling ``setup()`` again
reconfigures the dials (and which frameworks are instrumented) only; it never adds a second
exporter or processor.

``instrument`` arms the framework integrations listed in
:data:`context_integrity.integrations.SUPPORTED`: every importable one by default, the listed ones,
or none. An integration that fails to arm is logged once and never fails ``setup()``.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import inspect
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Literal

from opentelemetry import metrics, trace
from opentelemetry.metrics import Counter, Meter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)
from opentelemetry.trace import Tracer

# The SDK's metrics (and logs) parts are imported where setup() builds them, not on
# ``import context_integrity``: together they cost more than the whole trace SDK.
if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader

from ..judge import ContractBook, Dials, SetupError
from ..judge.dials import dial_parameters, dial_specs, dials_doc, unknown_option
from ..limits import EXIT_FLUSH_MILLIS
from ..paths import default_recording_path
from . import names
from .arming import AUTO, arm_integrations, disarm_all, selected_integrations
from .bounded import TallyingSpanExporter, flush_all, say_unsent, within
from .options import PROTOCOLS, ExporterOptions, refuse_changed, validated_options
from .processor import DispositionSpanProcessor

logger = logging.getLogger("context_integrity")


@functools.cache
def instrumentation_version() -> str:
    """The installed package's version, read on first use: importlib.metadata costs more to import
    than the rest of ``import context_integrity`` put together."""
    try:
        from importlib.metadata import version

        return version("context-integrity")
    except Exception:  # running from a source tree
        return "0.0.0+source"


def __getattr__(name: str) -> str:
    if name == "VERSION":  # the old module constant, computed when first read
        return instrumentation_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


TRACES_EXPORTERS: Final = ("otlp", "console", "none")
METRICS_EXPORTERS: Final = ("otlp", "prometheus", "console", "none")
DEFAULT_PROMETHEUS_HOST: Final = "127.0.0.1"
DEFAULT_PROMETHEUS_PORT: Final = 9464

# The process-wide book of declared tools: decorators run at import time,
# usually before setup(), so the book cannot belong to one setup call.
CONTRACTS: Final = ContractBook()


@dataclass
class Instrumentation:
    """What ``setup()`` configured: where telemetry goes, and the dials in force."""

    tracer: Tracer
    meter: Meter
    findings_counter: Counter
    dials: Dials
    destination: str
    processor: DispositionSpanProcessor | None = None
    recording_path: Path | None = None
    capture_content: bool = False
    event_logger: Any | None = None
    # Which records the event logger writes per finding: our own ``context_integrity.finding``
    # (log_events) and the GenAI conventions' ``gen_ai.evaluation.result`` (evaluation_events).
    log_events: bool = False
    evaluation_events: bool | Literal["all"] = False
    redact: Callable[[str], str] | None = None
    options: ExporterOptions = field(default_factory=ExporterOptions)
    _owned: list[Any] = field(default_factory=list, repr=False)
    _flushable: list[Any] = field(default_factory=list, repr=False)
    _tallies: list[TallyingSpanExporter] = field(default_factory=list, repr=False)

    @property
    def contracts(self) -> ContractBook:
        return CONTRACTS

    def force_flush(self, timeout_millis: int = 10_000) -> bool:
        """Push everything buffered to its exporter now, within ``timeout_millis``. Never raises.

        ``False`` when something could not be sent in time; how much is said in one log line.
        """
        if flush_all(self._flushable, timeout_millis):
            return True
        self._say_unsent("flush", timeout_millis)
        return False

    def shutdown(self, timeout_millis: int = EXIT_FLUSH_MILLIS) -> None:
        """Flush and shut down the providers this library created (not the application's), in bound."""
        deadline = time.monotonic() + timeout_millis / 1000
        flushed = flush_all(self._flushable, timeout_millis)

        def close() -> None:
            for provider in self._owned:
                try:
                    provider.shutdown()
                except Exception:
                    logger.exception("context_integrity: shutdown failed for %r", provider)

        left = max((deadline - time.monotonic()) * 1000, 0)
        if not (within(close, left, "shutdown") and flushed):
            self._say_unsent("shutdown", timeout_millis)

    def _say_unsent(self, what: str, timeout_millis: float) -> None:
        ended = self.processor.ended if self.processor is not None else 0
        say_unsent(what, timeout_millis, ended, self._tallies)


_lock = threading.Lock()
_state: Instrumentation | None = None
_said_where = False


def current() -> Instrumentation | None:
    """The instrumentation ``setup()`` configured, or ``None`` before it is called."""
    return _state


def _env(*keys: str) -> str | None:
    for key in keys:
        value = os.environ.get(key, "").strip()
        if value:
            return value
    return None


def _choice(value: str | None, allowed: tuple[str, ...], what: str, default: str) -> list[str]:
    chosen = [v.strip().lower() for v in (value or default).split(",") if v.strip()]
    for v in chosen:
        if v not in allowed:
            raise SetupError(
                f"{what} is {v!r}; context-integrity supports {', '.join(map(repr, allowed))}. "
                f"Fix the environment variable or the argument."
            )
    return chosen or [default]


@dataclass(frozen=True)
class _Plan:
    """Where each signal goes, resolved once from arguments and environment."""

    protocol: str
    traces_endpoint: str | None
    metrics_endpoint: str | None
    logs_endpoint: str | None
    traces_exporters: list[str]
    metrics_exporters: list[str]
    headers: Mapping[str, str] | None

    @classmethod
    def resolve(cls, endpoint: str | None, protocol: str | None, headers: Mapping[str, str] | None) -> _Plan:
        chosen_protocol = (
            protocol or _env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL") or ""
        ).lower() or "http/protobuf"
        if chosen_protocol not in PROTOCOLS:
            raise SetupError(
                f"OTLP protocol {chosen_protocol!r} is not supported; use 'grpc' or 'http/protobuf' "
                "(argument protocol= or OTEL_EXPORTER_OTLP_PROTOCOL)."
            )
        general = endpoint or _env("OTEL_EXPORTER_OTLP_ENDPOINT")
        return cls(
            protocol=chosen_protocol,
            traces_endpoint=_env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or general,
            metrics_endpoint=_env("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or general,
            logs_endpoint=_env("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT") or general,
            traces_exporters=_choice(
                _env("OTEL_TRACES_EXPORTER"), TRACES_EXPORTERS, "OTEL_TRACES_EXPORTER", "otlp"
            ),
            metrics_exporters=_choice(
                _env("OTEL_METRICS_EXPORTER"), METRICS_EXPORTERS, "OTEL_METRICS_EXPORTER", "otlp"
            ),
            headers=headers,
        )

    def signal_url(self, explicit: str | None, signal: str) -> str | None:
        """What to pass the exporter: ``None`` lets it read the environment itself.

        An endpoint given as an argument is a base URL; the HTTP exporters use an
        explicit endpoint verbatim, so the signal path is added here.
        """
        if explicit is None:
            return None
        if self.protocol == "http/protobuf":
            return explicit.rstrip("/") + f"/v1/{signal}"
        return explicit


def _otlp_span_exporter(plan: _Plan, explicit: str | None) -> SpanExporter:
    url = plan.signal_url(explicit, "traces")
    headers = dict(plan.headers) if plan.headers is not None else None
    if plan.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=url, headers=headers)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=url, headers=headers)


def _otlp_metric_reader(plan: _Plan, explicit: str | None) -> MetricReader:
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    url = plan.signal_url(explicit, "metrics")
    headers = dict(plan.headers) if plan.headers is not None else None
    if plan.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )

        return PeriodicExportingMetricReader(GrpcMetricExporter(endpoint=url, headers=headers))
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )

    return PeriodicExportingMetricReader(HttpMetricExporter(endpoint=url, headers=headers))


def _prometheus_reader() -> MetricReader:
    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server
    except ImportError as error:
        raise SetupError(
            "OTEL_METRICS_EXPORTER=prometheus needs the Prometheus exporter: "
            "pip install 'context-integrity[prometheus]'."
        ) from error
    host = _env("OTEL_EXPORTER_PROMETHEUS_HOST") or DEFAULT_PROMETHEUS_HOST
    port_text = _env("OTEL_EXPORTER_PROMETHEUS_PORT") or str(DEFAULT_PROMETHEUS_PORT)
    try:
        port = int(port_text)
    except ValueError as error:
        raise SetupError(
            f"OTEL_EXPORTER_PROMETHEUS_PORT must be a port number (got {port_text!r})."
        ) from error
    try:
        start_http_server(port=port, addr=host)
    except OSError as error:
        raise SetupError(
            f"The Prometheus exporter cannot listen on {host}:{port} ({error.strerror or error}). Set "
            "OTEL_EXPORTER_PROMETHEUS_PORT to a free port, or stop what holds this one."
        ) from error
    return PrometheusMetricReader()


def sdk_provider_of(provider: object) -> SdkTracerProvider | None:
    """The OpenTelemetry SDK provider ``provider`` is or stands in front of, else ``None``.

    Logfire installs a ``ProxyTracerProvider`` whose ``.provider`` is the SDK provider it built;
    OpenInference's ``TracerProvider`` is an SDK subclass. Either way the pipeline is joined, never
    replaced by a second one that would split the trace.
    """
    if isinstance(provider, SdkTracerProvider):
        return provider
    inner = getattr(provider, "provider", None)
    return inner if isinstance(inner, SdkTracerProvider) else None


def _say_where(destination: str) -> None:
    global _said_where
    if not _said_where:
        _said_where = True
        logger.warning("context_integrity: %s", destination)


def _build(
    *,
    dials: Dials,
    service_name: str | None,
    endpoint: str | None,
    protocol: str | None,
    headers: Mapping[str, str] | None,
    recording_path: str | os.PathLike[str] | None,
    log_events: bool,
    evaluation_events: bool | Literal["all"],
    phoenix_annotations: str | None,
    capture_content: bool,
    tracer_provider: Any | None,
    meter_provider: Any | None,
    logger_provider: Any | None,
    installs: list[Callable[[], None]],
) -> Instrumentation:
    """Build the pipeline; the global providers it makes are only queued in ``installs``.

    Nothing global changes until the whole pipeline was built, so a setup() that fails leaves the
    process as it found it (the caller shuts down what was made).
    """
    plan = _Plan.resolve(endpoint, protocol, headers)
    tallies: list[TallyingSpanExporter] = []

    def tally(exporter: SpanExporter) -> SpanExporter:
        tallied = TallyingSpanExporter(exporter)
        tallies.append(tallied)
        return tallied

    resource = Resource.create({"service.name": service_name} if service_name else {})
    owned: list[Any] = []
    flushable: list[Any] = []
    recording: Path | None = None
    where: list[str] = []

    def recording_file() -> Path:
        nonlocal recording
        if recording is None:
            recording = Path(recording_path) if recording_path is not None else default_recording_path()
        return recording

    def recording_size() -> int:
        from .recording_file import recording_max_bytes

        try:
            return recording_max_bytes()
        except ValueError as error:
            raise SetupError(str(error)) from None

    recording_size()  # a bad $CONTEXT_INTEGRITY_RECORDING_MAX_BYTES is refused here, whatever the destination

    # ── traces ──
    # ``provider`` gets our span processor; ``tracing`` gives our tracer. They differ only behind a
    # proxy: the processor must sit on the real SDK provider, the tracer comes from what the
    # application hands everyone else, so our spans are made exactly like the host's.
    provider: Any = None
    tracing: Any = None
    if tracer_provider is not None:
        provider = sdk_provider_of(tracer_provider) or tracer_provider
        tracing = tracer_provider
        where.append("traces go to the TracerProvider passed to setup()")
    else:
        global_provider = trace.get_tracer_provider()
        provider = sdk_provider_of(global_provider)
        if provider is not None:
            tracing = global_provider
            joined = "proxy" if provider is not global_provider else "TracerProvider"
            where.append(f"traces go to the application's own {joined} ({type(global_provider).__module__})")
    if provider is None:
        # Our own bounded shutdown runs at exit (see :func:`_exit_shutdown`), not the SDK's unbounded one.
        provider = SdkTracerProvider(resource=resource, shutdown_on_exit=False)
        owned.append(provider)
        processors: list[SpanProcessor] = []
        for kind in plan.traces_exporters:
            if kind == "console":
                processors.append(SimpleSpanProcessor(ConsoleSpanExporter()))
                where.append("traces print to the console")
            elif kind == "otlp" and plan.traces_endpoint:
                processors.append(BatchSpanProcessor(tally(_otlp_span_exporter(plan, endpoint))))
                where.append(f"traces go over OTLP {plan.protocol} to {plan.traces_endpoint}")
            elif kind == "otlp":
                from .file_export import OtlpJsonLinesSpanExporter
                from .recording_processor import RecordingSpanProcessor

                recorder = OtlpJsonLinesSpanExporter(recording_file(), max_bytes=recording_size())
                processors.append(
                    RecordingSpanProcessor(
                        tally(recorder), record_dropped=recorder.record_dropped, where=str(recording_file())
                    )
                )
                where.append(
                    f"no OTLP endpoint is configured, so traces are recorded to {recording_file()} "
                    "(read them with `context-integrity report`; set OTEL_EXPORTER_OTLP_ENDPOINT to "
                    "send them to a collector)"
                )
        for processor in processors:
            provider.add_span_processor(processor)
        installs.append(functools.partial(trace.set_tracer_provider, provider))
        tracing = provider
    flushable.append(provider)
    run_processor: DispositionSpanProcessor | None = None
    tracer = tracing.get_tracer(names.INSTRUMENTATION_NAME, instrumentation_version())
    if hasattr(provider, "add_span_processor"):
        run_processor = DispositionSpanProcessor(lambda: tracer)
        provider.add_span_processor(run_processor)
    else:
        logger.warning(
            "context_integrity: the tracer provider is not an OpenTelemetry SDK provider, so runs "
            "will carry no disposition summary span."
        )
    if phoenix_annotations is not None and hasattr(provider, "add_span_processor"):
        from .phoenix import phoenix_annotation_processor

        provider.add_span_processor(phoenix_annotation_processor(phoenix_annotations))
        where.append(f"findings are also posted to Phoenix at {phoenix_annotations} as span annotations")

    # ── metrics ──
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    mprovider = meter_provider
    if mprovider is None:
        global_meter_provider = metrics.get_meter_provider()
        if isinstance(global_meter_provider, SdkMeterProvider):
            mprovider = global_meter_provider
    if mprovider is None:
        readers: list[MetricReader] = []
        for kind in plan.metrics_exporters:
            if kind == "prometheus":
                readers.append(_prometheus_reader())
                where.append("metrics are served for Prometheus to scrape")
            elif kind == "console":
                from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

                readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
            elif kind == "otlp" and plan.metrics_endpoint:
                readers.append(_otlp_metric_reader(plan, endpoint))
            elif kind == "otlp":
                from .file_export import OtlpJsonLinesMetricExporter

                readers.append(
                    PeriodicExportingMetricReader(
                        OtlpJsonLinesMetricExporter(recording_file(), max_bytes=recording_size()),
                        export_interval_millis=60_000,
                    )
                )
        mprovider = SdkMeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
        owned.append(mprovider)
        installs.append(functools.partial(metrics.set_meter_provider, mprovider))
    if hasattr(mprovider, "force_flush"):
        flushable.append(mprovider)
    meter = mprovider.get_meter(names.INSTRUMENTATION_NAME, instrumentation_version())
    counter = meter.create_counter(
        names.FINDINGS_METRIC,
        unit=names.FINDINGS_METRIC_UNIT,
        description="Context-integrity findings filed, by kind, seam and tool.",
    )

    # ── log events (opt-in) ──
    event_logger = None
    if log_events or evaluation_events:
        event_logger = _event_logger(
            plan, endpoint, logger_provider, resource, recording_file, owned, flushable, installs
        )

    destination = "; ".join(where) or "traces go to the configured OpenTelemetry pipeline"
    return Instrumentation(
        tracer=tracer,
        meter=meter,
        findings_counter=counter,
        dials=dials,
        destination=destination,
        processor=run_processor,
        recording_path=recording,
        capture_content=capture_content,
        event_logger=event_logger,
        log_events=log_events,
        evaluation_events=evaluation_events,
        _owned=owned,
        _flushable=flushable,
        _tallies=tallies,
    )


def _event_logger(
    plan: _Plan,
    endpoint: str | None,
    logger_provider: Any | None,
    resource: Resource,
    recording_file: Any,
    owned: list[Any],
    flushable: list[Any],
    installs: list[Callable[[], None]],
) -> Any:
    from opentelemetry import _logs
    from opentelemetry.sdk._logs import LoggerProvider as SdkLoggerProvider
    from opentelemetry.sdk._logs.export import BatchLogRecordProcessor

    lprovider = logger_provider
    if lprovider is None:
        global_logger_provider = _logs.get_logger_provider()
        if isinstance(global_logger_provider, SdkLoggerProvider):
            lprovider = global_logger_provider
    if lprovider is None:
        lprovider = SdkLoggerProvider(resource=resource, shutdown_on_exit=False)
        if plan.logs_endpoint:
            url = plan.signal_url(endpoint, "logs")
            headers = dict(plan.headers) if plan.headers is not None else None
            if plan.protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
                    OTLPLogExporter as GrpcLogExporter,
                )

                exporter: Any = GrpcLogExporter(endpoint=url, headers=headers)
            else:
                from opentelemetry.exporter.otlp.proto.http._log_exporter import (
                    OTLPLogExporter as HttpLogExporter,
                )

                exporter = HttpLogExporter(endpoint=url, headers=headers)
        else:
            from .file_export import OtlpJsonLinesLogExporter

            exporter = OtlpJsonLinesLogExporter(recording_file())
        lprovider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        owned.append(lprovider)
        installs.append(functools.partial(_logs.set_logger_provider, lprovider))
    flushable.append(lprovider)
    return lprovider.get_logger(names.INSTRUMENTATION_NAME, instrumentation_version())


def setup(
    *,
    service_name: str | None = None,
    endpoint: str | None = None,
    protocol: str | None = None,
    headers: Mapping[str, str] | None = None,
    recording_path: str | os.PathLike[str] | None = None,
    log_events: bool = False,
    evaluation_events: bool | Literal["all"] = False,
    phoenix_annotations: str | None = None,
    capture_content: bool = False,
    redact: Callable[[str], str] | None = None,
    tracer_provider: Any | None = None,
    meter_provider: Any | None = None,
    logger_provider: Any | None = None,
    instrument: str | Iterable[str] = AUTO,
    **dials: Any,
) -> Instrumentation:
    """Configure context-integrity and OpenTelemetry in one call.

        Dials (each defaults to the byte-identical choice):

    {dials}

        ``instrument``: ``"auto"`` (the default) instruments every supported framework that is
        installed; a list of names (see ``context_integrity.integrations.SUPPORTED``) only those;
        ``()`` none.

        Raises :class:`SetupError` (a ``ValueError``) for a dial, option or environment value
        outside its vocabulary; nothing is configured in that case. A second call
        changes the dials and keeps the exporters and processors of the first.
    """
    global _state
    for name in dials:
        if name not in dial_specs():
            raise unknown_option(name, tuple(inspect.signature(setup).parameters))
    validated = Dials.validated(**dials)
    options = validated_options(
        service_name=service_name,
        endpoint=endpoint,
        protocol=protocol,
        headers=headers,
        recording_path=recording_path,
        log_events=log_events,
        evaluation_events=evaluation_events,
        capture_content=capture_content,
        redact=redact,
        tracer_provider=tracer_provider,
        meter_provider=meter_provider,
        logger_provider=logger_provider,
    )
    if phoenix_annotations is not None and not (
        isinstance(phoenix_annotations, str) and phoenix_annotations.startswith(("http://", "https://"))
    ):
        raise SetupError(
            f"phoenix_annotations must be Phoenix's base URL, such as 'http://localhost:6006' "
            f"(got {phoenix_annotations!r:.200})."
        )
    frameworks, auto = selected_integrations(instrument)
    options = dataclasses.replace(options, phoenix_annotations=phoenix_annotations)
    with _lock:
        if _state is not None:
            refuse_changed(_state.options, options)
            _state.dials = validated
            _state.capture_content = capture_content
            _state.redact = redact
            arm_integrations(frameworks, auto=auto)
            return _state
        installs: list[Callable[[], None]] = []
        try:
            built = _build(
                dials=validated,
                service_name=service_name,
                endpoint=endpoint,
                protocol=protocol,
                headers=headers,
                recording_path=recording_path,
                log_events=log_events,
                evaluation_events=evaluation_events,
                phoenix_annotations=phoenix_annotations,
                capture_content=capture_content,
                tracer_provider=tracer_provider,
                meter_provider=meter_provider,
                logger_provider=logger_provider,
                installs=installs,
            )
        except BaseException:
            _discard_partial(installs)
            raise
        for install in installs:
            install()
        built.options = options
        built.redact = redact
        _state = state = built
        _arm_exit_shutdown()
        arm_integrations(frameworks, auto=auto)
    if state.recording_path is not None:
        _say_where(state.destination)
    else:
        logger.info("context_integrity: %s", state.destination)
    return state


_exit_armed = False


def _exit_shutdown() -> None:
    """At interpreter exit: flush and shut down what setup() made, within EXIT_FLUSH_MILLIS."""
    state = _state
    if state is not None:
        state.shutdown(EXIT_FLUSH_MILLIS)


def _arm_exit_shutdown() -> None:
    global _exit_armed
    if not _exit_armed:
        _exit_armed = True
        atexit.register(_exit_shutdown)


def _discard_partial(installs: list[Callable[[], None]]) -> None:
    """Shut down the providers a failed setup() made (none was installed globally)."""
    for install in installs:
        provider: Any = getattr(install, "args", (None,))[0]
        with contextlib.suppress(Exception):
            provider.shutdown()


# The dials are declared once, on :class:`Dials`; setup()'s signature and docstring are read from there.
setup.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [
        *(
            p
            for p in inspect.signature(setup).parameters.values()
            if p.kind is not inspect.Parameter.VAR_KEYWORD
        ),
        *dial_parameters(),
    ],
    return_annotation="Instrumentation",
)
setup.__doc__ = (setup.__doc__ or "").replace("{dials}", dials_doc())


def shutdown() -> None:
    """Flush and shut down what ``setup()`` created, and forget it (the next ``setup()`` starts anew).

    Providers the application owns are flushed but never shut down; the framework integrations
    ``setup()`` armed are disarmed.
    """
    global _state
    with _lock:
        state, _state = _state, None
        disarm_all()
    if state is not None:
        state.shutdown()


def flush(timeout_millis: int = 10_000) -> bool:
    """Export everything buffered now (call before a short-lived process exits). Never raises.

    Returns within ``timeout_millis`` whatever the exporter does; ``False`` (and one log line
    counting the spans not sent) when it could not finish in time.
    """
    state = _state
    return state.force_flush(timeout_millis) if state is not None else True
