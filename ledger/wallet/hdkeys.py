"""Deterministic wallet keys: BIP39 mnemonic and BIP32/BIP44 derivation (docs/formats.md §3.3).

The wallet seed is 16 random bytes shown as a 12-word English BIP39 mnemonic; the BIP39
seed (64 bytes) uses an empty passphrase. Keys are derived with BIP32 over secp256k1
along ``m/44'/coin'/0'/0/i`` and the 32-byte child private key is then used as an
**ed25519 seed** (not as a secp256k1 key):

| kind       | path                 | coin type |
|------------|----------------------|-----------|
| ``fct``      | ``m/44'/131'/0'/0/i`` | 0x80000083 |
| ``ec``       | ``m/44'/132'/0'/0/i`` | 0x80000084 |
| ``identity`` | ``m/44'/281'/0'/0/i`` | 0x80000119 |

Koinify (2015 sale) words derive ``m/7'`` instead. Non-hardened children need a
secp256k1 public-key multiplication, done by ``coincurve`` (libsecp256k1).

All inputs and outputs are raw bytes except mnemonics (space-separated words).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Literal

import coincurve
from mnemonic import Mnemonic

from ledger.wallet.errors import InvalidMnemonicError

__all__ = [
    "COIN_TYPES",
    "HARDENED",
    "KeyKind",
    "bip39_seed",
    "bip44_path",
    "derive_private_key",
    "derive_wallet_key",
    "koinify_key",
    "new_mnemonic",
    "normalize_mnemonic",
]

KeyKind = Literal["fct", "ec", "identity"]

HARDENED = 0x80000000
COIN_TYPES: Mapping[KeyKind, int] = MappingProxyType({"fct": 131, "ec": 132, "identity": 281})
_SECP256K1_ORDER = 0xFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFEBAAEDCE6AF48A03BBFD25E8CD0364141
_MNEMONIC_WORDS = 12
_ENTROPY_BYTES = 16
_KOINIFY_PATH = (HARDENED + 7,)
_BIP39 = Mnemonic("english")


def new_mnemonic(*, entropy: bytes | None = None) -> str:
    """A 12-word mnemonic from 16 bytes of ``entropy`` (default: the OS random source)."""
    entropy = secrets.token_bytes(_ENTROPY_BYTES) if entropy is None else entropy
    if len(entropy) != _ENTROPY_BYTES:
        raise ValueError("mnemonic entropy must be exactly 16 bytes")
    return _BIP39.to_mnemonic(entropy)


def normalize_mnemonic(words: str) -> str:
    """Lower-case, single-spaced form of a 12-word mnemonic whose BIP39 checksum is valid.

    Raises:
        InvalidMnemonicError: not 12 words, unknown word or bad checksum (words not echoed).
    """
    parts = words.lower().split() if isinstance(words, str) else []
    if len(parts) != _MNEMONIC_WORDS:
        raise InvalidMnemonicError(f"a mnemonic must have {_MNEMONIC_WORDS} words")
    normalized = " ".join(parts)
    try:
        valid = _BIP39.check(normalized)
    except (LookupError, ValueError):
        valid = False
    if not valid:
        raise InvalidMnemonicError("mnemonic has an unknown word or a bad checksum")
    return normalized


def bip39_seed(mnemonic: str) -> bytes:
    """64-byte BIP39 seed of a valid mnemonic, empty passphrase (PBKDF2-HMAC-SHA512, 2048)."""
    return Mnemonic.to_seed(normalize_mnemonic(mnemonic), passphrase="")


def bip44_path(kind: KeyKind, index: int) -> tuple[int, ...]:
    """``(44', coin', 0', 0, index)`` for a key kind; ValueError if index is not 0..2^31-1."""
    if not 0 <= index < HARDENED:
        raise ValueError("a BIP44 address index must be in 0..2^31-1")
    return (HARDENED + 44, HARDENED + COIN_TYPES[kind], HARDENED, 0, index)


def derive_private_key(seed: bytes, path: Sequence[int]) -> bytes:
    """BIP32 private key (32 bytes) at ``path`` below the master key of a BIP39 ``seed``.

    ``path`` holds child numbers; hardened ones already include ``HARDENED``.
    """
    digest = hmac.digest(b"Bitcoin seed", seed, "sha512")
    key, chain_code = digest[:32], digest[32:]
    _check_key(key)
    for child in path:
        key, chain_code = _child(key, chain_code, child)
    return key


def derive_wallet_key(seed: bytes, kind: KeyKind, index: int) -> bytes:
    """The ed25519 seed (32 bytes) of wallet key ``index`` of ``kind`` (section 3.3)."""
    return derive_private_key(seed, bip44_path(kind, index))


def koinify_key(words: str) -> bytes:
    """The ed25519 seed (32 bytes) of a Koinify sale mnemonic: child ``m/7'``."""
    return derive_private_key(bip39_seed(words), _KOINIFY_PATH)


def _child(key: bytes, chain_code: bytes, child: int) -> tuple[bytes, bytes]:
    if not 0 <= child <= 0xFFFFFFFF:
        raise ValueError("a BIP32 child number must fit in 32 bits")
    if child >= HARDENED:
        data = b"\x00" + key + child.to_bytes(4, "big")
    else:
        public = coincurve.PrivateKey(key).public_key.format(compressed=True)
        data = public + child.to_bytes(4, "big")
    digest = hmac.new(chain_code, data, hashlib.sha512).digest()
    tweak = int.from_bytes(digest[:32], "big")
    if tweak >= _SECP256K1_ORDER:
        raise ValueError("BIP32 child key is invalid; use the next index")
    child_key = ((tweak + int.from_bytes(key, "big")) % _SECP256K1_ORDER).to_bytes(32, "big")
    _check_key(child_key)
    return child_key, digest[32:]


def _check_key(key: bytes) -> None:
    value = int.from_bytes(key, "big")
    if not 0 < value < _SECP256K1_ORDER:
        raise ValueError("BIP32 key out of range; use the next index")
