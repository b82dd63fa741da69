"""What every attribute shape shares: the value type OpenTelemetry accepts, clipping, small readers."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from ...limits import MAX_ATTRIBUTE_CHARS
from ...text import clip, render_value

# The attribute values OpenTelemetry accepts (the same union as
# ``opentelemetry.util.types.AttributeValue``, spelled here without the SDK).
AttributeValue: TypeAlias = (
    str | bool | int | float | Sequence[str] | Sequence[bool] | Sequence[int] | Sequence[float]
)
Attributes = dict[str, AttributeValue]


def scalar(value: object) -> AttributeValue:
    """A value OpenTelemetry accepts as an attribute, clipped; never raises."""
    if isinstance(value, str):
        return clip(value, MAX_ATTRIBUTE_CHARS)
    if isinstance(value, (bool, int, float)):
        return value
    return render_value(value, MAX_ATTRIBUTE_CHARS)


def is_int(value: object) -> bool:
    """An integer as OTLP carries one (a ``bool`` is not)."""
    return isinstance(value, int) and not isinstance(value, bool)


def optional_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def optional_int(value: object) -> int | None:
    return value if type(value) is int else None


def str_list(value: object) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def clipped(attributes: Mapping[str, Any]) -> Attributes:
    """The attributes with every string, and every string in a sequence, cut to the bound."""
    out: Attributes = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            out[key] = clip(value, MAX_ATTRIBUTE_CHARS)
        elif isinstance(value, (list, tuple)):
            out[key] = [clip(v, MAX_ATTRIBUTE_CHARS) if isinstance(v, str) else v for v in value]
        else:
            out[key] = value
    return out


@functools.cache
def library_version() -> str:
    """The installed package's version, read on first use: importlib.metadata costs more to import
    than the rest of ``import context_integrity`` put together."""
    try:
        from importlib.metadata import version

        return version("context-integrity")
    except Exception:  # running from a source tree
        return "0.0.0+source"
