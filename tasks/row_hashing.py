"""Row hashing: a table row as canonical JSON (RFC 8785), its SHA-256, and its key as text.

Plain functions (no Prefect import); ``flows.notarize_table`` wraps them in a task. The same
row gives the same bytes, so the same hash, whichever database it was read from, as long as
the column has the same SQL type on both. Each Python value the drivers return is mapped to
one JSON value (``json_value``)::

    None                     -> null
    bool                     -> true / false
    int                      -> number if |n| <= 2**53 - 1 (exact in IEEE 754), else decimal string
    float                    -> number (RFC 8785 shortest form; -0.0 -> 0);
                                NaN / +-inf -> "NaN", "Infinity", "-Infinity"
    Decimal                  -> string, plain notation, trailing zeros removed ("1.50" -> "1.5",
                                "1E+2" -> "100", "-0" -> "0"; SQLite keeps no scale)
    datetime                 -> "YYYY-MM-DDTHH:MM:SS.ffffffZ" in UTC (naive values are taken as UTC)
    date                     -> "YYYY-MM-DD"
    time                     -> "HH:MM:SS.ffffff", with "Z" when it had an offset (moved to UTC)
    timedelta                -> ISO 8601 duration "[-]PnDTn.ffffffS"
    bytes / bytearray / memoryview -> base64 (RFC 4648, with padding)
    UUID, IPv4/IPv6 address or network -> str (lowercase canonical form)
    Enum                     -> its ``value``, converted
    Mapping (JSON columns)   -> object with string keys, values converted
    list / tuple             -> array, values converted

Anything else raises ``UnsupportedValue``. A row is the JSON object ``{column name: value}``;
RFC 8785 sorts the members, so column order does not matter but column names do.

What reaches the ledger is the row's *key* (``key_text``: ``id=42`` for one key column, the
canonical JSON object of the key columns otherwise), the SHA-256 of the canonical row and its
length in bytes, never the other values.
"""

from __future__ import annotations

import base64
import enum
import hashlib
import ipaddress
import math
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

import rfc8785

from connectors.audit import DocumentIn
from tasks.errors import TaskError

__all__ = [
    "MAX_SAFE_INTEGER",
    "UnsupportedValue",
    "canonical_row",
    "hash_row",
    "json_value",
    "key_text",
]

MAX_SAFE_INTEGER = 2**53 - 1

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]

_ADDRESS_TYPES = (
    ipaddress.IPv4Address,
    ipaddress.IPv6Address,
    ipaddress.IPv4Network,
    ipaddress.IPv6Network,
    ipaddress.IPv4Interface,
    ipaddress.IPv6Interface,
)


class UnsupportedValue(TaskError, TypeError):
    """A column value of a Python type with no defined JSON conversion.

    Attributes:
        column: the column name (``None`` when converting a bare value).
        type_name: the value's Python type name.
    """

    def __init__(self, type_name: str, *, column: str | None = None) -> None:
        where = f" in column {column!r}" if column is not None else ""
        super().__init__(f"no canonical JSON form for a {type_name} value{where}")
        self.column = column
        self.type_name = type_name


def json_value(value: Any) -> JsonValue:
    """The JSON value of one column value (conversion table in the module docstring).

    Raises:
        UnsupportedValue: a type with no defined conversion.
    """
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if abs(value) <= MAX_SAFE_INTEGER else str(value)
    if isinstance(value, float):
        return _float_value(value)
    if isinstance(value, Decimal):
        return _decimal_text(value)
    if isinstance(value, datetime | date | time | timedelta):
        return _temporal_text(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, (UUID, *_ADDRESS_TYPES)):
        return str(value)
    if isinstance(value, enum.Enum):
        return json_value(value.value)
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    raise UnsupportedValue(type(value).__name__)


def canonical_row(row: Mapping[str, Any]) -> bytes:
    """RFC 8785 canonical JSON (UTF-8 bytes) of the object ``{column: json_value(value)}``.

    Raises:
        UnsupportedValue: a value with no defined conversion (``column`` says which).
    """
    converted: dict[str, JsonValue] = {}
    for column, value in row.items():
        try:
            converted[str(column)] = json_value(value)
        except UnsupportedValue as exc:
            raise UnsupportedValue(exc.type_name, column=str(column)) from exc
    return rfc8785.dumps(converted)


def key_text(key: Mapping[str, Any]) -> str:
    """The row key recorded as the document's ``path``.

    One key column: ``<name>=<canonical JSON of the value>`` (``id=42``, ``code="A-1"``).
    Several: the canonical JSON object of the key columns (``{"order":7,"line":2}`` sorted
    by name). Values are converted by ``json_value``.

    Raises:
        ValueError: ``key`` is empty.
        UnsupportedValue: a key value with no defined conversion.
    """
    if not key:
        raise ValueError("a row key needs at least one column")
    if len(key) == 1:
        ((name, value),) = key.items()
        return f"{name}={rfc8785.dumps(json_value(value)).decode('utf-8')}"
    return canonical_row(key).decode("utf-8")


def hash_row(key: Mapping[str, Any], row: Mapping[str, Any]) -> DocumentIn:
    """The document of one row: path = ``key_text(key)``, SHA-256 (hex) and length in bytes
    of ``canonical_row(row)``.

    Raises:
        UnsupportedValue: a value with no defined conversion.
    """
    data = canonical_row(row)
    return DocumentIn(key_text(key), hashlib.sha256(data).hexdigest(), len(data))


# -- conversions ---------------------------------------------------------------------------


def _float_value(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _decimal_text(value: Decimal) -> str:
    if value.is_nan():
        return "NaN"
    if value.is_infinite():
        return "Infinity" if value > 0 else "-Infinity"
    if value.is_zero():
        return "0"
    return format(value.normalize(), "f")


def _temporal_text(value: datetime | date | time | timedelta) -> str:
    if isinstance(value, datetime):
        utc = value.astimezone(UTC) if value.tzinfo is not None else value
        return utc.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, time):
        return _time_text(value)
    return _duration_text(value)


def _time_text(value: time) -> str:
    offset = value.utcoffset()
    if offset is None:
        return value.isoformat(timespec="microseconds")
    moved = datetime.combine(date(2000, 1, 1), value.replace(tzinfo=None)) - offset
    return moved.time().isoformat(timespec="microseconds") + "Z"


def _duration_text(value: timedelta) -> str:
    sign = "-" if value < timedelta(0) else ""
    magnitude = abs(value)
    seconds = magnitude.seconds
    return f"{sign}P{magnitude.days}DT{seconds}.{magnitude.microseconds:06d}S"
