"""Proof-of-work hash functions over an 80-byte block header.

A chain's *block hash* (what the next header names, what a policy's genesis hash is) is
always SHA256d of the 80 bytes (``BlockHeader.hash``). The *proof-of-work hash* compared
with the target depends on the chain:

- ``sha256d``: Bitcoin (and the bundled development chain): the block hash itself.
- ``scrypt``: Litecoin: scrypt (RFC 7914) with N=1024, r=1, p=1 and a 32-byte output, the
  80 header bytes being both the password and the salt (Litecoin Core ``GetPoWHash``,
  ``scrypt_1024_1_1_256``). ``hashlib.scrypt`` computes it.

Both hashes are raw 32 bytes in internal order; the work holds when the hash, read as a
little-endian 256-bit integer, is at most the target. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from enum import StrEnum

from ledger.core.errors import DecodeError, LimitError
from ledger.core.hashing import sha256d
from ledger.core.pow.header import HEADER_BYTES

__all__ = ["PowFunction", "block_work", "meets_target", "pow_hash"]

#: Litecoin's scrypt parameters (N, r, p, output bytes).
SCRYPT_N, SCRYPT_R, SCRYPT_P, SCRYPT_BYTES = 1024, 1, 1, 32


class PowFunction(StrEnum):
    """The hash a chain's proof of work is computed with."""

    SHA256D = "sha256d"
    SCRYPT = "scrypt"


def pow_hash(header: bytes, function: PowFunction) -> bytes:
    """The proof-of-work hash of an 80-byte header (raw 32 bytes, internal order).

    Raises:
        DecodeError: ``header`` is not exactly 80 bytes.
    """
    if len(header) != HEADER_BYTES:
        raise DecodeError(f"a block header is {HEADER_BYTES} bytes, got {len(header)}")
    if function is PowFunction.SCRYPT:
        return hashlib.scrypt(
            header, salt=header, n=SCRYPT_N, r=SCRYPT_R, p=SCRYPT_P, dklen=SCRYPT_BYTES
        )
    return sha256d(header)


def meets_target(header: bytes, target: int, function: PowFunction) -> bool:
    """True when ``pow_hash(header)`` read little-endian is at most ``target``."""
    return int.from_bytes(pow_hash(header, function), "little") <= target


def block_work(target: int) -> int:
    """Expected hashes to meet ``target``: ``2**256 // (target + 1)`` (Bitcoin Core
    ``GetBlockProof``).

    Raises:
        LimitError: ``target`` is not in 1..2**256-1.
    """
    if not 0 < target < 1 << 256:
        raise LimitError("target must be in 1..2**256-1")
    return (1 << 256) // (target + 1)
