"""Commit-entry and commit-chain messages: the signed EC payments (docs/formats.md §2).

Commit-entry, 136 bytes (section 2.1)::

    0 version(1)=0 | 1 timestamp_ms(6) | 7 entry_hash(32) | 39 credits(1) 1..10
    40 ec_public_key(32) | 72 signature(64) over bytes [0, 40)

Commit-chain, 200 bytes (section 2.2)::

    0 version(1)=0 | 1 timestamp_ms(6) | 7 chain_id_hash(32) = SHA256d(chain_id)
    39 weld(32) = SHA256d(entry_hash || chain_id) | 71 entry_hash(32) | 103 credits(1) 11..20
    104 ec_public_key(32) | 136 signature(64) over bytes [0, 104)

TxID = SHA256(signed part); full hash = SHA256(all bytes) (section 2.3). Instances always hold
in-range fields (lengths, 48-bit timestamp, credits); the signature is only checked by
``verify()``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Self

from ledger.core.entry import NEW_CHAIN_FEE_EC, Entry, chain_id_from_external_ids
from ledger.core.errors import DecodeError, LimitError, SignatureError
from ledger.core.hashing import sha256, sha256d
from ledger.core.hexbytes import from_hex
from ledger.core.keys import SigningKey, verify_signature

__all__ = [
    "COMMIT_CHAIN_BYTES",
    "COMMIT_ENTRY_BYTES",
    "COMMIT_VERSION",
    "CHAIN_CREDITS_RANGE",
    "ENTRY_CREDITS_RANGE",
    "MAX_TIMESTAMP_MS",
    "CommitChain",
    "CommitEntry",
]

COMMIT_VERSION = 0
COMMIT_ENTRY_BYTES = 136
COMMIT_CHAIN_BYTES = 200
ENTRY_CREDITS_RANGE = range(1, 11)  # 1..10
CHAIN_CREDITS_RANGE = range(11, 21)  # 11..20
MAX_TIMESTAMP_MS = 2**48 - 1
_TIMESTAMP_BYTES = 6
_PLACEHOLDER_SIGNATURE = bytes(64)


class _Commit:
    """What both commit messages do alike (section 2.3): txid, full hash, signature check,
    hex. A subclass gives ``signed_part``, ``marshal``, ``unmarshal`` and the fields
    ``ec_public_key`` (32 bytes) and ``signature`` (64 bytes)."""

    __slots__ = ()
    ec_public_key: bytes
    signature: bytes

    def signed_part(self) -> bytes:
        raise NotImplementedError

    def marshal(self) -> bytes:
        raise NotImplementedError

    @classmethod
    def unmarshal(cls, data: bytes) -> Self:
        raise NotImplementedError

    def txid(self) -> bytes:
        """SHA256 of ``signed_part()`` (32 bytes): the ``txid`` of the API and replay filter."""
        return sha256(self.signed_part())

    def full_hash(self) -> bytes:
        """SHA256 of all the message's bytes (136 or 200)."""
        return sha256(self.marshal())

    def verify(self) -> None:
        """Check the signature canonically (section 0.6). Raises SignatureError."""
        if not verify_signature(self.ec_public_key, self.signed_part(), self.signature):
            raise SignatureError("commit signature does not verify")

    def to_hex(self) -> str:
        """Lowercase hex of ``marshal()``."""
        return self.marshal().hex()

    @classmethod
    def from_hex(cls, text: str) -> Self:
        """Parse the hex of a whole message. DecodeError (bad hex, length, version) or
        LimitError (credits out of range)."""
        return cls.unmarshal(from_hex(text, "commit"))


