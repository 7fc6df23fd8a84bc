"""Encryption at rest of wallet secrets: argon2id key derivation + SecretBox.

An encrypted wallet stores its KDF parameters (salt, ops and memory limits) in clear and
every secret (the mnemonic, each key's 32-byte seed) as ``nonce(24) || ciphertext``
sealed with XSalsa20-Poly1305 under a 32-byte key derived from the passphrase with
argon2id. A sealed known marker (the *verifier*) tells a wrong passphrase apart from a
damaged file. A wallet without a passphrase uses ``PlainSealer`` (secrets stored raw).

The only module of the wallet that imports PyNaCl's secret-key primitives.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Protocol

import nacl.exceptions
import nacl.pwhash
import nacl.secret
import nacl.utils

from ledger.wallet.errors import IncorrectPassphraseError, WalletStateError

__all__ = [
    "DEFAULT_MEMLIMIT_BYTES",
    "DEFAULT_OPSLIMIT",
    "BoxSealer",
    "KdfParams",
    "PlainSealer",
    "Sealer",
    "VERIFIER_PLAINTEXT",
    "open_verified",
]

DEFAULT_OPSLIMIT = nacl.pwhash.argon2id.OPSLIMIT_MODERATE
DEFAULT_MEMLIMIT_BYTES = nacl.pwhash.argon2id.MEMLIMIT_MODERATE
VERIFIER_PLAINTEXT = b"notary-wallet passphrase verifier v1"
_SALT_BYTES = nacl.pwhash.argon2id.SALTBYTES
_KEY_BYTES = nacl.secret.SecretBox.KEY_SIZE


class Sealer(Protocol):
    """Turns secrets into stored bytes and back."""

    def seal(self, plaintext: bytes) -> bytes: ...

    def open(self, sealed: bytes) -> bytes: ...


class PlainSealer:
    """No encryption: the stored bytes are the secret (a wallet without passphrase)."""

    def seal(self, plaintext: bytes) -> bytes:
        return bytes(plaintext)

    def open(self, sealed: bytes) -> bytes:
        return bytes(sealed)

    def __repr__(self) -> str:
        return "PlainSealer()"


@dataclass(frozen=True)
class KdfParams:
    """argon2id parameters stored beside an encrypted wallet.

    Attributes:
        salt: 16 random bytes.
        opslimit: argon2id passes.
        memlimit_bytes: argon2id memory in bytes.
    """

    salt: bytes
    opslimit: int = DEFAULT_OPSLIMIT
    memlimit_bytes: int = DEFAULT_MEMLIMIT_BYTES

    @classmethod
    def fresh(cls, *, opslimit: int, memlimit_bytes: int) -> KdfParams:
        """New parameters with a random salt."""
        return cls(nacl.utils.random(_SALT_BYTES), opslimit, memlimit_bytes)

    def to_bytes(self) -> bytes:
        """JSON ``{"kdf":"argon2id","salt":hex,"opslimit":int,"memlimit":int}`` as UTF-8."""
        doc = {
            "kdf": "argon2id",
            "salt": self.salt.hex(),
            "opslimit": self.opslimit,
            "memlimit": self.memlimit_bytes,
        }
        return json.dumps(doc, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> KdfParams:
        """Inverse of ``to_bytes``; WalletStateError if the record is not readable."""
        try:
            doc = json.loads(data)
            if doc["kdf"] != "argon2id":
                raise ValueError("unsupported kdf")
            salt = bytes.fromhex(doc["salt"])
            if len(salt) != _SALT_BYTES:
                raise ValueError("bad salt length")
            return cls(salt, int(doc["opslimit"]), int(doc["memlimit"]))
        except (ValueError, KeyError, TypeError) as exc:
            raise WalletStateError("wallet encryption parameters are unreadable") from exc

    def derive_key(self, passphrase: str) -> bytes:
        """32-byte SecretBox key from ``passphrase`` (UTF-8) with argon2id."""
        return nacl.pwhash.argon2id.kdf(
            _KEY_BYTES,
            passphrase.encode("utf-8"),
            self.salt,
            opslimit=self.opslimit,
            memlimit=self.memlimit_bytes,
        )


@dataclass(frozen=True)
class BoxSealer:
    """SecretBox (XSalsa20-Poly1305) sealing under a derived key; the key is never shown."""

    key: bytes = field(repr=False)

    def __post_init__(self) -> None:
        if len(self.key) != _KEY_BYTES:
            raise ValueError("a SecretBox key must be exactly 32 bytes")

    def seal(self, plaintext: bytes) -> bytes:
        """``nonce(24) || ciphertext`` with a fresh random nonce."""
        return bytes(nacl.secret.SecretBox(self.key).encrypt(bytes(plaintext)))

    def open(self, sealed: bytes) -> bytes:
        """Plaintext of ``sealed``; IncorrectPassphraseError if it does not authenticate."""
        try:
            return bytes(nacl.secret.SecretBox(self.key).decrypt(bytes(sealed)))
        except (nacl.exceptions.CryptoError, ValueError) as exc:
            raise IncorrectPassphraseError() from exc


def open_verified(params: KdfParams, passphrase: str, verifier: bytes) -> BoxSealer:
    """A sealer for ``passphrase`` after checking it opens ``verifier``.

    Raises:
        IncorrectPassphraseError: the passphrase does not open the verifier.
    """
    sealer = BoxSealer(params.derive_key(passphrase))
    if sealer.open(verifier) != VERIFIER_PLAINTEXT:
        raise IncorrectPassphraseError()
    return sealer
