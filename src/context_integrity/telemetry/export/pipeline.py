"""The pipeline ``setup()`` builds: tracer, meter and (opt-in) logger providers, joined or made.

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

Metrics and (opt-in) log events follow the same rule, a proxy seen through the same way, so next to
Logfire nothing is overridden (:mod:`.exporters` builds each exporter).

On a provider the application owns, every processor we add goes on as a
:class:`~.bounded.GuestSpanProcessor` (bounded, and inert after ``ci.shutdown()``). A global provider
an earlier ``setup()`` made and ``ci.shutdown()`` shut down is never joined again (OpenTelemetry
lets no other replace it): a new one of ours takes its place for our own telemetry.
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from opentelemetry import metrics, trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
)

# The SDK's metrics (and logs) parts are imported where setup() builds them, not on
# ``import context_integrity``: together they cost more than the whole trace SDK.
if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader

from ...judge import Dials, SetupError
from ...paths import default_recording_path
from ..instrumentation import Instrumentation, instrumentation_version, retired
from ..run.processor import DispositionSpanProcessor
from ..schema import names
from .bounded import GuestSpanProcessor, TallyingSpanExporter
from .exporters import (
    ExportPlan,
    otlp_log_exporter,
    otlp_metric_reader,
    otlp_span_exporter,
    prometheus_reader,
)

logger = logging.getLogger("context_integrity")

T = TypeVar("T")


def sdk_provider_of(provider: object) -> SdkTracerProvider | None:
    """The OpenTelemetry SDK provider ``provider`` is or stands in front of, else ``None``.

    Logfire installs a ``ProxyTracerProvider`` whose ``.provider`` is the SDK provider it built;
    OpenInference's ``TracerProvider`` is an SDK subclass. Either way the pipeline is joined, never
    replaced by a second one that would split the trace.
    """
    return installed_sdk_provider(provider, SdkTracerProvider)


def installed_sdk_provider(provider: object, sdk_class: type[T]) -> T | None:
    """The SDK meter or logger provider ``provider`` is or stands in front of (Logfire's proxies hold
    theirs as ``.provider``), else ``None``: the same seeing-through as :func:`sdk_provider_of`."""
    if isinstance(provider, sdk_class):
        return provider
    inner = getattr(provider, "provider", None)
    return inner if isinstance(inner, sdk_class) else None


def build(
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
    plan = ExportPlan.resolve(endpoint, protocol, headers)
    tallies: list[TallyingSpanExporter] = []

    def tally(exporter: SpanExporter) -> SpanExporter:
        tallied = TallyingSpanExporter(exporter)
        tallies.append(tallied)
        return tallied

    resource = Resource.create({"service.name": service_name} if service_name else {})
    owned: list[Any] = []
    flushable: list[Any] = []
    recording: Path | None = None
    traces_recorded = False
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
        if provider is not None and retired(provider):
            _say_retired("TracerProvider")
            provider = None
        elif provider is not None:
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
                processors.append(BatchSpanProcessor(tally(otlp_span_exporter(plan, endpoint))))
                where.append(f"traces go over OTLP {plan.protocol} to {plan.traces_endpoint}")
            elif kind == "otlp":
                from .file_export import OtlpJsonLinesSpanExporter
                from .recording_processor import RecordingSpanProcessor

                recorder = OtlpJsonLinesSpanExporter(recording_file(), max_bytes=recording_size())
                traces_recorded = True
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
        if not retired(trace.get_tracer_provider()):
            installs.append(functools.partial(trace.set_tracer_provider, provider))
        tracing = provider
    flushable.append(provider)
    guests: list[GuestSpanProcessor] = []

    def attach(processor: SpanProcessor) -> None:
        """Add a processor of ours; on the application's provider, as a bounded guest."""
        if provider in owned:
            provider.add_span_processor(processor)
            return
        guest = GuestSpanProcessor(processor)
        guests.append(guest)
        provider.add_span_processor(guest)

    run_processor: DispositionSpanProcessor | None = None
    tracer = tracing.get_tracer(names.INSTRUMENTATION_NAME, instrumentation_version())
    if hasattr(provider, "add_span_processor"):
        run_processor = DispositionSpanProcessor(lambda: tracer)
        attach(run_processor)
    else:
        logger.warning(
            "context_integrity: the tracer provider is not an OpenTelemetry SDK provider, so runs "
            "will carry no disposition summary span."
        )
    phoenix = None
    if phoenix_annotations is not None and hasattr(provider, "add_span_processor"):
        from .phoenix import phoenix_annotation_processor

        phoenix = phoenix_annotation_processor(phoenix_annotations)
        attach(phoenix)
        where.append(f"findings are also posted to Phoenix at {phoenix_annotations} as span annotations")

    # ── metrics ──
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    mprovider = meter_provider
    flush_meters: Any = meter_provider
    global_meter_provider = metrics.get_meter_provider()
    installed_meters = installed_sdk_provider(global_meter_provider, SdkMeterProvider)
    if mprovider is None:
        # The application's own, or one behind a proxy (Logfire's): joined, never overridden, so
        # OpenTelemetry has no "Overriding of current MeterProvider" to say and the counter goes
        # where the application's metrics go.
        if installed_meters is not None and retired(installed_meters):
            _say_retired("MeterProvider")
        elif installed_meters is not None:
            flush_meters = installed_meters
            mprovider = global_meter_provider
    if mprovider is None:
        readers: list[MetricReader] = []
        for kind in plan.metrics_exporters:
            if kind == "prometheus":
                readers.append(prometheus_reader())
                where.append("metrics are served for Prometheus to scrape")
            elif kind == "console":
                from opentelemetry.sdk.metrics.export import ConsoleMetricExporter

                readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter()))
            elif kind == "otlp" and plan.metrics_endpoint:
                readers.append(otlp_metric_reader(plan, endpoint))
            elif kind == "otlp":
                from .file_export import OtlpJsonLinesMetricExporter

                readers.append(
                    PeriodicExportingMetricReader(
                        OtlpJsonLinesMetricExporter(recording_file(), max_bytes=recording_size()),
                        export_interval_millis=60_000,
                    )
                )
        mprovider = flush_meters = SdkMeterProvider(
            resource=resource, metric_readers=readers, shutdown_on_exit=False
        )
        owned.append(mprovider)
        if not retired(installed_meters):
            installs.append(functools.partial(metrics.set_meter_provider, mprovider))
    if hasattr(flush_meters, "force_flush"):
        flushable.append(flush_meters)
    meter = mprovider.get_meter(names.INSTRUMENTATION_NAME, instrumentation_version())
    counter = meter.create_counter(
        names.FINDINGS_METRIC,
        unit=names.FINDINGS_METRIC_UNIT,
        description="Context-integrity findings filed, by kind, seam and tool.",
    )

    # ── log events (opt-in) ──
    event_logger = None
    if log_events or evaluation_events:
        event_logger = build_event_logger(
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
        phoenix=phoenix,
        recording_path=recording,
        traces_recorded=traces_recorded,
        trace_resource=getattr(provider, "resource", None),
        capture_content=capture_content,
        event_logger=event_logger,
        log_events=log_events,
        evaluation_events=evaluation_events,
        _owned=owned,
        _flushable=flushable,
        _tallies=tallies,
        _guests=guests,
    )


