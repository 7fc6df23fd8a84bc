"""Ed25519 keys and canonical signature checks (docs/formats.md §0.6).

The only module that imports PyNaCl. Keys are 32-byte seeds, public keys are 32 bytes and
signatures are 64 bytes ``R || S``. Verification is canonical the way factomd's
``VerifyCanonical`` is: a signature whose little-endian ``S`` is not below the group order
``L`` is rejected here explicitly, before libsodium (which also rejects it) is asked.
"""

from __future__ import annotations

import hmac

import nacl.exceptions
import nacl.signing

from ledger.core.errors import DecodeError

__all__ = [
    "ED25519_ORDER",
    "PUBLIC_KEY_BYTES",
    "SEED_BYTES",
    "SIGNATURE_BYTES",
    "SigningKey",
    "is_canonical_signature",
    "verify_signature",
]

SEED_BYTES = 32
PUBLIC_KEY_BYTES = 32
SIGNATURE_BYTES = 64
ED25519_ORDER = 2**252 + 27742317777372353535851937790883648493  # the group order L


class SigningKey:
    """An ed25519 private key built from a 32-byte seed.

    ``repr`` shows only the public key; equality compares seeds in constant time.
    """

    __slots__ = ("_key", "_public_key", "_seed")

    def __init__(self, seed: bytes | bytearray) -> None:
        """Prefer ``from_seed``/``generate``. Raises DecodeError unless ``seed`` is 32 bytes."""
        if not isinstance(seed, bytes | bytearray) or len(seed) != SEED_BYTES:
            raise DecodeError("an ed25519 seed must be exactly 32 bytes")
        self._seed = bytes(seed)
        self._key = nacl.signing.SigningKey(self._seed)
        self._public_key = bytes(self._key.verify_key)

    @classmethod
    def from_seed(cls, seed32: bytes | bytearray) -> SigningKey:
        """Key from a 32-byte seed (the payload of Fs/Es/idsec strings). DecodeError otherwise."""
        return cls(seed32)

    @classmethod
    def generate(cls) -> SigningKey:
        """A new key from the operating system's random source."""
        return cls(bytes(nacl.signing.SigningKey.generate()))

    @property
    def seed(self) -> bytes:
        """The 32-byte private seed. Handle with care; it is never shown by ``repr``."""
        return self._seed

    @property
    def public_key(self) -> bytes:
        """The 32-byte ed25519 public key (the payload of EC/idpub strings)."""
        return self._public_key

    def sign(self, message: bytes) -> bytes:
        """Deterministic 64-byte ed25519 signature ``R || S`` over ``message``."""
        return bytes(self._key.sign(bytes(message)).signature)

    def __repr__(self) -> str:
        return f"SigningKey(public_key={self._public_key.hex()})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SigningKey):
            return NotImplemented
        return hmac.compare_digest(self._seed, other._seed)

    def __hash__(self) -> int:
        return hash(self._public_key)


def is_canonical_signature(signature: bytes) -> bool:
    """True when ``signature`` is 64 bytes and its ``S`` (little-endian) is below ``L``."""
    if len(signature) != SIGNATURE_BYTES:
        return False
    return int.from_bytes(signature[32:], "little") < ED25519_ORDER


def verify_signature(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Canonical ed25519 verification (section 0.6).

    Args:
        public_key: raw 32 bytes.
        message: the signed bytes.
        signature: raw 64 bytes ``R || S``.

    Returns:
        True only if lengths are exact, ``S < L``, and the signature verifies. Never raises
        for bad input; callers that need an exception raise ``SignatureError`` themselves.
    """
    if not isinstance(public_key, bytes | bytearray) or len(public_key) != PUBLIC_KEY_BYTES:
        return False
    if not isinstance(signature, bytes | bytearray) or not is_canonical_signature(signature):
        return False
    try:
        nacl.signing.VerifyKey(bytes(public_key)).verify(bytes(message), bytes(signature))
    except (nacl.exceptions.CryptoError, ValueError, TypeError):
        return False
    return True
