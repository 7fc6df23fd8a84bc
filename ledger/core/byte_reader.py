"""One sequential reader over a byte buffer, for every codec of the core.

``ByteReader`` walks a buffer and raises ``DecodeError`` for every short read, so a codec
built on it never leaks ``IndexError`` or ``struct.error`` on malformed input. Integers are
big-endian, as in Factom's structures; the proof-of-work chain's reader
(``ledger.core.pow.encoding.LEReader``) reads them little-endian, as Bitcoin does, and each
adds its own variable-length integer (``varint`` / ``compact_size``).
"""

from __future__ import annotations

from typing import ClassVar, Literal

from ledger.core.errors import DecodeError

__all__ = ["ByteReader"]

HASH_BYTES = 32


class ByteReader:
    """Sequential reader over ``data`` starting at ``offset``; DecodeError when short.

    Args:
        data: the buffer (bytes, bytearray or memoryview; copied once).
        what: the structure's name, for error messages.
        offset: where reading starts.

    Raises:
        DecodeError: ``data`` is not a bytes-like object.
    """

    __slots__ = ("_data", "_pos", "_what")

    #: Byte order of ``uint``.
    BYTE_ORDER: ClassVar[Literal["big", "little"]] = "big"

    def __init__(self, data: bytes, what: str, offset: int = 0) -> None:
        if not isinstance(data, bytes | bytearray | memoryview):
            raise DecodeError(f"{what} must be bytes, got {type(data).__name__}")
        self._data = bytes(data)
        self._pos = offset
        self._what = what

    @property
    def position(self) -> int:
        """Offset of the next unread byte."""
        return self._pos

    @property
    def remaining(self) -> int:
        """Number of unread bytes."""
        return len(self._data) - self._pos

    def take(self, size: int) -> bytes:
        """The next ``size`` bytes."""
        if size < 0 or size > self.remaining:
            raise DecodeError(
                f"{self._what}: needs {size} bytes at offset {self._pos}, {self.remaining} left"
            )
        chunk = self._data[self._pos : self._pos + size]
        self._pos += size
        return chunk

    def peek(self) -> int:
        """The next byte, without consuming it."""
        if self.remaining < 1:
            raise DecodeError(f"{self._what}: unexpected end at offset {self._pos}")
        return self._data[self._pos]

    def uint(self, size: int) -> int:
        """Unsigned integer of ``size`` bytes, in ``BYTE_ORDER``."""
        return int.from_bytes(self.take(size), self.BYTE_ORDER)

    def hash32(self) -> bytes:
        """A 32-byte hash."""
        return self.take(HASH_BYTES)

    def expect_end(self) -> None:
        """DecodeError unless every byte was consumed."""
        if self.remaining:
            raise DecodeError(f"{self._what}: {self.remaining} trailing bytes")
