"""Hash primitives of the protocol (docs/formats.md §0.3). All take and return raw bytes."""

from __future__ import annotations

import hashlib

HASH_BYTES = 32
ZERO_HASH = bytes(32)


def sha256(data: bytes) -> bytes:
    """Single SHA-256 (32 bytes): Merkle nodes, block hashes, txids, chain IDs."""
    return hashlib.sha256(data).digest()


def sha256d(data: bytes) -> bytes:
    """SHA-256 applied twice (32 bytes): RCD hashes, chain ID hash in commits, weld, checksums."""
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


def sha512_half(data: bytes) -> bytes:
    """First 32 bytes of SHA-512: the admin block BackReferenceHash only (section 5.5)."""
    return hashlib.sha512(data).digest()[:32]


def entry_hash(entry_bytes: bytes) -> bytes:
    """Entry hash, SHA256(SHA512(entry) || entry), 32 bytes (section 1.2)."""
    return hashlib.sha256(hashlib.sha512(entry_bytes).digest() + entry_bytes).digest()