@dataclass(frozen=True, slots=True)
class CommitEntry(_Commit):
    """A commit paying for one entry (section 2.1). Byte fields are raw.

    Attributes:
        timestamp_ms: Unix epoch milliseconds, 0..2**48-1.
        entry_hash: 32 bytes.
        credits: EC to deduct, 1..10.
        ec_public_key: 32-byte ed25519 public key of the payer.
        signature: 64 bytes over ``signed_part()``.

    Raises (on construction):
        DecodeError: a byte field of the wrong length.
        LimitError: timestamp or credits out of range.
    """

    timestamp_ms: int
    entry_hash: bytes
    credits: int
    ec_public_key: bytes
    signature: bytes

    def __post_init__(self) -> None:
        _check_common(self.timestamp_ms, self.ec_public_key, self.signature)
        _check_hash(self.entry_hash, "entry hash")
        _check_credits(self.credits, ENTRY_CREDITS_RANGE)

    @classmethod
    def create(
        cls, key: SigningKey, entry: Entry, *, timestamp_ms: int, credits: int | None = None
    ) -> CommitEntry:
        """Signed commit for ``entry``; ``credits=None`` pays ``entry.cost()`` (1..10 EC)."""
        unsigned = cls(
            timestamp_ms=timestamp_ms,
            entry_hash=entry.hash(),
            credits=entry.cost() if credits is None else credits,
            ec_public_key=key.public_key,
            signature=_PLACEHOLDER_SIGNATURE,
        )
        return dataclasses.replace(unsigned, signature=key.sign(unsigned.signed_part()))

    def signed_part(self) -> bytes:
        """Bytes [0, 40): version, timestamp, entry hash, credits."""
        return _header(self.timestamp_ms) + self.entry_hash + bytes([self.credits])

    def marshal(self) -> bytes:
        """The 136-byte message (the hex ``message`` of ``commit-entry``)."""
        return self.signed_part() + self.ec_public_key + self.signature

    @classmethod
    def unmarshal(cls, data: bytes) -> CommitEntry:
        """Parse 136 bytes. DecodeError (length, version), LimitError (credits not 1..10)."""
        data = _check_message(data, COMMIT_ENTRY_BYTES, "commit-entry")
        return cls(
            timestamp_ms=int.from_bytes(data[1:7], "big"),
            entry_hash=data[7:39],
            credits=data[39],
            ec_public_key=data[40:72],
            signature=data[72:136],
        )


