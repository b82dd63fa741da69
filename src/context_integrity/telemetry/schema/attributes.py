"""Findings and ledger rows as flat OpenTelemetry attributes.

The shapes themselves, with the decoders the recording reader uses, live in
:mod:`.schema` (OpenTelemetry-free, so the reader needs no SDK); this module is
the name the instrumentation imports them by.
"""

from __future__ import annotations

from . import finding_attributes, internal_error_attributes, scalar, summary_attributes, witness_attributes

__all__ = [
    "finding_attributes",
    "internal_error_attributes",
    "scalar",
    "summary_attributes",
    "witness_attributes",
]
