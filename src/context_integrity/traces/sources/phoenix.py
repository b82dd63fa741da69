"""Arize Phoenix's REST span API: a project's traces, one whole trace at a time.

``GET /v1/projects/{project}/spans`` (cursor paging: each answer's ``next_cursor`` asks for the next
page) answers spans as ``{"context": {"trace_id", "span_id"}, "parent_id", "name", "span_kind",
"start_time", "end_time", "status_code", "status_message", "attributes", "events"}``. Phoenix keeps
attributes nested and answers them flattened to dotted keys, as OTLP carried them, with two
exceptions undone here so that a dialect reads a Phoenix span as it reads the same span from a file:

- ``openinference.span.kind`` is lifted out of the attributes into ``span_kind`` (``"UNKNOWN"`` when
  the span had none);
- the attributes OpenInference writes as JSON text and Phoenix stores parsed (``metadata``,
  ``tool.parameters``, ``llm.prompt_template.variables``, ``document.metadata``) come back flattened
  key by key, and are put back together as their JSON text.

The traces to read are the project's root spans (``parent_id=null``) in the time range, newest
first up to :data:`~context_integrity.limits.MAX_SEARCHED_TRACES`, read oldest first; or the one
trace asked for. Each trace's spans are fetched by its id, so a trace is whole when it is handed on.
Phoenix answers no resource and no instrumentation scope: a span is known by its attributes alone.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any, Final

from ...limits import MAX_SEARCHED_TRACES, PHOENIX_PAGE_SPANS
from ...recording.otlp_json import SPAN_ID_HEX_CHARS, TRACE_ID_HEX_CHARS, Malformed, hex_id
from ...telemetry.schema import names
from ...text import clip
from ..spans import Span, SpanEvent
from .backends import get_json, trace_id_of
from .base import Say, SourceError, SourceItem, SpanSource, TraceComplete

DEFAULT_PROJECT: Final = "default"
_UNKNOWN_KIND: Final = "UNKNOWN"
_STATUS: Final = {"OK": "ok", "ERROR": "error", "UNSET": "unset"}
# OpenInference's attributes that are JSON text on the wire and parsed by Phoenix when it stores them
# (``phoenix.trace.attributes.JSON_STRING_ATTRIBUTES``), matched by their last key segments.
JSON_TEXT_ATTRIBUTES: Final = (
    "document.metadata",
    "llm.prompt_template.variables",
    "metadata",
    "tool.parameters",
)
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=timezone.utc)


class PhoenixSource(SpanSource):
    """A Phoenix project's traces."""

    def __init__(
        self,
        base_url: str,
        *,
        project: str | None,
        trace_id: str | None,
        start: datetime | None,
        end: datetime | None,
        headers: Mapping[str, str] | None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.project = project or DEFAULT_PROJECT
        if any(mark in self.project for mark in "/?#"):
            raise SourceError(f"Phoenix project names cannot hold '/', '?' or '#' (got {self.project!r}).")
        self.trace_id = trace_id_of(trace_id) if trace_id is not None else None
        self.start, self.end = start, end
        for bound in (start, end):
            if bound is not None and bound.tzinfo is None:
                raise SourceError("The time range must say its time zone (e.g. 2025-06-01T10:00:00+00:00).")
        self.headers = dict(headers or {})
        what = f"trace {self.trace_id}" if self.trace_id else "its traces"
        self.description = f"Phoenix at {self.base_url}, project {self.project!r}, {what}"

    def _pages(self, query: dict[str, object]) -> Iterator[list[object]]:
        path = f"{self.base_url}/v1/projects/{urllib.parse.quote(self.project, safe='')}/spans"
        cursor: str | None = None
        while True:
            asked = {**query, "limit": PHOENIX_PAGE_SPANS, **({"cursor": cursor} if cursor else {})}
            url = f"{path}?{urllib.parse.urlencode(asked, doseq=True)}"
            page = get_json(url, what="Phoenix", headers=self.headers)
            data = page.get("data") if isinstance(page, dict) else None
            if not isinstance(data, list):
                raise SourceError(
                    f'Phoenix did not answer {{"data": [spans]}} for {url}: is this Phoenix\'s base URL?'
                )
            yield data
            following = page.get("next_cursor")
            if not isinstance(following, str) or not following or following == cursor:
                return
            cursor = following

    def _trace_ids(self, say: Say) -> list[str]:
        query: dict[str, object] = {"parent_id": "null"}
        if self.start is not None:
            query["start_time"] = self.start.isoformat()
        if self.end is not None:
            query["end_time"] = self.end.isoformat()
        found: dict[str, None] = {}
        for page in self._pages(query):
            for node in page:
                context = node.get("context") if isinstance(node, dict) else None
                trace_id = context.get("trace_id") if isinstance(context, dict) else None
                if isinstance(trace_id, str):
                    found[trace_id] = None
            if len(found) >= MAX_SEARCHED_TRACES:
                say(
                    f"the project has more than {MAX_SEARCHED_TRACES} traces in the range; the newest "
                    f"{MAX_SEARCHED_TRACES} are read (narrow the time range to judge the others)"
                )
                break
        return list(found)[:MAX_SEARCHED_TRACES][::-1]  # Phoenix lists newest first: judged oldest first

    def items(self, say: Say) -> Iterator[SourceItem]:
        trace_ids = [self.trace_id] if self.trace_id is not None else self._trace_ids(say)
        for trace_id in trace_ids:
            for page in self._pages({"trace_id": trace_id}):
                for node in page:
                    span = span_of_phoenix(node, say)
                    if span is not None:
                        yield span
            yield TraceComplete(trace_id.lower())


def nanos_of(value: object) -> int | None:
    """An ISO 8601 time (``Z`` or an offset; any number of fractional digits) as Unix nanoseconds."""
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    fraction_ns = 0
    if "." in text:
        head, _, rest = text.partition(".")
        digits = "".join(c for c in rest[:9] if c.isdigit()) if rest else ""
        count = len(digits)
        while count < len(rest) and rest[count].isdigit():
            count += 1
        fraction_ns = int(digits.ljust(9, "0")) if digits else 0
        text = head + rest[count:]
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    seconds = (moment - _EPOCH) // timedelta(seconds=1)
    return seconds * 1_000_000_000 + fraction_ns


def repacked(attributes: Mapping[str, Any]) -> dict[str, object]:
    """Phoenix's flattened attributes with the JSON-text ones put back together as JSON text."""
    out: dict[str, object] = {}
    packed: dict[str, dict[str, Any]] = {}
    for key, value in attributes.items():
        owner = _json_text_owner(key)
        if owner is None or owner == key:
            out[key] = value if owner is None or isinstance(value, str) else json.dumps(value, default=str)
            continue
        node = packed.setdefault(owner, {})
        parts = key[len(owner) + 1 :].split(".")
        for part in parts[:-1]:
            child = node.get(part)
            node = child if isinstance(child, dict) else node.setdefault(part, {})
        node[parts[-1]] = value
    for owner, value in packed.items():
        out[owner] = json.dumps(_listed(value), default=str)
    return out


def _json_text_owner(key: str) -> str | None:
    """The attribute a flattened key was cut from, when that attribute is one Phoenix parses (its name
    ends as one of :data:`JSON_TEXT_ATTRIBUTES`, as Phoenix matches them)."""
    if not key.endswith(JSON_TEXT_ATTRIBUTES) and not any(f"{name}." in key for name in JSON_TEXT_ATTRIBUTES):
        return None
    prefix = ""
    for part in key.split("."):
        prefix = f"{prefix}.{part}" if prefix else part
        if prefix.endswith(JSON_TEXT_ATTRIBUTES):
            return prefix
    return None


def _listed(node: object) -> object:
    """Phoenix flattens a list of objects to keys ``0``, ``1``, ...: those are a list again."""
    if not isinstance(node, dict):
        return node
    items = {key: _listed(value) for key, value in node.items()}
    if items and all(key.isdecimal() for key in items) and sorted(map(int, items)) == list(range(len(items))):
        return [items[str(index)] for index in range(len(items))]
    return items


def span_of_phoenix(node: object, say: Say) -> Span | None:
    """One span of Phoenix's span API as a :class:`~..spans.Span`; ``None`` (said) if unplaceable."""
    if not isinstance(node, dict):
        say(f"Phoenix answered a span that is not an object ({clip(str(node), 60)}); skipped")
        return None
    name = node.get("name")
    context = node.get("context")
    try:
        if not isinstance(name, str) or not isinstance(context, dict):
            raise Malformed("it has no name or no context")
        trace_id = hex_id(context.get("trace_id"), TRACE_ID_HEX_CHARS, "trace_id")
        span_id = hex_id(context.get("span_id"), SPAN_ID_HEX_CHARS, "span_id")
        parent = node.get("parent_id")
        parent_id = hex_id(parent, SPAN_ID_HEX_CHARS, "parent_id") if parent else None
    except Malformed as error:
        say(f"Phoenix span {clip(str(name), 60)!r} skipped: {error}")
        return None
    raw = node.get("attributes")
    attributes = repacked(raw) if isinstance(raw, dict) else {}
    kind = node.get("span_kind")
    if isinstance(kind, str) and kind and kind != _UNKNOWN_KIND:
        attributes.setdefault(names.OPENINFERENCE_SPAN_KIND, kind)
    events = tuple(_event(event) for event in (node.get("events") or []) if isinstance(event, dict))
    status = node.get("status_code")
    message = node.get("status_message")
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent_id,
        name=name,
        start_time_unix_nano=nanos_of(node.get("start_time")),
        end_time_unix_nano=nanos_of(node.get("end_time")),
        attributes=attributes,
        events=events,
        status=_STATUS.get(status, "unset") if isinstance(status, str) else "unset",
        status_message=message if isinstance(message, str) else "",
        origin="phoenix",
    )


def _event(event: dict[str, Any]) -> SpanEvent:
    name = event.get("name")
    attributes = event.get("attributes")
    return SpanEvent(
        name if isinstance(name, str) else "",
        nanos_of(event.get("timestamp")),
        attributes if isinstance(attributes, dict) else {},
    )
