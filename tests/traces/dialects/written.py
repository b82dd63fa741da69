"""Spans written by hand, as the dialect fixture tests need them: one span, its attributes as given."""

from __future__ import annotations

import json
from collections.abc import Mapping

from context_integrity.traces.spans import Span

TRACE = "0" * 31 + "1"


def span(
    name: str,
    attributes: Mapping[str, object],
    *,
    scope: str | None = None,
    span_id: str = "1" * 16,
    parent: str | None = None,
) -> Span:
    return Span(TRACE, span_id, parent, name, 1, 2, attributes=attributes, scope=scope)


def text(value: object) -> str:
    """A structured value as the JSON text most instrumentations write on spans."""
    return json.dumps(value)
