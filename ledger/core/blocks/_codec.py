"""Private byte-level helpers shared by the block and transaction codecs.

``Reader`` is the core's ``ByteReader`` (big-endian, ``DecodeError`` on every short read)
with Factom's varInt_F. The ``u*``
encoders and ``check_*`` validators raise ``DecodeError`` (wrong byte lengths) or
``LimitError`` (integers out of range). Hex is decoded by ``ledger.core.hexbytes``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.core.byte_reader import HASH_BYTES, ByteReader
from ledger.core.errors import DecodeError, LimitError
from ledger.core.varint import decode_varint, encode_varint


class Reader(ByteReader):
    """Sequential big-endian reader with Factom's varInt_F (``ledger.core.byte_reader``)."""

    __slots__ = ()

    def varint(self) -> int:
        """One varInt_F (docs/formats.md §0.4)."""
        value, self._pos = decode_varint(self._data, self._pos)
        return value


def uint_bytes(value: int, size: int, what: str) -> bytes:
    """``value`` as ``size`` big-endian bytes; LimitError when it does not fit."""
    check_uint(value, size * 8, what)
    return value.to_bytes(size, "big")


def check_uint(value: object, bits: int, what: str) -> int:
    """``value`` if it is an int in ``[0, 2**bits)``; LimitError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise LimitError(f"{what} must be an integer in [0, 2**{bits}), got {value!r}")
    return value


def check_bytes(value: object, size: int, what: str) -> bytes:
    """``value`` as ``bytes`` if it has exactly ``size`` bytes; DecodeError otherwise."""
    if not isinstance(value, bytes | bytearray | memoryview) or len(value) != size:
        raise DecodeError(f"{what} must be exactly {size} bytes")
    return bytes(value)


def check_hash(value: object, what: str) -> bytes:
    """``value`` as 32 raw bytes; DecodeError otherwise."""
    return check_bytes(value, HASH_BYTES, what)


def varint_bytes(value: int) -> bytes:
    """varInt_F encoding of ``value`` (LimitError when negative or above 2**64-1)."""
    check_uint(value, 64, "varint")
    return encode_varint(value)


def json_field(obj: Mapping[str, Any], key: str, what: str) -> Any:
    """``obj[key]``; DecodeError when ``obj`` is not a mapping or the key is missing."""
    if type(obj) is dict and key in obj:  # parsed JSON: skip the slower ABC check
        return obj[key]
    if not isinstance(obj, Mapping):
        raise DecodeError(f"{what} must be a JSON object")
    if key not in obj:
        raise DecodeError(f"{what} lacks '{key}'")
    return obj[key]


def json_uint(value: object, what: str, *, bits: int = 64) -> int:
    """A JSON integer in ``[0, 2**bits)``; DecodeError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << bits):
        raise DecodeError(f"{what} must be a non-negative integer below 2**{bits}")
    return value
