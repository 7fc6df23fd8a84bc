"""Where reading a table source stopped (``Position``), and its JSON form.

A position is the watermark and key values of the last row read, kept exactly as the
database driver returned them for the raw columns, so that they bind back into the next
keyset query and compare as the database orders the rows (``connectors.table_source``).
``WatermarkStore`` keeps positions in the audit store as JSON: each value is a
``[tag, text]`` pair, so a ``Decimal``, a ``datetime`` or ``bytes`` comes back as the same
type (plain JSON would turn them into floats or strings and shift the keyset).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any
from uuid import UUID

__all__ = ["Position"]


@dataclass(frozen=True)
class Position:
    """Where reading stopped: the watermark and key values of the last row read.

    Values are as the driver returned them for the raw column (on SQLite a timestamp is
    the stored text), so they compare exactly as the database orders the rows.
    """

    watermark: Any
    key: tuple[Any, ...]

    def to_json(self) -> dict[str, Any]:
        """JSON object ``{"watermark": [tag, text], "key": [[tag, text], ...]}``."""
        return {"watermark": _encode(self.watermark), "key": [_encode(v) for v in self.key]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Position:
        """Inverse of ``to_json``.

        Raises:
            ValueError: an unknown tag or a malformed object.
        """
        try:
            return cls(_decode(data["watermark"]), tuple(_decode(v) for v in data["key"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed watermark position {data!r}") from exc


_ENCODERS: tuple[tuple[type, str, Any], ...] = (
    (bool, "bool", lambda v: "true" if v else "false"),
    (int, "int", str),
    (float, "float", repr),
    (Decimal, "decimal", str),
    (str, "str", str),
    (datetime, "datetime", lambda v: v.isoformat()),
    (date, "date", lambda v: v.isoformat()),
    (time, "time", lambda v: v.isoformat()),
    (UUID, "uuid", str),
    (bytes, "bytes", lambda v: base64.b64encode(v).decode("ascii")),
)

_DECODERS: dict[str, Any] = {
    "null": lambda _s: None,
    "bool": lambda s: s == "true",
    "int": int,
    "float": float,
    "decimal": Decimal,
    "str": str,
    "datetime": datetime.fromisoformat,
    "date": date.fromisoformat,
    "time": time.fromisoformat,
    "uuid": UUID,
    "bytes": lambda s: base64.b64decode(s, validate=True),
}


def _encode(value: Any) -> list[Any]:
    if value is None:
        return ["null", None]
    if isinstance(value, bytearray | memoryview):
        value = bytes(value)
    for kind, tag, encode in _ENCODERS:
        if isinstance(value, kind):
            return [tag, encode(value)]
    raise TypeError(f"cannot keep a {type(value).__name__} value as a watermark or key")


def _decode(item: Sequence[Any]) -> Any:
    tag, payload = item
    if tag not in _DECODERS:
        raise ValueError(f"unknown watermark value tag {tag!r}")
    return _DECODERS[tag](payload)
