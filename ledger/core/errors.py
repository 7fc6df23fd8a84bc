"""Errors of the pure ledger primitives.

Exception tree::

    LedgerFormatError (ValueError)
    ├── DecodeError            bytes or text that do not parse (wrong length, bad prefix, trailing bytes)
    ├── AddressError           a human-readable address or key string that is not valid
    ├── SignatureError         an ed25519 signature that does not verify canonically
    ├── LimitError             a size or amount outside the protocol's limits
    └── MerkleProofError       a Merkle branch or receipt that does not lead to the expected root
"""

from __future__ import annotations


class LedgerFormatError(ValueError):
    """Base of every error raised by ``ledger.core``."""


class DecodeError(LedgerFormatError):
    """Bytes or text that do not parse into the named structure."""


class AddressError(LedgerFormatError):
    """An address or key string with a wrong prefix, length or checksum (formats section 3.1)."""


class SignatureError(LedgerFormatError):
    """An ed25519 signature that does not verify canonically (formats section 0.6)."""


class LimitError(LedgerFormatError):
    """A size, count or amount outside the protocol's limits (formats sections 1.4, 4.3)."""


class MerkleProofError(LedgerFormatError):
    """A Merkle step or root that does not match.

    Attributes:
        expected: the root or node the proof had to reach (raw 32 bytes), if known.
        computed: what hashing the proof actually gave (raw 32 bytes), if known.
    """

    def __init__(
        self, message: str, *, expected: bytes | None = None, computed: bytes | None = None
    ) -> None:
        detail = message
        if expected is not None and computed is not None:
            detail = f"{message} (expected {expected.hex()}, computed {computed.hex()})"
        super().__init__(detail)
        self.expected = expected
        self.computed = computed
