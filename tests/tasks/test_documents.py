"""The pipeline's entry format: deterministic, carries hash/size/path, bounded."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.core.entry import Entry, chain_id_from_external_ids
from tasks.documents import (
    DOCUMENT_TAG,
    EntryTooLarge,
    collection_chain,
    collection_chain_id,
    document_entry,
)

SHA = "ab" * 32


def test_collection_chain_id_matches_its_first_entry() -> None:
    chain = collection_chain("contracts")
    assert chain.chain_id == collection_chain_id("contracts")
    first = Entry.first_entry(chain.external_ids, chain.content)
    assert first.hash().hex() == chain.entry_hash
    assert collection_chain_id("contracts") != collection_chain_id("contracts2")


def test_document_entry_carries_hash_size_and_path_not_content() -> None:
    chain = collection_chain_id("c")
    entry = document_entry(chain, sha256=SHA, size_bytes=42, path="a/b.txt")
    assert entry.external_ids == (DOCUMENT_TAG, SHA.encode(), b"42", b"a/b.txt")
    assert json.loads(entry.content) == {"path": "a/b.txt", "sha256": SHA, "size": 42, "v": 1}
    rebuilt = Entry(bytes.fromhex(chain), entry.external_ids, entry.content)
    assert rebuilt.hash().hex() == entry.entry_hash


@given(st.text(min_size=1, max_size=200), st.integers(min_value=0, max_value=2**53 - 2))
def test_document_entry_is_deterministic(path: str, size: int) -> None:
    chain = collection_chain_id("prop")
    one = document_entry(chain, sha256=SHA, size_bytes=size, path=path)
    two = document_entry(chain, sha256=SHA, size_bytes=size, path=path)
    assert one == two
    other = document_entry(chain, sha256=SHA, size_bytes=size + 1, path=path)
    assert other.entry_hash != one.entry_hash


def test_path_too_long_for_an_entry_is_refused() -> None:
    chain = collection_chain_id("c")
    with pytest.raises(EntryTooLarge):
        document_entry(chain, sha256=SHA, size_bytes=1, path="x" * 6000)


def test_chain_id_uses_factom_rule() -> None:
    assert (
        collection_chain_id("n")
        == chain_id_from_external_ids([b"notary:collection:v1", b"n"]).hex()
    )
