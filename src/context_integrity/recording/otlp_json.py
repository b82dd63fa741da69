"""A tolerant reader of OTLP/JSON: the protocol's own field names and value shapes.

What the OpenTelemetry Collector's ``file`` exporter writes, and what our local
exporters append: one ``{"resourceSpans" | "resourceMetrics" | "resourceLogs": [...]}``
object per line. Every helper here either returns a plain Python value or raises
:class:`Malformed` naming what it expected, so the reader can report a broken
piece and keep going. Ids written as base64 (plain protobuf JSON, which some
producers emit instead of OTLP/JSON's hex) are accepted.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Final

from ..limits import MAX_ATTRIBUTE_VALUE_DEPTH
from ..text import clip

RESOURCE_SPANS: Final = "resourceSpans"
RESOURCE_METRICS: Final = "resourceMetrics"
RESOURCE_LOGS: Final = "resourceLogs"
RESOURCE_KEYS: Final[tuple[str, ...]] = (RESOURCE_SPANS, RESOURCE_METRICS, RESOURCE_LOGS)

TRACE_ID_HEX_CHARS: Final = 32
SPAN_ID_HEX_CHARS: Final = 16

# Span status codes in OTLP (STATUS_CODE_UNSET, _OK, _ERROR).
STATUS_NAMES: Final[Mapping[int, str]] = {0: "unset", 1: "ok", 2: "error"}
# Metric aggregation temporality in OTLP.
TEMPORALITY_DELTA: Final = 1

# OTLP writes a time as fixed64 nanoseconds since the epoch: the range a time read back can have
# (up to the year 2554, which every renderer can print). A ledger's last_fired_at is milliseconds.
MAX_UNIX_NANOS: Final = 2**64 - 1
MAX_UNIX_MILLIS: Final = MAX_UNIX_NANOS // 1_000_000
# The longest decimal a time can be written with; a longer one is out of range without being parsed
# (Python refuses to parse an integer of more than 4300 digits at all).
_MAX_TIME_DIGITS: Final = len(str(MAX_UNIX_NANOS))


class Malformed(ValueError):
    """A piece of a line that is not the OTLP/JSON it claims to be."""


def json_type(value: object) -> str:
    """What a JSON value is, for a message ("a list", "null")."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object"


def as_object(value: object, what: str) -> dict[str, object]:
    if not isinstance(value, dict):
        raise Malformed(f"{what} is {json_type(value)}, not an object")
    return value


def as_list(value: object, what: str) -> list[object]:
    """A JSON list; an absent (``null``) list is empty, as protobuf JSON omits empty repeated fields."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise Malformed(f"{what} is {json_type(value)}, not a list")
    return value


def int64(value: object, what: str) -> int | None:
    """An OTLP 64-bit integer: a decimal string or a JSON number."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise Malformed(f"{what} is a boolean, not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            raise Malformed(f"{what} {clip(value, 40)!r} is not an integer") from None
    if isinstance(value, float) and value.is_integer():
        return int(value)
    raise Malformed(f"{what} is {json_type(value)}, not an integer")


def unix_time(
    value: object, what: str, problem: Callable[[str], None], most: int = MAX_UNIX_NANOS
) -> int | None:
    """A time since the epoch (nanoseconds; ``most`` says otherwise), clamped into ``[0, most]``.

    Never raises: absent is ``None``; a time out of range is clamped and said through ``problem``;
    one that is not an integer is ``None``, and said.
    """
    if type(value) is str and value.isdecimal() and len(value) < _MAX_TIME_DIGITS:
        return int(value)  # the shape every writer uses
    if value is None:
        return None
    number: int | None = None
    if type(value) is str and len(value.lstrip("+-")) > _MAX_TIME_DIGITS and value.lstrip("+-").isdecimal():
        number = -1 if value.startswith("-") else most + 1  # past any time, not worth parsing
    else:
        try:
            number = int64(value, what)
        except Malformed as error:
            problem(f"{error}; it was read as no time")
            return None
        except (OverflowError, ValueError):  # a float too large to be an integer, digits past the limit
            problem(f"{what} is not a time that can be read; it was read as no time")
            return None
    if number is None:
        return None
    if 0 <= number <= most:
        return number
    clamped = 0 if number < 0 else most
    problem(f"{what} {clip(str(value), 40)} is outside the range a time can have; it was read as {clamped}")
    return clamped


