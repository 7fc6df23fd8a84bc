"""Errors of the pure ledger primitives: every error ``ledger.core`` raises is one of these.

Exception tree (defined here unless another module is named)::

    LedgerFormatError (ValueError)
    ├── DecodeError            bytes or text that do not parse (wrong length, bad prefix,
    │                          bad hex, trailing bytes)
    ├── AddressError           a human-readable address or key string that is not valid
    ├── SignatureError         an ed25519 signature that does not verify canonically
    ├── CallbackSignatureError (``ledger.core.callback_signature``) a callback whose HMAC
    │                          or timestamp does not hold
    ├── LimitError             a size, count or amount outside the protocol's limits
    ├── PositionError (also IndexError)
    │                          a leaf position outside a Merkle tree (a caller's bug: the
    │                          builders state ``0 <= index < size`` as a precondition)
    ├── NotInBlockError (also LookupError)
    │                          the entry or block to prove is not in the block given
    ├── MerkleProofError       a Merkle branch or root that does not lead where it must
    │   ├── ReceiptError       (``ledger.core.receipt``) a receipt failing one of its
    │   │                      numbered checks (``.step`` 1-7)
    │   └── AggregationProofError
    │                          (``ledger.core.aggregation``) an audit path that does not
    │                          lead to the batch root for its leaf index and tree size
    └── ProofError             (``ledger.core.proof.steps``) a proof bundle failing one of
                               the numbered ``Step`` s, Merkle or not (file hash, entry,
                               proof of work, ...)

``PositionError`` and ``NotInBlockError`` keep the built-in base that callers of a
position or a lookup expect, so ``except IndexError`` / ``except LookupError`` still work.
Services convert these to their own wire errors at their boundary (JSON-RPC ``-32602``,
REST ``400``/``422``); the pipeline catches ``LedgerFormatError`` where it checks
untrusted data.
"""

from __future__ import annotations

__all__ = [
    "AddressError",
    "DecodeError",
    "LedgerFormatError",
    "LimitError",
    "MerkleProofError",
    "NotInBlockError",
    "PositionError",
    "SignatureError",
]


class LedgerFormatError(ValueError):
    """Base of every error raised by ``ledger.core``."""


class DecodeError(LedgerFormatError):
    """Bytes or text that do not parse into the named structure."""


class AddressError(LedgerFormatError):
    """An address or key string with a wrong prefix, length or checksum (docs/formats.md §3.1)."""


class SignatureError(LedgerFormatError):
    """An ed25519 signature that does not verify canonically (docs/formats.md §0.6)."""


class LimitError(LedgerFormatError):
    """A size, count or amount outside the protocol's limits (docs/formats.md §1.4, §4.3)."""


class PositionError(LedgerFormatError, IndexError):
    """A leaf position outside the Merkle tree it should be in (requires ``0 <= index < size``)."""


class NotInBlockError(LedgerFormatError, LookupError):
    """The item to prove is not in the block searched (``build_receipt``, entry timestamps).

    Attributes:
        item: the raw 32-byte hash that was looked for.
        block_key_mr: KeyMR of the block searched (raw 32 bytes).
    """

    def __init__(self, message: str, *, item: bytes, block_key_mr: bytes) -> None:
        super().__init__(message)
        self.item = item
        self.block_key_mr = block_key_mr


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
