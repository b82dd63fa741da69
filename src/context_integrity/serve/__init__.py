"""``context-integrity serve``: the judge as an OTLP pipeline stage, between the Collector and the backend.

Spans arrive over OTLP (gRPC and HTTP, protobuf and JSON); the spans of agent work are held by trace
until the trace is complete, judged by the same reader and judge as ``context-integrity judge``, and
forwarded with the findings written on them and a summary span under each run; every other span is
forwarded at once. Scale-out is the Collector's: its load-balancing exporter routes every span of a
trace to the same replica (routing key ``traceID``).

- :mod:`.wire`: request bodies and answers, as the OTLP specification gives them;
- :mod:`.receive`: the gRPC and HTTP receivers;
- :mod:`.view`: a received span as the trace readers' :class:`~context_integrity.traces.spans.Span`;
- :mod:`.hold`: the spans of agent work, by trace, until their trace is due;
- :mod:`.judging`: the judge (assembler, replay, checks) over what was read as the spans arrived;
- :mod:`.annotate`: the judgment written on the trace's spans;
- :mod:`.forward`: the bounded retry queue in front of the next endpoint;
- :mod:`.stage`: all of it for one request and one due trace; :mod:`.server`: for a process;
- :mod:`.metrics`, :mod:`.logs`: the stage's own ``/metrics``, health and JSON logs.

Imports ``opentelemetry-proto`` and ``grpcio``, never the OpenTelemetry SDK and never a framework.
"""
