"""Replay rules of identity keys (docs/formats.md §8.1), one negative test per rule."""

from __future__ import annotations

import json

import pytest

from ledger.core.addresses import identity_public_key
from ledger.core.entry import Entry
from ledger.core.keys import SigningKey
from ledger.wallet.errors import NotAnIdentityError
from ledger.wallet.identity import (
    attribute_entry,
    identity_chain_entry,
    key_replacement_entry,
)
from ledger.wallet.identity_replay import active_identity_keys, initial_identity_keys

KEYS = [SigningKey.from_seed(bytes([i]) * 32) for i in range(1, 6)]
PUB = [identity_public_key(k.public_key) for k in KEYS]
FIRST = identity_chain_entry(["replay", "test"], PUB[:3])
CHAIN = FIRST.chain_id
CHAIN_HEX = CHAIN.hex()


def replace(old: int, new: int, signer: int) -> Entry:
    return key_replacement_entry(CHAIN_HEX, PUB[old], PUB[new], signer=KEYS[signer])


def replay(*entries: Entry) -> list[str]:
    return active_identity_keys(CHAIN, [FIRST, *entries])


def test_initial_keys_and_the_empty_chain() -> None:
    assert initial_identity_keys(FIRST) == PUB[:3]
    assert replay() == PUB[:3]
    assert active_identity_keys(CHAIN, []) == []


def test_a_valid_replacement_by_a_higher_or_equal_key() -> None:
    assert replay(replace(2, 3, signer=0)) == [PUB[0], PUB[1], PUB[3]]
    assert replay(replace(1, 3, signer=1)) == [PUB[0], PUB[3], PUB[2]]  # a key replaces itself
    chained = replay(replace(2, 3, signer=0), replace(3, 4, signer=3))
    assert chained == [PUB[0], PUB[1], PUB[4]]


def test_rule_a_the_old_key_must_be_active() -> None:
    assert replay(replace(3, 4, signer=0)) == PUB[:3]
    assert replay(replace(2, 3, signer=0), replace(2, 4, signer=0)) == [PUB[0], PUB[1], PUB[3]]


def test_rule_b_the_new_key_must_never_have_been_used() -> None:
    assert replay(replace(2, 1, signer=0)) == PUB[:3]
    once_used = replay(replace(2, 3, signer=0), replace(3, 2, signer=0))
    assert once_used == [PUB[0], PUB[1], PUB[3]]


def test_rule_c_the_signer_must_rank_at_least_as_high() -> None:
    assert replay(replace(0, 3, signer=1)) == PUB[:3]
    assert replay(replace(1, 3, signer=4)) == PUB[:3]  # not an identity key at all


def test_rule_d_the_signature_must_verify() -> None:
    good = replace(2, 3, signer=0)
    ext = list(good.external_ids)
    ext[3] = bytes([ext[3][0] ^ 1]) + ext[3][1:]
    assert replay(Entry(CHAIN, tuple(ext), b"")) == PUB[:3]
    ext = list(good.external_ids)
    ext[3] = KEYS[1].sign((CHAIN_HEX + PUB[2] + PUB[3]).encode())  # signed by another key
    assert replay(Entry(CHAIN, tuple(ext), b"")) == PUB[:3]
    other_chain = key_replacement_entry("00" * 32, PUB[2], PUB[3], signer=KEYS[0])
    assert replay(Entry(CHAIN, other_chain.external_ids, b"")) == PUB[:3]


def test_other_entries_are_skipped() -> None:
    good = replace(2, 3, signer=0)
    attribute = attribute_entry(
        receiver_chain_id=CHAIN_HEX,
        destination_chain_id=CHAIN_HEX,
        attributes=[("k", "v")],
        signer=KEYS[0],
        signer_chain_id=CHAIN_HEX,
    )
    short = Entry(CHAIN, good.external_ids[:4], b"")
    garbled = Entry(CHAIN, (*good.external_ids[:1], b"\xff" * 55, *good.external_ids[2:]), b"")
    assert replay(attribute, short, garbled) == PUB[:3]


@pytest.mark.parametrize(
    ("ext_ids", "content"),
    [
        ([b"NotIdentity"], b'{"keys":[],"version":1}'),
        ([b"IdentityChain"], b"not json"),
        ([b"IdentityChain"], b'{"keys":[],"version":1}'),
        ([b"IdentityChain"], b'{"keys":["idpub-nope"],"version":1}'),
        ([b"IdentityChain"], json.dumps({"keys": [PUB[0], PUB[0]]}).encode()),
    ],
)
def test_not_an_identity_chain(ext_ids: list[bytes], content: bytes) -> None:
    first = Entry.first_entry(ext_ids, content)
    with pytest.raises(NotAnIdentityError):
        active_identity_keys(first.chain_id, [first])
