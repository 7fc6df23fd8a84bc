"""Commit-entry and commit-chain messages (docs/formats.md §2)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.addresses import ec_public_address, seed_from_ec_secret
from ledger.core.commit import (
    COMMIT_CHAIN_BYTES,
    COMMIT_ENTRY_BYTES,
    MAX_TIMESTAMP_MS,
    CommitChain,
    CommitEntry,
)
from ledger.core.entry import Entry
from ledger.core.errors import DecodeError, LimitError, SignatureError
from ledger.core.hashing import sha256, sha256d
from ledger.core.keys import SigningKey
from tests.ledger.core._vectors import load

V = load("core_commits.json")
ANCHOR = load("core_entries.json")["entries"][3]
ZERO_KEY = SigningKey.from_seed(bytes(32))


def _raw(name: str) -> bytes:
    return bytes.fromhex(V[name]["hex"])


def _flip_last_byte(raw: bytes) -> bytes:
    return raw[:-1] + bytes([raw[-1] ^ 0x01])


# --- golden vectors (2.5) ----------------------------------------------------------------


def test_static_commit_chain_fields_and_hashes() -> None:
    vector = V["static_commit_chain"]
    commit = CommitChain.unmarshal(_raw("static_commit_chain"))
    assert commit.credits == vector["credits"]
    assert commit.timestamp_ms == vector["timestamp_ms"]
    assert commit.ec_public_key == ZERO_KEY.public_key
    assert commit.full_hash().hex() == vector["full_hash"]
    assert commit.txid().hex() == vector["txid"]
    assert commit.marshal() == _raw("static_commit_chain")
    commit.verify()


def test_static_commit_chain_resigned_with_zero_seed_is_identical() -> None:
    raw = _raw("static_commit_chain")
    signature = ZERO_KEY.sign(raw[:104])
    assert raw[:136] + signature == raw
    unsigned = dataclasses.replace(CommitChain.unmarshal(raw), signature=bytes(64))
    resigned = dataclasses.replace(unsigned, signature=ZERO_KEY.sign(unsigned.signed_part()))
    assert resigned.marshal() == raw


def test_mainnet_commit_chain() -> None:
    vector = V["mainnet_commit_chain"]
    commit = CommitChain.unmarshal(_raw("mainnet_commit_chain"))
    assert commit.entry_hash.hex() == vector["entry_hash"]
    assert commit.full_hash().hex() == vector["full_hash"]
    assert commit.txid().hex() == vector["txid"]
    commit.verify()


def test_mainnet_commit_entry() -> None:
    vector = V["mainnet_commit_entry"]
    commit = CommitEntry.unmarshal(_raw("mainnet_commit_entry"))
    assert commit.entry_hash.hex() == vector["entry_hash"]
    assert commit.credits == vector["credits"]
    assert commit.full_hash().hex() == vector["full_hash"]
    assert commit.txid().hex() == vector["txid"]
    assert ec_public_address(commit.ec_public_key) == vector["payer"]
    assert commit.marshal() == _raw("mainnet_commit_entry")
    commit.verify()


@pytest.mark.parametrize(
    ("cls", "name"),
    [
        (CommitChain, "static_commit_chain"),
        (CommitChain, "mainnet_commit_chain"),
        (CommitEntry, "mainnet_commit_entry"),
        (CommitChain, "derived_commit_chain_test"),
        (CommitEntry, "derived_commit_entry_hello"),
    ],
)
def test_flipping_the_last_byte_fails_verification(cls: Any, name: str) -> None:
    tampered = cls.unmarshal(_flip_last_byte(_raw(name)))
    with pytest.raises(SignatureError):
        tampered.verify()
    zeroed = cls.unmarshal(_raw(name)[:-1] + b"\x00")
    with pytest.raises(SignatureError):
        zeroed.verify()


@pytest.mark.parametrize("offset", [1, 7, 39, 103])
def test_tampering_signed_part_fails_verification(offset: int) -> None:
    raw = bytearray(_raw("mainnet_commit_chain"))
    raw[offset] = raw[offset] ^ 0x01 if offset != 103 else 20  # keep credits in 11..20
    assert bytes(raw) != _raw("mainnet_commit_chain")
    with pytest.raises(SignatureError):
        CommitChain.unmarshal(bytes(raw)).verify()


def test_create_derived_commit_chain() -> None:
    vector = V["derived_commit_chain_test"]
    key = SigningKey.from_seed(seed_from_ec_secret(vector["ec_secret"]))
    first = Entry.first_entry([bytes.fromhex(x) for x in vector["extids"]], b"PayloadHere")
    commit = CommitChain.create(key, first, timestamp_ms=vector["timestamp_ms"])
    assert commit.credits == vector["credits"]
    assert commit.marshal().hex() == vector["hex"]
    assert commit.txid().hex() == vector["txid"]
    assert commit.matches_first_entry(first)
    commit.verify()


def test_create_derived_commit_entry() -> None:
    vector = V["derived_commit_entry_hello"]
    key = SigningKey.from_seed(seed_from_ec_secret(vector["ec_secret"]))
    entry = Entry.from_json(
        {"chainid": vector["chainid"], "extids": vector["extids"], "content": vector["content"]}
    )
    commit = CommitEntry.create(key, entry, timestamp_ms=vector["timestamp_ms"])
    assert commit.credits == vector["credits"]
    assert commit.marshal().hex() == vector["hex"]
    assert commit.txid().hex() == vector["txid"]
    assert CommitEntry.from_hex(commit.to_hex()) == commit


def test_anchor_chain_weld_and_chain_id_hash() -> None:
    chain_id = bytes.fromhex(ANCHOR["chain_id"])
    entry_hash = bytes.fromhex(ANCHOR["entry_hash"])
    assert CommitChain.weld_for(entry_hash, chain_id).hex() == ANCHOR["weld"]
    assert CommitChain.chain_id_hash_for(chain_id).hex() == ANCHOR["chain_id_hash"]
    first = Entry.unmarshal(bytes.fromhex(ANCHOR["hex"]))
    commit = CommitChain.create(ZERO_KEY, first, timestamp_ms=0)
    assert commit.weld.hex() == ANCHOR["weld"]
    assert commit.chain_id_hash.hex() == ANCHOR["chain_id_hash"]


# --- create() rules ----------------------------------------------------------------------

TEST_FIRST = Entry.first_entry([b"test"], b"PayloadHere")


@pytest.mark.parametrize(("payload", "entry_credits"), [(0, 1), (1024, 1), (1025, 2), (10240, 10)])
def test_default_credits_are_minimum_cost(payload: int, entry_credits: int) -> None:
    first = Entry.first_entry([], b"\x00" * payload)
    assert CommitEntry.create(ZERO_KEY, first, timestamp_ms=1).credits == entry_credits
    assert CommitChain.create(ZERO_KEY, first, timestamp_ms=1).credits == entry_credits + 10


def test_explicit_credits_are_used_and_range_checked() -> None:
    assert CommitEntry.create(ZERO_KEY, TEST_FIRST, timestamp_ms=1, credits=7).credits == 7
    assert CommitChain.create(ZERO_KEY, TEST_FIRST, timestamp_ms=1, credits=20).credits == 20
    with pytest.raises(LimitError):
        CommitEntry.create(ZERO_KEY, TEST_FIRST, timestamp_ms=1, credits=11)
    with pytest.raises(LimitError):
        CommitChain.create(ZERO_KEY, TEST_FIRST, timestamp_ms=1, credits=10)


def test_commit_chain_create_requires_derived_chain_id() -> None:
    wrong = Entry(bytes(32), (b"test",), b"PayloadHere")
    with pytest.raises(DecodeError):
        CommitChain.create(ZERO_KEY, wrong, timestamp_ms=1)


def test_matches_first_entry_rejects_other_entries() -> None:
    commit = CommitChain.create(ZERO_KEY, TEST_FIRST, timestamp_ms=1)
    assert not commit.matches_first_entry(Entry.first_entry([b"test"], b"other"))
    assert not commit.matches_first_entry(Entry.first_entry([b"tesT"], b"PayloadHere"))


def test_commit_entry_layout_and_hashes() -> None:
    commit = CommitEntry.create(ZERO_KEY, TEST_FIRST, timestamp_ms=0x0102030405, credits=3)
    raw = commit.marshal()
    assert len(raw) == COMMIT_ENTRY_BYTES
    assert raw[:7] == bytes.fromhex("00000102030405")
    assert raw[7:39] == TEST_FIRST.hash()
    assert raw[39] == 3 and raw[40:72] == ZERO_KEY.public_key
    assert commit.signed_part() == raw[:40]
    assert commit.txid() == sha256(raw[:40]) and commit.full_hash() == sha256(raw)


def test_commit_chain_layout() -> None:
    commit = CommitChain.create(ZERO_KEY, TEST_FIRST, timestamp_ms=5)
    raw = commit.marshal()
    assert len(raw) == COMMIT_CHAIN_BYTES
    assert raw[7:39] == sha256d(TEST_FIRST.chain_id)
    assert raw[39:71] == sha256d(TEST_FIRST.hash() + TEST_FIRST.chain_id)
    assert raw[71:103] == TEST_FIRST.hash()
    assert raw[103] == 11 and commit.signed_part() == raw[:104]


@pytest.mark.parametrize("timestamp_ms", [-1, MAX_TIMESTAMP_MS + 1])
def test_timestamp_must_fit_48_bits(timestamp_ms: int) -> None:
    with pytest.raises(LimitError):
        CommitEntry.create(ZERO_KEY, TEST_FIRST, timestamp_ms=timestamp_ms)


def test_create_signs_with_the_given_key() -> None:
    other = SigningKey.from_seed(b"\x01" * 32)
    commit = CommitEntry.create(other, TEST_FIRST, timestamp_ms=9)
    commit.verify()
    forged = dataclasses.replace(commit, ec_public_key=ZERO_KEY.public_key)
    with pytest.raises(SignatureError):
        forged.verify()


# --- unmarshal rules ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cls", "name", "size"),
    [(CommitEntry, "mainnet_commit_entry", 136), (CommitChain, "mainnet_commit_chain", 200)],
)
def test_unmarshal_rejects_wrong_length_and_version(cls: Any, name: str, size: int) -> None:
    raw = _raw(name)
    for bad in (b"", raw[:-1], raw + b"\x00", raw[: size // 2]):
        with pytest.raises(DecodeError):
            cls.unmarshal(bad)
    with pytest.raises(DecodeError):
        cls.unmarshal(b"\x01" + raw[1:])


@pytest.mark.parametrize("credits", [0, 11, 255])
def test_commit_entry_credits_out_of_range(credits: int) -> None:
    raw = bytearray(_raw("mainnet_commit_entry"))
    raw[39] = credits
    with pytest.raises(LimitError):
        CommitEntry.unmarshal(bytes(raw))


@pytest.mark.parametrize("credits", [0, 1, 10, 21, 255])
def test_commit_chain_credits_out_of_range(credits: int) -> None:
    raw = bytearray(_raw("mainnet_commit_chain"))
    raw[103] = credits
    with pytest.raises(LimitError):
        CommitChain.unmarshal(bytes(raw))


def test_commit_entry_is_not_a_commit_chain() -> None:
    with pytest.raises(DecodeError):
        CommitChain.unmarshal(_raw("mainnet_commit_entry"))
    with pytest.raises(DecodeError):
        CommitEntry.unmarshal(_raw("mainnet_commit_chain"))


@pytest.mark.parametrize("text", ["zz", "00 01", "0x00", "abc"])
def test_from_hex_rejects_bad_hex(text: str) -> None:
    with pytest.raises(DecodeError):
        CommitEntry.from_hex(text)
    with pytest.raises(DecodeError):
        CommitChain.from_hex(text)


@pytest.mark.parametrize("field", ["entry_hash", "ec_public_key", "signature"])
def test_constructor_rejects_wrong_field_lengths(field: str) -> None:
    commit = CommitEntry.unmarshal(_raw("mainnet_commit_entry"))
    with pytest.raises(DecodeError):
        dataclasses.replace(commit, **{field: getattr(commit, field)[:-1]})


# --- properties --------------------------------------------------------------------------

hashes = st.binary(min_size=32, max_size=32)
timestamps = st.integers(min_value=0, max_value=MAX_TIMESTAMP_MS)
signatures = st.binary(min_size=64, max_size=64)


@given(timestamps, hashes, st.integers(1, 10), hashes, signatures)
def test_commit_entry_round_trip(ts: int, eh: bytes, credits: int, pk: bytes, sig: bytes) -> None:
    commit = CommitEntry(ts, eh, credits, pk, sig)
    raw = commit.marshal()
    assert len(raw) == COMMIT_ENTRY_BYTES
    assert CommitEntry.unmarshal(raw) == commit


@given(timestamps, hashes, hashes, hashes, st.integers(11, 20), hashes, signatures)
def test_commit_chain_round_trip(
    ts: int, cih: bytes, weld: bytes, eh: bytes, credits: int, pk: bytes, sig: bytes
) -> None:
    commit = CommitChain(ts, cih, weld, eh, credits, pk, sig)
    raw = commit.marshal()
    assert len(raw) == COMMIT_CHAIN_BYTES
    assert CommitChain.unmarshal(raw) == commit


@given(st.binary(min_size=32, max_size=32), st.binary(max_size=200), timestamps)
def test_created_commits_verify(seed: bytes, content: bytes, ts: int) -> None:
    key = SigningKey.from_seed(seed)
    first = Entry.first_entry([b"x"], content)
    CommitEntry.create(key, first, timestamp_ms=ts).verify()
    CommitChain.create(key, first, timestamp_ms=ts).verify()
