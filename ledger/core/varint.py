"""varInt_F: unsigned big-endian base-128 integers (docs/formats.md §0.4)."""

from __future__ import annotations

from ledger.core.errors import DecodeError

MAX_VARINT_BYTES = 10
_MAX_VALUE = (1 << 64) - 1


def encode_varint(value: int) -> bytes:
    """Encode ``0 <= value < 2**64`` as 1 to 10 bytes, most significant 7-bit group first.

    Raises:
        DecodeError: value negative or too large.
    """
    if value < 0 or value > _MAX_VALUE:
        raise DecodeError(f"varint out of range: {value}")
    groups = [value & 0x7F]
    value >>= 7
    while value:
        groups.append(0x80 | (value & 0x7F))
        value >>= 7
    return bytes(reversed(groups))


def decode_varint(data: bytes, offset: int = 0) -> tuple[int, int]:
    """Decode one varint from ``data`` at ``offset``.

    Returns:
        ``(value, next_offset)``.

    Raises:
        DecodeError: the buffer ends inside the varint, it starts with an empty 7-bit group
            (``0x80``: not the shortest form, so one value would have two encodings), or it
            is longer than 10 bytes / 2**64-1.
    """
    if offset < len(data) and data[offset] == 0x80:
        raise DecodeError("varint not in its shortest form (leading 0x80)")
    value = 0
    for i in range(MAX_VARINT_BYTES):
        pos = offset + i
        if pos >= len(data):
            raise DecodeError("truncated varint")
        byte = data[pos]
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            if value > _MAX_VALUE:
                raise DecodeError("varint exceeds 64 bits")
            return value, pos + 1
    raise DecodeError("varint longer than 10 bytes")
