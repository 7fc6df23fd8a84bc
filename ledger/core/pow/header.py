"""Block headers of the proof-of-work chain: 80 bytes, double SHA-256, compact targets.

Layout (Bitcoin's, integers little-endian)::

    offset size field
    0      4    version
    4      32   previous block hash (internal order; zero for the genesis block)
    36     32   Merkle root over the block's txids (internal order, see ``pow.merkle``)
    68     4    timestamp, Unix seconds
    72     4    bits: the target in compact form
    76     4    nonce

Block hash = SHA256d(header). The proof of work holds when the hash, read as a
little-endian 256-bit integer, is at most the target that ``bits`` encodes.

Compact targets (Bitcoin ``SetCompact``/``GetCompact``): the top byte is a base-256
exponent ``e``, the low 23 bits a mantissa ``m``; target = ``m * 256**(e - 3)``. Bit 23
(the sign bit) must be clear. ``difficulty_target(k)`` is the target whose hashes start with
about ``k`` zero bits, rounded to what ``bits`` can express; it is what the bundled chain
mines against and what the verifier's policy demands at least.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ledger.core.errors import DecodeError, LimitError
from ledger.core.hashing import sha256d
from ledger.core.pow.encoding import LEReader

__all__ = [
    "HEADER_BYTES",
    "BlockHeader",
    "bits_to_target",
    "difficulty_target",
    "target_to_bits",
]

HEADER_BYTES = 80
MAX_TARGET = (1 << 256) - 1
_U32 = 1 << 32


def bits_to_target(bits: int) -> int:
    """The target encoded by compact ``bits``.

    Raises:
        LimitError: ``bits`` is not a uint32, has the sign bit set, encodes zero, or
            overflows 256 bits.
    """
    if isinstance(bits, bool) or not isinstance(bits, int) or not 0 <= bits < _U32:
        raise LimitError(f"bits must be a uint32, got {bits!r}")
    exponent, mantissa = bits >> 24, bits & 0x007FFFFF
    if bits & 0x00800000:
        raise LimitError(f"bits {bits:#010x} has the sign bit set")
    target = mantissa >> 8 * (3 - exponent) if exponent <= 3 else mantissa << 8 * (exponent - 3)
    if target == 0 or target > MAX_TARGET:
        raise LimitError(f"bits {bits:#010x} encode no usable target")
    return target


def target_to_bits(target: int) -> int:
    """Compact form of ``target`` (rounded down to what 23 mantissa bits can hold)."""
    if not 0 < target <= MAX_TARGET:
        raise LimitError("target must be in 1..2**256-1")
    size = (target.bit_length() + 7) // 8
    compact = target << 8 * (3 - size) if size <= 3 else target >> 8 * (size - 3)
    if compact & 0x00800000:
        compact >>= 8
        size += 1
    return compact | (size << 24)


def difficulty_target(difficulty_bits: int) -> int:
    """Target of about ``difficulty_bits`` leading zero bits (1..255), as ``bits`` hold it."""
    if not 1 <= difficulty_bits <= 255:
        raise LimitError("difficulty_bits must be in 1..255")
    return bits_to_target(target_to_bits((1 << (256 - difficulty_bits)) - 1))


@dataclass(frozen=True)
class BlockHeader:
    """One 80-byte header. Hashes are raw 32 bytes in internal order.

    Attributes:
        version, timestamp (Unix seconds), bits, nonce: uint32 each.
        prev_hash: hash of the previous header (zero for the genesis block).
        merkle_root: Merkle root over the block's txids.
    """

    version: int
    prev_hash: bytes
    merkle_root: bytes
    timestamp: int
    bits: int
    nonce: int

    def __post_init__(self) -> None:
        for name in ("version", "timestamp", "bits", "nonce"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < _U32:
                raise LimitError(f"header {name} must be a uint32, got {value!r}")
        for name in ("prev_hash", "merkle_root"):
            value = getattr(self, name)
            if not isinstance(value, bytes | bytearray) or len(value) != 32:
                raise DecodeError(f"header {name} must be exactly 32 bytes")
            object.__setattr__(self, name, bytes(value))

    def marshal(self) -> bytes:
        """The 80 header bytes."""
        return (
            struct.pack("<I", self.version)
            + self.prev_hash
            + self.merkle_root
            + struct.pack("<III", self.timestamp, self.bits, self.nonce)
        )

    @classmethod
    def unmarshal(cls, data: bytes) -> BlockHeader:
        """Parse exactly 80 bytes. DecodeError for any other length."""
        if not isinstance(data, bytes | bytearray) or len(data) != HEADER_BYTES:
            size = len(data) if isinstance(data, bytes | bytearray) else "no"
            raise DecodeError(f"a block header is {HEADER_BYTES} bytes, got {size}")
        reader = LEReader(data, "block header")
        version, prev, root = reader.uint(4), reader.take(32), reader.take(32)
        return cls(version, prev, root, reader.uint(4), reader.uint(4), reader.uint(4))

    def hash(self) -> bytes:
        """Block hash: SHA256d of the 80 bytes (internal order)."""
        return sha256d(self.marshal())

    def target(self) -> int:
        """The target ``bits`` encode (LimitError when ``bits`` are invalid)."""
        return bits_to_target(self.bits)

    def meets_target(self) -> bool:
        """True when the block hash, as a little-endian integer, is at most the target."""
        return int.from_bytes(self.hash(), "little") <= self.target()
