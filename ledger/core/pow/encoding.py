"""Byte helpers of the proof-of-work chain: little-endian reader, CompactSize, display hex.

- ``LEReader`` is the core's ``ByteReader`` reading little-endian, with CompactSize.
- CompactSize is Bitcoin's variable-length integer (``< 0xfd``: 1 byte; ``0xfd`` + u16;
  ``0xfe`` + u32; ``0xff`` + u64, little-endian). Decoding is strict: a value must use its
  shortest form, so every byte string has one meaning.
- Hashes are raw 32 bytes in internal order; ``to_display_hex``/``from_display_hex`` convert
  to and from the byte-reversed hex that Bitcoin software shows (block hashes, txids),
  with the strict rules of ``ledger.core.hexbytes``.
"""

from __future__ import annotations

from ledger.core.byte_reader import ByteReader
from ledger.core.errors import DecodeError, LimitError
from ledger.core.hexbytes import Hash32, from_hex, to_hex

__all__ = [
    "LEReader",
    "decode_compact_size",
    "encode_compact_size",
    "from_display_hex",
    "to_display_hex",
]


class LEReader(ByteReader):
    """Sequential little-endian reader with CompactSize (``ledger.core.byte_reader``)."""

    __slots__ = ()

    BYTE_ORDER = "little"

    def compact_size(self) -> int:
        """One CompactSize integer (shortest form required)."""
        value, self._pos = decode_compact_size(self._data, self._pos, what=self._what)
        return value


def encode_compact_size(value: int) -> bytes:
    """CompactSize encoding of ``value`` (0 <= value < 2**64); LimitError otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 64:
        raise LimitError(f"CompactSize value out of range: {value!r}")
    if value < 0xFD:
        return bytes([value])
    if value <= 0xFFFF:
        return b"\xfd" + value.to_bytes(2, "little")
    if value <= 0xFFFFFFFF:
        return b"\xfe" + value.to_bytes(4, "little")
    return b"\xff" + value.to_bytes(8, "little")


_WIDTHS = {0xFD: (2, 0xFD), 0xFE: (4, 0x10000), 0xFF: (8, 0x100000000)}


def decode_compact_size(
    data: bytes, offset: int = 0, *, what: str = "CompactSize"
) -> tuple[int, int]:
    """``(value, next_offset)`` of the CompactSize at ``offset``.

    Raises:
        DecodeError: the data ends early, or the value does not use its shortest form.
    """
    if offset >= len(data):
        raise DecodeError(f"{what}: CompactSize missing at offset {offset}")
    first = data[offset]
    if first < 0xFD:
        return first, offset + 1
    width, minimum = _WIDTHS[first]
    end = offset + 1 + width
    if end > len(data):
        raise DecodeError(f"{what}: CompactSize at offset {offset} is cut short")
    value = int.from_bytes(data[offset + 1 : end], "little")
    if value < minimum:
        raise DecodeError(f"{what}: CompactSize at offset {offset} is not in its shortest form")
    return value, end


def to_display_hex(hash32: bytes) -> str:
    """Byte-reversed lowercase hex of a 32-byte hash (how Bitcoin shows hashes)."""
    if not isinstance(hash32, bytes | bytearray) or len(hash32) != 32:
        raise DecodeError("a display hash must be exactly 32 bytes")
    return to_hex(bytes(hash32)[::-1])


def from_display_hex(text: object, what: str = "hash") -> Hash32:
    """Internal-order 32 bytes from display hex (64 hex characters, an optional ``0x``).

    Raises:
        DecodeError: not a string of 64 hex characters (``ledger.core.hexbytes.from_hex``).
    """
    return Hash32(from_hex(text, what, size=32, allow_0x=True)[::-1])
