"""Base58check strings and RCD1 (docs/formats.md §3.1, §3.2, §3.4)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core import addresses as addr
from ledger.core.errors import AddressError, DecodeError
from ledger.core.hashing import sha256d
from ledger.core.keys import SigningKey
from tests.ledger.core._vectors import load

VECTORS = load("core_addresses.json")

ENCODERS: dict[str, Callable[[bytes], str]] = {
    "FA": addr.fct_public_address,
    "Fs": addr.fct_secret_address,
    "EC": addr.ec_public_address,
    "Es": addr.ec_secret_address,
    "idpub": addr.identity_public_key,
    "idsec": addr.identity_secret_key,
}
DECODERS: dict[str, Callable[[str], bytes]] = {
    "FA": addr.rcd_hash_from_fct_address,
    "Fs": addr.seed_from_fct_secret,
    "EC": addr.public_key_from_ec_address,
    "Es": addr.seed_from_ec_secret,
    "idpub": addr.public_key_from_identity,
    "idsec": addr.seed_from_identity_secret,
}
TEXT_LENGTH = {"FA": 52, "Fs": 52, "EC": 52, "Es": 52, "idpub": 55, "idsec": 55}


@pytest.mark.parametrize("vector", VECTORS["public"], ids=lambda v: v["text"])
def test_public_vectors(vector: dict[str, Any]) -> None:
    payload = bytes.fromhex(vector["payload"])
    kind = vector["kind"]
    assert ENCODERS[kind](payload) == vector["text"]
    assert DECODERS[kind](vector["text"]) == payload
    assert addr.address_kind(vector["text"]) == kind
    if "checksum" in vector:
        assert addr.base58_decode(vector["text"])[-4:].hex() == vector["checksum"]


@pytest.mark.parametrize("vector", VECTORS["keys"], ids=lambda v: v["secret"])
def test_key_vectors(vector: dict[str, Any]) -> None:
    kind = vector["secret_kind"]
    seed = DECODERS[kind](vector["secret"])
    assert addr.address_kind(vector["secret"]) == kind
    assert addr.address_kind(vector["public"]) == {"Fs": "FA", "Es": "EC", "idsec": "idpub"}[kind]
    assert ENCODERS[kind](seed) == vector["secret"]
    assert addr.public_address_for_secret(vector["secret"]) == vector["public"]
    if "seed" in vector:
        assert seed.hex() == vector["seed"]
    public_key = SigningKey.from_seed(seed).public_key
    if "public_key" in vector:
        assert public_key.hex() == vector["public_key"]
    if "rcd_hash" in vector:
        assert addr.rcd_hash(public_key).hex() == vector["rcd_hash"]
        assert addr.rcd_hash_from_fct_address(vector["public"]).hex() == vector["rcd_hash"]


def test_rcd1_layout_and_hash() -> None:
    public_key = bytes(range(32))
    assert addr.rcd1(public_key) == b"\x01" + public_key
    assert addr.rcd_hash(public_key) == sha256d(b"\x01" + public_key)
    assert addr.fct_address_from_public_key(public_key) == addr.fct_public_address(
        addr.rcd_hash(public_key)
    )


@pytest.mark.parametrize("vector", VECTORS["ranges"], ids=lambda v: v["kind"])
def test_ranges(vector: dict[str, Any]) -> None:
    encode = ENCODERS[vector["kind"]]
    assert encode(bytes(32)).startswith(vector["low"])
    assert encode(b"\xff" * 32).startswith(vector["high"])


@pytest.mark.parametrize("vector", VECTORS["invalid"], ids=lambda v: v["why"])
def test_invalid_examples_rejected(vector: dict[str, Any]) -> None:
    with pytest.raises(AddressError):
        addr.address_kind(vector["text"])
    for decode in DECODERS.values():
        with pytest.raises(AddressError):
            decode(vector["text"])


def _valid_fa() -> str:
    return VECTORS["keys"][0]["public"]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "FA",
        _valid_fa()[:-1],
        _valid_fa() + "1",
        "1" + _valid_fa(),
        _valid_fa()[:-1] + "0",  # '0' is not in the alphabet
        " " + _valid_fa(),
        _valid_fa().replace("F", "f", 1),
    ],
)
def test_malformed_strings_rejected(text: str) -> None:
    with pytest.raises(AddressError):
        addr.rcd_hash_from_fct_address(text)
    with pytest.raises(AddressError):
        addr.address_kind(text)


def test_decoder_checks_prefix_not_just_checksum() -> None:
    ec_text = VECTORS["public"][2]["text"]
    with pytest.raises(AddressError):
        addr.rcd_hash_from_fct_address(ec_text)
    with pytest.raises(AddressError):
        addr.seed_from_ec_secret(ec_text)


def test_public_address_for_secret_rejects_public_strings() -> None:
    with pytest.raises(AddressError):
        addr.public_address_for_secret(_valid_fa())


@pytest.mark.parametrize("kind", list(ENCODERS))
@pytest.mark.parametrize("payload", [b"", bytes(31), bytes(33)])
def test_encoders_reject_wrong_payload_length(kind: str, payload: bytes) -> None:
    with pytest.raises(DecodeError):
        ENCODERS[kind](payload)


@pytest.mark.parametrize("public_key", [bytes(31), bytes(33)])
def test_rcd_rejects_wrong_length(public_key: bytes) -> None:
    with pytest.raises(DecodeError):
        addr.rcd1(public_key)


@pytest.mark.parametrize(
    ("raw", "text"),
    [(b"", ""), (b"\x00", "1"), (b"\x00\x00\x01", "112"), (b"\x39", "z"), (b"\x3a", "21")],
)
def test_base58_known_values(raw: bytes, text: str) -> None:
    assert addr.base58_encode(raw) == text
    assert addr.base58_decode(text) == raw


@pytest.mark.parametrize("text", ["0", "O", "I", "l", "+", "é"])
def test_base58_rejects_foreign_characters(text: str) -> None:
    with pytest.raises(DecodeError):
        addr.base58_decode("2" + text)


@given(st.binary(max_size=64))
def test_base58_round_trip(raw: bytes) -> None:
    text = addr.base58_encode(raw)
    assert set(text) <= set(addr.BASE58_ALPHABET)
    assert addr.base58_decode(text) == raw


@given(st.text(alphabet=addr.BASE58_ALPHABET, max_size=60))
def test_base58_text_round_trip(text: str) -> None:
    assert addr.base58_encode(addr.base58_decode(text)) == text


@given(st.sampled_from(list(ENCODERS)), st.binary(min_size=32, max_size=32))
def test_address_round_trip(kind: str, payload: bytes) -> None:
    text = ENCODERS[kind](payload)
    assert len(text) == TEXT_LENGTH[kind]
    assert text.startswith(kind)
    assert DECODERS[kind](text) == payload
    assert addr.address_kind(text) == kind


@given(st.text(max_size=60))
def test_address_kind_of_random_text_raises_only_address_error(text: str) -> None:
    try:
        kind = addr.address_kind(text)
    except AddressError:
        return
    assert text.startswith(kind)
