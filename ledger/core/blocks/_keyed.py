"""The hashes of the blocks keyed by KeyMR: directory and entry blocks (docs/formats.md §3, §5).

KeyMR = SHA256(SHA256(header) || BodyMR) is the block's primary key (section 9.3) and
SHA256(header || body) its full hash, the next block's PrevFullHash and its second key.
In a receipt, SHA256(header) is the left side of the node that makes the KeyMR.
"""

from __future__ import annotations

from functools import cached_property

from ledger.core.hashing import sha256

__all__ = ["KeyedBlock"]


class KeyedBlock:
    """Base of a block keyed by its KeyMR; the subclass gives ``header()`` (its header
    bytes), ``body_mr()`` (32 bytes) and ``marshal()`` (header and body bytes). The KeyMR
    is computed once per block object."""

    def header(self) -> bytes:
        raise NotImplementedError

    def body_mr(self) -> bytes:
        raise NotImplementedError

    def marshal(self) -> bytes:
        raise NotImplementedError

    def header_hash(self) -> bytes:
        """SHA256(header), 32 bytes (the left side of the block's node in a receipt)."""
        return sha256(self.header())

    def key_mr(self) -> bytes:
        """KeyMR = SHA256(SHA256(header) || BodyMR), 32 bytes: the block's primary key."""
        return self._key_mr

    @cached_property
    def _key_mr(self) -> bytes:
        return sha256(self.header_hash() + self.body_mr())

    def full_hash(self) -> bytes:
        """SHA256(header || body), 32 bytes: the next block's PrevFullHash."""
        return sha256(self.marshal())

    def primary_key(self) -> bytes:
        """The key listed in the directory block and used for look-ups: the KeyMR (§9.3)."""
        return self.key_mr()

    def secondary_key(self) -> bytes:
        """The block's second look-up key: the full hash (section 9.3)."""
        return self.full_hash()
