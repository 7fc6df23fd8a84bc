"""Entries: layout, hash, chain ID, cost, limits (docs/formats.md §1)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.entry import (
    ENTRY_HEADER_BYTES,
    MAX_ENTRY_PAYLOAD_BYTES,
    Entry,
    chain_id_from_external_ids,
    entry_cost,
)
from ledger.core.errors import DecodeError, LimitError
from ledger.core.hashing import sha256, sha256d
from tests.ledger.core._vectors import load

VECTORS = load("core_entries.json")
ENTRY_VECTORS = VECTORS["entries"]
TEST_CHAIN = bytes.fromhex(VECTORS["chain_id_test"]["chain_id"])


def _entry_from_vector(vector: dict[str, Any]) -> Entry:
    return Entry(
        bytes.fromhex(vector["chain_id"]),
        tuple(bytes.fromhex(x) for x in vector["extids"]),
        bytes.fromhex(vector["content"]),
    )


# --- chain IDs (1.3) ---------------------------------------------------------------------


def test_chain_id_of_test() -> None:
    assert chain_id_from_external_ids([b"test"]) == TEST_CHAIN


@pytest.mark.parametrize("vector", VECTORS["anchor_chain_ids"])
def test_anchor_chain_ids(vector: dict[str, Any]) -> None:
    ext_ids = [bytes.fromhex(x) for x in vector["extids"]]
    assert chain_id_from_external_ids(ext_ids).hex() == vector["chain_id"]


def test_chain_id_of_no_ext_ids_is_sha256_of_empty() -> None:
    assert chain_id_from_external_ids([]).hex().startswith("e3b0c442")


def test_chain_id_of_one_ext_id_is_sha256d() -> None:
    assert chain_id_from_external_ids([b"abc"]) == sha256d(b"abc")


def test_chain_id_depends_on_order_and_split() -> None:
    ab = chain_id_from_external_ids([b"a", b"b"])
    assert ab == sha256(sha256(b"a") + sha256(b"b"))
    assert ab != chain_id_from_external_ids([b"b", b"a"])
    assert ab != chain_id_from_external_ids([b"ab"])


# --- layout and hash (1.1, 1.2, 1.5) -----------------------------------------------------


@pytest.mark.parametrize("vector", ENTRY_VECTORS, ids=lambda v: v["name"])
def test_marshal_matches_vector(vector: dict[str, Any]) -> None:
    assert _entry_from_vector(vector).marshal().hex() == vector["hex"]


@pytest.mark.parametrize("vector", ENTRY_VECTORS, ids=lambda v: v["name"])
def test_unmarshal_matches_vector(vector: dict[str, Any]) -> None:
    assert Entry.unmarshal(bytes.fromhex(vector["hex"])) == _entry_from_vector(vector)


@pytest.mark.parametrize("vector", ENTRY_VECTORS, ids=lambda v: v["name"])
def test_entry_hash_matches_vector(vector: dict[str, Any]) -> None:
    assert _entry_from_vector(vector).hash().hex() == vector["entry_hash"]


def test_sha512_intermediate_of_payload_entry() -> None:
    vector = ENTRY_VECTORS[0]
    raw = _entry_from_vector(vector).marshal()
    assert hashlib.sha512(raw).hexdigest() == vector["sha512"]


def test_anchor_first_entry_is_156_bytes_and_a_first_entry() -> None:
    vector = ENTRY_VECTORS[3]
    entry = Entry.first_entry([b"FactomAnchorChain"], bytes.fromhex(vector["content"]))
    assert len(entry.marshal()) == 156
    assert entry.chain_id.hex() == vector["chain_id"]
    assert entry.is_first_entry_of_chain()


def test_first_entry_computes_chain_id() -> None:
    entry = Entry.first_entry([b"test"], b"PayloadHere")
    assert entry.hash().hex() == ENTRY_VECTORS[1]["entry_hash"]
    assert entry.external_ids == (b"test",)


def test_entry_in_existing_chain_is_not_first_entry() -> None:
    assert not Entry(TEST_CHAIN, (b"Hello",), b"x").is_first_entry_of_chain()


def test_empty_ext_id_round_trips() -> None:
    entry = Entry(TEST_CHAIN, (b"", b"x"), b"")
    assert entry.marshal()[33:] == bytes.fromhex("0005" + "0000" + "000178")
    assert Entry.unmarshal(entry.marshal()) == entry


def test_list_ext_ids_are_stored_as_tuple() -> None:
    entry = Entry(TEST_CHAIN, [b"a"], bytearray(b"c"))  # type: ignore[arg-type]
    assert entry.external_ids == (b"a",)
    assert entry.content == b"c"
    assert hash(entry) == hash(Entry(TEST_CHAIN, (b"a",), b"c"))


@pytest.mark.parametrize(
    ("chain_id", "ext_ids", "content"),
    [
        (bytearray(TEST_CHAIN), (b"a",), b"c"),
        (TEST_CHAIN, (memoryview(b"a"),), b"c"),
        (TEST_CHAIN, (b"a",), memoryview(b"c")),
    ],
)
def test_bytes_like_fields_are_stored_as_bytes(chain_id: Any, ext_ids: Any, content: Any) -> None:
    entry = Entry(chain_id, ext_ids, content)
    fields = (entry.chain_id, *entry.external_ids, entry.content)
    assert all(type(value) is bytes for value in fields)
    assert entry == Entry(TEST_CHAIN, (b"a",), b"c")


@pytest.mark.parametrize("where", ["chain_id", "ext_id", "content"])
def test_a_field_that_is_not_bytes_is_refused(where: str) -> None:
    values: dict[str, Any] = {"chain_id": TEST_CHAIN, "ext_id": b"a", "content": b"c"}
    values[where] = "text"
    with pytest.raises(DecodeError, match="must be bytes"):
        Entry(values["chain_id"], (values["ext_id"],), values["content"])


# --- sizes and cost (1.4) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "ksize", "cost"),
    [(0, 0, 1), (1, 1, 1), (1024, 1, 1), (1025, 2, 2), (10239, 10, 10), (10240, 10, 10)],
)
def test_ksize_and_cost(payload: int, ksize: int, cost: int) -> None:
    entry = Entry(TEST_CHAIN, (), b"\x00" * payload)
    assert entry.payload_size() == payload
    assert len(entry.marshal()) == ENTRY_HEADER_BYTES + payload
    assert entry.ksize() == ksize
    assert entry.cost() == cost == entry_cost(payload)


def test_payload_counts_ext_id_length_prefixes() -> None:
    assert Entry(TEST_CHAIN, (b"test",), b"PayloadHere").payload_size() == 6 + 11


@pytest.mark.parametrize("payload", [-1, MAX_ENTRY_PAYLOAD_BYTES + 1])
def test_entry_cost_rejects_out_of_range(payload: int) -> None:
    with pytest.raises(LimitError):
        entry_cost(payload)


def test_constructor_rejects_oversize_payload() -> None:
    with pytest.raises(LimitError):
        Entry(TEST_CHAIN, (b"ab",), b"\x00" * (MAX_ENTRY_PAYLOAD_BYTES - 3))


def test_constructor_accepts_exact_max_with_ext_ids() -> None:
    entry = Entry(TEST_CHAIN, (b"ab",), b"\x00" * (MAX_ENTRY_PAYLOAD_BYTES - 4))
    assert Entry.unmarshal(entry.marshal()) == entry


@pytest.mark.parametrize("chain_id", [b"", b"\x00" * 31, b"\x00" * 33])
def test_constructor_rejects_bad_chain_id(chain_id: bytes) -> None:
    with pytest.raises(DecodeError):
        Entry(chain_id, (), b"")


def test_constructor_rejects_non_bytes() -> None:
    with pytest.raises(DecodeError):
        Entry(TEST_CHAIN, ("text",), b"")  # type: ignore[arg-type]


# --- unmarshal rules (1.1) ---------------------------------------------------------------

GOOD = bytes.fromhex(ENTRY_VECTORS[1]["hex"])  # ExtID "test", content "PayloadHere"


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty", b""),
        ("short header", GOOD[:34]),
        ("version 1", b"\x01" + GOOD[1:]),
        ("N past end", GOOD[:33] + (0xFFFF).to_bytes(2, "big") + GOOD[35:]),
        ("N splits a length prefix", GOOD[:33] + b"\x00\x07" + GOOD[35:]),
        ("N too small for ext id", GOOD[:33] + b"\x00\x05" + GOOD[35:]),
        ("N of 1", GOOD[:33] + b"\x00\x01" + GOOD[35:]),
        ("ext id overruns", GOOD[:35] + b"\x00\x09" + GOOD[37:]),
    ],
)
def test_unmarshal_rejects_malformed(name: str, data: bytes) -> None:
    with pytest.raises(DecodeError):
        Entry.unmarshal(data)


def test_unmarshal_treats_bytes_after_ext_ids_as_content() -> None:
    data = GOOD[:33] + b"\x00\x00" + GOOD[35:]
    assert Entry.unmarshal(data).external_ids == ()
    assert Entry.unmarshal(data).content == GOOD[35:]


def test_unmarshal_rejects_oversize_payload() -> None:
    header = b"\x00" + TEST_CHAIN + b"\x00\x00"
    assert Entry.unmarshal(header + b"\x00" * MAX_ENTRY_PAYLOAD_BYTES).ksize() == 10
    with pytest.raises(LimitError):
        Entry.unmarshal(header + b"\x00" * (MAX_ENTRY_PAYLOAD_BYTES + 1))


# --- JSON and hex edges ------------------------------------------------------------------


def test_to_json_shape() -> None:
    entry = Entry(TEST_CHAIN, (b"Hello",), b"PayloadHere")
    assert entry.to_json() == {
        "chainid": TEST_CHAIN.hex(),
        "extids": ["48656c6c6f"],
        "content": "5061796c6f616448657265",
    }
    assert Entry.from_json(entry.to_json()) == entry


def test_from_json_with_chainname_computes_chain_id() -> None:
    entry = Entry.from_json({"chainname": ["74657374"], "extids": ["74657374"], "content": ""})
    assert entry.chain_id == TEST_CHAIN


@pytest.mark.parametrize(
    "obj",
    [
        {"extids": [], "content": ""},
        {"chainid": "zz" * 32, "extids": [], "content": ""},
        {"chainid": TEST_CHAIN.hex()[:-2], "extids": [], "content": ""},
        {"chainid": TEST_CHAIN.hex(), "extids": "00", "content": ""},
        {"chainid": TEST_CHAIN.hex(), "extids": [1], "content": ""},
        {"chainid": TEST_CHAIN.hex(), "extids": [], "content": "abc"},
        {"chainid": TEST_CHAIN.hex(), "extids": [], "content": "ab cd"},
        ["not", "an", "object"],
    ],
)
def test_from_json_rejects_bad_input(obj: Any) -> None:
    with pytest.raises(DecodeError):
        Entry.from_json(obj)


def test_hex_round_trip_and_rejection() -> None:
    entry = Entry.first_entry([b"test"], b"PayloadHere")
    assert entry.to_hex() == ENTRY_VECTORS[1]["hex"]
    assert Entry.from_hex(entry.to_hex()) == entry
    with pytest.raises(DecodeError):
        Entry.from_hex("0x" + entry.to_hex())


# --- properties --------------------------------------------------------------------------

ext_ids_strategy = st.lists(st.binary(max_size=64), max_size=8).map(tuple)


@given(st.binary(min_size=32, max_size=32), ext_ids_strategy, st.binary(max_size=2048))
def test_marshal_unmarshal_round_trip(chain_id: bytes, ext_ids: tuple, content: bytes) -> None:
    entry = Entry(chain_id, ext_ids, content)
    raw = entry.marshal()
    assert len(raw) == ENTRY_HEADER_BYTES + entry.payload_size()
    assert Entry.unmarshal(raw) == entry
    assert Entry.from_json(entry.to_json()) == entry


@given(st.binary(min_size=35, max_size=300))
def test_unmarshal_version_zero_random_bytes(data: bytes) -> None:
    data = b"\x00" + data[1:]
    try:
        entry = Entry.unmarshal(data)
    except DecodeError:
        return
    assert entry.marshal() == data
