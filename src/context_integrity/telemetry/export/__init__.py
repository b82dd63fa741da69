"""Where telemetry goes: setup()'s exporter options, the pipeline of providers it builds or joins, the
exporters, the bounded flush, the local recording (its file, its OTLP/JSON encoder and the processor in
front of it) and Phoenix annotations.
"""
