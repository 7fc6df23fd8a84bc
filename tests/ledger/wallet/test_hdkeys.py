"""BIP39/BIP32 derivation against the docs/formats.md §3.4 vectors (mnemonic "yellow" x12)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.core.keys import SigningKey
from ledger.wallet.errors import InvalidMnemonicError
from ledger.wallet.hdkeys import (
    HARDENED,
    bip39_seed,
    bip44_path,
    derive_private_key,
    derive_wallet_key,
    koinify_key,
    new_mnemonic,
    normalize_mnemonic,
)
from ledger.wallet.keyring import key_pair

YELLOW = " ".join(["yellow"] * 12)


@pytest.fixture(scope="module")
def seed() -> bytes:
    return bip39_seed(YELLOW)


def test_fct_index_0_private_key_and_strings(seed: bytes) -> None:
    key = derive_wallet_key(seed, "fct", 0)
    assert key.hex() == "36422e9560f56e0ead53a83b33aec9571d379291b5e292b88dec641a98ef05d8"
    pair = key_pair("fct", key)
    assert pair.secret == "Fs1jQGc9GJjyWNroLPq7x6LbYQHveyjWNPXSqAvCEKpETNoTU5dP"
    assert pair.public == "FA22de5NSG2FA2HmMaD4h8qSAZAJyztmmnwgLPghCQKoSekwYYct"


def test_fct_index_1(seed: bytes) -> None:
    key = derive_wallet_key(seed, "fct", 1)
    assert key.hex() == "d595251fcf8c5893476e35284f90b809fb6c2ff6f3e19dcf04f7a76af7644720"
    pair = key_pair("fct", key)
    assert pair.secret == "Fs2wZzM2iBn4HEbhwEUZjLfcbTo5Rf6ChRNjNJWDiyWmy9zkPQNP"
    assert pair.public == "FA3heCmxKCk1tCCfiAMDmX8Ctg6XTQjRRaJrF5Jagc9rbo7wqQLV"


def test_ec_index_0(seed: bytes) -> None:
    pair = key_pair("ec", derive_wallet_key(seed, "ec", 0))
    assert pair.secret == "Es37BZSs7jUpyn3HosZa79kENWfvj1AVUdZioWykTTqqvA2MRi9h"
    assert pair.public == "EC2KnJQN86MYq4pQyeSGTHSiVdkhRCPXS3udzD4im6BXRBjZFMmR"


def test_identity_index_0(seed: bytes) -> None:
    pair = key_pair("identity", derive_wallet_key(seed, "identity", 0))
    assert pair.secret == "idsec2VZ2EJ1hoUeQYmFPeFthWts3xsGiPpRdfL4zABjzuHQshX4qvY"
    assert pair.public == "idpub2Q7m3YwkQMmNQUVpfcED52b7nFmYFWkiMGGF41srZ9hZZYmC5p"


def test_koinify_derivation() -> None:
    pair = key_pair("fct", koinify_key(YELLOW))
    assert pair.public == "FA3cih2o2tjEUsnnFR4jX1tQXPpSXFwsp3rhVp6odL5PNCHWvZV1"


def test_paths_use_the_factom_coin_types() -> None:
    assert bip44_path("fct", 5) == (HARDENED + 44, HARDENED + 131, HARDENED, 0, 5)
    assert bip44_path("ec", 0)[1] == 0x80000084
    assert bip44_path("identity", 0)[1] == 0x80000119
    with pytest.raises(ValueError):
        bip44_path("fct", HARDENED)
    with pytest.raises(ValueError):
        bip44_path("fct", -1)


def test_bip32_test_vector_1_hardened_and_normal_children() -> None:
    """BIP32 test vector 1 (seed 000102...0f), chain m/0'/1/2'/2/1000000000."""
    seed = bytes(range(16))
    key = derive_private_key(seed, (HARDENED, 1, HARDENED + 2, 2, 1_000_000_000))
    assert key.hex() == "471b76e389e528d6de6d816857e012c5455051cad6660850e58372a6c3e6e7c8"
    assert derive_private_key(seed, ()).hex() == (
        "e8f32e723decf4051aefac8e2c93c9c5b214313817cdb01a1494b917c8436b35"
    )


def test_mnemonic_normalization_and_rejections() -> None:
    assert normalize_mnemonic("  YELLOW " + " yellow" * 11) == YELLOW
    with pytest.raises(InvalidMnemonicError):
        normalize_mnemonic(" ".join(["yellow"] * 11))
    with pytest.raises(InvalidMnemonicError):
        normalize_mnemonic(" ".join(["abandon"] * 12))  # checksum fails
    with pytest.raises(InvalidMnemonicError):
        normalize_mnemonic("notaword " + " yellow" * 11)


def test_new_mnemonic_has_12_valid_words() -> None:
    words = new_mnemonic()
    assert len(words.split()) == 12
    assert normalize_mnemonic(words) == words
    assert new_mnemonic(entropy=bytes(16)) == " ".join(["abandon"] * 11 + ["about"])
    with pytest.raises(ValueError):
        new_mnemonic(entropy=bytes(15))


@settings(max_examples=25, deadline=None)
@given(st.binary(min_size=16, max_size=16), st.integers(0, 2**31 - 1))
def test_derived_keys_are_valid_distinct_ed25519_seeds(entropy: bytes, index: int) -> None:
    seed = bip39_seed(new_mnemonic(entropy=entropy))
    fct, ec = derive_wallet_key(seed, "fct", index), derive_wallet_key(seed, "ec", index)
    assert len(fct) == len(ec) == 32
    assert fct != ec
    assert SigningKey.from_seed(fct).public_key != SigningKey.from_seed(ec).public_key
