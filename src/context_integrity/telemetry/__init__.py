"""The only package that imports OpenTelemetry.

Kept import-light on purpose: ``names`` must be readable without the SDK
(the recording reader and the deployment tests use it), so nothing here
imports a submodule eagerly.
"""
