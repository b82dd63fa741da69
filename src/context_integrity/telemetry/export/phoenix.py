"""Findings as Arize Phoenix span annotations (opt-in): where Phoenix users look.

A :class:`PhoenixAnnotationExporter` is a span exporter that reads the ``context_integrity.finding``
events of each finished span and posts them, one annotation per finding, to Phoenix's REST API
(``POST /v1/span_annotations``). It runs inside a ``BatchSpanProcessor``
(:class:`PhoenixAnnotationProcessor`), so it is batched and off the tool path: the tool's thread
only enqueues an ended span that carries findings (the SDK drops, never blocks, when its queue is
full), and the POST happens on the processor's worker thread. Nothing here raises: a Phoenix that
is down, slow or refuses the batch costs a log line, once; the findings handed over and those
posted are counted, so a flush or shutdown that runs out of time says how many never arrived.

Phoenix upserts an annotation by (name, span, identifier); each finding gets its own identifier
(from its identity and its place among the span's findings), so two findings of one kind on one
span stay two annotations, even where a redaction hook made their identities read alike. Posts are
asynchronous on Phoenix's side: an annotation whose span has not arrived yet is retried there.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from typing import Any, Final

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from ...text import clip
from ..schema import names

logger = logging.getLogger("context_integrity")

ANNOTATIONS_PATH: Final = "/v1/span_annotations"
ANNOTATOR_KIND: Final = names.ANNOTATOR_KIND_CODE
# Phoenix's own environment variable for its API key (sent as a bearer token), when it has auth on.
API_KEY_ENV: Final = "PHOENIX_API_KEY"
POST_TIMEOUT_S: Final = 5.0
MAX_EXPLANATION_CHARS: Final = 2000
# The annotations one POST carries: a burst of findings is split, never dropped.
MAX_ANNOTATIONS_PER_POST: Final = 100


def annotation_identifier(identity: str, ordinal: int = 0) -> str:
    """A finding's identifier in Phoenix: short, stable, distinct per finding on a span (``ordinal``
    is its place among the span's findings: a span's events never change once it ended)."""
    key = f"{ordinal} {identity}".encode("utf-8", "replace")
    return "ci-" + hashlib.sha256(key).hexdigest()[:24]


# The finding attributes an annotation keeps as its metadata.
METADATA_KEYS: Final = (
    names.FINDING_SEAM,
    names.FINDING_PREDICATE,
    names.FINDING_ADVISORY,
    names.FINDING_IDENTITY,
    names.GEN_AI_TOOL_NAME,
    names.GEN_AI_TOOL_CALL_ID,
    names.EVALUATOR_VERSION,
    names.EVALUATOR_RULE_VERSION,
)


def finding_annotation(span_id: str, attributes: Mapping[str, object], index: int = 0) -> dict[str, Any]:
    """One finding (its ``context_integrity.finding`` attributes) as a Phoenix span annotation on
    the span ``span_id`` (16 hex digits). ``index`` tells apart findings that carry no identity."""
    kind = str(attributes.get(names.FINDING_KIND, ""))
    identity = str(attributes.get(names.FINDING_IDENTITY, "")) or f"{kind} {index}"
    return {
        "span_id": span_id,
        "name": names.PHOENIX_ANNOTATION_NAME,
        "annotator_kind": ANNOTATOR_KIND,
        "result": {
            "label": kind,
            "score": names.EVALUATION_SCORE_FAIL,
            "explanation": clip(str(attributes.get(names.FINDING_MESSAGE, "")), MAX_EXPLANATION_CHARS),
        },
        "metadata": {key: attributes[key] for key in METADATA_KEYS if key in attributes},
        "identifier": annotation_identifier(identity, index),
    }


def finding_annotations(span: ReadableSpan) -> list[dict[str, Any]]:
    """One Phoenix span annotation per ``context_integrity.finding`` event on ``span``."""
    context = span.context
    if context is None:
        return []
    span_id = format(context.span_id, "016x")
    events = [dict(e.attributes or {}) for e in span.events if e.name == names.FINDING_EVENT]
    return [finding_annotation(span_id, attributes, index) for index, attributes in enumerate(events)]


class PhoenixAnnotationExporter(SpanExporter):
    """Posts each finding on an exported span to Phoenix as a span annotation. Never raises."""

    def __init__(
        self, base_url: str, *, headers: Mapping[str, str] | None = None, timeout_s: float = POST_TIMEOUT_S
    ) -> None:
        self.url = base_url.rstrip("/") + ANNOTATIONS_PATH
        self.headers = {"Content-Type": "application/json", **(headers or {})}
        api_key = os.environ.get(API_KEY_ENV, "").strip()
        if api_key and not any(key.lower() == "authorization" for key in self.headers):
            self.headers["Authorization"] = f"Bearer {api_key}"
        self.timeout_s = timeout_s
        self.posted = 0
        self._posted_lock = threading.Lock()
        self._complained = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            annotations = [a for span in spans for a in finding_annotations(span)]
        except Exception as ours:
            self._complain("preparing annotations", ours)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if self.post(annotations) else SpanExportResult.FAILURE

    def post(self, annotations: Sequence[dict[str, Any]]) -> bool:
        """Post annotations, :data:`MAX_ANNOTATIONS_PER_POST` at a time; whether every batch went in.
        Never raises."""
        ok = True
        for start in range(0, len(annotations), MAX_ANNOTATIONS_PER_POST):
            ok = self._post(list(annotations[start : start + MAX_ANNOTATIONS_PER_POST])) and ok
        return ok

    def _post(self, batch: list[dict[str, Any]]) -> bool:
        body = json.dumps({"data": batch}, default=str).encode()
        request = urllib.request.Request(self.url, data=body, method="POST", headers=self.headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                response.read()
        except urllib.error.HTTPError as error:
            detail = error.read()[:300].decode("utf-8", "replace")
            self._complain(f"POST {self.url} answered {error.code}: {detail}", error)
            return False
        except Exception as error:
            self._complain(f"POST {self.url}", error)
            return False
        with self._posted_lock:
            self.posted += len(batch)
        return True

    def _complain(self, what: str, error: BaseException) -> None:
        if not self._complained:
            self._complained = True
            logger.warning(
                "context_integrity: Phoenix annotations: %s failed: %r (the agent was not affected; "
                "repeats are logged at debug)",
                what,
                error,
            )
        else:
            logger.debug("context_integrity: Phoenix annotations: %s failed again: %r", what, error)

    def shutdown(self) -> None:
        return None

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True


def _findings_on(span: ReadableSpan) -> int:
    return sum(1 for event in span.events if event.name == names.FINDING_EVENT)


class PhoenixAnnotationProcessor(SpanProcessor):
    """A ``BatchSpanProcessor`` over a :class:`PhoenixAnnotationExporter`, handed only the spans that
    carry findings, counting the findings it was handed: :meth:`unposted` is how many have not
    reached Phoenix (still queued, dropped from a full queue, or refused)."""

    def __init__(self, base_url: str, *, headers: Mapping[str, str] | None = None) -> None:
        self.exporter = PhoenixAnnotationExporter(base_url, headers=headers)
        self.batch = BatchSpanProcessor(self.exporter)
        self.handed = 0
        self._lock = threading.Lock()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        count = _findings_on(span)
        if not count:
            return  # nothing to annotate: the span never enters the queue
        with self._lock:
            self.handed += count
        self.batch.on_end(span)

    def unposted(self) -> int:
        return max(self.handed - self.exporter.posted, 0)

    def shutdown(self) -> None:
        self.batch.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.batch.force_flush(timeout_millis)


def phoenix_annotation_processor(
    base_url: str, *, headers: Mapping[str, str] | None = None
) -> PhoenixAnnotationProcessor:
    """A span processor posting every finding to the Phoenix at ``base_url`` (e.g. ``http://localhost:6006``).

    ``setup(phoenix_annotations=base_url)`` adds it to the tracer provider; add it yourself to a
    provider you configure.
    """
    return PhoenixAnnotationProcessor(base_url, headers=headers)
