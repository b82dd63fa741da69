"""Where each signal goes, resolved once from setup()'s arguments and the ``OTEL_*`` environment,
and the exporter (or metric reader) that sends it there.

The OTLP and Prometheus exporters, and the SDK's metrics part, are imported only where one is
built, so ``import context_integrity`` never loads them (``tests/test_import_path.py``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.sdk.trace.export import SpanExporter

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader

from ...judge import SetupError
from .options import PROTOCOLS

TRACES_EXPORTERS: Final = ("otlp", "console", "none")
METRICS_EXPORTERS: Final = ("otlp", "prometheus", "console", "none")
DEFAULT_PROMETHEUS_HOST: Final = "127.0.0.1"
DEFAULT_PROMETHEUS_PORT: Final = 9464


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
class ExportPlan:
    """Where each signal goes, resolved once from arguments and environment."""

    protocol: str
    traces_endpoint: str | None
    metrics_endpoint: str | None
    logs_endpoint: str | None
    traces_exporters: list[str]
    metrics_exporters: list[str]
    headers: Mapping[str, str] | None

    @classmethod
    def resolve(
        cls, endpoint: str | None, protocol: str | None, headers: Mapping[str, str] | None
    ) -> ExportPlan:
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


def otlp_span_exporter(plan: ExportPlan, explicit: str | None) -> SpanExporter:
    url = plan.signal_url(explicit, "traces")
    headers = dict(plan.headers) if plan.headers is not None else None
    if plan.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter

        return GrpcExporter(endpoint=url, headers=headers)
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter

    return HttpExporter(endpoint=url, headers=headers)


def otlp_metric_reader(plan: ExportPlan, explicit: str | None) -> MetricReader:
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


def prometheus_reader() -> MetricReader:
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


def otlp_log_exporter(plan: ExportPlan, explicit: str | None) -> Any:
    url = plan.signal_url(explicit, "logs")
    headers = dict(plan.headers) if plan.headers is not None else None
    if plan.protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
            OTLPLogExporter as GrpcLogExporter,
        )

        return GrpcLogExporter(endpoint=url, headers=headers)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )

    return HttpLogExporter(endpoint=url, headers=headers)
