"""Identity entries (docs/formats.md §8.1) and Go-compatible JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.addresses import identity_public_key
from ledger.core.errors import AddressError, DecodeError
from ledger.core.hashing import sha256
from ledger.core.keys import SigningKey, verify_signature
from ledger.wallet.gojson import go_json_dumps, go_number
from ledger.wallet.identity import (
    attribute_endorsement_entry,
    attribute_entry,
    identity_chain_entry,
    key_replacement_entry,
)

NAME = ["John", "Jacob", "Jingleheimer-Schmidt"]
KEYS = [
    "idpub2EMSb17Rf9jWwoKigMa3EydLc3e8o7uhYbU5mDqpdcXuTymDWa",
    "idpub2ucJ6MTVNVGoGQdJKGk6DqtE7xcxYBa4WTuS8APuHHMHuh4M6W",
    "idpub2yrure3XynmbfY9DAhqiRcPbLhU84toDo1fw8X1TNgKmbkFWgn",
    "idpub3Frhv7tZeDhcGqtG9SZ7Ja7faBuhwxbxcAYJTMQ8HqEc2vth44",
]
CHAIN = "44abb806a2029ed77dca63770e2e4ac4b2fedd2e1847339ac59b180ee223eb84"
OTHER = "e0cf1713b492e09e783d5d9f4fc6e2c71b5bdc9af4806a7937a5e935819717e9"
SIGNER = SigningKey.from_seed(bytes(range(32)))
SIGNER_ID = identity_public_key(SIGNER.public_key)


def test_identity_chain_vector() -> None:
    entry = identity_chain_entry(NAME, KEYS)
    assert entry.chain_id.hex() == CHAIN
    assert entry.external_ids == (b"IdentityChain", b"John", b"Jacob", b"Jingleheimer-Schmidt")
    assert (
        entry.content == ('{"keys":' + json.dumps(KEYS).replace(" ", "") + ',"version":1}').encode()
    )
    assert entry.hash().hex() == "00b858373a4e55276542848b47e9af4a31b4333a4db262974096fa0b15595ea8"


def test_identity_chain_rejects_bad_keys() -> None:
    with pytest.raises(AddressError):
        identity_chain_entry(NAME, [])
    with pytest.raises(AddressError):
        identity_chain_entry(NAME, ["EC2DKSYyRcNWf7RS963VFYgMExoHRYLHVeCfQ9PGPmNzwrcmgm2r"])


def test_key_replacement_entry() -> None:
    entry = key_replacement_entry(CHAIN.upper(), KEYS[1], KEYS[2], signer=SIGNER)
    assert entry.chain_id.hex() == CHAIN
    tag, old, new, signature, signer = entry.external_ids
    assert (tag, old, new, signer) == (
        b"ReplaceKey",
        KEYS[1].encode(),
        KEYS[2].encode(),
        SIGNER_ID.encode(),
    )
    assert verify_signature(SIGNER.public_key, (CHAIN + KEYS[1] + KEYS[2]).encode(), signature)
    assert entry.content == b""
    with pytest.raises(AddressError):
        key_replacement_entry(CHAIN, KEYS[1], "idpubX", signer=SIGNER)
    with pytest.raises(DecodeError):
        key_replacement_entry(CHAIN[:-1], KEYS[1], KEYS[2], signer=SIGNER)


def test_attribute_entry() -> None:
    entry = attribute_entry(
        receiver_chain_id=CHAIN,
        destination_chain_id=OTHER,
        attributes=[("email", "a<b>@example.com"), ({"k": [1, 2.5]}, True)],
        signer=SIGNER,
        signer_chain_id=CHAIN,
    )
    assert entry.chain_id.hex() == OTHER
    assert entry.content == (
        b'[{"key":"email","value":"a\\u003cb\\u003e@example.com"},'
        b'{"key":{"k":[1,2.5]},"value":true}]'
    )
    tag, receiver, signature, signer, signer_chain = entry.external_ids
    assert (tag, receiver, signer, signer_chain) == (
        b"IdentityAttribute",
        CHAIN.encode(),
        SIGNER_ID.encode(),
        CHAIN.encode(),
    )
    message = (CHAIN + OTHER).encode() + sha256(entry.content)
    assert verify_signature(SIGNER.public_key, message, signature)


def test_attribute_endorsement_entry() -> None:
    attribute_hash = "ab" * 32
    entry = attribute_endorsement_entry(
        destination_chain_id=OTHER, entry_hash=attribute_hash, signer=SIGNER, signer_chain_id=CHAIN
    )
    tag, signature, signer, signer_chain = entry.external_ids
    assert (tag, signer, signer_chain) == (
        b"IdentityAttributeEndorsement",
        SIGNER_ID.encode(),
        CHAIN.encode(),
    )
    assert entry.content == attribute_hash.encode()
    assert verify_signature(SIGNER.public_key, (OTHER + attribute_hash).encode(), signature)


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1, "1"),
        (-3, "-3"),
        (1.5, "1.5"),
        (0.1, "0.1"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (0.000001, "0.000001"),
        (1e-7, "1e-7"),
        (2.5e-10, "2.5e-10"),
        (12345678901234567890, "12345678901234567000"),
        (0.0, "0"),
    ],
)
def test_go_number_formatting(number: float, text: str) -> None:
    assert go_number(number) == text


def test_go_json_objects_are_sorted_compact_and_html_escaped() -> None:
    value = {"b": [None, False, "é&\u2028"], "a": {"z": 1, "y": "<"}}
    assert (
        go_json_dumps(value)
        == '{"a":{"y":"\\u003c","z":1},"b":[null,false,"é\\u0026\\u2028"]}'.encode()
    )
    with pytest.raises(ValueError):
        go_json_dumps(float("nan"))
    with pytest.raises(ValueError):
        go_json_dumps({1, 2})


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(_json_values)
def test_go_json_parses_back_to_the_same_value(value: object) -> None:
    assert json.loads(go_json_dumps(value)) == value
