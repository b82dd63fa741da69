"""Other instrumentations' spans, read into the loop's data model and judged by the same judge.

- :mod:`.spans`: one span as every source hands it (OTLP/JSON, Tempo, Jaeger, Phoenix, OTLP requests);
- :mod:`.readings`: what a dialect reads from one span;
- :mod:`.dialects`: one module per instrumentation, and the fixed order they are tried in;
- :mod:`.model`: a run read from a trace, as the steps the judge replays.

Never imports the OpenTelemetry SDK, like :mod:`context_integrity.recording`.
"""
