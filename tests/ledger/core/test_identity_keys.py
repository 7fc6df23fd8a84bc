"""Key history of an identity chain (formats 8.1): tenures, rules a to d, the first entry."""

from __future__ import annotations

import pytest

from ledger.core.addresses import identity_public_key
from ledger.core.entry import Entry
from ledger.core.errors import DecodeError
from ledger.core.identity_keys import (
    KeyTenure,
    Replacement,
    active_keys,
    check_replacement,
    identity_first_entry,
    identity_key_history,
    initial_keys,
    replacement_entry,
)
from ledger.core.keys import SigningKey

KEYS = [SigningKey.from_seed(bytes([i]) * 32) for i in range(1, 6)]
PUB = [identity_public_key(k.public_key) for k in KEYS]
FIRST = identity_first_entry([b"history", b"test"], PUB[:3])
CHAIN = FIRST.chain_id

# formats 8.1 vector (Go client identity_test.go): name, keys, chain ID, first entry hash
NAME = [b"John", b"Jacob", b"Jingleheimer-Schmidt"]
VECTOR_KEYS = [
    "idpub2EMSb17Rf9jWwoKigMa3EydLc3e8o7uhYbU5mDqpdcXuTymDWa",
    "idpub2ucJ6MTVNVGoGQdJKGk6DqtE7xcxYBa4WTuS8APuHHMHuh4M6W",
    "idpub2yrure3XynmbfY9DAhqiRcPbLhU84toDo1fw8X1TNgKmbkFWgn",
    "idpub3Frhv7tZeDhcGqtG9SZ7Ja7faBuhwxbxcAYJTMQ8HqEc2vth44",
]


def proposal(old: int, new: int, signer: int) -> Replacement:
    message = (CHAIN.hex() + PUB[old] + PUB[new]).encode()
    return Replacement(PUB[old], PUB[new], KEYS[signer].sign(message), PUB[signer])


def replace(old: int, new: int, signer: int) -> Entry:
    return replacement_entry(CHAIN, proposal(old, new, signer))


def test_first_entry_matches_the_go_client_vector() -> None:
    entry = identity_first_entry(NAME, VECTOR_KEYS)
    assert entry.chain_id.hex() == (
        "44abb806a2029ed77dca63770e2e4ac4b2fedd2e1847339ac59b180ee223eb84"
    )
    assert entry.hash().hex() == (
        "00b858373a4e55276542848b47e9af4a31b4333a4db262974096fa0b15595ea8"
    )
    assert initial_keys(entry) == VECTOR_KEYS


@pytest.mark.parametrize("keys", [[], [PUB[0], PUB[0]], ["idpubnonsense"], [PUB[0], 7]])
def test_first_entry_needs_distinct_valid_keys(keys: list[object]) -> None:
    with pytest.raises(DecodeError):
        identity_first_entry(NAME, keys)  # type: ignore[arg-type]


def test_history_records_who_activated_and_retired_each_key() -> None:
    entries = [FIRST, replace(2, 3, signer=0), Entry(CHAIN, (b"note",), b"x"), replace(3, 4, 3)]
    history = identity_key_history(CHAIN, entries)
    assert history == [
        KeyTenure(PUB[0], 0, 0),
        KeyTenure(PUB[1], 1, 0),
        KeyTenure(PUB[2], 2, 0, retired_by=1),
        KeyTenure(PUB[3], 2, 1, retired_by=3),
        KeyTenure(PUB[4], 2, 3),
    ]
    assert active_keys(history) == [PUB[0], PUB[1], PUB[4]]
    assert identity_key_history(CHAIN, []) == []


def test_each_rule_refuses_with_its_reason() -> None:
    history = identity_key_history(CHAIN, [FIRST])
    assert check_replacement(CHAIN, history, proposal(2, 3, signer=0)) is None
    assert "old key" in str(check_replacement(CHAIN, history, proposal(3, 4, signer=0)))
    assert "new key" in str(check_replacement(CHAIN, history, proposal(2, 1, signer=0)))
    assert "signer key is not" in str(check_replacement(CHAIN, history, proposal(2, 4, 3)))
    assert "lower priority" in str(check_replacement(CHAIN, history, proposal(0, 3, signer=1)))
    forged = Replacement(PUB[2], PUB[3], KEYS[0].sign(b"something else"), PUB[0])
    assert "signature" in str(check_replacement(CHAIN, history, forged))
    other_chain = bytes(32)
    assert "signature" in str(check_replacement(other_chain, history, proposal(2, 3, signer=0)))


def test_refused_replacements_change_nothing() -> None:
    entries = [FIRST, replace(0, 3, signer=1), replace(2, 1, signer=0), replace(4, 3, signer=0)]
    assert identity_key_history(CHAIN, entries) == identity_key_history(CHAIN, [FIRST])


def test_a_chain_that_is_not_an_identity() -> None:
    with pytest.raises(DecodeError):
        identity_key_history(CHAIN, [Entry.first_entry([b"plain"], b"{}")])
    with pytest.raises(DecodeError):
        initial_keys(Entry.first_entry([b"IdentityChain"], b"not json"))
