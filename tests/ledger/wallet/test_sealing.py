"""argon2id + SecretBox sealing of wallet secrets."""

from __future__ import annotations

import nacl.pwhash
import pytest

from ledger.wallet.errors import IncorrectPassphraseError, WalletStateError
from ledger.wallet.sealing import (
    VERIFIER_PLAINTEXT,
    BoxSealer,
    KdfParams,
    PlainSealer,
    open_verified,
)

FAST = {
    "opslimit": nacl.pwhash.argon2id.OPSLIMIT_MIN,
    "memlimit_bytes": nacl.pwhash.argon2id.MEMLIMIT_MIN,
}


def test_box_round_trip_uses_fresh_nonces() -> None:
    sealer = BoxSealer(bytes(range(32)))
    first, second = sealer.seal(b"secret seed"), sealer.seal(b"secret seed")
    assert first != second and b"secret seed" not in first
    assert len(first) == 24 + 16 + len(b"secret seed")
    assert sealer.open(first) == sealer.open(second) == b"secret seed"


def test_tampered_or_foreign_ciphertext_is_rejected() -> None:
    sealer = BoxSealer(bytes(32))
    sealed = bytearray(sealer.seal(b"x" * 32))
    sealed[-1] ^= 1
    with pytest.raises(IncorrectPassphraseError):
        sealer.open(bytes(sealed))
    with pytest.raises(IncorrectPassphraseError):
        BoxSealer(bytes([1]) * 32).open(sealer.seal(b"x"))


def test_key_is_not_in_repr_and_must_be_32_bytes() -> None:
    key = bytes(range(32))
    assert key.hex() not in repr(BoxSealer(key)) and str(list(key)) not in repr(BoxSealer(key))
    assert "key" not in repr(BoxSealer(key)).lower().replace("boxsealer", "")
    with pytest.raises(ValueError):
        BoxSealer(bytes(31))


def test_kdf_params_round_trip_and_derivation() -> None:
    params = KdfParams.fresh(**FAST)
    again = KdfParams.from_bytes(params.to_bytes())
    assert again == params
    assert again.derive_key("pw") == params.derive_key("pw") != params.derive_key("pW")
    assert KdfParams.fresh(**FAST).salt != params.salt
    with pytest.raises(WalletStateError):
        KdfParams.from_bytes(b'{"kdf": "scrypt"}')
    with pytest.raises(WalletStateError):
        KdfParams.from_bytes(b"not json")


def test_open_verified_checks_the_passphrase() -> None:
    params = KdfParams.fresh(**FAST)
    verifier = BoxSealer(params.derive_key("right")).seal(VERIFIER_PLAINTEXT)
    assert open_verified(params, "right", verifier).open(verifier) == VERIFIER_PLAINTEXT
    with pytest.raises(IncorrectPassphraseError):
        open_verified(params, "wrong", verifier)


def test_plain_sealer_is_identity() -> None:
    assert PlainSealer().open(PlainSealer().seal(b"abc")) == b"abc"