@dataclass(frozen=True, slots=True)
class CommitChain(_Commit):
    """A commit creating a chain and paying for its first entry (section 2.2).

    Attributes:
        timestamp_ms: Unix epoch milliseconds, 0..2**48-1.
        chain_id_hash: 32 bytes, SHA256d(chain ID).
        weld: 32 bytes, SHA256d(entry hash || chain ID) (not checked by factomd).
        entry_hash: 32 bytes, hash of the first entry.
        credits: EC to deduct, 11..20 (first entry cost + 10).
        ec_public_key: 32-byte ed25519 public key of the payer.
        signature: 64 bytes over ``signed_part()``.

    Raises (on construction):
        DecodeError: a byte field of the wrong length.
        LimitError: timestamp or credits out of range.
    """

    timestamp_ms: int
    chain_id_hash: bytes
    weld: bytes
    entry_hash: bytes
    credits: int
    ec_public_key: bytes
    signature: bytes

    def __post_init__(self) -> None:
        _check_common(self.timestamp_ms, self.ec_public_key, self.signature)
        for value, what in (
            (self.chain_id_hash, "chain id hash"),
            (self.weld, "weld"),
            (self.entry_hash, "entry hash"),
        ):
            _check_hash(value, what)
        _check_credits(self.credits, CHAIN_CREDITS_RANGE)

    @staticmethod
    def chain_id_hash_for(chain_id: bytes) -> bytes:
        """SHA256d(chain_id), 32 bytes."""
        return sha256d(chain_id)

    @staticmethod
    def weld_for(entry_hash: bytes, chain_id: bytes) -> bytes:
        """SHA256d(entry_hash || chain_id), 32 bytes."""
        return sha256d(entry_hash + chain_id)

    @classmethod
    def create(
        cls, key: SigningKey, first_entry: Entry, *, timestamp_ms: int, credits: int | None = None
    ) -> CommitChain:
        """Signed commit creating ``first_entry``'s chain; ``credits=None`` pays cost + 10 EC.

        Raises:
            DecodeError: ``first_entry.chain_id`` is not the chain ID of its ExtIDs (1.3).
            LimitError: credits outside 11..20.
        """
        if not first_entry.is_first_entry_of_chain():
            raise DecodeError("first entry's chain id is not computed from its external ids")
        entry_hash = first_entry.hash()
        unsigned = cls(
            timestamp_ms=timestamp_ms,
            chain_id_hash=cls.chain_id_hash_for(first_entry.chain_id),
            weld=cls.weld_for(entry_hash, first_entry.chain_id),
            entry_hash=entry_hash,
            credits=first_entry.cost() + NEW_CHAIN_FEE_EC if credits is None else credits,
            ec_public_key=key.public_key,
            signature=_PLACEHOLDER_SIGNATURE,
        )
        return dataclasses.replace(unsigned, signature=key.sign(unsigned.signed_part()))

    def matches_first_entry(self, entry: Entry) -> bool:
        """True if ``entry`` is what this commit pays for: same entry hash, and the chain ID
        computed from its ExtIDs hashes to ``chain_id_hash`` (factomd ``CheckChainID``)."""
        computed = chain_id_from_external_ids(entry.external_ids)
        return entry.hash() == self.entry_hash and sha256d(computed) == self.chain_id_hash

    def signed_part(self) -> bytes:
        """Bytes [0, 104): version, timestamp, chain id hash, weld, entry hash, credits."""
        hashes = self.chain_id_hash + self.weld + self.entry_hash
        return _header(self.timestamp_ms) + hashes + bytes([self.credits])

    def marshal(self) -> bytes:
        """The 200-byte message (the hex ``message`` of ``commit-chain``)."""
        return self.signed_part() + self.ec_public_key + self.signature

    @classmethod
    def unmarshal(cls, data: bytes) -> CommitChain:
        """Parse 200 bytes. DecodeError (length, version), LimitError (credits not 11..20)."""
        data = _check_message(data, COMMIT_CHAIN_BYTES, "commit-chain")
        return cls(
            timestamp_ms=int.from_bytes(data[1:7], "big"),
            chain_id_hash=data[7:39],
            weld=data[39:71],
            entry_hash=data[71:103],
            credits=data[103],
            ec_public_key=data[104:136],
            signature=data[136:200],
        )


def _header(timestamp_ms: int) -> bytes:
    return bytes([COMMIT_VERSION]) + timestamp_ms.to_bytes(_TIMESTAMP_BYTES, "big")


def _check_message(data: bytes, size: int, what: str) -> bytes:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise DecodeError(f"{what} must be bytes")
    data = bytes(data)
    if len(data) != size:
        raise DecodeError(f"{what} must be {size} bytes, got {len(data)}")
    if data[0] != COMMIT_VERSION:
        raise DecodeError(f"{what} version {data[0]} is not 0")
    return data


def _check_hash(value: bytes, what: str) -> None:
    if not isinstance(value, bytes) or len(value) != 32:
        raise DecodeError(f"{what} must be 32 bytes")


def _check_common(timestamp_ms: int, public_key: bytes, signature: bytes) -> None:
    if not _is_int(timestamp_ms) or not 0 <= timestamp_ms <= MAX_TIMESTAMP_MS:
        raise LimitError(f"timestamp {timestamp_ms!r} ms does not fit in 48 bits")
    _check_hash(public_key, "EC public key")
    if not isinstance(signature, bytes) or len(signature) != 64:
        raise DecodeError("signature must be 64 bytes")


def _check_credits(credits: int, allowed: range) -> None:
    if not _is_int(credits) or credits not in allowed:
        raise LimitError(f"credits {credits!r} outside {allowed.start}..{allowed.stop - 1}")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
