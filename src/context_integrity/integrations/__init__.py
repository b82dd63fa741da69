"""One module per host: each translates its host's hooks into the judge's seams.

Kept import-free on purpose: importing this package must not import any framework (each
integration imports its host lazily) nor OpenTelemetry.
"""