def build_event_logger(
    plan: ExportPlan,
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
    flush_logs: Any = logger_provider
    global_logger_provider = _logs.get_logger_provider()
    installed_logs = installed_sdk_provider(global_logger_provider, SdkLoggerProvider)
    if lprovider is None:
        if installed_logs is not None and retired(installed_logs):
            _say_retired("LoggerProvider")
        elif installed_logs is not None:
            flush_logs = installed_logs
            lprovider = global_logger_provider
    if lprovider is None:
        lprovider = SdkLoggerProvider(resource=resource, shutdown_on_exit=False)
        if plan.logs_endpoint:
            exporter: Any = otlp_log_exporter(plan, endpoint)
        else:
            from .file_export import OtlpJsonLinesLogExporter

            exporter = OtlpJsonLinesLogExporter(recording_file())
        lprovider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        flush_logs = lprovider
        owned.append(lprovider)
        if not retired(installed_logs):
            installs.append(functools.partial(_logs.set_logger_provider, lprovider))
    flushable.append(flush_logs)
    return lprovider.get_logger(names.INSTRUMENTATION_NAME, instrumentation_version())


def _say_retired(kind: str) -> None:
    logger.info(
        "context_integrity: the global %s is the one an earlier setup() made and ci.shutdown() shut "
        "down, and OpenTelemetry lets no other replace it: context-integrity's own telemetry goes to a "
        "new %s of its own, which other instrumentations do not see.",
        kind,
        kind,
    )
