"""Ed25519 keys and canonical verification (docs/formats.md §0.6)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.errors import DecodeError
from ledger.core.keys import ED25519_ORDER, SigningKey, is_canonical_signature, verify_signature

ZERO_SEED = bytes(32)
ZERO_PUBLIC = bytes.fromhex("3b6a27bcceb6a42d62a3a8d02a6f0d73653215771de243a63ac048a18b59da29")
SAND_SEED = bytes.fromhex("fb3b471b1dcdadfeb856bd0b02d8bf49ace0edd372a3d9f2a95b78ec12a324d6")
SAND_PUBLIC = bytes.fromhex("718b5edd2914acc2e4677f336c1a32736e5e9bde13663e6413894f57ec272e28")


@pytest.mark.parametrize(("seed", "public"), [(ZERO_SEED, ZERO_PUBLIC), (SAND_SEED, SAND_PUBLIC)])
def test_public_key_of_known_seeds(seed: bytes, public: bytes) -> None:
    key = SigningKey.from_seed(seed)
    assert key.public_key == public
    assert key.seed == seed


def test_rfc8032_test_1_signature() -> None:
    seed = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
    key = SigningKey.from_seed(seed)
    assert key.public_key.hex() == (
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
    )
    assert key.sign(b"").hex() == (
        "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
        "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
    )


@pytest.mark.parametrize("seed", [b"", bytes(31), bytes(33), "00" * 32])
def test_from_seed_rejects_wrong_length(seed: bytes) -> None:
    with pytest.raises(DecodeError):
        SigningKey.from_seed(seed)


def test_repr_never_shows_seed() -> None:
    key = SigningKey.from_seed(SAND_SEED)
    text = repr(key) + str(key)
    assert SAND_SEED.hex() not in text
    assert SAND_PUBLIC.hex() in text


def test_equality_and_hash() -> None:
    assert SigningKey.from_seed(SAND_SEED) == SigningKey.from_seed(bytearray(SAND_SEED))
    assert SigningKey.from_seed(SAND_SEED) != SigningKey.from_seed(ZERO_SEED)
    assert hash(SigningKey.from_seed(SAND_SEED)) == hash(SigningKey.from_seed(SAND_SEED))
    assert SigningKey.from_seed(SAND_SEED) != SAND_SEED


def test_generate_gives_distinct_working_keys() -> None:
    first, second = SigningKey.generate(), SigningKey.generate()
    assert first != second
    assert len(first.seed) == 32 and len(first.public_key) == 32
    assert verify_signature(first.public_key, b"m", first.sign(b"m"))


def test_sign_verify_and_single_byte_tamper() -> None:
    key = SigningKey.from_seed(SAND_SEED)
    signature = key.sign(b"message")
    assert len(signature) == 64
    assert verify_signature(key.public_key, b"message", signature)
    assert not verify_signature(key.public_key, b"messagE", signature)
    assert not verify_signature(ZERO_PUBLIC, b"message", signature)
    for index in (0, 31, 32, 63):
        tampered = bytearray(signature)
        tampered[index] ^= 0x01
        assert not verify_signature(key.public_key, b"message", bytes(tampered))


def test_non_canonical_s_is_rejected() -> None:
    """S + L is the same scalar mod L; factomd's VerifyCanonical rejects it (0.6)."""
    key = SigningKey.from_seed(SAND_SEED)
    signature = key.sign(b"message")
    s_value = int.from_bytes(signature[32:], "little")
    malleated = signature[:32] + (s_value + ED25519_ORDER).to_bytes(32, "little")
    assert is_canonical_signature(signature)
    assert not is_canonical_signature(malleated)
    assert not verify_signature(key.public_key, b"message", malleated)


@pytest.mark.parametrize(
    ("public_key", "signature"),
    [(bytes(31), bytes(64)), (ZERO_PUBLIC, bytes(63)), (ZERO_PUBLIC, bytes(65)), ("x", bytes(64))],
)
def test_verify_returns_false_on_bad_lengths(public_key: bytes, signature: bytes) -> None:
    assert verify_signature(public_key, b"m", signature) is False


def test_verify_returns_false_on_invalid_point() -> None:
    assert verify_signature(b"\xff" * 32, b"m", bytes(64)) is False


@given(st.binary(min_size=32, max_size=32), st.binary(max_size=256))
def test_sign_verify_property(seed: bytes, message: bytes) -> None:
    key = SigningKey.from_seed(seed)
    signature = key.sign(message)
    assert signature == key.sign(message)
    assert verify_signature(key.public_key, message, signature)
    assert not verify_signature(key.public_key, message + b"\x00", signature)
