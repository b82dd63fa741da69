"""The recording's account of itself: a record of the spans it could not keep."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...limits import MAX_DROPPED_TRACES_NAMED
from . import names
from .common import Attributes


def dropped_attributes(count: int, traces: Sequence[str]) -> Attributes:
    """A drop record: how many spans were dropped, and the first traces they belonged to."""
    return {
        names.RECORDING_DROPPED_SPANS: count,
        names.RECORDING_DROPPED_TRACES: list(traces[:MAX_DROPPED_TRACES_NAMED]),
    }


def decode_dropped(attributes: Mapping[str, object]) -> tuple[int, list[str]] | None:
    """The partner of :func:`dropped_attributes`: ``(count, traces)``, or ``None`` for another record."""
    count = attributes.get(names.RECORDING_DROPPED_SPANS)
    if type(count) is not int:
        return None
    traces = attributes.get(names.RECORDING_DROPPED_TRACES)
    return count, [str(t) for t in traces] if isinstance(traces, list) else []