def double(value: object, what: str) -> float:
    """An OTLP double: a JSON number, or the strings protobuf JSON uses for the non-finite ones."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value in ("NaN", "Infinity", "-Infinity"):
        return float(value.replace("Infinity", "inf"))
    raise Malformed(f"{what} is {json_type(value)}, not a number")


def any_value(node: object, depth: int = 0) -> object:
    """An OTLP ``AnyValue`` as a Python value (``None`` for an empty value); arrays and key-value
    lists are read :data:`~context_integrity.limits.MAX_ATTRIBUTE_VALUE_DEPTH` deep at most."""
    if depth > MAX_ATTRIBUTE_VALUE_DEPTH:
        raise Malformed(f"an attribute value is nested more than {MAX_ATTRIBUTE_VALUE_DEPTH} deep")
    value = as_object(node, "an attribute value")
    if "stringValue" in value:
        text = value["stringValue"]
        if not isinstance(text, str):
            raise Malformed("a stringValue is not a string")
        return text
    if "boolValue" in value:
        flag = value["boolValue"]
        if not isinstance(flag, bool):
            raise Malformed("a boolValue is not a boolean")
        return flag
    if "intValue" in value:
        return int64(value["intValue"], "an intValue")
    if "doubleValue" in value:
        return double(value["doubleValue"], "a doubleValue")
    if "arrayValue" in value:
        array = as_object(value["arrayValue"], "an arrayValue")
        return [any_value(item, depth + 1) for item in as_list(array.get("values"), "arrayValue.values")]
    if "kvlistValue" in value:
        kvlist = as_object(value["kvlistValue"], "a kvlistValue")
        return _careful_attributes(kvlist.get("values"), None, None, depth + 1)
    if "bytesValue" in value:
        # Left base64-encoded, as OTLP/JSON writes bytes.
        return value["bytesValue"]
    return None


# Counts are small: their decimal strings map to their values without int()'s general parse.
_SMALL_INTS: Final[dict[object, int]] = {str(number): number for number in range(1024)}


def attributes(
    node: object, skipped: list[str] | None = None, keep: frozenset[str] | None = None
) -> dict[str, object]:
    """An OTLP attribute list as a dict. With ``skipped``, an unreadable
    attribute is left out and its reason appended there, instead of failing
    the whole list (one odd attribute must not cost a span its findings).
    With ``keep``, only those keys are read; the others are not even looked at.

    Well-formed lists, and string values above all, take a fast path; the
    first surprise sends the whole list through the careful one.
    """
    if node is None:
        return {}
    out: dict[str, object] = {}
    if type(node) is list:
        try:
            if keep is None:
                for entry in node:
                    key = entry["key"]
                    if type(key) is not str:
                        raise TypeError
                    value = entry["value"]
                    if "stringValue" in value:
                        text = value["stringValue"]
                        if type(text) is not str:
                            raise TypeError
                        out[key] = text
                    elif "intValue" in value:
                        number = value["intValue"]
                        small = _SMALL_INTS.get(number)
                        out[key] = int(number) if small is None else small
                    else:
                        out[key] = any_value(value)
                return out
            wanted = len(keep)
            for entry in node:
                key = entry["key"]
                if key not in keep:
                    continue
                if type(key) is not str:
                    raise TypeError
                value = entry["value"]
                if "stringValue" in value:
                    text = value["stringValue"]
                    if type(text) is not str:
                        raise TypeError
                    out[key] = text
                elif "intValue" in value:
                    number = value["intValue"]
                    small = _SMALL_INTS.get(number)
                    out[key] = int(number) if small is None else small
                else:
                    out[key] = any_value(value)
                if len(out) == wanted:
                    break  # all that was asked for is read; the rest is not looked at
            return out
        except (KeyError, TypeError, AttributeError, ValueError, OverflowError, Malformed):
            out = {}
    return _careful_attributes(node, skipped, keep)


def _careful_attributes(
    node: object, skipped: list[str] | None, keep: frozenset[str] | None, depth: int = 0
) -> dict[str, object]:
    out: dict[str, object] = {}
    for entry in as_list(node, "attributes"):
        key = entry.get("key") if isinstance(entry, dict) else None
        if keep is not None and isinstance(key, str) and key not in keep:
            continue
        try:
            if not isinstance(entry, dict) or not isinstance(key, str):
                raise Malformed("an attribute is not a {key, value} object with a string key")
            out[key] = any_value(entry.get("value", {}), depth)
        except Malformed as error:
            if skipped is None:
                raise
            skipped.append(f"{clip(key, 60)}: {error}" if isinstance(key, str) else str(error))
    return out


def hex_id(value: object, size: int, what: str) -> str:
    """A trace or span id as lowercase hex; tolerates the base64 of plain
    protobuf JSON, which some producers write instead of OTLP/JSON's hex."""
    if type(value) is str and len(value) == size and value.isalnum():
        # The shape every OTLP/JSON writer uses; which digits it holds is not the reader's to judge.
        return value.lower()
    if not isinstance(value, str):
        raise Malformed(f"{what} is {json_type(value)}, not a string")
    if len(value) == size:
        try:
            bytes.fromhex(value)
            return value.lower()
        except ValueError:
            pass
    try:
        decoded = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        decoded = b""
    if len(decoded) * 2 == size:
        return decoded.hex()
    raise Malformed(f"{what} {clip(value, 40)!r} is not a {size}-hex-digit id")
